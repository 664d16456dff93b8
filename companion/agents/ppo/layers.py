"""Layers the PPO networks share: orthogonal linear layers, the image check, grid shifts."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from companion._validate import positive_int, positive_ints
from companion.envs import maze as maze_lib


def _orthogonal(key: jax.Array, shape: tuple, scale: float) -> jax.Array:
    return jax.nn.initializers.orthogonal(scale)(key, shape, jnp.float32)


def orthogonal_linear(key: jax.Array, in_size: int, out_size, gain: float) -> eqx.nn.Linear:
    """``eqx.nn.Linear`` with orthogonal float32 ``(out_size, in_size)`` weights and zero bias.

    ``out_size`` is a positive int or ``"scalar"`` (a value head); rows have norm ``gain`` when
    ``out_size <= in_size``. As in Huang et al., 2022, "The 37 implementation details of PPO".

    Raises:
        TypeError: if a size is not an int.
        ValueError: for a non-positive size or gain.
    """
    positive_int(in_size, "in_size")
    if out_size != "scalar":
        positive_int(out_size, "out_size")
    if not gain > 0:
        raise ValueError(f"gain: expected a positive number, got {gain!r}")
    layer_key, weight_key = jax.random.split(key)
    layer = eqx.nn.Linear(in_size, out_size, key=layer_key)
    rows = 1 if out_size == "scalar" else out_size
    return eqx.tree_at(
        lambda lin: (lin.weight, lin.bias),
        layer,
        (_orthogonal(weight_key, (rows, in_size), gain), jnp.zeros(rows)),
    )


def _grid_shape(grid_shape) -> tuple:
    if not isinstance(grid_shape, (tuple, list)) or len(grid_shape) != 2:
        raise ValueError(f"grid_shape: expected (rows, cols), got {grid_shape!r}")
    return positive_ints(grid_shape, "grid_shape")


def _check_image(image: jax.Array, grid_shape: tuple | None = None) -> None:
    """Shape and dtype checks of one network input (at trace time)."""
    shape = jnp.shape(image)
    if len(shape) != 3 or shape[0] != 3:
        hint = "; for a batch use jax.vmap(model)" if len(shape) == 4 and shape[1] == 3 else ""
        raise ValueError(
            f"image: expected one image of shape (3, rows, cols), got shape {shape}{hint}"
        )
    if grid_shape is not None and tuple(shape[1:]) != tuple(grid_shape):
        raise ValueError(
            f"image: shape {shape} does not fit a network built for grid_shape {grid_shape}; "
            f"expected (3, {grid_shape[0]}, {grid_shape[1]})"
        )
    if not jnp.issubdtype(jnp.result_type(image), jnp.floating):
        raise TypeError(
            f"image: expected a float image (companion.envs.maze.observation_image), got dtype "
            f"{jnp.result_type(image)}"
        )


def neighbour(h: jax.Array, direction: int) -> jax.Array:
    """Shift by one move: ``out[r, c] = h[r + dr, c + dc]``, 0 off the grid; ``h``'s shape.

    Args:
        h: array ``(rows, cols, ...)``.
        direction: a Python int, a Maze action id: 0 up, 1 right, 2 down, 3 left.

    Raises:
        ValueError: if ``h`` has fewer than 2 axes or ``direction`` is not 0, 1, 2 or 3.
    """
    if isinstance(direction, bool) or direction not in (0, 1, 2, 3):
        raise ValueError(
            f"direction: expected 0 (up), 1 (right), 2 (down) or 3 (left), got {direction!r}"
        )
    if jnp.ndim(h) < 2:
        raise ValueError(f"h: expected an array (rows, cols, ...), got shape {jnp.shape(h)}")
    rows, cols = h.shape[:2]
    dr, dc = maze_lib.MOVES[direction]
    padded = jnp.pad(h, ((1, 1), (1, 1)) + ((0, 0),) * (h.ndim - 2))
    return padded[1 + dr : 1 + dr + rows, 1 + dc : 1 + dc + cols]
