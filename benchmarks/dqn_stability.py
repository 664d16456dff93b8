"""Does the DQN's *final* policy stay solved? The chapter's configuration
(``dqn.DQNConfig()``: a Polyak-averaged target network, τ = 0.005 after every gradient step, a
buffer of 100,000 transitions that holds the whole run, and a learning rate that falls from
0.003 to 0 along half a cosine) against the configuration the chapter used before, one change
at a time back, in one run: the same with a linear decay, that from 0.002, and that with a
hard copy of the target network every 100 gradient steps and a buffer of 50,000.

For each configuration, keys 0 to 10 train at once (``jax.vmap``) for the chapter's 80,000
steps; the chapter's configuration also trains keys 11 to 21 and 22 to 32, so that the
spread between sets of 11 keys is on the record. Recorded per key: the mean greedy return of the **final**
parameters over 100 fresh CartPole-v1 episodes (keys ``10_000 + k``), the same for the
kept-best parameters, and the in-training evaluations (10 greedy episodes each, every 4,000
steps); per configuration: how many keys' final and kept-best parameters reach 475, the mean
over keys of the evaluations in the last quarter of training, and the median block at which
an evaluation first reaches 475 and the median environment step of that evaluation (warm-up
included). Compile and training times are those of this run; compare them within the run.

    python benchmarks/dqn_stability.py           # about 4 minutes on 2 cores
    python benchmarks/dqn_stability.py --quick   # tiny budgets, to keep the script working
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import jax
import numpy as np

from companion.agents import dqn
from measure import result_header
from companion.envs import cartpole

RESULTS = Path(__file__).resolve().parent / "results"
NETWORK = dqn.make_q_network(2, (64, 64))  # the chapter's Q-network
ENV = cartpole.CartPole()  # CartPole-v1
SOLVED = 475.0
EVAL_SEED = 10_000

#: (name, changes to ``dqn.DQNConfig()``, first of the 11 keys)
CONFIGS = (
    ("hard copy every 100 steps, buffer 50,000, linear decay from 0.002", {
        "target_update_period": 100, "target_tau": 1.0, "buffer_capacity": 50_000,
        "learning_rate": 2e-3, "lr_schedule": "linear",
    }, 0),
    ("Polyak τ = 0.005, buffer 100,000, linear decay from 0.002", {
        "learning_rate": 2e-3, "lr_schedule": "linear",
    }, 0),
    ("Polyak τ = 0.005, buffer 100,000, linear decay from 0.003", {"lr_schedule": "linear"}, 0),
    ("chapter: Polyak τ = 0.005, buffer 100,000, cosine decay from 0.003", {}, 0),
    ("chapter, keys 11 to 21", {}, 11),
    ("chapter, keys 22 to 32", {}, 22),
)  # fmt: skip


def measure(config: dqn.DQNConfig, keys: list[int], episodes: int) -> dict:
    """Train ``keys`` at once with ``config``; evaluate final and kept-best parameters."""
    train = jax.jit(jax.vmap(dqn.make_train(config, NETWORK, ENV)))
    seeds = jax.numpy.stack([jax.random.key(k) for k in keys])
    start = time.perf_counter()
    compiled = train.lower(seeds).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    runner, metrics = jax.block_until_ready(compiled(seeds))
    run_s = time.perf_counter() - start
    evaluate = jax.jit(jax.vmap(lambda p, k: dqn.greedy_returns(p, k, episodes, NETWORK)))
    eval_keys = jax.numpy.stack([jax.random.key(EVAL_SEED + k) for k in keys])
    final = np.asarray(evaluate(runner.params, eval_keys)).mean(axis=1)
    best = np.asarray(evaluate(runner.best_params, eval_keys)).mean(axis=1)
    evals = np.asarray(metrics["eval_return"])  # (keys, blocks)
    quarter = max(1, evals.shape[1] // 4)
    first = [int(np.argmax(e >= SOLVED)) + 1 for e in evals if (e >= SOLVED).any()]
    eval_steps = np.asarray(metrics["eval_env_steps"])  # (keys, blocks)
    first_steps = [int(s[np.argmax(e >= SOLVED)]) for e, s in zip(evals, eval_steps)
                   if (e >= SOLVED).any()]  # fmt: skip
    return {
        "keys": list(keys),
        "compile_s": compile_s,
        "run_s": run_s,
        "final_returns": [round(float(r), 1) for r in final],
        "best_returns": [round(float(r), 1) for r in best],
        "final_solved": int((final >= SOLVED).sum()),
        "best_solved": int((best >= SOLVED).sum()),
        "last_quarter_eval_mean": float(evals[:, -quarter:].mean()),
        "reached_in_training": len(first),
        "median_first_block_at_475": statistics.median(first) if first else None,
        "median_steps_to_475": statistics.median(first_steps) if first_steps else None,
        "block_env_steps": config.block_iterations * config.num_envs,
        "eval_returns": np.round(evals, 1).tolist(),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS / "dqn_stability.json")
    args = parser.parse_args(argv)
    base = dqn.DQNConfig()
    num_keys, episodes = 11, 100
    if args.quick:
        base = base._replace(
            num_envs=2, total_steps=1_200, learning_starts=200, batch_size=32,
            eval_every=100, eval_episodes=2, epsilon_decay_steps=500,
        )  # fmt: skip
        num_keys, episodes = 2, 2
    started = time.perf_counter()
    result = {**result_header("dqn_stability", args.quick), "solved_at": SOLVED, "configs": {}}
    for name, changes, first_key in CONFIGS:
        config = base._replace(**changes)
        keys = list(range(first_key, first_key + num_keys))
        if args.quick:
            config = config._replace(buffer_capacity=min(config.buffer_capacity, 1_000))
        row = measure(config, keys, episodes)
        row["config"] = {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in config._asdict().items()
        }
        result["configs"][name] = row
        print(
            f"{name}: final >= {SOLVED:.0f} on {row['final_solved']} of {len(keys)} keys, "
            f"kept-best on {row['best_solved']}; last-quarter evaluations "
            f"{row['last_quarter_eval_mean']:.0f}",
            flush=True,
        )
    result["wall_s"] = time.perf_counter() - started
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
