"""The default training programs of PPO and DQN against those of a baseline commit: host
callbacks in their jaxprs, and compile time, measured side by side in one run.

A host callback (``pure_callback``, ``io_callback``, ``debug.callback``; equinox's
``error_if`` lowers to one) keeps JAX from writing a program to its persistent compilation
cache and, on a GPU, synchronises with the host where it runs. The companion package checks
bad input at its entry points, so its default programs carry none. This script measures that
against a baseline commit of this repository (default ``e23cb47``, before the change), each
version of the package in fresh processes that alternate (JAX reads ``XLA_FLAGS`` once, and
compile time depends on what a process has compiled before):

- ``callbacks``: callback primitives in the jaxpr of each program;
- ``compile_s``: seconds to lower and compile it (``jax.jit(...).lower(...).compile()``),
  the median over the processes; ``ratio``: the current version's median over the baseline's.

The programs: PPO on the chapter's medium maze (``FIXED_MAZE_CONFIG``, 4,096 steps, one seed)
and DQN on CartPole (``DQNConfig(total_steps=4_000)``, one seed). XLA's default settings.

    python benchmarks/lean_programs.py           # 3 processes per version, about 3 minutes
    python benchmarks/lean_programs.py --quick   # 1 process per version, smaller budgets
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
BASELINE = "e23cb47"
CALLBACKS = ("pure_callback", "io_callback", "debug_callback", "callback")

# Runs in a fresh process with the package under test first on sys.path. It works with both
# conventions: make_train returning a jitted or a plain function, and the network given in
# the config (the baseline) or apart from it (ppo.FIXED_MAZE_NETWORK: the same sizes), and
# the task in the config (the baseline) or the environment given.
MEASURE = r"""
import inspect, json, sys, time
sys.path.insert(0, sys.argv[1])
import jax
from companion.agents import dqn, ppo

def sub_jaxprs(eqn):  # the jaxprs inside one equation (a pjit's, a scan's body, ...)
    for value in eqn.params.values():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            inner = getattr(item, "jaxpr", item)
            if hasattr(inner, "eqns"):
                yield inner

def callbacks(jaxpr):
    n = 0
    for eqn in jaxpr.eqns:
        if "callback" in eqn.primitive.name:
            n += 1
        for sub in sub_jaxprs(eqn):
            n += callbacks(sub)
    return n

def program(train):
    train = getattr(train, "__wrapped__", train)
    return jax.jit(train)

out = {}
key = jax.random.key(0)
ppo_steps, dqn_steps = (2048, 1_200) if sys.argv[2] == "quick" else (4096, 4_000)
ppo_config = ppo.FIXED_MAZE_CONFIG._replace(total_timesteps=ppo_steps)
if hasattr(ppo, "FIXED_MAZE_NETWORK"):
    from companion.envs import maze
    ppo_train = ppo.make_train(ppo_config, ppo.FIXED_MAZE_NETWORK, maze.make_maze_task("medium"))
else:
    ppo_train = ppo.make_train(ppo_config._replace(task="medium"))
if "network" not in inspect.signature(dqn.make_train).parameters:  # network built inside
    dqn_network_and_env = ()
else:
    from companion.envs import cartpole

    dqn_network_and_env = (dqn.make_q_network(), cartpole.CartPole())
programs = {
    "ppo": ppo_train,
    "dqn": dqn.make_train(
        dqn.DQNConfig(total_steps=dqn_steps, learning_starts=min(2_000, dqn_steps // 2)),
        *dqn_network_and_env,
    ),
}
for name, train in programs.items():
    jitted = program(train)
    closed = jax.make_jaxpr(jitted)(key)
    start = time.perf_counter()
    jitted.lower(key).compile()
    out[name] = {"callbacks": callbacks(closed.jaxpr), "compile_s": time.perf_counter() - start}
print(json.dumps(out))
"""


def _checkout(rev: str, folder: Path) -> Path:
    """The package at ``rev`` in ``folder`` (``git archive``), returned as the path to import."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "companion"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _measure(package_root: Path, quick: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS",)}
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(package_root), "quick" if quick else "full"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one process per version")
    parser.add_argument("--baseline", default=BASELINE, help="the commit to compare with")
    parser.add_argument("--out", type=Path, default=RESULTS / "lean_programs.json")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from companion.bench import hardware

    processes = 1 if args.quick else 3
    runs: dict[str, list] = {"baseline": [], "current": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = _checkout(args.baseline, Path(tmp))
        for _ in range(processes):  # alternate, so that a slow spell hits both versions
            runs["baseline"].append(_measure(base, args.quick))
            runs["current"].append(_measure(ROOT, args.quick))
    programs = {}
    for name in ("ppo", "dqn"):
        row = {}
        for version, measured in runs.items():
            times = [m[name]["compile_s"] for m in measured]
            row[version] = {
                "callbacks": measured[0][name]["callbacks"],
                "compile_s": statistics.median(times),
                "compile_s_all": times,
            }
        row["ratio"] = row["current"]["compile_s"] / row["baseline"]["compile_s"]
        programs[name] = row
    result = {
        "benchmark": "lean_programs",
        "baseline": args.baseline,
        "quick": args.quick,
        "processes_per_version": processes,
        "programs": programs,
        "hardware": hardware(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for name, row in programs.items():
        print(
            f"{name}: callbacks {row['baseline']['callbacks']} -> {row['current']['callbacks']}, "
            f"compile {row['baseline']['compile_s']:.2f} s -> {row['current']['compile_s']:.2f} s "
            f"(ratio {row['ratio']:.2f})"
        )
    return result


if __name__ == "__main__":
    main()
