"""Loop writes scale linearly: a loop of ``n`` steps that writes one row per step takes about
four times as long at ``4 n`` steps, not sixteen.

Every agent chapter writes a buffer one step at a time inside a compiled loop: a rollout is a
``lax.scan`` whose stacked outputs grow by one row a step, and DQN writes each transition into
its replay buffer. jaxlib 0.11.1 made each such small write cost the whole buffer on the CPU
(jax-ml/jax#40101), so these loops became quadratic in their length. This script times both
idioms at ``n`` and ``4 n`` steps:

- ``scan_stacked``: ``lax.scan`` over ``n`` steps of a CartPole-sized state (4 floats) whose
  output stacks the state of every step, ``(n, 4)``;
- ``replay_writes``: ``lax.fori_loop`` over ``n`` steps, each writing one transition with
  :func:`companion.replay.replay_add` into a buffer of capacity ``n``.

Each program is compiled apart, then run many times. ``ratio`` is the shortest time at ``4 n``
over the shortest time at ``n`` in the same run (each run takes milliseconds, so the shortest
is the one least disturbed by the rest of the machine): linear scaling gives about 4, a write
that costs the whole buffer about 16. ``tests/tooling/test_benchmarks.py`` runs the quick mode and fails
above ``MAX_RATIO``. Writes JSON (default ``benchmarks/results/loop_writes.json``).

    python benchmarks/loop_writes.py           # under a minute on 2 cores
    python benchmarks/loop_writes.py --quick   # smaller sizes (seconds), as the tests run it
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax
import jax.numpy as jnp
from measure import compile_and_time, result_header

from companion.replay import replay_add, replay_init

RESULTS = Path(__file__).resolve().parent / "results"
#: Above this ratio of times at 4 n and n steps, a loop write costs more than its own row.
MAX_RATIO = 8.0


def scan_stacked(n: int):
    """``lax.scan`` of ``n`` steps stacking a (4,) float32 state each step: (n, 4)."""

    def run(state):
        def step(state, _):
            state_tp1 = state * 0.999 + 0.001
            return state_tp1, state

        return jax.lax.scan(step, state, None, length=n)[1]

    return run, (jnp.ones(4, jnp.float32),)


def replay_writes(n: int):
    """``n`` transitions written one at a time into a replay buffer of capacity ``n``."""
    example = {"obs": jnp.zeros(4), "action": jnp.int32(0), "reward": jnp.float32(0.0)}

    def run(obs):
        def write(t, buffer):
            transition = {"obs": obs * t, "action": t % 2, "reward": jnp.float32(1.0)}
            return replay_add(buffer, transition)

        return jax.lax.fori_loop(0, n, write, replay_init(example, n))

    return run, (jnp.ones(4, jnp.float32),)


def measure(make, n: int, repeats: int) -> dict:
    """Times of the program at ``n`` and ``4 n`` steps, and their ratio."""
    rows = {}
    for steps in (n, 4 * n):
        fn, args = make(steps)
        timing, _ = compile_and_time(fn, args, repeats)
        timing.pop("memory")
        rows[str(steps)] = {"steps": steps, **timing}
    ratio = rows[str(4 * n)]["min_s"] / rows[str(n)]["min_s"]
    return {"n": n, "times": rows, "ratio": ratio}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (seconds)")
    parser.add_argument("--out", type=Path, default=RESULTS / "loop_writes.json")
    args = parser.parse_args(argv)

    n = 25_000 if args.quick else 100_000
    repeats = 15 if args.quick else 31
    loops = {
        "scan_stacked": measure(scan_stacked, n, repeats),
        "replay_writes": measure(replay_writes, n, repeats),
    }
    for name, row in loops.items():
        times = ", ".join(f"{k} steps {v['min_s'] * 1e3:.2f} ms" for k, v in row["times"].items())
        print(f"{name}: {times}; ratio {row['ratio']:.1f} (linear: 4)", flush=True)
    result = {**result_header("loop_writes", args.quick), "max_ratio": MAX_RATIO, "loops": loops}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
