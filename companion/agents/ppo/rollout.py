"""The PPO rollout: ``num_steps`` steps of a batch of Maze environments in one ``lax.scan``.

Ended episodes restart from a reset pool (:mod:`companion.envs.autoreset`) or through
jumanji's ``AutoResetWrapper``; each transition stores V(s_{t+1}) for bootstrapping.
:func:`rollout` and :func:`next_values` check their arguments; ``_rollout`` and ``_next_values``
are their unchecked cores, for the trainers (which check ``config`` and ``env`` once).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from companion._validate import maze_env, positive_int, prng_key
from companion.agents.ppo.policy import log_prob, masked_logits
from companion.envs import maze as maze_lib
from companion.envs.autoreset import ResetPool, _pooled_autoreset_step
from companion.envs.maze import reached_target

from jumanji.wrappers import AutoResetWrapper  # noqa: E402  (after maze: it sets up jumanji)

__all__ = ["Transition", "next_values", "reached_target", "rollout"]


class Transition(NamedTuple):
    """A batch of steps; leaves have leading axes ``(num_steps, num_envs)``.

    Fields:
        image: bool ``(..., 3, rows, cols)``, observation image at t; ``.astype(float32)`` to use.
        action_mask: bool ``(..., 4)``, the mask the action was picked with (reused in the update).
        action: int32 ``(...)``.
        log_prob: float32 ``(...)``, log pi_old(a_t | s_t).
        value: float32 ``(...)``, V_old(s_t).
        reward: float32 ``(...)``.
        terminated: bool ``(...)``, target reached or no legal move (no bootstrap).
        done: bool ``(...)``, terminated or truncated (``timestep.last()``).
        next_value: float32 ``(...)``, V_old(s_{t+1}) (see :func:`next_values`).
        step_count: int32 ``(...)``, steps of the episode after step t (its length when ``done``).
    """

    image: jax.Array
    action_mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    terminated: jax.Array
    done: jax.Array
    next_value: jax.Array
    step_count: jax.Array


def rollout(
    model: Any,
    env: Any,
    pool: Any,
    env_state: Any,
    timestep: Any,
    key: jax.Array,
    num_steps: int,
) -> tuple[Any, Any, Transition]:
    """Run ``num_steps`` steps of Maze environments: ``(env_state, timestep, transitions)``.

    Args:
        model: one float32 image ``(3, rows, cols)`` to ``(logits (4,), value ())``.
        env: a jumanji Maze without wrappers (it is wrapped here when ``pool`` is ``None``).
        pool: a reset pool (:func:`companion.envs.autoreset.make_reset_pool`), or ``None`` for
            ``AutoResetWrapper(env, next_obs_in_extras=True)`` (a fresh reset on every step).
        env_state, timestep: batched over ``num_envs``, with ``timestep.extras["next_obs"]``.
        num_steps: static, a positive int; ``transitions`` leaves: ``(num_steps, num_envs, ...)``.

    Raises:
        TypeError: if ``env`` is not a jumanji Maze without wrappers (a wrapped one would hide
            the episode ends), or ``pool`` neither ``None`` nor a ``ResetPool``.
        TypeError, ValueError: bad ``num_steps`` or ``key``, or no ``extras["next_obs"]`` in
            ``timestep`` (reset with :func:`companion.envs.autoreset.reset_with_next_obs`).
    """
    maze_env(env)
    if pool is not None and not isinstance(pool, ResetPool):
        raise TypeError(
            f"pool: expected None or a ResetPool (from make_reset_pool), got {type(pool).__name__}"
        )
    positive_int(num_steps, "num_steps")
    prng_key(key)
    if "next_obs" not in (getattr(timestep, "extras", None) or {}):
        raise ValueError(
            "timestep: expected extras['next_obs'] (the rollout's carry needs it); reset with "
            "jax.vmap(companion.envs.autoreset.reset_with_next_obs, in_axes=(None, 0))"
        )
    return _rollout(model, env, pool, env_state, timestep, key, num_steps)


def _rollout(model, env, pool, env_state, timestep, key, num_steps):
    if pool is None:
        step_env = jax.vmap(AutoResetWrapper(env, next_obs_in_extras=True).step)
    else:
        step_env = jax.vmap(functools.partial(_pooled_autoreset_step, env, pool))
    images = jax.vmap(maze_lib.observation_image)

    def step(carry, _):
        env_state, timestep, key = carry
        key, key_t = jax.random.split(key)
        obs_t = timestep.observation
        image_t = images(obs_t)
        logits_t, value_t = jax.vmap(model)(image_t)
        logits_t = masked_logits(logits_t, obs_t.action_mask)
        action_t = jax.random.categorical(key_t, logits_t).astype(jnp.int32)
        env_state, timestep = step_env(env_state, action_t)
        next_obs = timestep.extras["next_obs"]
        transition = Transition(
            image=image_t.astype(jnp.bool_),
            action_mask=obs_t.action_mask,
            action=action_t,
            log_prob=log_prob(logits_t, action_t),
            value=value_t,
            reward=timestep.reward.astype(jnp.float32),
            terminated=maze_lib.terminated(next_obs) & timestep.last(),
            done=timestep.last(),
            next_value=jnp.zeros_like(value_t),  # filled in after the scan
            step_count=next_obs.step_count.astype(jnp.int32),
        )
        return (env_state, timestep, key), (transition, next_obs)

    # The key is carried and split at every step (not split into num_steps keys up front
    # and scanned over): JAX's key-reuse checker accepts both, but rejects the second form
    # under vmap (jax 0.10), and training is vmapped over seeds.
    (env_state, timestep, _), (transitions, next_obs) = jax.lax.scan(
        step, (env_state, timestep, key), None, length=num_steps
    )
    next_value = _next_values(model, transitions, next_obs, timestep.observation, env)
    return env_state, timestep, transitions._replace(next_value=next_value)


def next_values(
    model: Any, transitions: Transition, next_obs: Any, last_obs: Any, env: Any
) -> jax.Array:
    """V(s_{t+1}) of every step of a rollout, float32 ``(T, N)``, for GAE (Schulman et al., 2016).

    Within an episode the next step's value; on a truncation the model's value of the true final
    observation (and of ``last_obs`` after step T - 1), in one pass; 0 on a termination.

    Args:
        transitions: a rollout's :class:`Transition`, leaves ``(T, N, ...)``.
        next_obs: the Maze observations after each step, leaves ``(T, N, ...)``.
        last_obs: the Maze observations after step T - 1, leaves ``(N, ...)``.
        env: the jumanji Maze of the rollout (its ``time_limit`` bounds the truncations).

    Raises:
        TypeError: if ``transitions`` is not a :class:`Transition`, or ``env`` not a Maze.
        ValueError: if ``transitions.value`` is not ``(T, N)`` or ``last_obs`` not N observations.
    """
    if not isinstance(transitions, Transition):
        raise TypeError(f"transitions: expected a ppo.Transition, got {type(transitions).__name__}")
    if jnp.ndim(transitions.value) != 2:
        raise ValueError(
            f"transitions: expected leaves (T, N, ...), got value of shape "
            f"{jnp.shape(transitions.value)}"
        )
    num_envs = transitions.value.shape[1]
    walls = jnp.shape(last_obs.walls) if hasattr(last_obs, "walls") else None
    if walls is None or len(walls) != 3 or walls[0] != num_envs:
        raise ValueError(
            f"last_obs: expected {num_envs} Maze observations (walls of shape ({num_envs}, "
            "rows, cols)), got " + (f"walls of shape {walls}" if walls else type(last_obs).__name__)
        )
    maze_env(env)
    return _next_values(model, transitions, next_obs, last_obs, env)


def _next_values(model, transitions, next_obs, last_obs, env):
    num_steps, num_envs = transitions.value.shape
    truncated = transitions.done & ~transitions.terminated
    time_limit = env.time_limit
    most = num_envs * min(num_steps, -(-num_steps // time_limit))
    (where,) = jnp.nonzero(truncated.reshape(-1), size=most, fill_value=0)
    final_obs = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:])[where], next_obs)
    both = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), final_obs, last_obs)
    _, values = jax.vmap(model)(jax.vmap(maze_lib.observation_image)(both))
    value_final, value_last = values[:most], values[most:]
    value_final = jnp.zeros(num_steps * num_envs).at[where].set(value_final)
    value_tp1 = jnp.concatenate([transitions.value[1:], value_last[None]])
    value_tp1 = jnp.where(truncated, value_final.reshape(num_steps, num_envs), value_tp1)
    return jnp.where(transitions.terminated, 0.0, value_tp1)
