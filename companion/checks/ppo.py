"""Self-checks for the exercises of the PPO chapter."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.core import (
    check_shape,
    close,
    fail,
    name_mistake,
    passed,
    require_function,
    run_answer,
)


def _gae_reference(reward, value, value_tp1, terminated, done, gamma, lam, cut=True, boot=True):
    """GAE by a loop; ``cut`` False (no cut) or "terminated" and ``boot`` False plant mistakes."""
    adv, next_adv = np.zeros(len(reward)), 0.0
    cut_by = terminated if cut == "terminated" else done
    for t in reversed(range(len(reward))):
        not_term = 1.0 - float(terminated[t]) if boot else 1.0 - float(done[t])
        delta = reward[t] + gamma * not_term * value_tp1[t] - value[t]
        next_adv = delta + gamma * lam * ((1.0 - float(cut_by[t])) if cut else 1.0) * next_adv
        adv[t] = next_adv
    return adv


def _dual_clip_reference(ratio, adv, eps, c, low=None, dual="max", negative_only=True, pick=min):
    low = 1.0 - eps if low is None else low
    ratio, adv = np.asarray(ratio, np.float64), np.asarray(adv, np.float64)
    unclipped, clipped = ratio * adv, np.clip(ratio, low, 1.0 + eps) * adv
    standard = np.minimum(unclipped, clipped) if pick is min else np.maximum(unclipped, clipped)
    bounded = np.maximum(standard, c * adv) if dual == "max" else np.minimum(standard, c * adv)
    return np.where((adv < 0) | (not negative_only), bounded, standard)


def check_dual_clip_objective(dual_clip_objective: Callable) -> None:
    """Check ``dual_clip_objective(ratio, advantage, clip_eps, dual_clip)``, to be maximised.

    Dual-clip PPO (Ye et al., 2020): PPO's clipped objective
    ``min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A)``, and where ``A < 0``
    also bounded below by ``dual_clip * A`` (``dual_clip > 1``), so that a
    huge ratio on a bad action cannot make the objective arbitrarily negative.
    ``ratio`` and ``advantage`` are float32 arrays of one shape (any, for
    example ``(T, N)``); the answer is float32 of that shape, elementwise.

    Raises:
        CheckFailed: naming the mistake (the sign flipped, ``clip(ratio, eps,
            1 + eps)``, max instead of min, no dual clip, the dual clip on
            positive advantages or with min, nothing clipped, wrong shape).
    """
    require_function(dual_clip_objective, "dual_clip_objective")
    ratio = np.array([[1.5, 0.5, 1.1, 0.9], [1.5, 0.5, 1.1, 0.9], [5.0, 4.0, 0.3, 1.0]], np.float32)
    adv = np.array(
        [[1.0, 1.0, 2.0, 2.0], [-1.0, -1.0, -2.0, -2.0], [-1.0, -0.5, -3.0, 0.5]], np.float32
    )
    eps, c = 0.2, 3.0
    got = run_answer(
        dual_clip_objective,
        jnp.asarray(ratio),
        jnp.asarray(adv),
        eps,
        c,
        call="dual_clip_objective(ratio, advantage, 0.2, 3.0)",
        hint="ratio and advantage are float32 (3, 4); the answer is elementwise",
    )
    got = check_shape(
        got, (3, 4), "dual_clip_objective(...) for ratio of shape (3, 4)", hint="Elementwise."
    )
    expected = _dual_clip_reference(ratio, adv, eps, c)
    if close(got, expected):
        passed("dual_clip_objective: PPO's clip, and dual_clip * A as a floor for A < 0")
        return
    name_mistake(
        got,
        {
            "the sign is flipped: return the objective to maximise, not the loss (-objective)": (
                -expected
            ),
            "the ratio is clipped to [eps, 1 + eps]; the range is [1 - eps, 1 + eps]": (
                _dual_clip_reference(ratio, adv, eps, c, low=eps)
            ),
            "it takes the max of ratio * A and the clipped term; PPO takes the min": (
                _dual_clip_reference(ratio, adv, eps, c, pick=max)
            ),
            "this is PPO's clipped objective without the dual clip: where A < 0, take "
            "max(objective, dual_clip * A)": _dual_clip_reference(ratio, adv, eps, np.inf),
            "the dual clip is applied to positive advantages too; it bounds only A < 0": (
                _dual_clip_reference(ratio, adv, eps, c, negative_only=False)
            ),
            "the dual clip takes the min with dual_clip * A; it is a floor: the max": (
                _dual_clip_reference(ratio, adv, eps, c, dual="min")
            ),
            "nothing is clipped: clip the ratio to [1 - eps, 1 + eps]": ratio * adv,
        },
        "dual_clip_objective",
    )
    fail(f"dual_clip_objective gives {np.round(got, 4)}, expected {np.round(expected, 4)}")


def _softmax(x, axis):
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def check_epsilon_masked_probs(epsilon_masked_probs: Callable) -> None:
    """Check ``epsilon_masked_probs(logits, mask, epsilon)``: an ε-mixture over legal actions.

    ``logits`` float32 ``(..., num_actions)``, ``mask`` bool of the same shape
    with at least one legal action per row, ``epsilon`` a float in [0, 1]. The
    answer, float32 ``(..., num_actions)``, is
    ``(1 - epsilon) * softmax(masked logits) + epsilon / (legal actions in the row)``
    on the legal actions and exactly 0 on the illegal ones, each row summing to
    1; the gradient with respect to ``logits`` must be finite.

    Raises:
        CheckFailed: naming the mistake (a softmax or a count over the wrong
            axis, illegal logits filled with 1.0 or 0.0, epsilon spread over
            illegal actions or divided by the number of actions, epsilon
            ignored or swapped, no renormalisation, a nan gradient).
    """
    require_function(epsilon_masked_probs, "epsilon_masked_probs")
    logits = np.random.default_rng(7).normal(size=(2, 3, 4)).astype(np.float32)
    mask = np.array(
        [
            [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]],
            [[0, 1, 1, 1], [0, 0, 1, 1], [1, 0, 1, 0]],
        ],
        bool,
    )  # 1, 2, 4, 3, 2 and 2 legal actions
    eps = 0.1
    call = "epsilon_masked_probs(logits, mask, 0.1)"
    got = run_answer(
        epsilon_masked_probs,
        jnp.asarray(logits),
        jnp.asarray(mask),
        eps,
        call=call,
        hint="logits float32 (2, 3, 4), mask bool (2, 3, 4): leading axes (T, N), actions last",
    )
    got = check_shape(got, (2, 3, 4), f"{call} for logits of shape (2, 3, 4)")
    count = mask.sum(-1, keepdims=True)
    masked = np.where(mask, logits, -np.inf)
    expected = (1 - eps) * _softmax(masked, -1) + eps * mask / count
    if not close(got, expected):

        def mix(p, spread=None):
            return (1 - eps) * p + eps * (mask / count if spread is None else spread)

        name_mistake(
            got,
            {
                "the softmax runs over axis 0 (time); normalise over the actions, axis=-1": mix(
                    _softmax(masked, 0)
                ),
                "illegal actions get logit 1.0, so they keep probability (the misplaced "
                "parenthesis bug): use -inf": mix(_softmax(np.where(mask, logits, 1.0), -1)),
                "illegal actions get logit 0.0, which still has probability exp(0) / Z: "
                "use -inf": mix(_softmax(np.where(mask, logits, 0.0), -1)),
                "epsilon is spread over all actions, illegal ones too: spread it over the "
                "legal actions of each row only": mix(_softmax(masked, -1), 1 / 4),
                "epsilon is divided by the number of actions; divide it by the number of "
                "legal actions in each row (mask.sum(axis=-1, keepdims=True))": mix(
                    _softmax(masked, -1), mask / 4
                ),
                "the legal actions are counted over the whole batch; count them per row "
                "(mask.sum(axis=-1, keepdims=True))": mix(_softmax(masked, -1), mask / mask.sum()),
                "epsilon is ignored: mix in epsilon, spread uniformly over the legal actions": (
                    _softmax(masked, -1)
                ),
                "epsilon and 1 - epsilon are swapped: the softmax gets weight 1 - epsilon": (
                    eps * _softmax(masked, -1) + (1 - eps) * mask / count
                ),
                "the probabilities are multiplied by the mask but not renormalised": mix(
                    _softmax(logits, -1) * mask
                ),
            },
            "epsilon_masked_probs",
        )
        if np.any(got[~mask] != 0):
            fail("epsilon_masked_probs gives illegal actions probability > 0; they must get 0")
        if not np.allclose(got.sum(-1), 1, atol=1e-5):
            fail(
                f"epsilon_masked_probs: the rows (last axis) sum to {np.round(got.sum(-1), 4)}, "
                "not 1; the softmax and the count of legal actions run over the last axis"
            )
        fail(f"{call} gives {np.round(got, 4)}, expected {np.round(expected, 4)}")
    one = run_answer(
        epsilon_masked_probs,
        jnp.asarray(logits[0, 1]),
        jnp.asarray(mask[0, 1]),
        eps,
        call="epsilon_masked_probs on one row of shape (4,)",
    )
    one = check_shape(one, (4,), "epsilon_masked_probs for one row of shape (4,)")
    if not close(one, expected[0, 1]):
        fail("epsilon_masked_probs on one row (4,) differs from the same row inside a batch")
    first_legal = jnp.asarray(np.argmax(mask, -1)[..., None])

    def log_p_first_legal(x):
        p = epsilon_masked_probs(x, jnp.asarray(mask), eps)
        return jnp.sum(jnp.log(jnp.take_along_axis(p, first_legal, axis=-1)))

    grad = np.asarray(jax.grad(log_p_first_legal)(jnp.asarray(logits)))
    if not np.all(np.isfinite(grad)):
        fail(
            "epsilon_masked_probs: the gradient of log p(a legal action) is not finite; mask "
            "the logits with jnp.where before the softmax, not after"
        )
    passed("epsilon_masked_probs: illegal actions 0, epsilon over the legal ones, per row")
