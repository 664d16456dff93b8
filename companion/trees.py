"""Stacking and unstacking pytrees of arrays.

Between one pytree with a leading (time or environment) axis, as ``jax.lax.scan`` and
``jax.vmap`` return, and a Python list of single pytrees, as plotting code wants.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def leading_size(tree: Any, argname: str = "tree") -> int:
    """Return the common size of the leading axis of every leaf of ``tree``.

    Raises:
        ValueError: if ``tree`` has no array leaves, if a leaf is a scalar, or
            if the leaves disagree on the size of their leading axis.
    """
    leaves = jax.tree.leaves(tree)
    if not leaves:
        raise ValueError(f"{argname}: expected a pytree with array leaves, got no leaves")
    sizes = set()
    for leaf in leaves:
        shape = np.shape(leaf)
        if len(shape) == 0:
            raise ValueError(
                f"{argname}: every leaf needs a leading (batch or time) axis, found a scalar leaf"
            )
        sizes.add(shape[0])
    if len(sizes) != 1:
        raise ValueError(
            f"{argname}: leaves disagree on the size of the leading axis: {sorted(sizes)}"
        )
    return sizes.pop()


def unstack(tree: Any) -> list:
    """Split a pytree whose leaves all have shape ``(n, ...)`` into a list of ``n`` pytrees.

    Returns:
        A list of ``n`` pytrees of the same structure; leaf ``i`` of item ``k`` is
        ``leaf_i[k]``, shape ``(...)``.

    Raises:
        ValueError: see :func:`leading_size`.
    """
    n = leading_size(tree)
    return [jax.tree.map(lambda leaf, k=k: leaf[k], tree) for k in range(n)]


def stack(trees: Sequence[Any]) -> Any:
    """Stack a non-empty sequence of pytrees with one structure along a new leading axis.

    The inverse of :func:`unstack`.

    Raises:
        ValueError: if ``trees`` is empty or the pytrees differ in structure.
    """
    if len(trees) == 0:
        raise ValueError("trees: expected a non-empty sequence of pytrees, got an empty one")
    first = jax.tree.structure(trees[0])
    for k, tree in enumerate(trees[1:], start=1):
        if jax.tree.structure(tree) != first:
            raise ValueError(
                f"trees[{k}] has structure {jax.tree.structure(tree)}, expected {first}"
            )
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees)
