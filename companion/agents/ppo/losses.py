"""Generalised advantage estimation (Schulman et al., 2016) and the PPO loss.

:func:`clipped_surrogate` and :func:`ppo_loss`: the clipped objective of Schulman et al. (2017),
a value loss and an entropy bonus.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from companion._validate import number_in
from companion.agents.ppo.policy import entropy, log_prob, masked_logits


def gae(
    reward_t: jax.Array,
    value_t: jax.Array,
    value_tp1: jax.Array,
    terminated_t: jax.Array,
    done_t: jax.Array,
    gamma: float,
    gae_lambda: float,
) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimation (Schulman et al., 2016): ``(advantages, returns)``.

    ``A_t = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}``, ``delta_t = r_t + gamma *
    (1 - terminated_t) * V(s_{t+1}) - V(s_t)``; ``returns = A_t + value_t``; all float ``(T, ...)``.

    Args:
        reward_t, value_t, value_tp1: float ``(T, ...)``; ``value_tp1`` of the true next obs.
        terminated_t, done_t: bool or float ``(T, ...)``; ``terminated_t`` implies ``done_t``.

    Raises:
        TypeError: non-float rewards or values, or a non-number ``gamma`` or ``gae_lambda``.
        ValueError: differing shapes, ``T = 0`` or no time axis, or ``gamma`` or ``gae_lambda``
            outside [0, 1].
    """
    number_in(gamma, "gamma", 0.0, 1.0)
    number_in(gae_lambda, "gae_lambda", 0.0, 1.0)
    reward_t, value_t, value_tp1 = (jnp.asarray(a) for a in (reward_t, value_t, value_tp1))
    terminated_t, done_t = jnp.asarray(terminated_t), jnp.asarray(done_t)
    for name, a in (("reward_t", reward_t), ("value_t", value_t), ("value_tp1", value_tp1)):
        if not jnp.issubdtype(a.dtype, jnp.floating):
            raise TypeError(f"{name}: expected a floating-point array, got dtype {a.dtype}")
    shapes = {a.shape for a in (reward_t, value_t, value_tp1, terminated_t, done_t)}
    if len(shapes) != 1:
        raise ValueError(
            "reward_t, value_t, value_tp1, terminated_t, done_t: expected one shape (T, ...), "
            f"got {[a.shape for a in (reward_t, value_t, value_tp1, terminated_t, done_t)]}"
        )
    if reward_t.ndim == 0 or reward_t.shape[0] == 0:
        raise ValueError(
            f"reward_t: expected a time axis of length T >= 1 first, got shape {reward_t.shape}"
        )
    not_terminated = 1.0 - terminated_t.astype(value_t.dtype)
    not_done = 1.0 - done_t.astype(value_t.dtype)
    delta_t = reward_t + gamma * not_terminated * value_tp1 - value_t

    def backward(advantage_tp1, inputs):
        delta, not_done = inputs
        advantage = delta + gamma * gae_lambda * not_done * advantage_tp1
        return advantage, advantage

    _, advantages = jax.lax.scan(
        backward, jnp.zeros_like(delta_t[0]), (delta_t, not_done), reverse=True
    )
    return advantages, advantages + value_t


# --------------------------------------------------------------------------------------


def normalise(advantages: jax.Array, eps: float = 1e-8) -> jax.Array:
    """``(a - mean) / (std + eps)``, float, ``advantages``' shape: zero (not nan) if constant.

    Raises:
        ValueError: for an empty ``advantages``.
    """
    if jnp.size(advantages) == 0:
        raise ValueError("advantages: expected at least one advantage, got an empty array")
    return (advantages - advantages.mean()) / (advantages.std() + eps)


class Batch(NamedTuple):
    """A flat minibatch: :class:`Transition` fields ``image``, ``action_mask``,
    ``action``, ``log_prob``, ``value`` with leading axis B, plus
    ``advantage`` and ``target`` (float32 ``(B,)``)."""

    image: jax.Array
    action_mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array


def clipped_surrogate(ratio: jax.Array, advantage: jax.Array, clip_eps: float) -> jax.Array:
    """PPO's clipped objective per sample, to be *maximised* (Schulman et al., 2017).

    ``min(ratio * A, clip(ratio, 1 - clip_eps, 1 + clip_eps) * A)`` elementwise, float ``(...)``;
    ``ratio = pi_new(a|s) / pi_old(a|s)`` and ``advantage`` are float ``(...)`` of one shape.

    Raises:
        TypeError: if ``clip_eps`` is not a number.
        ValueError: if ``clip_eps`` is not in (0, 1] or the shapes differ.
    """
    number_in(clip_eps, "clip_eps", 0.0, 1.0, low_open=True)
    if jnp.shape(ratio) != jnp.shape(advantage):
        raise ValueError(
            f"advantage: shape {jnp.shape(advantage)} differs from ratio shape {jnp.shape(ratio)}"
        )
    return jnp.minimum(
        ratio * advantage, jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantage
    )


def ppo_loss(
    model: Any,
    batch: Batch,
    clip_eps: float = 0.2,
    vf_coef: float = 0.5,
    ent_coef: float = 0.01,
    normalise_advantages: bool = True,
) -> tuple[jax.Array, dict]:
    """PPO loss of one minibatch, to be *minimised*: ``(loss, metrics)``.

    ``loss = -mean(clipped surrogate) + vf_coef * 0.5 * mean((V(s) - target)^2) - ent_coef *
    mean(entropy)``, float32 (), the policy masked by the stored ``batch.action_mask``;
    ``metrics``: scalars ``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl``,
    ``clip_fraction``. ``model``: one image ``(3, rows, cols)`` to ``(logits, value ())``;
    ``batch``: a :class:`Batch` with leading axis B.

    Raises:
        TypeError: if ``batch`` is not a :class:`Batch`.
        ValueError: if the model's values are not ``(B,)`` (e.g. a ``(1,)`` value head), or
            ``clip_eps`` is outside (0, 1].
    """
    if not isinstance(batch, Batch):
        raise TypeError(f"batch: expected a ppo.Batch, got {type(batch).__name__}")
    logits, value = jax.vmap(model)(batch.image)
    if value.shape != batch.target.shape:
        raise ValueError(
            f"model: its values have shape {value.shape}, the targets {batch.target.shape}; "
            "the value head must return a scalar per image (eqx.nn.Linear(..., 'scalar'))"
        )
    logits = masked_logits(logits, batch.action_mask)
    new_log_prob = log_prob(logits, batch.action)
    log_ratio = new_log_prob - batch.log_prob
    ratio = jnp.exp(log_ratio)
    advantage = normalise(batch.advantage) if normalise_advantages else batch.advantage
    policy_loss = -jnp.mean(clipped_surrogate(ratio, advantage, clip_eps))
    value_loss = 0.5 * jnp.mean((value - batch.target) ** 2)
    ent = jnp.mean(entropy(logits))
    loss = policy_loss + vf_coef * value_loss - ent_coef * ent
    metrics = {
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": ent,
        "approx_kl": jnp.mean((ratio - 1.0) - log_ratio),
        "clip_fraction": jnp.mean(jnp.abs(ratio - 1.0) > clip_eps),
    }
    return loss, metrics
