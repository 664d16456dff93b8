"""Profile of a PPO update on random mazes, and what pooled resets change.

For the generalising chapter's convolutional agent on random mazes (its configuration
for the fixed mazes, on random mazes), and for each way of restarting episodes
(``PPOConfig.reset``: jumanji's ``AutoResetWrapper``, which computes a fresh
maze for every environment on every step, and the book's pooled resets), it
measures:

- ``rollout_s``: one rollout (``num_envs`` x ``num_steps`` steps), jitted alone;
- ``update_s``: one whole update inside training (rollout, values, GAE and the
  gradient epochs), from ``make_train`` with ``updates`` updates;
- ``steps_per_s``: training throughput.

Compile time is measured apart; figures are medians of ``repeats`` runs with
min and max. Writes JSON (default ``benchmarks/results/profile_ppo.json``).

    python benchmarks/profile_ppo.py           # under a minute on 2 cores
    python benchmarks/profile_ppo.py --quick   # tiny sizes, to keep the script working
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
from measure import compile_and_time, result_header

from companion.agents import ppo
from companion.envs import maze as maze_lib
from companion.envs.autoreset import make_reset_pool, reset_with_next_obs

RESULTS = Path(__file__).resolve().parent / "results"

AGENTS = {"conv": (ppo.FIXED_MAZE_CONFIG, ppo.FIXED_MAZE_NETWORK)}
TASK = "random"


def rollout_fn(config: ppo.PPOConfig, network):
    """One rollout of ``config``'s agent, with its reset scheme, as a function of a key."""
    env = maze_lib.make_maze_task(TASK)
    model = network(jax.random.key(0))
    n = config.num_envs

    def run(key):
        reset_key, pool_key, key = jax.random.split(key, 3)
        state, timestep = jax.vmap(reset_with_next_obs, in_axes=(None, 0))(
            env, jax.random.split(reset_key, n)
        )
        pool = make_reset_pool(env, pool_key, n) if config.reset == "pooled" else None
        return ppo.rollout(model, env, pool, state, timestep, key, config.num_steps)[2]

    return run


def measure(config: ppo.PPOConfig, network, updates: int, repeats: int) -> dict:
    rollout, _ = compile_and_time(rollout_fn(config, network), (jax.random.key(1),), repeats)
    config = config._replace(total_timesteps=updates * config.batch_size)
    train = ppo.make_train(config, network, maze_lib.make_maze_task(TASK))
    train, _ = compile_and_time(train, (jax.random.key(2),), repeats)
    return {
        "num_envs": config.num_envs,
        "num_steps": config.num_steps,
        "updates": updates,
        "rollout": rollout,
        "train": train,
        "rollout_s": rollout["median_s"],
        "update_s": train["median_s"] / updates,
        "steps_per_s": config.env_steps_run / train["median_s"],
        "steps_per_s_low": config.env_steps_run / train["max_s"],
        "steps_per_s_high": config.env_steps_run / train["min_s"],
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument("--out", type=Path, default=RESULTS / "profile_ppo.json")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    result = {**result_header("profile_ppo", args.quick), "agents": {}}
    for name, (config, network) in AGENTS.items():
        if args.quick:
            config = config._replace(num_envs=8, num_steps=8, num_minibatches=2)
            updates, repeats = 2, 2
        else:
            updates, repeats = 8, 5
        rows = {}
        for reset in ("per_step", "pooled"):
            rows[reset] = measure(config._replace(reset=reset), network, updates, repeats)
            r = rows[reset]
            print(
                f"{name:12s} {reset:9s} rollout {1e3 * r['rollout_s']:8.1f} ms  update "
                f"{1e3 * r['update_s']:8.1f} ms  {r['steps_per_s']:>9,.0f} steps/s",
                flush=True,
            )
        rows["config"] = config._asdict()
        rows["network"] = ppo.networks.network_to_dict(network)
        rows["training_speedup_pooled_over_per_step"] = (
            rows["pooled"]["steps_per_s"] / rows["per_step"]["steps_per_s"]
        )
        rows["rollout_speedup_pooled_over_per_step"] = (
            rows["per_step"]["rollout_s"] / rows["pooled"]["rollout_s"]
        )
        result["agents"][name] = rows
    result["wall_s"] = time.perf_counter() - started
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=list) + "\n")
    for name, rows in result["agents"].items():
        print(
            f"{name}: pooled resets train {rows['training_speedup_pooled_over_per_step']:.2f}x "
            f"faster (rollout {rows['rollout_speedup_pooled_over_per_step']:.2f}x)"
        )
    return result


if __name__ == "__main__":
    main()
