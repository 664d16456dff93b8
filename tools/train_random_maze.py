"""Train the PPO chapter's agent on the random Maze and save its weights.

The random Maze (jumanji's default ``Maze-v0``, a new maze every episode) needs
more training than a book build should spend, so this script trains it once;
the chapter loads the saved weights, evaluates them on 1,000 mazes drawn from a
key training never used, and also runs a short training with the same code.

    python tools/train_random_maze.py                 # the configuration the chapter names
    python tools/train_random_maze.py --total 200000  # a short run, to try the script

Writes ``companion/data/ppo_random_maze.eqx`` (the model's arrays, read back with
``eqx.tree_deserialise_leaves`` into ``ppo.make_model(config, key)``) and
``companion/data/ppo_random_maze.json`` (configuration, timings, hardware,
learning curve and the evaluation on 1,000 unseen mazes).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import equinox as eqx
import jax
import numpy as np

from companion.agents import ppo
from companion.bench import hardware
from companion.envs import maze as maze_lib

DATA = Path(__file__).resolve().parent.parent / "companion" / "data"

#: The configuration trained for the chapter.
CONFIG = ppo.RANDOM_MAZE_CONFIG
TRAIN_SEED = 0
#: Evaluation mazes come from this key, which training never uses.
EVAL_SEED = 10_000


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--total", type=int, default=CONFIG.total_timesteps)
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args(argv)
    config = CONFIG._replace(total_timesteps=args.total, progress_bar=True)

    train = ppo.make_train(config)
    key = jax.random.key(TRAIN_SEED)
    start = time.perf_counter()
    compiled = train.lower(key).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    model, metrics = jax.block_until_ready(compiled(key))
    train_s = time.perf_counter() - start

    env = maze_lib.make_maze_task("random")
    result = {}
    for mode, greedy in (("sampled", False), ("greedy", True)):
        ev = ppo.evaluate(model, env, jax.random.key(EVAL_SEED), 1000, greedy=greedy)
        first = jax.tree.map(lambda x: x[0], ev.states)
        shortest = ppo.shortest_path_lengths(first)
        success = np.asarray(ev.success)
        length = np.asarray(ev.length)
        result[mode] = {
            "success_rate": float(success.mean()),
            "mean_length_successful": float(length[success].mean()) if success.any() else None,
            "mean_shortest_successful": float(shortest[success].mean()) if success.any() else None,
        }

    args.out.mkdir(parents=True, exist_ok=True)
    eqx.tree_serialise_leaves(args.out / "ppo_random_maze.eqx", model)
    summary = {
        "config": {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in config._asdict().items()
        },
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
        "command": "python tools/train_random_maze.py"
        + ("" if args.total == CONFIG.total_timesteps else f" --total {args.total}"),
    }
    (args.out / "ppo_random_maze.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: summary[k] for k in ("compile_s", "train_s", "env_steps")}, indent=1))
    print(json.dumps(result, indent=1))
    return summary


if __name__ == "__main__":
    main()
