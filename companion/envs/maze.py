"""Helpers for jumanji's ``Maze-v0`` (Bonnet et al., 2024).

A Maze state or observation holds ``walls`` (bool, shape ``(rows, cols)``),
``agent_position`` and ``target_position`` (each a ``Position(row, col)`` of
int32 scalars) and ``action_mask`` (bool, shape ``(4,)``, actions
0 = up, 1 = right, 2 = down, 3 = left).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from companion.envs.jumanji_import import import_jumanji

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

    Args:
        **kwargs: passed to ``jumanji.make("Maze-v0", ...)``, for example
            ``generator=`` or ``time_limit=``.

    Returns:
        A ``jumanji.environments.Maze`` environment (10 x 10 cells and a time
        limit of 100 steps by default).
    """
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
    """Draw one Maze state (or observation) as an RGB image.

    Args:
        state: a single (not batched) Maze ``State`` or ``Observation``.
        argname: the name used for ``state`` in error messages.

    Returns:
        float32 array of shape ``(rows, cols, 3)`` with values in [0, 1]: free
        cells white, walls dark, the target red and the agent green (the agent
        is drawn last, so it hides the target on the step it reaches it).

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
