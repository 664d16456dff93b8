"""Transitions, the TD target, the DQN loss and the target network's update.

The public functions check their arguments; the ``_``-prefixed cores do not, for callers that
have checked them already (DQN's trainer checks its config once).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from companion._validate import number_in, one_of, positive_int


class Transition(NamedTuple):
    """One step of experience.

    Fields: ``obs`` float32 (4,), ``action`` int32 (), ``reward`` float32 (),
    ``next_obs`` float32 (4,) (the true next observation, also at the end of an
    episode), ``terminated`` bool () (True only for a real termination).
    """

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array
    terminated: jax.Array


def td_target(
    reward: jax.Array, terminated: jax.Array, q_next_target: jax.Array, gamma: float
) -> jax.Array:
    """TD target ``r + gamma * (1 - terminated) * max_a Q_target(s', a)``: float (batch,).

    Args:
        reward, terminated: float and bool (batch,); ``terminated`` is False on a truncation.
        q_next_target: float (batch, num_actions), target-network Q-values of the next observations.

    Raises:
        TypeError: if ``gamma`` is not a number.
        ValueError: if the shapes do not fit, or ``gamma`` is outside [0, 1].
    """
    number_in(gamma, "gamma", 0.0, 1.0)
    reward, terminated = jnp.asarray(reward), jnp.asarray(terminated)
    q_next_target = jnp.asarray(q_next_target)
    if q_next_target.ndim != 2:
        raise ValueError(
            f"q_next_target: expected shape (batch, num_actions), got {q_next_target.shape}"
        )
    batch = q_next_target.shape[:1]
    for name, a in (("reward", reward), ("terminated", terminated)):
        if a.shape != batch:
            raise ValueError(
                f"{name}: expected shape {batch} (one per row of q_next_target), got {a.shape}"
            )
    return _td_target(reward, terminated, q_next_target, gamma)


def _td_target(reward, terminated, q_next_target, gamma):
    bootstrap = 1.0 - jnp.asarray(terminated).astype(q_next_target.dtype)
    return reward + gamma * bootstrap * jnp.max(q_next_target, axis=-1)


def dqn_loss(
    params: Any,
    target_params: Any,
    batch: Transition,
    apply_fn,
    gamma: float,
    loss: str = "squared",
    huber_delta: float = 1.0,
    target_fn: Callable | None = None,
) -> tuple[jax.Array, dict]:
    """``(loss, aux)``: loss of Q(s, a) against the TD target, with no gradient through it.

    ``loss`` is a float scalar; ``aux`` holds the float scalars ``q_mean`` and ``td_abs``.

    Args:
        batch: :class:`Transition` with a leading batch axis.
        apply_fn: the Q-network's ``apply(params, obs)``.
        loss: ``"squared"`` (``mean(td_error ** 2) / 2``) or ``"huber"`` (with ``huber_delta``).
        target_fn: ``None`` for :func:`td_target`, or ``target_fn(reward, terminated,
            q_next_online, q_next_target, gamma) -> (batch,)``, e.g. for double DQN.

    Raises:
        TypeError: if ``gamma`` is not a number.
        ValueError: for an unknown ``loss``, ``gamma`` outside [0, 1], or a ``target_fn``
            result that is not (batch,).
    """
    one_of(loss, ("squared", "huber"), "loss")
    number_in(gamma, "gamma", 0.0, 1.0)
    return _dqn_loss(params, target_params, batch, apply_fn, gamma, loss, huber_delta, target_fn)


def _dqn_loss(
    params, target_params, batch, apply_fn, gamma, loss="squared", huber_delta=1.0, target_fn=None
):
    q = apply_fn(params, batch.obs)  # (batch, num_actions)
    q_taken = jnp.take_along_axis(q, batch.action[:, None], axis=-1)[:, 0]
    q_next_target = apply_fn(target_params, batch.next_obs)
    if target_fn is None:
        target = _td_target(batch.reward, batch.terminated, q_next_target, gamma)
    else:
        q_next_online = apply_fn(params, batch.next_obs)
        target = target_fn(batch.reward, batch.terminated, q_next_online, q_next_target, gamma)
        if jnp.shape(target) != q_taken.shape:
            raise ValueError(
                f"target_fn: returned shape {jnp.shape(target)}, expected {q_taken.shape} "
                "(one target per transition)"
            )
    target = jax.lax.stop_gradient(target)
    td_error = q_taken - target
    if loss == "squared":
        value = jnp.mean(optax.l2_loss(td_error))  # 0.5 * td_error ** 2
    else:
        value = jnp.mean(optax.huber_loss(td_error, delta=huber_delta))
    return value, {"q_mean": jnp.mean(q_taken), "td_abs": jnp.mean(jnp.abs(td_error))}


def update_target(params: Any, target_params: Any, updates: jax.Array, period: int, tau: float):
    """Target parameters after ``updates`` gradient steps (same pytree structure as ``params``).

    When ``updates % period == 0`` the target becomes ``tau * params + (1 - tau) * target``,
    else it is unchanged: ``tau = 1`` is the hard copy of Mnih et al. (2015), ``period = 1``
    with small ``tau`` is Polyak averaging. ``updates`` is int32 ().

    Raises:
        TypeError, ValueError: if ``period`` is not a positive int or ``tau`` is outside (0, 1].
    """
    positive_int(period, "period")
    number_in(tau, "tau", 0.0, 1.0, low_open=True)
    return _update_target(params, target_params, updates, period, tau)


def _update_target(params, target_params, updates, period, tau):
    sync = jnp.mod(updates, period) == 0
    moved = optax.incremental_update(params, target_params, tau)
    return jax.tree.map(lambda m, t: jnp.where(sync, m, t), moved, target_params)
