"""Helpers for jumanji's ``Maze-v0`` (Bonnet et al., 2024): making, drawing, tasks, episode ends.

States and observations hold ``walls`` bool ``(rows, cols)``, ``agent_position`` and
``target_position`` (int32 ``Position``) and ``action_mask`` bool ``(4,)`` (up, right, down, left).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from companion._validate import positive_int
from companion.envs.grid import (  # noqa: F401  (re-exported: maze.MOVES, maze.shortest_path, ...)
    MOVES,
    _cells,
    _legal_moves,
    check_cell,
    check_walls,
    shortest_path,
    shortest_path_length,
)
from companion.envs.jumanji_import import import_jumanji

import_jumanji()  # before any jumanji submodule: keeps matplotlib's backend

from jumanji.environments.routing.maze.generator import Generator  # noqa: E402
from jumanji.environments.routing.maze.types import Position, State  # noqa: E402

#: Action names of jumanji's Maze, indexed by action id.
ACTION_NAMES = ("up", "right", "down", "left")

#: Colours (RGB in [0, 1]) used by :func:`maze_rgb`.
COLOURS = {
    "free": (1.0, 1.0, 1.0),
    "wall": (0.16, 0.18, 0.24),
    "agent": (0.13, 0.55, 0.13),
    "target": (0.85, 0.2, 0.15),
}


def make_maze(**kwargs: Any):
    """Create jumanji's ``Maze-v0`` without switching matplotlib's backend.

    ``kwargs`` go to ``jumanji.make("Maze-v0", ...)``, for example ``generator=``, ``time_limit=``.

    Returns:
        A ``jumanji.environments.Maze`` (10 x 10 cells, time limit 100 steps by default).

    Raises:
        TypeError, ValueError: for a ``time_limit`` that is not a positive int.
    """
    if "time_limit" in kwargs:
        positive_int(kwargs["time_limit"], "time_limit")
    jumanji = import_jumanji()
    return jumanji.make("Maze-v0", **kwargs)


def _single_maze_arrays(state: Any, argname: str):
    for field in ("walls", "agent_position", "target_position"):
        if not hasattr(state, field):
            raise TypeError(
                f"{argname}: expected a Maze State or Observation with a {field!r} field, "
                f"got {type(state).__name__}"
            )
    walls = np.asarray(state.walls)
    if walls.ndim != 2:
        raise ValueError(
            f"{argname}: walls has shape {walls.shape}, expected (rows, cols). This looks like a "
            "batched (vmapped or scanned) state; split it into single states first, for example "
            "with companion.trees.unstack(state)"
        )
    agent = (int(np.asarray(state.agent_position.row)), int(np.asarray(state.agent_position.col)))
    target = (
        int(np.asarray(state.target_position.row)),
        int(np.asarray(state.target_position.col)),
    )
    return walls, agent, target


def maze_rgb(state: Any, argname: str = "state") -> np.ndarray:
    """Draw one (not batched) Maze ``State`` or ``Observation``, named ``argname`` in errors.

    Returns:
        float32 ``(rows, cols, 3)`` in [0, 1]: free cells white, walls dark, the target red and
        the agent green (drawn last, so it hides the target once there).

    Raises:
        TypeError: if ``state`` has no ``walls``/``agent_position``/``target_position``.
        ValueError: if ``state`` is batched (``walls`` is not 2-D).
    """
    walls, agent, target = _single_maze_arrays(state, argname)
    image = np.empty(walls.shape + (3,), dtype=np.float32)
    image[...] = COLOURS["free"]
    image[walls] = COLOURS["wall"]
    image[target] = COLOURS["target"]
    image[agent] = COLOURS["agent"]
    return image


def observation_image(obs: Any) -> jax.Array:
    """One (not batched) Maze ``Observation`` or ``State`` as a 3-channel image for a CNN.

    Returns:
        float32 ``(3, rows, cols)``: 1.0 on walls (channel 0), on the agent's cell (1) and on the
        target's cell (2), 0.0 elsewhere. ``jax.vmap(observation_image)`` for a batch.

    Raises:
        TypeError: if ``obs`` has no ``walls``, ``agent_position`` or ``target_position``.
        ValueError: if ``obs.walls`` is not 2-D (a batch: use ``jax.vmap``).
    """
    _check_obs(obs, "walls", "agent_position", "target_position")
    walls = jnp.asarray(obs.walls)
    if walls.ndim != 2:
        raise ValueError(
            f"obs: walls has shape {walls.shape}, expected (rows, cols); "
            "for a batch of observations use jax.vmap(observation_image)"
        )
    zeros = jnp.zeros(walls.shape, jnp.float32)
    agent = zeros.at[obs.agent_position.row, obs.agent_position.col].set(1.0)
    target = zeros.at[obs.target_position.row, obs.target_position.col].set(1.0)
    return jnp.stack([walls.astype(jnp.float32), agent, target])


def _check_obs(obs: Any, *fields: str) -> None:
    for field in fields:
        if not hasattr(obs, field):
            raise TypeError(
                f"obs: expected a Maze Observation or State with a {field!r} field, "
                f"got {type(obs).__name__}"
            )


def reached_target(obs: Any) -> jax.Array:
    """True where the agent stands on the target: bool ``(...)``.

    Args:
        obs: a Maze ``Observation`` or ``State``, single or batched (leading axes ``...``).

    Raises:
        TypeError: if ``obs`` has no ``agent_position`` or ``target_position``.
    """
    _check_obs(obs, "agent_position", "target_position")
    return (obs.agent_position.row == obs.target_position.row) & (
        obs.agent_position.col == obs.target_position.col
    )


def no_legal_move(obs: Any) -> jax.Array:
    """True where the agent has no legal move (``obs.action_mask`` all False): bool ``(...)``.

    Args:
        obs: a Maze ``Observation`` or ``State`` (``action_mask`` bool ``(..., 4)``).

    Raises:
        TypeError: if ``obs`` has no ``action_mask``.
    """
    _check_obs(obs, "action_mask")
    return ~jnp.any(obs.action_mask, axis=-1)


def terminated(obs: Any) -> jax.Array:
    """Did the step that led to ``obs`` *terminate* its episode? bool ``(...)``.

    True when the agent reached the target (even on the time limit's last step) or has no legal
    move; a time-out alone is a truncation (:func:`truncated`); jumanji 1.x gives all three ends
    discount 0. ``obs``: the true observation after the step (``timestep.extras["next_obs"]``
    after an auto-reset), single or batched.

    Raises:
        TypeError: if ``obs`` is not a Maze Observation or State.
    """
    _check_obs(obs, "agent_position", "target_position", "action_mask")
    return reached_target(obs) | no_legal_move(obs)


def truncated(obs: Any, done: jax.Array) -> jax.Array:
    """Where an ended step (``done``) was a time-out: bool ``(...)``, ``done & ~terminated(obs)``.

    Args:
        obs: the true observation after the step, single or batched.
        done: bool ``(...)``, ``timestep.last()`` of that step.

    Raises:
        TypeError: if ``obs`` is not a Maze Observation or State.
        ValueError: if ``done``'s shape is not that of the observation's batch.
    """
    ended = terminated(obs)
    done = jnp.asarray(done)
    if done.shape != ended.shape:
        raise ValueError(
            f"done: shape {done.shape} does not match the observations' batch shape {ended.shape}"
        )
    return done & ~ended


class FixedMazeGenerator(Generator):
    """A fixed wall layout; start and target drawn uniformly and independently from given cells.

    Args:
        walls: bool (or 0/1) array-like ``(rows, cols)``, True for a wall.
        starts, targets: non-empty lists of free ``(row, col)`` cells.

    Raises:
        ValueError: ``walls`` not a 2-D 0/1 grid of >= 2 cells; an empty list or a cell not free
            inside it; a start with no legal move; a target some start cannot reach.
    """

    def __init__(
        self, walls: Any, starts: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]
    ):
        walls_np = check_walls(walls)
        start_cells = _cells(starts, "starts", walls_np)
        target_cells = _cells(targets, "targets", walls_np)
        for start in start_cells:
            if not _legal_moves(walls_np, start):
                raise ValueError(
                    f"starts: cell {start} has no legal move (every neighbour is a wall or "
                    "outside the maze); an episode from it could only end at once"
                )
            for target in target_cells:
                if shortest_path_length(walls_np, start, target) < 0:
                    raise ValueError(
                        f"targets: cell {target} cannot be reached from start {start} "
                        "(walls separate them)"
                    )
        super().__init__(num_rows=walls_np.shape[0], num_cols=walls_np.shape[1])
        self.walls = jnp.asarray(walls_np)
        self.starts = jnp.asarray(start_cells, dtype=jnp.int32)
        self.targets = jnp.asarray(target_cells, dtype=jnp.int32)

    def __call__(self, key: jax.Array) -> State:
        key, start_key, target_key = jax.random.split(key, 3)
        start = self.starts[jax.random.randint(start_key, (), 0, self.starts.shape[0])]
        target = self.targets[jax.random.randint(target_key, (), 0, self.targets.shape[0])]
        return State(
            agent_position=Position(row=start[0], col=start[1]),
            target_position=Position(row=target[0], col=target[1]),
            walls=self.walls,
            action_mask=None,
            key=key,
            step_count=jnp.array(0, jnp.int32),
        )


class EmptyMazeGenerator(FixedMazeGenerator):
    """A maze without walls, with one start and one target.

    Defaults: 10 x 10 cells, start (0, 0) in the top-left corner and the target
    in the opposite corner, ``(num_rows - 1, num_cols - 1)`` ((9, 9): 18 moves).

    Raises:
        TypeError, ValueError: for sizes that are not positive ints (and not
            both 1), or a start or target outside the grid.
    """

    def __init__(self, num_rows: int = 10, num_cols: int = 10, start=(0, 0), target=None):
        num_rows = positive_int(num_rows, "num_rows")
        num_cols = positive_int(num_cols, "num_cols")
        if num_rows * num_cols < 2:
            raise ValueError(
                "num_rows, num_cols: a 1 x 1 maze has no room for a start and a target"
            )
        if target is None:
            target = (num_rows - 1, num_cols - 1)
        super().__init__(np.zeros((num_rows, num_cols), bool), [start], [target])


#: A hand-made 10 x 10 maze ("#" wall, "." free) with three start cells (S)
#: and three target cells (T), used by :func:`medium_maze_generator`.
MEDIUM_MAZE = (
    "S..#......",
    ".#.#.####T",
    ".#...#....",
    ".###.#.###",
    ".S.#...#.T",
    "##.###.#.#",
    "...#...#..",
    ".#.#.###..",
    ".#...#...#",
    "S#.#...#.T",
)


def parse_maze(layout: Sequence[str]) -> tuple[np.ndarray, list, list]:
    """Parse rows of ``"#"`` (wall), ``"."`` (free), ``"S"`` (start), ``"T"`` (target).

    Returns:
        ``(walls, starts, targets)``: bool ``(rows, cols)`` and two lists of ``(row, col)``.

    Raises:
        TypeError: if ``layout`` is a single string rather than a sequence of rows.
        ValueError: for an empty layout, rows of different lengths or an unknown character.
    """
    if isinstance(layout, str) or not all(isinstance(row, str) for row in layout):
        raise TypeError("layout: expected a sequence of strings, one per row")
    if len(layout) == 0 or len(layout[0]) == 0:
        raise ValueError("layout: expected at least one non-empty row")
    if len({len(row) for row in layout}) != 1:
        raise ValueError(
            f"layout: every row must have the same length, got lengths "
            f"{[len(row) for row in layout]}"
        )
    walls = np.zeros((len(layout), len(layout[0])), bool)
    starts, targets = [], []
    for r, row in enumerate(layout):
        for c, ch in enumerate(row):
            if ch == "#":
                walls[r, c] = True
            elif ch == "S":
                starts.append((r, c))
            elif ch == "T":
                targets.append((r, c))
            elif ch != ".":
                raise ValueError(f"layout: unknown character {ch!r} at {(r, c)}")
    return walls, starts, targets


def medium_maze_generator() -> FixedMazeGenerator:
    """The fixed :data:`MEDIUM_MAZE` with its 3 starts and 3 targets (9 pairs)."""
    return FixedMazeGenerator(*parse_maze(MEDIUM_MAZE))


#: Names accepted by :func:`make_maze_task`.
TASKS = ("empty", "medium", "random")


def make_maze_task(name: str, time_limit: int = 100):
    """One of the book's three Maze tasks (:data:`TASKS`) as a jumanji Maze environment.

    ``"empty"``: 10 x 10 without walls, (0, 0) to (9, 9); ``"medium"``: :data:`MEDIUM_MAZE`, 3
    starts x 3 targets; ``"random"``: jumanji's default, a new random 10 x 10 maze every episode.
    ``time_limit``: steps before the episode is truncated.

    Raises:
        TypeError: if ``time_limit`` is not an int.
        ValueError: for an unknown ``name``, or a ``time_limit`` that is not positive.
    """
    positive_int(time_limit, "time_limit")
    if name == "empty":
        return make_maze(generator=EmptyMazeGenerator(), time_limit=time_limit)
    if name == "medium":
        return make_maze(generator=medium_maze_generator(), time_limit=time_limit)
    if name == "random":
        return make_maze(time_limit=time_limit)
    raise ValueError(f"name: unknown Maze task {name!r}; expected one of {TASKS}")
