"""Which of the chapter's DQN levers matter? Each removed in turn, on 33 keys.

The chapter's configuration (``dqn.DQNConfig()`` with the 64 x 64 Q-network with LayerNorm)
and six configurations that each take one of its levers away:

- without LayerNorm (the 64 x 64 ReLU network);
- one gradient step per iteration instead of two (0.25 updates per environment step, not 0.5);
- a batch of 64 instead of 128;
- a constant learning rate (no decay to 0);
- Polyak averaging of the target network (tau 0.005 after every gradient step) instead of a
  hard copy every 10 gradient steps;
- a buffer of 10,000 transitions instead of one that holds the whole 40,000-step run.

Each configuration trains keys 0 to 32, 11 keys at a time (``jax.vmap`` over keys 0-10, 11-21,
22-32: three programs, compiled once per configuration). Recorded per key: the mean greedy
return of the **final** parameters over 100 fresh CartPole-v1 episodes (keys ``10_000 + k``),
the same for the kept-best parameters, the in-training evaluations (100 greedy episodes after
every block of ``eval_every`` iterations, 1,000 steps), the step of the first evaluation at or
above 475, and the scale of the values: the largest mean Q(s, a) of a replayed batch over
training and the largest mean absolute TD error of a batch (``q_mean`` and ``td_abs`` of
``dqn.make_train``'s metrics), with their per-block means and maxima averaged over keys. Per
configuration: how many keys' final and kept-best parameters reach 475 (also per set of 11
keys), the mean over keys of the evaluations in the last quarter of training, the median step
of a first evaluation at 475, and compile and run times (of this run: compare them within it).

    python benchmarks/dqn_stability.py           # about 10 minutes on 2 idle cores
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
from measure import result_header

from companion.agents import dqn
from companion.envs import cartpole

RESULTS = Path(__file__).resolve().parent / "results"
NETWORK = dqn.make_q_network(2, (64, 64), layer_norm=True)  # the chapter's Q-network
PLAIN_NETWORK = dqn.make_q_network(2, (64, 64))  # the same without LayerNorm
ENV = cartpole.CartPole()  # CartPole-v1
SOLVED = 475.0
EVAL_SEED = 10_000
EVAL_EPISODES = 100
KEY_SETS = ((0, 11), (11, 22), (22, 33))  # [first, end) of each set of 11 keys

#: (name, changes to ``dqn.DQNConfig()``, LayerNorm in the Q-network)
CONFIGS = (
    ("chapter", {}, True),
    ("without LayerNorm", {}, False),
    ("1 gradient step per iteration", {"updates_per_iteration": 1}, True),
    ("batch 64", {"batch_size": 64}, True),
    ("constant learning rate", {"lr_final_fraction": 1.0}, True),
    ("Polyak τ = 0.005 every step", {"target_update_period": 1, "target_tau": 0.005}, True),
    ("buffer 10,000", {"buffer_capacity": 10_000}, True),
)


def measure(config: dqn.DQNConfig, network, keys: list[int], episodes: int) -> dict:
    """Train ``keys`` at once with ``config``; evaluate final and kept-best parameters."""
    train = jax.jit(jax.vmap(dqn.make_train(config, network, ENV)))
    seeds = jax.numpy.stack([jax.random.key(k) for k in keys])
    start = time.perf_counter()
    compiled = train.lower(seeds).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    runner, metrics = jax.block_until_ready(compiled(seeds))
    run_s = time.perf_counter() - start
    evaluate = jax.jit(jax.vmap(lambda p, k: dqn.greedy_returns(p, k, episodes, network)))
    eval_keys = jax.numpy.stack([jax.random.key(EVAL_SEED + k) for k in keys])
    final = np.asarray(evaluate(runner.params, eval_keys)).mean(axis=1)
    best = np.asarray(evaluate(runner.best_params, eval_keys)).mean(axis=1)
    evals = np.asarray(metrics["eval_return"])  # (keys, blocks)
    eval_steps = np.asarray(metrics["eval_env_steps"])  # (keys, blocks)
    first = [
        int(s[np.argmax(e >= SOLVED)]) if (e >= SOLVED).any() else None
        for e, s in zip(evals, eval_steps)
    ]
    # the values' scale, per block of training (the warm-up left out)
    warm = config.warmup_iterations
    blocks = (config.num_blocks, config.block_iterations)
    q = np.asarray(metrics["q_mean"])[:, warm:].reshape(len(keys), *blocks)
    td = np.asarray(metrics["td_abs"])[:, warm:].reshape(len(keys), *blocks)
    return {
        "keys": list(keys),
        "compile_s": compile_s,
        "run_s": run_s,
        "final_returns": [round(float(r), 1) for r in final],
        "best_returns": [round(float(r), 1) for r in best],
        "steps_to_475": first,
        "eval_returns": np.round(evals, 1).tolist(),
        "eval_env_steps": eval_steps[0].tolist(),
        "q_max": np.round(q.max(axis=(1, 2)), 2).tolist(),
        "td_abs_max": np.round(td.max(axis=(1, 2)), 3).tolist(),
        "q_mean_by_block": np.round(q.mean(axis=2), 2).tolist(),
        "td_abs_max_by_block": np.round(td.max(axis=2), 3).tolist(),
    }


def summarise(parts: list[dict], config: dqn.DQNConfig) -> dict:
    """One configuration's row from its sets of keys."""
    row = {
        k: sum((p[k] for p in parts), [])
        for k in (
            "keys",
            "final_returns",
            "best_returns",
            "steps_to_475",
            "eval_returns",
            "q_max",
            "td_abs_max",
            "q_mean_by_block",
            "td_abs_max_by_block",
        )
    }
    final, best = np.asarray(row["final_returns"]), np.asarray(row["best_returns"])
    evals = np.asarray(row["eval_returns"])
    quarter = max(1, evals.shape[1] // 4)
    reached = [s for s in row["steps_to_475"] if s is not None]
    return {
        "keys": row["keys"],
        "final_solved": int((final >= SOLVED).sum()),
        "final_solved_by_keys": {
            f"{p['keys'][0]}-{p['keys'][-1]}": int((np.asarray(p["final_returns"]) >= SOLVED).sum())
            for p in parts
        },
        "best_solved": int((best >= SOLVED).sum()),
        "last_quarter_eval_mean": float(evals[:, -quarter:].mean()),
        "reached_in_training": len(reached),
        "median_steps_to_475": statistics.median(reached) if reached else None,
        "median_q_max": float(np.median(row["q_max"])),
        "median_td_abs_max": float(np.median(row["td_abs_max"])),
        "q_mean_by_block": np.round(np.mean(row["q_mean_by_block"], axis=0), 2).tolist(),
        "td_abs_max_by_block": np.round(np.mean(row["td_abs_max_by_block"], axis=0), 3).tolist(),
        "compile_s": [round(p["compile_s"], 2) for p in parts],
        "run_s": [round(p["run_s"], 2) for p in parts],
        "block_env_steps": config.block_iterations * config.num_envs,
        "eval_env_steps": parts[0]["eval_env_steps"],
        **{
            k: row[k]
            for k in (
                "final_returns",
                "best_returns",
                "steps_to_475",
                "q_max",
                "td_abs_max",
                "eval_returns",
            )
        },
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS / "dqn_stability.json")
    args = parser.parse_args(argv)
    base = dqn.DQNConfig(eval_episodes=EVAL_EPISODES)
    key_sets, episodes = KEY_SETS, EVAL_EPISODES
    if args.quick:
        base = base._replace(
            num_envs=2,
            total_steps=1_200,
            learning_starts=200,
            batch_size=32,
            eval_every=100,
            eval_episodes=2,
            epsilon_decay_steps=500,
            buffer_capacity=1_200,
        )
        key_sets, episodes = ((0, 2),), 2
    started = time.perf_counter()
    result = {
        **result_header("dqn_stability", args.quick),
        "solved_at": SOLVED,
        "vmapped_keys": "each set of keys trains at once (jax.vmap), one program per set",
        "configs": {},
    }
    for name, changes, layer_norm in CONFIGS:
        config = base._replace(**changes)
        if args.quick and "buffer_capacity" in changes:
            config = config._replace(buffer_capacity=300)
        network = NETWORK if layer_norm else PLAIN_NETWORK
        parts = [measure(config, network, list(range(a, b)), episodes) for a, b in key_sets]
        row = summarise(parts, config)
        row["config"] = {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in config._asdict().items()
        }
        row["layer_norm"] = layer_norm
        result["configs"][name] = row
        result["wall_s"] = time.perf_counter() - started
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")  # after every row
        print(
            f"{name}: final >= {SOLVED:.0f} on {row['final_solved']} of {len(row['keys'])} keys "
            f"({row['final_solved_by_keys']}), kept-best on {row['best_solved']}; last-quarter "
            f"evaluations {row['last_quarter_eval_mean']:.0f}; median steps to 475 "
            f"{row['median_steps_to_475']}; median max Q {row['median_q_max']:.0f}, max |TD| "
            f"{row['median_td_abs_max']:.1f}; run {sum(row['run_s']):.0f} s",
            flush=True,
        )
    return result


if __name__ == "__main__":
    main()
