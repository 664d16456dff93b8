"""Auto-reset for vmapped jumanji environments, restarting from a pool of pre-drawn resets.

``AutoResetWrapper(env, next_obs_in_extras=True)``'s semantics without a maze generated per step;
starts repeat within one pool, so draw a new pool (new key) for every rollout.

The public functions check their arguments (``env``: a jumanji Maze without wrappers); the
``_``-prefixed cores do not, for callers that have checked them already (the trainers).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from companion._validate import maze_env, positive_int, prng_key


class ResetPool(NamedTuple):
    """``pool_size`` reset states and first timesteps, stacked on a leading axis."""

    states: Any
    timesteps: Any


def _raw_key(key: jax.Array) -> jax.Array:
    """``key`` as raw ``uint32`` data: ``jax.random.key_data`` of a typed key, a raw key as is."""
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return key


def env_reset(env: Any, key: jax.Array) -> tuple[Any, Any]:
    """``env.reset(key)`` with ``key`` (typed or raw) handed to jumanji as raw ``uint32`` data.

    A typed key would trip ``jax_debug_key_reuse`` in jumanji's ``lax.cond`` under ``vmap``.
    ``env``: any jumanji environment, wrappers included.

    Returns:
        ``(state, timestep)`` as ``env.reset`` returns them; ``state.key`` is raw.

    Raises:
        TypeError, ValueError: if ``key`` is not one PRNG key.
    """
    return _env_reset(env, prng_key(key))


def _env_reset(env: Any, key: jax.Array) -> tuple[Any, Any]:
    return env.reset(_raw_key(key))


def make_reset_pool(env: Any, key: jax.Array, pool_size: int) -> ResetPool:
    """Draw ``pool_size`` (static int) independent resets of the Maze ``env`` with ``key``.

    Returns:
        :class:`ResetPool` whose leaves have a leading axis of ``pool_size``.

    Raises:
        TypeError: if ``env`` is not a jumanji Maze without wrappers, ``pool_size`` not an int
            or ``key`` not a PRNG key.
        ValueError: if ``pool_size`` is not positive, or ``key`` a batch of keys.
    """
    maze_env(env)
    positive_int(pool_size, "pool_size")
    return _make_reset_pool(env, prng_key(key), pool_size)


def _make_reset_pool(env: Any, key: jax.Array, pool_size: int) -> ResetPool:
    states, timesteps = jax.vmap(_env_reset, in_axes=(None, 0))(
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
    carry needs that).

    Raises:
        TypeError: if ``env`` is not a jumanji Maze without wrappers.
        TypeError, ValueError: if ``key`` is not one PRNG key.
    """
    maze_env(env)
    return _reset_with_next_obs(env, prng_key(key))


def _reset_with_next_obs(env: Any, key: jax.Array) -> tuple[Any, Any]:
    state, timestep = _env_reset(env, key)
    return state, _with_next_obs(timestep, timestep.observation)


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
    """Step one environment; where its episode ended, start the next one from ``pool``.

    Batch: ``jax.vmap(pooled_autoreset_step, in_axes=(None, None, 0, 0))``. Returns ``(state,
    timestep)``: on a LAST step ``reward`` and ``discount`` are the step's, but ``observation``
    and ``state`` the next episode's; ``extras["next_obs"]`` is always the true next observation.

    Raises:
        TypeError: if ``env`` is not a jumanji Maze without wrappers, or ``pool`` not a
            :class:`ResetPool`.
        ValueError: if ``action`` is not a single action (shape ``()``).
    """
    maze_env(env)
    _check_pool(pool)
    if jnp.ndim(action) != 0:
        raise ValueError(
            f"action: expected one action (shape ()), got shape {jnp.shape(action)}; for a batch "
            "use jax.vmap(pooled_autoreset_step, in_axes=(None, None, 0, 0))"
        )
    return _pooled_autoreset_step(env, pool, state, action)


def _pooled_autoreset_step(env: Any, pool: ResetPool, state: Any, action: Any) -> tuple[Any, Any]:
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
