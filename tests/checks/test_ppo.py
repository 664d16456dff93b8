"""check_dual_clip_objective, check_epsilon_masked_probs, check_late_success (chapter 8):
right answers and each check's bank of wrong answers (``WRONG_*``: slip, answer, verdict).

What each check guards, and the case that breaks each plausible wrong answer:

check_dual_clip_objective (PPO's min, floored at ``c A`` where ``A < 0``)
- PPO's part: the sign, ``clip(ratio, eps, 1 + eps)``, max for min, nothing clipped;
- the floor: missing, on A > 0 too, a min, its sign flipped or on |A|, on the ratio;
- a floor on the unclipped product, never told the ratio is clipped to eps;
- an unlisted slip is told the kinds of element where it differs (A > 0 below or above
  1 + eps, A < 0 below 1 - eps, above or below the floor), the first one's inputs and
  value: a lower bound 1 / (1 + eps), a clip on one side only, the floor where ratio > 1 +
  eps or ratio > dual_clip, a constant floor, the two arguments swapped, the product clipped
  instead of the ratio, an offset;
- the contract: the mean, bfloat16.

check_epsilon_masked_probs ((1 - eps) masked softmax + eps over the legal actions)
- the mask: illegal logits filled with 1 or 0, not renormalised, eps on illegal actions;
  illegal probabilities exactly 0 (a finite fill of -30 named);
- eps: over the number of actions, over the batch, ignored, swapped, named;
- the axis: 0 or 1 of a (2, 3, 4) batch; one row right only;
- rows: a slip right where every action is legal only (eps over all actions then masked
  and renormalised, the softmax renormalised after the mix) is told so; a (1 - eps) part
  that is a distribution but not the softmax (greedy, sharpened logits), named; the
  softmax of all logits masked and renormalised, or of logits * mask, is right;
- the gradient: a nan (log of a masked exp), a stopped one, named;
- the contract: flattened rows, float16.

check_late_success (each seed's mean of its last k measured updates; NumPy)
- skip the nan: the last k updates' nanmean or mean, nan as 0, a stop at the first nan;
- the last k measured values: the whole run, the last one left out, named;
- one value per seed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from checks.answers import (
    bank_params,
    dual_clip,
    eps_probs,
    generic,
    late_success_loop,
    late_success_vectorised,
    passes,
    rejects,
    right_params,
)
from companion.agents import ppo

# --- check_dual_clip_objective: dual_clip_objective(ratio, advantage, clip_eps, c) -


def dual_clip_floor(ratio, advantage, clip_eps, dual_clip_c, floor_of):
    standard = jnp.minimum(
        ratio * advantage, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * advantage
    )
    return jnp.where(
        advantage < 0, jnp.maximum(standard, floor_of(dual_clip_c, advantage)), standard
    )


RIGHT_DUAL_CLIP = [
    dual_clip,  # where and two clips
    # max with the floor
    lambda r, a, e, c: dual_clip_floor(r, a, e, c, lambda c, a: c * a),
]
WRONG_DUAL_CLIP = [
    (
        "the floor's sign flipped",
        lambda r, a, e, c: dual_clip_floor(r, a, e, c, lambda c, a: -c * a),
        "the dual clip's floor has the wrong sign",
    ),
    (
        "the floor on |A|",
        lambda r, a, e, c: dual_clip_floor(r, a, e, c, lambda c, a: c * jnp.abs(a)),
        "the dual clip's floor has the wrong sign",
    ),
    ("the surrogate's sign flipped", lambda *a: -dual_clip(*a), "the sign is flipped"),
    (
        "a bfloat16 objective",
        lambda *a: dual_clip(*a).astype(jnp.bfloat16),
        r"(it returned|it is) an? bfloat16 array",
    ),
]


def _dual_clip_ratio_bound(r, a, e, c):
    return jnp.minimum(jnp.minimum(r, c) * a, jnp.clip(r, 1 - e, 1 + e) * a)


WRONG_DUAL_CLIP += [
    ("the sign flipped", lambda r, a, e, c: -dual_clip(r, a, e, c), "sign is flipped"),
    (
        "clipped to [eps, 1 + eps]",
        lambda r, a, e, c: dual_clip(r, a, e, c, low=e),
        r"clipped to \[eps, 1 \+ eps\]",
    ),
    (
        "max for min",
        lambda r, a, e, c: dual_clip(r, a, e, c, pick=jnp.maximum),
        "PPO takes the min",
    ),
    ("no dual clip", lambda r, a, e, c: ppo.clipped_surrogate(r, a, e), "without the dual clip"),
    (
        "the floor on positive advantages",
        lambda r, a, e, c: dual_clip(r, a, e, c, everywhere=True),
        "positive advantages too",
    ),
    (
        "min for the floor",
        lambda r, a, e, c: dual_clip(r, a, e, c, floor=jnp.minimum),
        "it is a floor",
    ),
    ("nothing clipped", lambda r, a, e, c: r * a, "nothing is clipped"),
    (
        "the mean",
        lambda r, a, e, c: dual_clip(r, a, e, c).mean(),
        r"of shape \(3, 4\).*; it (returned|is) an? \w+ array of shape \(\)",
    ),
    ("an offset", lambda r, a, e, c: dual_clip(r, a, e, c) + 0.01, r"differs where A > 0 and"),
    ("the ratio bounded by c", _dual_clip_ratio_bound, "bounds the ratio, not the"),
    (
        "the floor on the unclipped product",
        lambda r, a, e, c: jnp.where(a < 0, jnp.maximum(r * a, c * a), dual_clip(r, a, e, c)),
        r"differs only where A < 0 and ratio < 1 - eps, where the objective is the clipped",
    ),
]


def _dual_clip_slip(ratio, advantage, clip_eps, dual_clip_c, slip=""):
    """Written as a student writes it; ``slip`` plants one mistake."""
    low, high = (
        (1 / (1 + clip_eps), 1 + clip_eps) if slip == "log_sym" else (1 - clip_eps, 1 + clip_eps)
    )
    if slip == "swapped":
        clip_eps, dual_clip_c = dual_clip_c, clip_eps
        low, high = 1 - clip_eps, 1 + clip_eps
    objective = jnp.minimum(ratio * advantage, jnp.clip(ratio, low, high) * advantage)
    if slip == "clip_product":
        objective = jnp.minimum(ratio * advantage, jnp.clip(ratio * advantage, low, high))
    if slip == "on_ratio":
        return jnp.where(
            ratio > 1 + clip_eps, jnp.maximum(objective, dual_clip_c * advantage), objective
        )
    if slip == "constant":
        return jnp.where(advantage < 0, jnp.maximum(objective, -dual_clip_c), objective)
    if slip == "ratio_above_c":
        return jnp.where(ratio > dual_clip_c, dual_clip_c * advantage, objective)
    if slip == "upper_only":
        objective = jnp.minimum(ratio * advantage, jnp.minimum(ratio, high) * advantage)
    return jnp.where(advantage < 0, jnp.maximum(objective, dual_clip_c * advantage), objective)


def _dual_slip(slip):
    return lambda *a: _dual_clip_slip(*a, slip=slip)


RIGHT_DUAL_CLIP += [_dual_clip_slip]
WRONG_DUAL_CLIP += [
    (
        "the lower bound 1 / (1 + eps)",
        _dual_slip("log_sym"),
        r"differs only where A < 0 and ratio < 1 - eps.*gives -0.8333, expected -0.8",
    ),
    (
        "the floor where ratio > 1 + eps",
        _dual_slip("on_ratio"),
        r"differs where A > 0 and ratio > 1 \+ eps.*gives 3, expected 1.2",
    ),
    (
        "a constant floor -dual_clip",
        _dual_slip("constant"),
        r"differs where A < 0 below the floor, where the objective is the floor dual_clip \* A",
    ),
    # new slips
    (
        "clip_eps and dual_clip swapped",
        _dual_slip("swapped"),
        r"differs where A > 0 and ratio > 1 \+ eps",
    ),
    (
        "the product clipped, clip(ratio * A, 1 - eps, 1 + eps)",
        _dual_slip("clip_product"),
        r"differs where A > 0 and ratio <= 1 \+ eps",
    ),
    (
        "dual_clip * A wherever ratio > dual_clip",
        _dual_slip("ratio_above_c"),
        r"differs only where A > 0 and ratio > 1 \+ eps",
    ),
    (
        "the ratio clipped above only",
        _dual_slip("upper_only"),
        r"differs only where A < 0 and ratio < 1 - eps, where the objective is the clipped",
    ),
]


_ON_THE_RATIO = [
    row
    for row in WRONG_DUAL_CLIP
    if row[0] in ("the ratio bounded by c", "the floor on the unclipped product")
]


@pytest.mark.parametrize(
    "slip, wrong, verdict", _ON_THE_RATIO, ids=[row[0] for row in _ON_THE_RATIO]
)
def test_a_dual_clip_slip_is_not_told_the_ratio_is_clipped_to_eps(slip, wrong, verdict):
    message = rejects("check_dual_clip_objective", wrong, verdict)
    assert "the ratio is clipped to [eps" not in message


# --- check_epsilon_masked_probs: epsilon_masked_probs(logits, mask, epsilon) ----------


def eps_probs_where(logits, mask, epsilon):
    probs = jax.nn.softmax(jnp.where(mask, logits, -jnp.inf), axis=-1)
    return jnp.where(mask, (1 - epsilon) * probs + epsilon / mask.sum(-1, keepdims=True), 0.0)


RIGHT_EPSILON = [
    eps_probs,  # mask / count
    eps_probs_where,  # where on the mixture
]
WRONG_EPSILON = [
    (
        "a float16 result",
        lambda *a: eps_probs(*a).astype(jnp.float16),
        r"(it returned|it is) an? float16 array",
    ),
]


def nan_gradient_eps_probs(logits, mask, eps):
    p = jnp.exp(logits) * mask  # log(0) below: right values, nan gradient
    p = jnp.exp(jnp.log(p) - jnp.log(p.sum(-1, keepdims=True)))
    return (1 - eps) * p + eps * mask / mask.sum(-1, keepdims=True)


def one_row_only(logits, mask, eps):
    if logits.ndim == 1:
        return eps_probs(logits[::-1], mask[::-1], eps)[::-1] * 0.5 + 0.125
    return eps_probs(logits, mask, eps)


def _eps_finite_fill(logits, mask, epsilon):
    p = jax.nn.softmax(jnp.where(mask, logits, -30.0), -1)
    return (1 - epsilon) * p + epsilon * mask / mask.sum(-1, keepdims=True)


WRONG_EPSILON += [
    ("softmax over axis 0", lambda x, m, e: eps_probs(x, m, e, axis=0), "runs over axis 0"),
    ("illegal logits filled with 1", lambda x, m, e: eps_probs(x, m, e, fill=1.0), "misplaced"),
    ("illegal logits filled with 0", lambda x, m, e: eps_probs(x, m, e, fill=0.0), "logit 0.0"),
    (
        "epsilon spread over all four",
        lambda x, m, e: (1 - e) * jax.nn.softmax(jnp.where(m, x, -jnp.inf)) + e / 4,
        "illegal ones too",
    ),
    (
        "divided by the number of actions",
        lambda x, m, e: eps_probs(x, m, e, spread="all"),
        "divided by the number of actions",
    ),
    (
        "legal moves counted over the batch",
        lambda x, m, e: eps_probs(x, m, e, spread="batch"),
        "counted over the whole batch",
    ),
    ("epsilon ignored", lambda x, m, e: eps_probs(x, m, 0.0), "epsilon is ignored"),
    ("1 - epsilon for epsilon", lambda x, m, e: eps_probs(x, m, 1 - e), "swapped"),
    (
        "softmax not renormalised",
        lambda x, m, e: (1 - e) * jax.nn.softmax(x) * m + e * m / m.sum(-1, keepdims=True),
        "not renormalised",
    ),
    ("softmax over axis 1", lambda x, m, e: eps_probs(x, m, e, axis=1), "sum to"),
    (
        "rows flattened",
        lambda x, m, e: eps_probs(x, m, e).reshape(6, 4),
        r"of shape \(2, 3, 4\).*; it (returned|is) an? \w+ array of shape \(6, 4\)",
    ),
    ("wrong on one row", one_row_only, generic("on one row differs from the reference")),
    ("log of a masked exp", nan_gradient_eps_probs, "not finite"),
    ("two arguments", lambda x, m: x, "raised TypeError"),
    (
        "the gradient stopped",
        lambda x, m, e: eps_probs(jax.lax.stop_gradient(x), m, e),
        "the wrong gradient",
    ),
    ("a finite fill of -30", _eps_finite_fill, "not exactly 0"),
]


def _eps_slip(logits, mask, epsilon, slip=""):
    """Written as a student writes it; ``slip`` plants one mistake."""
    count = mask.sum(-1, keepdims=True)
    if slip == "mix_then_mask":
        mixed = ((1 - epsilon) * jax.nn.softmax(logits, -1) + epsilon / mask.shape[-1]) * mask
        return mixed / mixed.sum(-1, keepdims=True)
    if slip == "greedy":
        best = jnp.argmax(jnp.where(mask, logits, -jnp.inf), -1)
        return (1 - epsilon) * jax.nn.one_hot(best, mask.shape[-1]) + epsilon * mask / count
    if slip == "uniform_renormalised":
        mixed = (
            (1 - epsilon) * jax.nn.softmax(jnp.where(mask, logits, -jnp.inf), -1)
            + epsilon / mask.shape[-1]
        ) * mask
        return mixed / mixed.sum(-1, keepdims=True)
    if slip == "mask_before_softmax_times":  # right: the renormalisation undoes the 0 fill
        probs = jax.nn.softmax(logits * mask, -1) * mask
        probs = probs / probs.sum(-1, keepdims=True)
        return (1 - epsilon) * probs + epsilon * mask / count
    if slip == "sharpened":
        probs = jax.nn.softmax(jnp.where(mask, logits / (1 - epsilon), -jnp.inf), -1)
        return (1 - epsilon) * probs + epsilon * mask / count
    if slip == "renormalise_after_mix":
        probs = (1 - epsilon) * jax.nn.softmax(logits, -1) * mask + epsilon * mask / count
        return probs / probs.sum(-1, keepdims=True)
    probs = jax.nn.softmax(logits, -1) * mask
    probs = probs / probs.sum(-1, keepdims=True)  # softmax then mask, renormalised
    return (1 - epsilon) * probs + epsilon * mask / count


def _eps_with(slip):
    return lambda *a: _eps_slip(*a, slip=slip)


RIGHT_EPSILON += [_eps_slip, _eps_with("mask_before_softmax_times")]
WRONG_EPSILON += [
    (
        "mixed with all actions, then masked and renormalised",
        _eps_with("mix_then_mask"),
        r"right on rows where every action is legal but differs on rows with illegal",
    ),
    (
        "greedy: one-hot of the best legal action",
        _eps_with("greedy"),
        r"\(1 - epsilon\) part.*is not the softmax.*a greedy choice",
    ),
    # new slips
    (
        "epsilon over all actions, then masked and renormalised",
        _eps_with("uniform_renormalised"),
        r"right on rows where every action is legal but differs on rows with illegal",
    ),
    (
        "the logits divided by 1 - epsilon",
        _eps_with("sharpened"),
        r"\(1 - epsilon\) part.*is not the softmax of the legal logits",
    ),
    (
        "the softmax masked, mixed, then renormalised",
        _eps_with("renormalise_after_mix"),
        r"right on rows where every action is legal but differs on rows with illegal",
    ),
]


# --- check_late_success: late_success(success_by_start, k), NumPy --------------------


def late_success_jax(success_by_start, k):
    x = jnp.asarray(success_by_start)
    measured = ~jnp.isnan(x)
    keep = measured & (jnp.cumsum(measured[:, ::-1], axis=1)[:, ::-1] <= k)
    return jnp.sum(jnp.where(keep, x, 0.0), axis=1) / k


def _before_first_nan(row):
    return row[: np.argmax(np.isnan(row))] if np.isnan(row).any() else row


RIGHT_LATE_SUCCESS = [
    late_success_loop,  # a loop over the seeds
    late_success_vectorised,  # a count from the end
    late_success_jax,  # the same in jax.numpy
]
WRONG_LATE_SUCCESS = [
    (
        "nanmean of the last k updates",
        lambda x, k: np.nanmean(x[:, -k:], axis=1),
        "averages the last k updates, skipping their nan",
    ),
    (
        "mean of the last k updates",
        lambda x, k: x[:, -k:].mean(axis=1),
        r"gives nan for seeds \[0, 1, 2\].*Skip the nan",
    ),
    ("nanmean of the whole run", lambda x, k: np.nanmean(x, axis=1), "every measured update"),
    (
        "a stop at the first nan",
        lambda x, k: np.array([_before_first_nan(row)[-k:].mean() for row in x]),
        "stops at the first nan",
    ),
    ("nan as 0", lambda x, k: np.nan_to_num(x)[:, -k:].mean(axis=1), "counted as a failure"),
    (
        "the last measured value left out",
        lambda x, k: np.array([row[~np.isnan(row)][-k - 1 : -1].mean() for row in x]),
        "the last measured value is left out",
    ),
    (
        "one value per update",
        lambda x, k: np.nanmean(x[:, -k:], axis=0),
        r"of shape \(3,\).*; it (returned|is) an? \w+ array of shape \(4,\)",
    ),
]


def _measured(row):
    return row[~np.isnan(row)]


def _forward_fill_mean(x, k):
    out = []
    for row in x:
        row = row.copy()
        for i in range(1, len(row)):
            if np.isnan(row[i]):
                row[i] = row[i - 1]
        out.append(np.nanmean(row[-k:]))
    return np.array(out, np.float32)


WRONG_LATE_SUCCESS += [
    (
        "the median of the last k",
        lambda x, k: np.array([np.median(_measured(r)[-k:]) for r in x]),
        "the median of the last k measured values",
    ),
    (
        "the best of the last k",
        lambda x, k: np.array([_measured(r)[-k:].max() for r in x]),
        "the largest of the last k measured values",
    ),
    (
        "the first k measured",
        lambda x, k: np.array([_measured(r)[:k].mean() for r in x]),
        "the first k measured values",
    ),
    (
        "the k largest",
        lambda x, k: np.array([np.sort(_measured(r))[-k:].mean() for r in x]),
        "the k largest measured values",
    ),
    ("nan filled forwards", _forward_fill_mean, "filled with the value before it"),
]


#: Each check's right answers and its bank of wrong ones.
RIGHTS = {
    "check_dual_clip_objective": RIGHT_DUAL_CLIP,
    "check_epsilon_masked_probs": RIGHT_EPSILON,
    "check_late_success": RIGHT_LATE_SUCCESS,
}
BANKS = {
    "check_dual_clip_objective": WRONG_DUAL_CLIP,
    "check_epsilon_masked_probs": WRONG_EPSILON,
    "check_late_success": WRONG_LATE_SUCCESS,
}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)
