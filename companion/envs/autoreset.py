"""Auto-reset for vectorised environments, with resets drawn from a pool.

jumanji's ``AutoResetWrapper`` resets an environment with
``jax.lax.cond(timestep.last(), reset, keep, ...)``. Under ``jax.vmap`` a
``cond`` whose predicate is batched becomes a ``select``: *both* branches run
for every environment on every step. For Maze, ``reset`` generates a random
maze (a loop over a stack of chambers), so the batched step pays for a new
maze per environment per step, although only a few environments finish.

The pooled scheme generates ``pool_size`` reset states once (for example once
per rollout) and, when an episode ends, copies one of them chosen uniformly at
random. A copy is a cheap gather, so the per-step cost no longer includes
maze generation. The semantics are those of
``AutoResetWrapper(env, next_obs_in_extras=True)``:

- on the step that ends an episode, ``timestep.step_type`` is LAST and
  ``reward`` and ``discount`` come from that step, but ``observation`` (and the
  returned state) already belong to the next episode;
- ``timestep.extras["next_obs"]`` always holds the true observation after the
  step, which is the terminal observation on a LAST step.

The difference: the next episode starts from one of ``pool_size`` states
drawn from the environment's own ``reset`` instead of a brand-new draw, so
within one pool's lifetime a start can repeat. Refresh the pool with a new
key for every rollout to keep episodes independent across rollouts.

PRNG keys: these helpers hand jumanji its keys as raw ``uint32`` data
(:func:`env_reset`), the form jumanji's own examples use, so environment
states carry raw keys. Under ``vmap``, jumanji's maze generator and its
``AutoResetWrapper`` evaluate both branches of a ``lax.cond`` and keep one;
JAX's key-reuse checker (``jax_debug_key_reuse``) cannot tell that only one
branch's key survives and would report a reuse inside jumanji. Keys the
companion itself splits and uses stay typed and checked.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from companion._validate import positive_int, prng_key


class ResetPool(NamedTuple):
    """``pool_size`` reset states and first timesteps, stacked on a leading axis."""

    states: Any
    timesteps: Any


def raw_key(key: jax.Array) -> jax.Array:
    """``key`` as raw ``uint32`` data: ``jax.random.key_data`` of a typed key, a raw key as is.

    Raises:
        TypeError, ValueError: if ``key`` is not one PRNG key.
    """
    prng_key(key)
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return key


def env_reset(env: Any, key: jax.Array) -> tuple[Any, Any]:
    """``env.reset(key)`` with the key handed to jumanji as raw data (see the module's notes).

    Args:
        env: a jumanji environment.
        key: one PRNG key, typed (``jax.random.key``) or raw (``jax.random.PRNGKey``).

    Returns:
        ``(state, timestep)`` as ``env.reset`` returns them; ``state.key`` is raw.
    """
    return env.reset(raw_key(key))


def make_reset_pool(env: Any, key: jax.Array, pool_size: int) -> ResetPool:
    """Draw ``pool_size`` independent resets of ``env``.

    Args:
        env: a jumanji environment (its state must have a ``key`` field).
        key: PRNG key.
        pool_size: number of reset states, a positive ``int`` (static).

    Returns:
        :class:`ResetPool` whose leaves have a leading axis of ``pool_size``.

    Raises:
        ValueError: if ``pool_size`` is not a positive integer.
    """
    positive_int(pool_size, "pool_size")
    states, timesteps = jax.vmap(env_reset, in_axes=(None, 0))(
        env, jax.random.split(key, pool_size)
    )
    return ResetPool(states=states, timesteps=timesteps)


def _with_next_obs(timestep: Any, next_obs: Any) -> Any:
    extras = dict(timestep.extras or {})
    extras["next_obs"] = next_obs
    return timestep.replace(extras=extras)


def reset_with_next_obs(env: Any, key: jax.Array) -> tuple[Any, Any]:
    """``env.reset(key)`` with ``extras["next_obs"]`` set, so that its timestep has
    the same structure as those of :func:`pooled_autoreset_step` (a ``lax.scan``
    carry needs that)."""
    state, timestep = env_reset(env, key)
    return state, _with_next_obs(timestep, timestep.observation)


def pool_reset(env: Any, pool: ResetPool, key: jax.Array) -> tuple[Any, Any]:
    """Start an episode from a pool entry chosen uniformly with ``key``.

    Returns ``(state, timestep)`` like ``env.reset``; the state carries a key
    derived from ``key`` (so later resets differ; the entry's own key is not
    used), and ``timestep.extras`` has ``next_obs`` set to the first observation.

    Raises:
        TypeError: if ``pool`` is not a :class:`ResetPool`.
    """
    _check_pool(pool)
    key, index_key = jax.random.split(key)
    state, timestep = _pool_entry(pool, index_key)
    return state.replace(key=raw_key(key)), _with_next_obs(timestep, timestep.observation)


def _check_pool(pool: Any) -> None:
    if not isinstance(pool, ResetPool):
        raise TypeError(
            f"pool: expected a ResetPool (from make_reset_pool), got {type(pool).__name__}"
        )


def _pool_entry(pool: ResetPool, index_key: jax.Array) -> tuple[Any, Any]:
    """A uniformly chosen entry of ``pool``; its state's ``key`` field is left out (None)."""
    pool_size = jax.tree.leaves(pool.timesteps)[0].shape[0]
    index = jax.random.randint(index_key, (), 0, pool_size)
    state = jax.tree.map(lambda leaf: leaf[index], pool.states.replace(key=None))
    timestep = jax.tree.map(lambda leaf: leaf[index], pool.timesteps)
    return state, timestep


def pooled_autoreset_step(env: Any, pool: ResetPool, state: Any, action: Any) -> tuple[Any, Any]:
    """Step ``env`` and, where the episode ended, start the next one from ``pool``.

    Works on one environment; ``jax.vmap(pooled_autoreset_step, in_axes=(None,
    None, 0, 0))`` (with ``env`` and ``pool`` shared) runs a batch.

    Args:
        env: a jumanji environment whose state has a ``key`` field.
        pool: from :func:`make_reset_pool` for the same environment.
        state: the current (single) state.
        action: the action for ``env.step``.

    Returns:
        ``(state, timestep)`` with the semantics described in this module's
        docstring (those of ``AutoResetWrapper(env, next_obs_in_extras=True)``).

    Raises:
        TypeError: if ``pool`` is not a :class:`ResetPool`.
        ValueError: if ``action`` is not a single action (for a batch, ``vmap``).
    """
    _check_pool(pool)
    if jnp.ndim(action) != 0:
        raise ValueError(
            f"action: expected one action (shape ()), got shape {jnp.shape(action)}; for a batch "
            "use jax.vmap(pooled_autoreset_step, in_axes=(None, None, 0, 0))"
        )
    next_state, timestep = env.step(state, action)
    key, index_key = jax.random.split(next_state.key)
    reset_state, reset_timestep = _pool_entry(pool, index_key)
    done = timestep.last()
    # Both branches get the same new key, so no key is chosen by `where`: a key is
    # either split or carried, never selected between two.
    stepped = next_state.replace(key=None)
    new_state = jax.tree.map(lambda r, k: jnp.where(done, r, k), reset_state, stepped)
    new_state = new_state.replace(key=key)
    observation = jax.tree.map(
        lambda r, k: jnp.where(done, r, k), reset_timestep.observation, timestep.observation
    )
    timestep = _with_next_obs(timestep, timestep.observation).replace(observation=observation)
    return new_state, timestep
