"""The generalising chapter's planning agent (value iteration) on unseen random mazes up to 30 x 30.

The agent (``companion/data/ppo_value_iteration_maze.eqx``, trained by
``tools/train_random_maze.py --agent value_iteration`` on jumanji's random 10 x 10 mazes
only) computes its values with a fixed backup repeated until they converge
(``iterations=None``: ``rows * cols - 1`` backups), so it runs unchanged on a grid of any
size. For each size ``n`` it is evaluated zero-shot on jumanji's random ``n x n`` mazes with a
time limit of ``n * n`` steps, sampled and greedy, on 1,000 mazes up to 20 x 20 and 200 at
30 x 30, the mazes ``benchmarks/maze_sizes.py`` uses (``fold_in(key(10_000), n)``), so the
two agents meet the same mazes. A sweep over a
fixed number of backups (greedy) shows what limits it: a target more than ``iterations + 1``
moves away has not reached the agent's cell and its neighbours, and more backups than
that change nothing.

Each point has the fields of ``maze_sizes.py`` (success rate, mean length and shortest path
of the successes and their ratio, success within and beyond reach).

    python benchmarks/planning_sizes.py            # about 4 minutes on 2 CPU cores
    python benchmarks/planning_sizes.py --quick    # a few mazes on small grids (seconds)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from maze_sizes import EVAL_SEED, evaluate_and_write, with_iterations
from measure import result_header

from companion.agents.ppo.saved import load_saved_agent, saved_network

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few mazes on small grids")
    parser.add_argument("--out", type=Path, default=RESULTS / "planning_sizes.json")
    args = parser.parse_args(argv)

    if args.quick:
        sizes, sweep_sizes, sweep, episodes, sweep_episodes = [6, 8], [6], [2, 4], 4, 4
    else:
        sizes, sweep_sizes, sweep = [10, 12, 15, 20, 30], [10, 15, 20], [4, 8, 16, 32, 64]
        episodes, sweep_episodes = 1000, 200

    # backups until the values settle (the trained 99 cover 10 x 10 mazes only)
    trained = load_saved_agent("value_iteration", iterations=None)
    network = saved_network("value_iteration")
    started = time.perf_counter()
    result = {
        **result_header("planning_sizes", args.quick),
        "trained_on": "random 10 x 10 mazes",
        "trained_iterations": "rows x cols - 1 (to convergence)",
        "eval_seed": EVAL_SEED,
        "iterations_swept": sweep,
        "time_limit": "rows x cols",
        "points": [],
    }
    runs = [
        (trained, None, s, g, episodes if s <= 20 else sweep_episodes)
        for s in sizes
        for g in (False, True)
    ]
    runs += [
        (with_iterations(trained, network, k), k, s, True, sweep_episodes)
        for s in sweep_sizes
        for k in sweep
    ]
    return evaluate_and_write(runs, result, started, args.out)


if __name__ == "__main__":
    main()
