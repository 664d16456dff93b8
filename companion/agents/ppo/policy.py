"""A categorical policy over the *legal* actions only (illegal logits set to ``-inf``).

Log-probabilities, entropy and their gradients stay finite. A row without a legal action is
an error, never a silent ``nan`` (inside a compiled program under :func:`companion.debug.checked`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from companion._validate import runtime_check

NO_LEGAL_ACTION = (
    "action_mask: a row has no legal action (every entry False); a policy needs at least one "
    "action to choose from"
)


def masked_logits(logits: jax.Array, action_mask: jax.Array) -> jax.Array:
    """``logits`` where ``action_mask`` is True, ``-inf`` elsewhere: float ``(..., num_actions)``.

    ``action_mask``: bool, ``logits``' shape, True for a legal action, at least one per row.

    Raises:
        TypeError: if ``action_mask`` is not boolean or ``logits`` not floating point.
        ValueError: if the shapes differ or are ``()``, or a row has no legal action (traced: under
            :func:`companion.debug.checked`).
    """
    logits, action_mask = jnp.asarray(logits), jnp.asarray(action_mask)
    if action_mask.dtype != jnp.bool_:
        raise TypeError(f"action_mask: expected dtype bool, got {action_mask.dtype}")
    if not jnp.issubdtype(logits.dtype, jnp.floating):
        raise TypeError(f"logits: expected a floating-point array, got dtype {logits.dtype}")
    if logits.shape != action_mask.shape or logits.ndim == 0:
        raise ValueError(
            f"action_mask: shape {action_mask.shape} differs from logits shape {logits.shape}; "
            "expected both (..., num_actions)"
        )
    runtime_check(~jnp.any(action_mask, axis=-1), NO_LEGAL_ACTION)
    return jnp.where(action_mask, logits, -jnp.inf)


def log_prob(logits: jax.Array, action: jax.Array) -> jax.Array:
    """Log-probability of ``action`` under ``softmax(logits)``: float ``(...)``.

    ``logits`` float ``(..., num_actions)`` may hold ``-inf`` (masked; log-probability ``-inf``);
    ``action`` int ``(...)``. Value and gradient are finite for actions with a finite logit.

    Raises:
        TypeError: if ``action`` is not of an integer dtype.
        ValueError: if ``action``'s shape is not ``logits.shape[:-1]``, or an action is
            outside ``0 .. num_actions - 1`` (traced: under :func:`companion.debug.checked`).
    """
    logits, action = jnp.asarray(logits), jnp.asarray(action)
    if not jnp.issubdtype(action.dtype, jnp.integer):
        raise TypeError(f"action: expected an integer dtype, got {action.dtype}")
    if logits.ndim == 0 or action.shape != logits.shape[:-1]:
        raise ValueError(
            f"action: shape {action.shape} does not match logits shape {logits.shape}; "
            "expected action (...) for logits (..., num_actions)"
        )
    num_actions = logits.shape[-1]
    runtime_check(
        (action < 0) | (action >= num_actions),
        f"action: expected values in 0 .. {num_actions - 1} (one per logit)",
    )
    logp = jax.nn.log_softmax(logits, axis=-1)
    return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def entropy(logits: jax.Array) -> jax.Array:
    """Entropy (nats) of ``softmax(logits)``, float ``(...)``, ignoring actions with logit ``-inf``.

    ``logits``: float ``(..., num_actions)``, at least one finite entry per row. Masked actions
    add ``0 * log 0 = 0``; value and gradient stay finite (no ``nan``).

    Raises:
        ValueError: if a row has no finite logit (traced: under :func:`companion.debug.checked`).
    """
    logits = jnp.asarray(logits)
    legal = jnp.isfinite(logits)
    runtime_check(~jnp.any(legal, axis=-1), "logits: a row has no finite logit (no legal action)")
    logp = jax.nn.log_softmax(logits, axis=-1)
    safe_logp = jnp.where(legal, logp, 0.0)
    return -jnp.sum(jnp.exp(safe_logp) * safe_logp * legal, axis=-1)
