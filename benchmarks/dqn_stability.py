"""Which of the chapter's DQN levers matter, and how fast must the target network be? On 33 keys.

Two parts, each configuration trained on the same 33 keys (33 to 65 by default: the chapter's
configuration was chosen on keys 0 to 32, so its results are reported on keys it was never
tuned on), ``--keys-per-program`` keys at a time (``jax.vmap``, one program per set):

- **levers** (``configs``): the chapter's configuration (``dqn.DQNConfig()`` with the 64 x 64
  Q-network with LayerNorm) and six configurations that each take one of its levers away:
  without LayerNorm; one gradient step per iteration instead of two; a batch of 64 instead of
  128; a constant learning rate; Polyak averaging (tau 0.005 after every gradient step) instead
  of a hard copy every 10 gradient steps; a buffer of 10,000 transitions instead of one that
  holds the whole 40,000-step run.
- **grid** (``grid``): the target network's speed against LayerNorm and the budget. Five
  targets: no target network (a copy after every gradient step), a hard copy every 10 and every
  200 gradient steps, and Polyak averaging with the same mean lag as each copy (a copy every
  ``P`` steps lags ``(P - 1) / 2`` steps on average, Polyak's ``tau`` lags ``(1 - tau) / tau``:
  ``tau = 2 / (P + 1)``); each with and without LayerNorm, at the chapter's 40,000 steps and at
  120,000 (the learning rate still decays to 0 at the end, the buffer still holds the run).

Recorded per key: the mean greedy return of the **final** parameters over 100 fresh CartPole-v1
episodes (keys ``10_000 + k``), the same for the kept-best parameters, the in-training
evaluations (100 greedy episodes after every 1,000 steps), the step of the first evaluation at
or above 475, and the scale of the values: the largest mean Q(s, a) of a replayed batch over
training and the largest mean absolute TD error of a batch (``q_mean`` and ``td_abs`` of
``dqn.make_train``'s metrics), with per-block curves (mean over keys, and the quantiles over
keys of the batch Q). Per configuration: how many keys' final and kept-best parameters reach
475, the mean of the last quarter's evaluations, the median step of a first evaluation at 475,
and compile and run times (of this run: compare them within it). A configuration the two parts
share is trained once.

    python benchmarks/dqn_stability.py           # about 2 hours on 2 idle CPU cores
    python benchmarks/dqn_stability.py --keys-per-program 33   # on an accelerator
    python benchmarks/dqn_stability.py --quick   # tiny budgets, to keep the script working

``--resume`` keeps the rows the output file already holds for the same keys and budgets and
trains the others (for a machine that limits how long one command may run).
"""

from __future__ import annotations

import argparse
import json
import re
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
FIRST_KEY = 33  # keys 0-32 chose the chapter's configuration; these report it
NUM_KEYS = 33

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

#: (name, target_update_period, target_tau): the grid's targets, by their mean lag
TARGETS = (
    ("no target network", 1, 1.0),
    ("copy every 10", 10, 1.0),
    ("copy every 200", 200, 1.0),
    ("Polyak, lag of a copy every 10", 1, 2 / 11),
    ("Polyak, lag of a copy every 200", 1, 2 / 201),
)
BUDGETS = (40_000, 120_000)


def mean_lag(period: int, tau: float) -> float:
    """Mean age, in gradient steps, of the parameters the target holds.

    A hard copy every ``period`` steps is ``k`` steps old ``k`` steps after the copy:
    ``(period - 1) / 2`` on average. Polyak averaging weighs the parameters of ``j`` steps ago
    by ``tau * (1 - tau)**j``: ``(1 - tau) / tau``. Both updates at once (a Polyak step every
    ``period``) are not used here.
    """
    if tau == 1.0:
        return (period - 1) / 2
    if period != 1:
        raise ValueError(f"period: Polyak averaging here updates every step, got {period}")
    return (1 - tau) / tau


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
    q_blocks = np.asarray(row["q_mean_by_block"])  # (keys, blocks)
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
        "q_mean_by_block": np.round(q_blocks.mean(axis=0), 2).tolist(),
        "q_mean_by_block_quantiles": {
            str(p): np.round(np.percentile(q_blocks, p, axis=0), 2).tolist()
            for p in (0, 25, 50, 75, 100)
        },
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


def grid(base: dqn.DQNConfig, budgets: tuple[int, ...]) -> list[tuple[str, dict, bool, dict]]:
    """The grid's configurations: (name, changes to ``base``, LayerNorm, what the row varies)."""
    rows = []
    for steps in budgets:
        for target, period, tau in TARGETS:
            for layer_norm in (True, False):
                changes = {
                    "target_update_period": period,
                    "target_tau": tau,
                    "total_steps": steps,
                    "buffer_capacity": max(base.buffer_capacity, steps),  # holds the run
                }
                norm = "LayerNorm" if layer_norm else "no LayerNorm"
                name = f"{target}, {norm}, {steps:,} steps"
                varies = {"target": target, "mean_lag": mean_lag(period, tau), "budget": steps}
                rows.append((name, changes, layer_norm, varies))
    return rows


def dump(result: dict) -> str:
    """The JSON with each list of numbers on one line (per-key curves of 27 rows)."""
    text = json.dumps(result, indent=1, ensure_ascii=False)
    one_line = re.compile(r"\[\s*([^\[\]{}]*?)\s*\]")
    return one_line.sub(lambda m: "[" + re.sub(r"\s*\n\s*", " ", m.group(1)) + "]", text) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS / "dqn_stability.json")
    parser.add_argument("--first-key", type=int, default=FIRST_KEY)
    parser.add_argument("--num-keys", type=int, default=NUM_KEYS)
    parser.add_argument("--keys-per-program", type=int, default=11)
    parser.add_argument("--resume", action="store_true", help="keep the rows already written")
    args = parser.parse_args(argv)
    if args.num_keys < 1 or args.keys_per_program < 1:
        parser.error("--num-keys and --keys-per-program: expected positive counts")
    base = dqn.DQNConfig(eval_episodes=EVAL_EPISODES)
    budgets, episodes, num_keys = BUDGETS, EVAL_EPISODES, args.num_keys
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
        budgets, episodes, num_keys = (1_200,), 2, 2
    keys = list(range(args.first_key, args.first_key + num_keys))
    key_sets = [
        keys[i : i + args.keys_per_program] for i in range(0, num_keys, args.keys_per_program)
    ]
    started = time.perf_counter()
    result = {
        **result_header("dqn_stability", args.quick),
        "matmul_precision": str(jax.config.jax_default_matmul_precision),
        "solved_at": SOLVED,
        "vmapped_keys": f"each set of {args.keys_per_program} keys trains at once (jax.vmap), "
        "one program per set",
        "configs": {},
        "grid": {},
    }
    done = {}
    if args.resume and args.out.exists():
        old = json.loads(args.out.read_text())
        if old.get("quick") == args.quick:
            for part in ("configs", "grid"):
                for name, row in old.get(part, {}).items():
                    if row["keys"] == keys:
                        result[part][name] = row
                        done[(json.dumps(row["config"], sort_keys=True), row["layer_norm"])] = row
            result["wall_s"] = old.get("wall_s", 0.0)
    wall_before = result.get("wall_s", 0.0)

    plan = [("configs", name, changes, ln, {}) for name, changes, ln in CONFIGS]
    plan += [("grid", *row) for row in grid(base, budgets)]
    for part, name, changes, layer_norm, varies in plan:
        if name in result[part]:
            continue
        config = base._replace(**changes)
        if args.quick and "buffer_capacity" in changes and part == "configs":
            config = config._replace(buffer_capacity=300)
        as_json = {k: (list(v) if isinstance(v, tuple) else v) for k, v in config._asdict().items()}
        same = done.get((json.dumps(as_json, sort_keys=True), layer_norm))
        if same is None:
            network = NETWORK if layer_norm else PLAIN_NETWORK
            parts = [measure(config, network, s, episodes) for s in key_sets]
            row = summarise(parts, config)
            row["config"], row["layer_norm"] = as_json, layer_norm
            done[(json.dumps(as_json, sort_keys=True), layer_norm)] = row
        else:
            row = dict(same)  # the same configuration, trained once
        result[part][name] = {**row, **varies}
        result["wall_s"] = wall_before + time.perf_counter() - started
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(dump(result))  # after every row
        print(
            f"{name}: final >= {SOLVED:.0f} on {row['final_solved']} of {len(row['keys'])} keys, "
            f"kept-best on {row['best_solved']}; median steps to 475 "
            f"{row['median_steps_to_475']}; median max Q {row['median_q_max']:.0f}; "
            f"compile {sum(row['compile_s']):.0f} s, run {sum(row['run_s']):.0f} s",
            flush=True,
        )
    return result


if __name__ == "__main__":
    main()
