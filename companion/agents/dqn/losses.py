"""Transitions, the TD target, the DQN loss and the target network's update."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

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
    """The one-step TD target ``r + gamma * (1 - terminated) * max_a Q_target(s', a)``.

    Args:
        reward: float (batch,).
        terminated: bool (batch,); True only when the episode really ended
            (a truncation must be False here, so that the target bootstraps).
        q_next_target: float (batch, num_actions), target-network Q-values of
            the true next observations.
        gamma: discount in [0, 1].

    Returns:
        float (batch,).

    Raises:
        ValueError: if the shapes do not fit (batch,), (batch,), (batch,
            num_actions), or ``gamma`` is outside [0, 1].
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
    bootstrap = 1.0 - terminated.astype(q_next_target.dtype)
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
    """Loss between Q(s, a) and the TD target; no gradient flows through the target.

    Args:
        params, target_params: online and target network parameters.
        batch: :class:`Transition` with a leading batch axis.
        apply_fn: the Q-network's ``apply(params, obs)``.
        gamma: discount.
        loss: ``"squared"`` for ``mean(td_error ** 2) / 2`` or ``"huber"`` for
            ``mean(huber(td_error, huber_delta))``; they agree for errors below
            ``huber_delta``. Huber bounds each sample's gradient by
            ``huber_delta``, which also weakens the rare, large corrections
            that terminal transitions make.
        huber_delta: the Huber loss's threshold.
        target_fn: ``None`` for the DQN target (:func:`td_target`), or a function
            ``target_fn(reward, terminated, q_next_online, q_next_target, gamma)
            -> (batch,)`` that computes another one from the online and the
            target network's Q-values of the next observations (both
            ``(batch, num_actions)``), for example double DQN's.

    Returns:
        ``(loss, aux)`` with ``aux = {"q_mean": ..., "td_abs": ...}`` for diagnostics.

    Raises:
        ValueError: for an unknown ``loss``.
    """
    one_of(loss, ("squared", "huber"), "loss")
    q = apply_fn(params, batch.obs)  # (batch, num_actions)
    q_taken = jnp.take_along_axis(q, batch.action[:, None], axis=-1)[:, 0]
    q_next_target = apply_fn(target_params, batch.next_obs)
    if target_fn is None:
        target = td_target(batch.reward, batch.terminated, q_next_target, gamma)
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
    """Target network after ``updates`` gradient steps.

    Every ``period`` steps the target moves to ``tau * params + (1 - tau) * target``:
    with ``tau = 1`` that is the periodic hard copy of Mnih et al. (2015), with
    ``period = 1`` and a small ``tau`` it is Polyak averaging. Between those steps
    the target does not change.

    Args:
        params, target_params: pytrees of the same structure.
        updates: int32 (), gradient steps done so far.
        period: gradient steps between target updates, a positive int.
        tau: in (0, 1].

    Raises:
        TypeError, ValueError: if ``period`` is not a positive int or ``tau`` is
            outside (0, 1].
    """
    positive_int(period, "period")
    number_in(tau, "tau", 0.0, 1.0, low_open=True)
    sync = jnp.mod(updates, period) == 0
    moved = optax.incremental_update(params, target_params, tau)
    return jax.tree.map(lambda m, t: jnp.where(sync, m, t), moved, target_params)
