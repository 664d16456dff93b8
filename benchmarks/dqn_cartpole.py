"""DQN on CartPole-v1: time to solve, the book's DQN against rejax's, in one run.

"Time to solve" is compile time plus training time up to the first in-training
evaluation with a mean greedy return >= 475 (gymnasium's threshold), taking the
training time as proportional to the environment steps done. Both agents are
evaluated the same way here: 128 greedy episodes about every 4,000 environment
steps (the book's: every 4,000; rejax's: every 4,096), and the evaluations are
part of the measured time. The book's DQN runs PRNG keys 0, 1 and 2, rejax's
keys 0 and 1, one at a time, rejax with a budget of 61,440 steps (its exploration
schedule scales with that budget). Each run records its compile time, its
training time (``run_s``) and the environment steps it ran (``env_steps``), so
that each agent's steps per second, evaluations included, is ``env_steps / run_s``;
chapter 7 computes the ratio from the result. The book's kept parameters are
confirmed on 100 fresh episodes.

Also measured: the chapter's whole training (10 seeds, vmapped).

    python benchmarks/dqn_cartpole.py           # minutes; the result's wall_s says how many
    python benchmarks/dqn_cartpole.py --quick   # tiny budgets, to keep the script working
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

from companion.agents import dqn
from companion.envs import cartpole

RESULTS = Path(__file__).resolve().parent / "results"
NETWORK = dqn.make_q_network(2, (64, 64), layer_norm=True)  # the chapter's Q-network
ENV = cartpole.CartPole()  # CartPole-v1
SOLVED = 475.0


def _compile_and_run(fn, *args):
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return out, compile_s, time.perf_counter() - start


def measure_book(config: dqn.DQNConfig, seed: int) -> dict:
    (runner, metrics), compile_s, run_s = _compile_and_run(
        dqn.make_train(config, NETWORK, ENV), jax.random.key(seed)
    )
    evals = np.asarray(metrics["eval_return"])
    steps = np.asarray(metrics["eval_env_steps"])
    hit = np.flatnonzero(evals >= SOLVED)
    total = int(runner.env_steps)
    confirm = float(
        np.mean(
            dqn.greedy_returns(
                runner.best_params,
                jax.random.key(1000 + seed),
                100,
                NETWORK,
            )
        )
    )
    result = {
        "seed": seed,
        "compile_s": compile_s,
        "run_s": run_s,
        "env_steps": total,
        "confirmed_return_100_episodes": confirm,
    }
    if hit.size:
        result["solve_steps"] = int(steps[hit[0]])
        result["time_to_solve_s"] = compile_s + run_s * steps[hit[0]] / total
    return result


def measure_rejax(total_timesteps: int, seed: int) -> dict:
    from rejax import get_algo

    algo_cls = get_algo("dqn")
    algo = algo_cls.create(env="CartPole-v1", total_timesteps=total_timesteps)
    (_, (_, returns)), compile_s, run_s = _compile_and_run(
        algo_cls.train, algo, jax.random.PRNGKey(seed)
    )
    means = np.asarray(returns).mean(axis=-1)  # one row per evaluation
    steps = np.arange(len(means)) * algo.eval_freq
    hit = np.flatnonzero(means >= SOLVED)
    result = {
        "seed": seed,
        "compile_s": compile_s,
        "run_s": run_s,
        "env_steps": total_timesteps,
        "eval_freq": int(algo.eval_freq),
        "eval_returns": [round(float(m), 1) for m in means],
    }
    if hit.size:
        result["solve_steps"] = int(steps[hit[0]])
        result["time_to_solve_s"] = compile_s + run_s * steps[hit[0]] / total_timesteps
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS / "dqn_cartpole.json")
    args = parser.parse_args(argv)

    if args.quick:
        config = dqn.DQNConfig(
            num_envs=2,
            total_steps=1_200,
            learning_starts=200,
            buffer_capacity=500,
            batch_size=32,
            eval_every=100,
            eval_episodes=2,
            epsilon_decay_steps=500,
        )
        seeds, rejax_steps, num_seeds = [0], 8_192, 2
    else:
        # the same evaluation as rejax's: 128 episodes every 4,000 steps
        config = dqn.DQNConfig()._replace(eval_episodes=128, eval_every=1_000)
        seeds, rejax_steps, num_seeds = [0, 1, 2], 61_440, 10

    started = time.perf_counter()
    result = {
        **result_header("dqn_cartpole", args.quick),
        "config": {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in config._asdict().items()
        },
        "network": {"hidden_sizes": [64, 64], "layer_norm": True},
        "book": [measure_book(config, s) for s in seeds],
    }

    # The chapter's training: all seeds at once, with the chapter's configuration.
    config = dqn.DQNConfig() if not args.quick else config
    train = jax.vmap(dqn.make_train(config, NETWORK, ENV))
    (runner, _), compile_s, run_s = _compile_and_run(
        train, jax.random.split(jax.random.key(42), num_seeds)
    )
    returns = jax.jit(jax.vmap(lambda p, k: dqn.greedy_returns(p, k, 100, NETWORK)))(
        runner.best_params, jax.random.split(jax.random.key(7), num_seeds)
    )
    means = np.asarray(returns).mean(axis=1)
    result["book_all_seeds"] = {
        "num_seeds": num_seeds,
        "compile_s": compile_s,
        "run_s": run_s,
        "solved": int((means >= SOLVED).sum()),
        "mean_returns": [round(float(m), 1) for m in means],
    }

    try:
        from importlib.metadata import version

        result["rejax_version"] = version("rejax")
        # Two rejax keys keep make bench short (each key's run_s is in the result).
        result["rejax"] = [measure_rejax(rejax_steps, s) for s in seeds[:2]]
    except ImportError:
        result["rejax_skipped"] = (
            "rejax is not installed (pip install -r benchmarks/requirements.txt)"
        )

    book_t = [r["time_to_solve_s"] for r in result["book"] if "time_to_solve_s" in r]
    if book_t:
        result["book_time_to_solve_median_s"] = statistics.median(book_t)
    rejax_t = [r["time_to_solve_s"] for r in result.get("rejax", []) if "time_to_solve_s" in r]
    if rejax_t:
        result["rejax_time_to_solve_median_s"] = statistics.median(rejax_t)
    if rejax_t and book_t:
        result["ratio_rejax_over_book_time_to_solve"] = (
            result["rejax_time_to_solve_median_s"] / result["book_time_to_solve_median_s"]
        )
    result["wall_s"] = time.perf_counter() - started
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        json.dumps(
            {k: v for k, v in result.items() if k not in ("config", "hardware")},
            indent=1,
            default=str,
        )[:3000]
    )
    return result


if __name__ == "__main__":
    main()
