"""The generalising chapter's saved random-maze agent on unseen random mazes of other sizes.

The agent (``companion/data/ppo_random_maze.eqx``, trained by ``tools/train_random_maze.py``
on jumanji's random 10 x 10 mazes only) is a propagation network: the same weights update
every cell from its neighbours ``iterations`` times, so it runs unchanged on a grid of any
size. For each size ``n`` it is evaluated zero-shot on jumanji's random ``n x n`` mazes
(``RandomGenerator``), with a time limit of ``n * n`` steps (jumanji's default for 10 x 10 is
100) and both the sampled and the greedy policy: on 1,000 mazes with the 32 propagation
iterations it was trained with, and on 200 with each other number of iterations swept. The
mazes of size ``n`` come from ``fold_in(key(10_000), n)`` (training draws from ``key(0)``),
so every policy and number of iterations meets the same mazes.

Each point records the success rate; over the successful episodes the mean episode length,
the mean breadth-first-search shortest path and their ratio; the mean shortest path of the
failed episodes; and the success of the episodes whose target lies within ``iterations + 1``
moves (what the agent's readout can have heard of) and beyond.

    python benchmarks/maze_sizes.py            # about 15 minutes on 2 CPU cores
    python benchmarks/maze_sizes.py --quick    # a few mazes on small grids (seconds)
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import jax
import numpy as np
from measure import result_header

from companion.agents import ppo
from companion.agents.ppo.saved import load_saved_agent, saved_network
from companion.envs import maze as maze_lib

from jumanji.environments.routing.maze.generator import RandomGenerator  # after companion.envs

RESULTS = Path(__file__).resolve().parent / "results"

#: Evaluation mazes of size n come from fold_in(key(EVAL_SEED), n); training used key(0).
EVAL_SEED = 10_000


def with_iterations(model, network, iterations: int):
    """The same trained weights with another number of propagation iterations: a static
    field of the network, so the pytree's leaves (the weights) do not depend on it."""
    like = ppo.model_skeleton(functools.partial(network, iterations=iterations))
    return jax.tree.unflatten(jax.tree.structure(like), jax.tree.leaves(model))


def random_maze(size: int):
    """jumanji's random ``size x size`` Maze with a time limit of ``size * size`` steps."""
    generator = RandomGenerator(num_rows=size, num_cols=size)
    return maze_lib.make_maze(generator=generator, time_limit=size * size)


def evaluate_point(model, size: int, greedy: bool, num_episodes: int) -> dict:
    env = random_maze(size)
    key = jax.random.fold_in(jax.random.key(EVAL_SEED), size)
    start = time.perf_counter()
    result = jax.block_until_ready(ppo.evaluate(model, env, key, num_episodes, greedy=greedy))
    seconds = time.perf_counter() - start
    success = np.asarray(result.success)
    first = result.start
    shortest = ppo.shortest_path_lengths(first)
    length = np.asarray(result.length)
    won = success & (shortest > 0)
    lost = ~success & (shortest > 0)
    # None (the value-iteration network) runs size * size - 1 backups
    iterations = size * size - 1 if model.iterations is None else model.iterations
    point = {
        "success_rate": float(success.mean()),
        "episodes": int(num_episodes),
        "mean_length_successful": float(length[won].mean()) if won.any() else None,
        "mean_shortest_successful": float(shortest[won].mean()) if won.any() else None,
        "mean_shortest_failed": float(shortest[lost].mean()) if lost.any() else None,
        "max_shortest": int(shortest.max()),
        # the readout sees the agent's cell and its neighbours, so after K iterations a
        # target within K + 1 moves can have reached it
        "share_beyond_reach": float(np.mean(shortest > iterations + 1)),
        "success_within_reach": _rate(success[(shortest > 0) & (shortest <= iterations + 1)]),
        "success_beyond_reach": _rate(success[shortest > iterations + 1]),
        "seconds": seconds,
    }
    if won.any():
        point["length_over_shortest"] = float(length[won].sum() / shortest[won].sum())
    return point


def _rate(flags: np.ndarray) -> float | None:
    return float(flags.mean()) if flags.size else None


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few mazes on small grids")
    parser.add_argument("--out", type=Path, default=RESULTS / "maze_sizes.json")
    args = parser.parse_args(argv)

    if args.quick:
        sizes, sweep, num_episodes, sweep_episodes = [6, 8], [], 4, 4
    else:
        sizes, sweep, num_episodes, sweep_episodes = [10, 12, 15, 20], [16, 24, 48, 64], 1000, 200

    trained, network = load_saved_agent("propagation"), saved_network("propagation")
    started = time.perf_counter()
    result = {
        **result_header("maze_sizes", args.quick),
        "trained_on": "random 10 x 10 mazes",
        "trained_iterations": trained.iterations,
        "eval_seed": EVAL_SEED,
        "iterations_swept": sweep,
        "time_limit": "rows x cols",
        "points": [],
    }
    # the trained number of iterations on num_episodes mazes, then the others on fewer
    runs = [(trained.iterations, num_episodes)] + [(k, sweep_episodes) for k in sweep]
    points = [
        (with_iterations(trained, network, k), k, size, greedy, episodes)
        for k, episodes in runs
        for size in sizes
        for greedy in (False, True)
    ]
    return evaluate_and_write(points, result, started, args.out)


def evaluate_and_write(runs, result: dict, started: float, out: Path) -> dict:
    """Evaluate each ``(model, iterations, size, greedy, episodes)`` of ``runs`` with
    :func:`evaluate_point`, add the points to ``result`` and write it as JSON to ``out``."""
    for model, iterations, size, greedy, episodes in runs:
        point = evaluate_point(model, size, greedy, episodes)
        point.update(size=size, iterations=iterations, greedy=greedy)
        result["points"].append(point)
        print(
            f"{size:2d}x{size:<2d} iterations {str(iterations):>4s} "
            f"{'greedy ' if greedy else 'sampled'}: success {point['success_rate']:.3f} "
            f"({point['seconds']:.0f} s)",
            flush=True,
        )
    result["wall_s"] = time.perf_counter() - started
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
