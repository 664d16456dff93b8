"""The PPO-on-Maze post's mazes: its medium maze and generator (with its draw bug), and the
tasks :mod:`post_ppo` trains and evaluates on.

The post's generator draws the start and the target each with
``randint(0, 2)`` from 3 candidates, so only the first two of each ever appear
(4 of the 9 pairs): :class:`PostMazeGenerator` keeps this bug unless
``draw_bug=False``. Written from the facts in issue 13; nothing here is used by
the book's agents.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from companion.envs import maze as maze_lib

#: The post's medium maze ("#" wall, "S" start candidate, "T" target candidate);
#: it is not the book's :data:`companion.envs.maze.MEDIUM_MAZE`.
POST_MAZE = (
    "S.#..#.##S",
    "..#..#....",
    ".....##.##",
    "####....#T",
    ".....#..#.",
    "..#.##....",
    "#.#.##.###",
    "T.#....#T.",
    "###..#.##.",
    "S....#....",
)
#: Start and target candidates in the order of the post's generator.
POST_STARTS = ((0, 0), (9, 0), (0, 9))
POST_TARGETS = ((3, 9), (7, 8), (7, 0))


class PostMazeGenerator(maze_lib.FixedMazeGenerator):
    """The post's medium maze generator (:data:`POST_MAZE`).

    It draws a start index and a target index, each with
    ``jax.random.randint(key, (), 0, 2)`` when ``draw_bug`` (the post: only the
    first two of :data:`POST_STARTS` and of :data:`POST_TARGETS` ever appear,
    4 pairs), or with ``randint(0, 3)`` when fixed (all 9 pairs).

    Args:
        draw_bug: keep the post's ``randint(0, 2)`` (default True).
    """

    def __init__(self, draw_bug: bool = True):
        walls, starts, targets = maze_lib.parse_maze(POST_MAZE)
        if sorted(starts) != sorted(POST_STARTS) or sorted(targets) != sorted(POST_TARGETS):
            raise AssertionError("POST_MAZE and POST_STARTS/POST_TARGETS disagree")
        super().__init__(walls, POST_STARTS, POST_TARGETS)
        self.num_drawn = 2 if draw_bug else 3

    def __call__(self, key: jax.Array):
        key, start_key, target_key = jax.random.split(key, 3)
        start = self.starts[jax.random.randint(start_key, (), 0, self.num_drawn)]
        target = self.targets[jax.random.randint(target_key, (), 0, self.num_drawn)]
        return maze_lib.State(
            agent_position=maze_lib.Position(row=start[0], col=start[1]),
            target_position=maze_lib.Position(row=target[0], col=target[1]),
            walls=self.walls,
            action_mask=None,
            key=key,
            step_count=jnp.array(0, jnp.int32),
        )


#: Tasks of :func:`make_env`: the post's medium maze as its generator draws it
#: (4 pairs), the same maze with all 9 pairs, the empty maze, the book's medium maze.
TASKS = ("post-medium", "post-medium-9", "empty", "book-medium")

#: The post's budgets (environment steps) per task; the book's maze gets the medium budget.
BUDGETS = {
    "post-medium": 819_200,
    "post-medium-9": 819_200,
    "empty": 81_920,
    "book-medium": 819_200,
}


def make_env(task: str):
    """A jumanji Maze (no auto-reset) for one of :data:`TASKS`.

    Raises:
        ValueError: for an unknown ``task``.
    """
    if task == "post-medium":
        return maze_lib.make_maze(generator=PostMazeGenerator(draw_bug=True))
    if task == "post-medium-9":
        return maze_lib.make_maze(generator=PostMazeGenerator(draw_bug=False))
    if task == "empty":
        return maze_lib.make_maze(generator=maze_lib.EmptyMazeGenerator())
    if task == "book-medium":
        return maze_lib.make_maze_task("medium")
    raise ValueError(f"task: unknown task {task!r}; expected one of {TASKS}")
