"""XLA:CPU's compile settings: compile time against run time, and what they do to the test
suite.

XLA:CPU compiles each program through LLVM at ``--xla_backend_optimization_level`` 3 unless
told otherwise. On the tiny budgets a test run spends most of its time compiling, so the tests
(``tests/conftest.py``) set level 2. This script measures that trade, each setting in a fresh
process (JAX reads ``XLA_FLAGS`` once, when its backend starts):

- ``programs``: for PPO (the chapter's medium-maze configuration, 4 seeds vmapped) and DQN
  (the chapter's CartPole configuration), the compile time and the median run time of one
  training program, at the book's budget and at the tests' tiny budget.
- ``suite_s`` (full mode only): the wall time of ``pytest tests/package/agents/test_ppo.py
  tests/package/agents/test_dqn.py`` with an empty compilation cache.

The settings are levels 3 (XLA's default), 2 (what the tests set) and 1. Every figure is also
given as a ratio to XLA's default measured in the same run.

    python benchmarks/compile_level.py           # about 12 minutes on 2 cores
    python benchmarks/compile_level.py --quick   # the default and the tests' setting, tiny sizes
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
LEVEL = "--xla_backend_optimization_level"
#: Each setting's flags; an XLA_FLAGS of the caller keeps its other flags.
SETTINGS = {
    "3": {LEVEL: "3"},  # XLA's default
    "2": {LEVEL: "2"},  # what tests/conftest.py sets
    "1": {LEVEL: "1"},
}
#: The setting that tests/conftest.py uses.
TESTS = "2"
QUICK_SETTINGS = ("3", TESTS)


def _flags(setting: str) -> str:
    kept = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(LEVEL)]
    return " ".join([*kept, *(f"{flag}={value}" for flag, value in SETTINGS[setting].items())])


def measure_programs(quick: bool) -> dict:
    """Compile and run the training programs in this process (its XLA flags as set)."""
    sys.path.insert(0, str(ROOT))
    import jax
    from measure import compile_and_time

    from companion.agents import dqn, ppo
    from companion.envs import maze
    from companion.envs.cartpole import CartPole

    repeats = 2 if quick else 3
    ppo_steps = {"tiny": 2_048} if quick else {"tiny": 4_096, "book": 65_536}
    dqn_steps = {"tiny": 1_200} if quick else {"tiny": 2_000, "book": 20_000}
    out = {}
    keys = jax.random.split(jax.random.key(0), 4)
    for budget, steps in ppo_steps.items():
        config = ppo.FIXED_MAZE_CONFIG._replace(total_timesteps=steps)
        train = ppo.make_train(config, ppo.FIXED_MAZE_NETWORK, maze.make_maze_task("medium"))
        timing, _ = compile_and_time(jax.vmap(train), (keys,), repeats)
        out[f"ppo_{budget}"] = {"env_steps": 4 * config.env_steps_run, **timing}
    for budget, steps in dqn_steps.items():
        config = dqn.DQNConfig(total_steps=steps, learning_starts=min(2_000, steps // 2))
        timing, _ = compile_and_time(
            dqn.make_train(config, dqn.make_q_network(), CartPole()), (jax.random.key(1),), repeats
        )
        out[f"dqn_{budget}"] = {"env_steps": config.env_steps_run, **timing}
    return out


def _run_setting(setting: str, quick: bool) -> dict:
    command = [sys.executable, __file__, "--worker"] + (["--quick"] if quick else [])
    env = {**os.environ, "XLA_FLAGS": _flags(setting)}
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"setting {setting}: the worker failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _time_suite(setting: str) -> float:
    with tempfile.TemporaryDirectory() as cache:
        env = {
            **os.environ,
            "XLA_FLAGS": _flags(setting),
            "JAX_COMPILATION_CACHE_DIR": cache,
            "DRLJAX_BUDGET": "tiny",
        }
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "tests/package/agents/test_ppo.py",
            "tests/package/agents/test_dqn.py",
        ]
        start = time.perf_counter()
        subprocess.run(command, env=env, cwd=ROOT, check=True, capture_output=True)
        return time.perf_counter() - start


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=RESULTS / "compile_level.json")
    args = parser.parse_args(argv)
    if args.worker:
        programs = measure_programs(args.quick)
        print(json.dumps({"xla_flags": os.environ.get("XLA_FLAGS", ""), "programs": programs}))
        return {}

    sys.path.insert(0, str(ROOT))
    from measure import result_header

    started = time.perf_counter()
    measured = QUICK_SETTINGS if args.quick else tuple(SETTINGS)
    settings = {name: _run_setting(name, args.quick) for name in measured}
    if not args.quick:
        for name in measured:
            settings[name]["suite_s"] = _time_suite(name)
    base = settings["3"]
    for name, r in settings.items():
        r["flags"] = SETTINGS[name]
        for program, p in r["programs"].items():
            ref = base["programs"][program]
            p["compile_vs_default"] = p["compile_s"] / ref["compile_s"]
            p["run_vs_default"] = p["median_s"] / ref["median_s"]
            print(
                f"{name:5s} {program:9s}: compile {p['compile_s']:5.2f} s "
                f"({p['compile_vs_default']:.2f}x), run {p['median_s']:6.3f} s "
                f"({p['run_vs_default']:.2f}x)",
                flush=True,
            )
        if "suite_s" in r:
            r["suite_vs_default"] = r["suite_s"] / base["suite_s"]
            print(f"{name:5s} suite: {r['suite_s']:.0f} s ({r['suite_vs_default']:.2f}x)")
    result = {
        **result_header("compile_level", args.quick),
        "default": "3",
        "tests": TESTS,
        "settings": settings,
        "total_s": time.perf_counter() - started,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
