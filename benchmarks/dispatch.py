"""Where the time goes: Python dispatch against one compiled program, compile time,
host transfers and asynchronous dispatch, measured on the book's JAX CartPole.

- ``loops``: the same ``num_steps`` steps of one CartPole (random actions,
  auto-reset) run four ways: op by op without ``jit`` ("eager"), a Python loop
  that calls a jitted step ("python loop, jit(step)"), the same loop that also
  copies each observation to a NumPy array ("... + np.asarray(obs)"), and one
  jitted ``lax.scan`` over all steps ("jit(lax.scan)").
- ``compile``: compile time of ``jit`` over a Python ``for`` loop (unrolled into
  the program, so the program grows with the number of steps) against
  ``jit`` of ``lax.scan`` (one loop body, whatever the number of steps).
- ``async``: a matrix product and a vectorised CartPole rollout, each timed
  without and with ``jax.block_until_ready``: without it the clock stops when
  the call returns, which for an asynchronously dispatched program is when the
  work is queued, not when it is done.
- ``recompile``: first call (trace + compile + run) against later calls of a
  jitted function, for three batch sizes: every new shape compiles again.

Figures are medians of several runs with min and max; compile time is
measured apart. Writes JSON (default ``benchmarks/results/dispatch.json``).

    python benchmarks/dispatch.py           # under a minute on 2 cores
    python benchmarks/dispatch.py --quick   # tiny sizes, to keep the script working
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import jax
import numpy as np
from measure import result_header

from companion.bench import timed
from companion.envs import cartpole

RESULTS = Path(__file__).resolve().parent / "results"


def _spread(times: list) -> dict:
    return {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "repeats": len(times),
    }


def loop_styles(num_steps: int, repeats: int) -> dict:
    actions = np.random.default_rng(0).integers(2, size=num_steps).astype(np.int32)
    state0, _ = cartpole.reset(jax.random.key(0))
    step_jit = jax.jit(cartpole.step_autoreset)

    def eager():
        state = state0
        for a in actions:
            state, ts = cartpole.step_autoreset(state, a)
        return state

    def python_loop():
        state = state0
        for a in actions:
            state, ts = step_jit(state, a)
        return state

    def python_loop_to_host():
        state, observations = state0, []
        for a in actions:
            state, ts = step_jit(state, a)
            observations.append(np.asarray(ts.obs))  # waits for the step, copies to the host
        return state

    @jax.jit
    def scan(state, actions):
        def body(state, action):
            state, ts = cartpole.step_autoreset(state, action)
            return state, ts.reward

        return jax.lax.scan(body, state, actions)[0]

    actions_device = jax.numpy.asarray(actions)
    styles = {
        "eager": (eager, max(1, repeats // 2)),
        "python loop, jit(step)": (python_loop, repeats),
        "python loop, jit(step) + np.asarray(obs)": (python_loop_to_host, repeats),
        "jit(lax.scan)": (lambda: scan(state0, actions_device), repeats),
    }
    out = {}
    for name, (fn, reps) in styles.items():
        r = timed(fn, reps)
        r["steps_per_s"] = num_steps / r["median_s"]
        r["us_per_step"] = 1e6 * r["median_s"] / num_steps
        out[name] = r
    # All four compute the same final state.
    finals = [np.asarray(jax.tree.leaves(fn())[0]) for fn, _ in styles.values()]
    out["same_final_state"] = bool(all(np.allclose(f, finals[0], atol=1e-5) for f in finals))
    return out


def compile_times(lengths: list) -> dict:
    state0, _ = cartpole.reset(jax.random.key(0))

    def unrolled(num_steps):
        def run(state, actions):
            for t in range(num_steps):
                state, _ = cartpole.step_autoreset(state, actions[t])
            return state

        return run

    def scanned(num_steps):
        def run(state, actions):
            return jax.lax.scan(
                lambda s, a: (cartpole.step_autoreset(s, a)[0], None), state, actions
            )[0]

        return run

    out = {"python for loop": {}, "lax.scan": {}}
    for n in lengths:
        actions = jax.numpy.zeros((n,), jax.numpy.int32)
        for name, make in (("python for loop", unrolled), ("lax.scan", scanned)):
            start = time.perf_counter()
            jax.jit(make(n)).lower(state0, actions).compile()
            out[name][str(n)] = time.perf_counter() - start
    return out


def _time_without_and_with_block(fn, args_list) -> dict:
    jax.block_until_ready(fn(*args_list[0]))  # compile
    without, with_block = [], []
    for args in args_list[1:]:
        start = time.perf_counter()
        out = fn(*args)
        without.append(time.perf_counter() - start)  # returns once the work is queued
        jax.block_until_ready(out)
        with_block.append(time.perf_counter() - start)
    return {
        "without_block_until_ready": _spread(without),
        "with_block_until_ready": _spread(with_block),
    }


def async_dispatch(num_envs: int, num_steps: int, matrix_size: int, repeats: int) -> dict:
    """Two programs: a matrix product, and a CartPole rollout (a loop in the program)."""
    matmul = jax.jit(lambda x: x @ x)
    xs = [
        jax.random.normal(k, (matrix_size, matrix_size))
        for k in jax.random.split(jax.random.key(2), repeats + 1)
    ]
    rollout = jax.jit(cartpole.random_rollout, static_argnums=(1, 2))
    keys = jax.random.split(jax.random.key(1), repeats + 1)
    return {
        "matmul": {
            "matrix_size": matrix_size,
            **_time_without_and_with_block(matmul, [(x,) for x in xs]),
        },
        "rollout": {
            "num_envs": num_envs,
            "num_steps": num_steps,
            **_time_without_and_with_block(rollout, [(k, num_envs, num_steps) for k in keys]),
        },
    }


def recompiles(sizes: list, num_steps: int) -> dict:
    traces = []

    def rollout(key, num_envs, num_steps):
        traces.append(num_envs)  # runs only while tracing
        return cartpole.random_rollout(key, num_envs, num_steps)

    run = jax.jit(rollout, static_argnums=(1, 2))
    out = {}
    for n in sizes:
        start = time.perf_counter()
        jax.block_until_ready(run(jax.random.key(0), n, num_steps))
        first = time.perf_counter() - start
        later = timed(lambda n=n: run(jax.random.key(1), n, num_steps), 3)
        out[str(n)] = {"first_call_s": first, "later_call": later}
    out["traces"] = traces
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument("--out", type=Path, default=RESULTS / "dispatch.json")
    args = parser.parse_args(argv)

    if args.quick:
        num_steps, repeats, lengths = 20, 2, [5, 10]
        async_size, sizes = (16, 50, 64), [4, 8]
    else:
        num_steps, repeats, lengths = 2_000, 5, [10, 20, 40]
        async_size, sizes = (1024, 2_000, 2_000), [64, 128, 256]

    started = time.perf_counter()
    result = {
        **result_header("dispatch", args.quick),
        "loops": {"num_steps": num_steps, **loop_styles(num_steps, repeats)},
        "compile": compile_times(lengths),
        "async": async_dispatch(*async_size, repeats),
        "recompile": {"num_steps": 200, **recompiles(sizes, 200)},
    }
    loops = result["loops"]
    scan_rate = loops["jit(lax.scan)"]["steps_per_s"]
    result["ratios"] = {
        "scan_over_python_loop": scan_rate / loops["python loop, jit(step)"]["steps_per_s"],
        "scan_over_eager": scan_rate / loops["eager"]["steps_per_s"],
        "python_loop_over_python_loop_to_host": loops["python loop, jit(step)"]["steps_per_s"]
        / loops["python loop, jit(step) + np.asarray(obs)"]["steps_per_s"],
        "unrolled_over_scan_compile_longest": result["compile"]["python for loop"][str(lengths[-1])]
        / result["compile"]["lax.scan"][str(lengths[-1])],
    }
    result["wall_s"] = time.perf_counter() - started
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for name, r in loops.items():
        if isinstance(r, dict):
            print(f"{name:45s} {r['us_per_step']:10.1f} us/step")
    print("compile:", json.dumps(result["compile"], default=lambda x: round(x, 2)))
    print("ratios:", json.dumps(result["ratios"], default=lambda x: round(x, 1)))
    return result


if __name__ == "__main__":
    main()
