"""Train one of the generalising chapter's agents on the random Maze and save its weights.

The random Maze (jumanji's default ``Maze-v0``, a new 10 x 10 maze every episode) needs
more training than a book build should spend, so this script trains each agent once;
the chapter loads the saved weights, evaluates them on 1,000 mazes drawn from a
key training never used, and also runs a short training with the same code.

    python tools/train_random_maze.py                          # the propagation network
    python tools/train_random_maze.py --agent value_iteration  # the planning network
    python tools/train_random_maze.py --total 200000           # a short run, to try the script

Writes ``companion/data/<name>.eqx`` (the model's arrays, read back with
``eqx.tree_deserialise_leaves`` into ``ppo.model_skeleton(network)``) and
``companion/data/<name>.json`` (configuration, network, timings, hardware, learning curve and the
evaluation on 1,000 unseen 10 x 10 mazes, sampled and greedy; for the value-iteration
agent also on 1,000 unseen 15 x 15 and 20 x 20 mazes, which it never trained on), with
``<name>`` from ``companion.agents.ppo.saved.SAVED_AGENTS``.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import equinox as eqx
import jax
import numpy as np

from companion.agents import ppo
from companion.agents.ppo.saved import SAVED_AGENTS
from companion.bench import hardware
from companion.envs import maze as maze_lib

from jumanji.environments.routing.maze.generator import RandomGenerator  # after companion.envs

DATA = Path(__file__).resolve().parent.parent / "companion" / "data"

#: The configuration and network trained for the chapter, by network name.
CONFIGS = {
    "propagation": (ppo.RANDOM_MAZE_CONFIG, ppo.RANDOM_MAZE_NETWORK),
    "value_iteration": (ppo.VALUE_ITERATION_MAZE_CONFIG, ppo.VALUE_ITERATION_NETWORK),
}
TRAIN_SEED = 0
#: Evaluation mazes come from this key, which training never uses (10 x 10); larger
#: sizes n from fold_in(key(EVAL_SEED), n), as benchmarks/maze_sizes.py draws them.
EVAL_SEED = 10_000


def evaluate_size(model, size: int, num_episodes: int = 1000) -> dict:
    """Sampled and greedy success on ``num_episodes`` unseen random ``size x size`` mazes
    (time limit ``size * size``), with mean length and shortest path of the successes."""
    if size == 10:
        env, key = maze_lib.make_maze_task("random"), jax.random.key(EVAL_SEED)
    else:
        generator = RandomGenerator(num_rows=size, num_cols=size)
        env = maze_lib.make_maze(generator=generator, time_limit=size * size)
        key = jax.random.fold_in(jax.random.key(EVAL_SEED), size)
    result = {}
    for mode, greedy in (("sampled", False), ("greedy", True)):
        ev = ppo.evaluate(model, env, key, num_episodes, greedy=greedy)
        first = ev.start
        shortest = ppo.shortest_path_lengths(first)
        success = np.asarray(ev.success)
        length = np.asarray(ev.length)
        result[mode] = {
            "success_rate": float(success.mean()),
            "mean_length_successful": float(length[success].mean()) if success.any() else None,
            "mean_shortest_successful": float(shortest[success].mean()) if success.any() else None,
        }
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agent", choices=tuple(CONFIGS), default="propagation")
    parser.add_argument("--total", type=int, default=None, help="environment steps")
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args(argv)
    base, network = CONFIGS[args.agent]
    total = base.total_timesteps if args.total is None else args.total
    config = base._replace(total_timesteps=total)

    env = maze_lib.make_maze_task("random")  # a new 10 x 10 maze every episode
    trainer = ppo.make_trainer(config, network, env, progress_bar=True)
    key = jax.random.key(TRAIN_SEED)
    start = time.perf_counter()
    compiled = jax.jit(trainer.train).lower(key).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    runner, metrics = jax.block_until_ready(compiled(key))
    train_s = time.perf_counter() - start
    model = ppo.trained_model(network, runner)

    args.out.mkdir(parents=True, exist_ok=True)
    eqx.tree_serialise_leaves(args.out / f"{SAVED_AGENTS[args.agent]}.eqx", model)
    larger = {}
    if args.agent == "value_iteration":
        # the same weights, with backups until the values settle: the same outputs, fewer
        # backups, and any maze size
        like = ppo.model_skeleton(functools.partial(network, iterations=None))
        model = jax.tree.unflatten(jax.tree.structure(like), jax.tree.leaves(model))
    result = evaluate_size(model, 10)
    if args.agent == "value_iteration":
        larger = {f"evaluation_1000_unseen_{n}x{n}": evaluate_size(model, n) for n in (15, 20)}

    summary = {
        "task": "random",
        "config": {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in config._asdict().items()
        },
        "network": ppo.networks.network_to_dict(network),
        "train_seed": TRAIN_SEED,
        "eval_seed": EVAL_SEED,
        "compile_s": compile_s,
        "train_s": train_s,
        "env_steps": config.env_steps_run,
        "hardware": hardware(),
        "curve": {
            "env_steps": np.asarray(metrics["env_steps"]).tolist(),
            "success_rate": np.asarray(metrics["success_rate"]).round(4).tolist(),
            "success_by_start": [
                None if np.isnan(v) else round(float(v), 4)
                for v in np.asarray(metrics["success_by_start"])
            ],
            "episode_length": np.asarray(metrics["episode_length"]).round(2).tolist(),
        },
        "evaluation_1000_unseen": result,
        **larger,
        "command": "python tools/train_random_maze.py"
        + ("" if args.agent == "propagation" else f" --agent {args.agent}")
        + ("" if total == base.total_timesteps else f" --total {total}"),
    }
    (args.out / f"{SAVED_AGENTS[args.agent]}.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: summary[k] for k in ("compile_s", "train_s", "env_steps")}, indent=1))
    print(json.dumps({"10x10": result, **larger}, indent=1))
    return summary


if __name__ == "__main__":
    main()
