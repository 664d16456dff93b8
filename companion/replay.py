"""A uniform replay buffer (Lin, 1992; DQN, Mnih et al., 2015) as pure functions over a pytree.

A ring: each example leaf of shape ``s`` and dtype ``d`` gets ``(capacity, *s)`` of dtype ``d``;
when full, the oldest transitions are overwritten. flashbax (InstaDeep) offers the same and more.
The public functions check their arguments; the ``_``-prefixed cores do not, for callers that
have checked them already (DQN's trainer).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from companion._validate import positive_int, prng_key, runtime_check


class ReplayBuffer(NamedTuple):
    """Buffer state.

    Fields:
        data: pytree like the example transition, each leaf ``(capacity, ...)``.
        position: int32 (), the slot the next transition is written to.
        size: int32 (), the number of filled slots, ``0 <= size <= capacity``.
    """

    data: Any
    position: jax.Array
    size: jax.Array

    @property
    def capacity(self) -> int:
        return jax.tree.leaves(self.data)[0].shape[0]


def replay_init(example: Any, capacity: int) -> ReplayBuffer:
    """An empty buffer (zeros, ``position = size = 0``) for transitions shaped like ``example``.

    Args:
        example: one transition, a pytree of arrays or scalars (only shapes and dtypes are used).
        capacity: number of transitions kept, a positive int.

    Raises:
        TypeError: if ``capacity`` is not an int.
        ValueError: if ``capacity`` is not positive, or ``example`` has no leaves.
    """
    positive_int(capacity, "capacity")
    if not jax.tree.leaves(example):
        raise ValueError("example: expected a transition with at least one array leaf")
    return _replay_init(example, capacity)


def _replay_init(example: Any, capacity: int) -> ReplayBuffer:
    data = jax.tree.map(
        lambda leaf: jnp.zeros((capacity, *jnp.shape(leaf)), jnp.asarray(leaf).dtype), example
    )
    return ReplayBuffer(data=data, position=jnp.zeros((), jnp.int32), size=jnp.zeros((), jnp.int32))


def _check_like(buffer: ReplayBuffer, transitions: Any, batched: bool, argname: str) -> int:
    expected = jax.tree.structure(buffer.data)
    got = jax.tree.structure(transitions)
    if got != expected:
        raise ValueError(f"{argname}: structure {got} differs from the buffer's {expected}")
    sizes = set()
    for path, (store, leaf) in zip(
        [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(buffer.data)],
        zip(jax.tree.leaves(buffer.data), jax.tree.leaves(transitions)),
    ):
        shape = jnp.shape(leaf)
        want = store.shape[1:]
        if batched:
            if len(shape) != len(want) + 1 or tuple(shape[1:]) != tuple(want):
                raise ValueError(
                    f"{argname}{path}: shape {tuple(shape)}, expected (batch, *{tuple(want)})"
                )
            sizes.add(shape[0])
        elif tuple(shape) != tuple(want):
            raise ValueError(f"{argname}{path}: shape {tuple(shape)}, expected {tuple(want)}")
        dtype = jnp.asarray(leaf).dtype if not hasattr(leaf, "dtype") else leaf.dtype
        if jnp.dtype(dtype).kind != jnp.dtype(store.dtype).kind:
            raise ValueError(f"{argname}{path}: dtype {dtype}, expected {store.dtype}")
    if batched:
        if len(sizes) != 1:
            raise ValueError(f"{argname}: leaves disagree on the batch size: {sorted(sizes)}")
        return sizes.pop()
    return 1


def replay_add(buffer: ReplayBuffer, transition: Any) -> ReplayBuffer:
    """Write one transition at ``position`` (overwriting the oldest when full).

    Raises:
        ValueError: if ``transition``'s structure or leaf shapes differ from the
            buffer's example, or a dtype kind differs (float for int, say).
    """
    _check_like(buffer, transition, batched=False, argname="transition")
    batch = jax.tree.map(lambda leaf: jnp.asarray(leaf)[None], transition)
    return _replay_add_batch(buffer, batch)


def replay_add_batch(buffer: ReplayBuffer, transitions: Any) -> ReplayBuffer:
    """Write a batch of ``n`` transitions (leaves ``(n, ...)``) at consecutive slots.

    The slots are ``position, position + 1, ...`` modulo ``capacity``, so a batch
    may cross the end of the ring.

    Raises:
        ValueError: for a structure, shape or dtype mismatch, or ``n > capacity``.
    """
    n = _check_like(buffer, transitions, batched=True, argname="transitions")
    if n > buffer.capacity:
        raise ValueError(
            f"transitions: a batch of {n} does not fit a buffer of capacity {buffer.capacity}"
        )
    return _replay_add_batch(buffer, transitions)


def _replay_add_batch(buffer: ReplayBuffer, transitions: Any) -> ReplayBuffer:
    n, capacity = jax.tree.leaves(transitions)[0].shape[0], buffer.capacity
    slots = (buffer.position + jnp.arange(n)) % capacity
    data = jax.tree.map(
        lambda store, new: store.at[slots].set(new.astype(store.dtype)), buffer.data, transitions
    )
    return ReplayBuffer(
        data=data,
        position=(buffer.position + n) % capacity,
        size=jnp.minimum(buffer.size + n, capacity),
    )


def replay_sample(buffer: ReplayBuffer, key: jax.Array, batch_size: int) -> Any:
    """Sample ``batch_size`` transitions uniformly, with replacement, from the filled slots.

    Returns:
        Pytree like the example transition, each leaf ``(batch_size, ...)``; ``batch_size`` is
        a positive int (static).

    Raises:
        TypeError, ValueError: if ``batch_size`` is not a positive int or ``key`` not one PRNG
            key; ``ValueError`` if the buffer is empty (a run-time check: :mod:`companion.debug`).
    """
    positive_int(batch_size, "batch_size")
    prng_key(key)
    runtime_check(buffer.size <= 0, "replay_sample: the buffer is empty")
    return _replay_sample(buffer, key, batch_size)


def _replay_sample(buffer: ReplayBuffer, key: jax.Array, batch_size: int) -> Any:
    size = buffer.size
    # Slots 0 .. size-1 are the filled ones: the ring fills from slot 0 and
    # never empties, so this holds before and after it wraps around.
    indices = jax.random.randint(key, (batch_size,), 0, size)
    return jax.tree.map(lambda store: store[indices], buffer.data)
