"""Run every benchmark, one fresh process each, and record how long each took.

``make bench`` runs this. Each script writes its own JSON to
``benchmarks/results``; this one adds ``benchmarks/results/bench.json`` with
the wall time of every script and of the whole run, and the hardware.

    python benchmarks/run_all.py            # the full sizes (over an hour on 2 cores)
    python benchmarks/run_all.py --quick    # every script on tiny sizes
    python benchmarks/run_all.py --only dispatch scaling   # those scripts (bench.json: theirs)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: The benchmark scripts, in the order they run.
SCRIPTS = (
    "loop_writes",
    "env_throughput",
    "dispatch",
    "scaling",
    "profile_ppo",
    "ppo_width",
    "dqn_cartpole",
    "dqn_stability",
    "source_posts",
    "sharding",
    "maze_sizes",
    "planning_sizes",
    "compile_level",
    "lean_programs",
    "lab_times",
)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (to check the scripts)")
    parser.add_argument("--out-dir", type=Path, default=HERE / "results")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=SCRIPTS,
        metavar="NAME",
        help="run these scripts only (in the usual order)",
    )
    args = parser.parse_args(argv)
    scripts = [name for name in SCRIPTS if args.only is None or name in args.only]

    sys.path.insert(0, str(HERE.parent))
    from measure import result_header

    args.out_dir.mkdir(parents=True, exist_ok=True)
    walls = {}
    started = time.perf_counter()
    for name in scripts:
        command = [
            sys.executable,
            str(HERE / f"{name}.py"),
            "--out",
            str(args.out_dir / f"{name}.json"),
        ]
        if args.quick:
            command.append("--quick")
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        subprocess.run(command, check=True)
        walls[name] = time.perf_counter() - start
        print(f"== {name}: {walls[name]:.0f} s", flush=True)
    result = {
        **result_header("bench", args.quick),
        "scripts_wall_s": walls,
        "total_wall_s": time.perf_counter() - started,
    }
    (args.out_dir / "bench.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"all benchmarks: {result['total_wall_s'] / 60:.1f} min")
    return result


if __name__ == "__main__":
    main()
