"""Self-checks for the exercises of the PPO chapter."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import require_array
from companion.checks._messages import N_, _
from companion.checks.core import (
    Case,
    _Differs,
    close,
    fail,
    passed,
    run_answer,
    self_check,
    verdict,
)


def _dual_clip_reference(
    ratio, adv, eps, c, low=None, dual="max", negative_only=True, pick=min, floor_sign=1.0
):
    low = 1.0 - eps if low is None else low
    ratio, adv = np.asarray(ratio, np.float64), np.asarray(adv, np.float64)
    unclipped, clipped = ratio * adv, np.clip(ratio, low, 1.0 + eps) * adv
    standard = np.minimum(unclipped, clipped) if pick is min else np.maximum(unclipped, clipped)
    floor = floor_sign * c * adv
    bounded = np.maximum(standard, floor) if dual == "max" else np.minimum(standard, floor)
    return np.where((adv < 0) | (not negative_only), bounded, standard)


def _dual_clip_case(ratio, adv, eps, c) -> Case:
    ratio, adv = np.asarray(ratio, np.float32), np.asarray(adv, np.float32)
    expected = _dual_clip_reference(ratio, adv, eps, c)
    return Case(
        _("ratio and advantage of shape {shape}").format(shape=ratio.shape),
        {"ratio": ratio, "advantage": adv, "clip_eps": eps, "dual_clip": c},
        expected,
        {
            _("the sign is flipped: return the objective to maximise, not the loss (-objective)"): (
                -expected
            ),
            _("the ratio is clipped to [eps, 1 + eps]; the range is [1 - eps, 1 + eps]"): (
                _dual_clip_reference(ratio, adv, eps, c, low=eps)
            ),
            _("it takes the max of ratio * A and the clipped term; PPO takes the min"): (
                _dual_clip_reference(ratio, adv, eps, c, pick=max)
            ),
            _(
                "this is PPO's clipped objective without the dual clip: where A < 0, take "
                "max(objective, dual_clip * A)"
            ): _dual_clip_reference(ratio, adv, eps, np.inf),
            _("the dual clip is applied to positive advantages too; it bounds only A < 0"): (
                _dual_clip_reference(ratio, adv, eps, c, negative_only=False)
            ),
            _("the dual clip takes the min with dual_clip * A; it is a floor: the max"): (
                _dual_clip_reference(ratio, adv, eps, c, dual="min")
            ),
            _(
                "the dual clip's floor has the wrong sign: where A < 0 it is dual_clip * A, a "
                "negative number, not -dual_clip * A (or dual_clip * |A|)"
            ): (_dual_clip_reference(ratio, adv, eps, c, floor_sign=-1.0)),
            _("nothing is clipped: clip the ratio to [1 - eps, 1 + eps]"): (
                _dual_clip_reference(ratio, adv, np.inf, c)
            ),
            _("nothing is clipped, and no dual clip either: this is ratio * A"): ratio * adv,
            _(
                "the dual clip bounds the ratio, not the objective: the floor is dual_clip * A, "
                "not min(ratio, dual_clip) * A"
            ): np.minimum(np.minimum(ratio, c) * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv),
        },
    )


#: Where each term of the dual-clip objective is the one that counts, and its value there.
_DUAL_CLIP_REGIONS = (
    N_("A > 0 and ratio <= 1 + eps, where the objective is ratio * A"),
    N_("A > 0 and ratio > 1 + eps, where the objective is the clipped (1 + eps) * A"),
    N_("A < 0 and ratio < 1 - eps, where the objective is the clipped (1 - eps) * A"),
    N_("A < 0 above the floor, where the objective is min(ratio * A, clipped * A)"),
    N_("A < 0 below the floor, where the objective is the floor dual_clip * A"),
    N_("A = 0, where the objective is 0"),
)


def _dual_clip_regions(ratio, adv, eps, c) -> np.ndarray:
    """The index in :data:`_DUAL_CLIP_REGIONS` of each element's active term."""
    ratio, adv = np.asarray(ratio, np.float64), np.asarray(adv, np.float64)
    standard = np.minimum(ratio * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv)
    return np.select(
        [
            adv == 0,
            (adv > 0) & (ratio <= 1 + eps),
            adv > 0,
            c * adv > standard,
            ratio < 1 - eps,
        ],
        [5, 0, 1, 4, 2],
        3,
    )


def _dual_clip_diagnosis(cases: list, outputs: list) -> None:
    """Name an unlisted mistake by the kinds of element where it differs (the regions of
    :data:`_DUAL_CLIP_REGIONS`), the first difference's first."""
    found, first = set(), None
    for case, got in zip(cases, outputs):
        ratio, adv, eps, c = case.inputs.values()
        regions = _dual_clip_regions(ratio, adv, eps, c)
        wrong = ~np.isclose(got, case.expected, rtol=1e-5, atol=1e-6)
        found |= set(regions[wrong].tolist())
        if first is None and wrong.any():
            index = tuple(np.argwhere(wrong)[0])
            first = (case, got, index, int(regions[index]))
    differing = sum(
        not np.allclose(got, case.expected, rtol=1e-5, atol=1e-6)
        for case, got in zip(cases, outputs)
    )
    if differing < 2:  # one case alone may bring out anything
        return
    case, got, index, region = first
    shown = {
        "ratio": f"{case.inputs['ratio'][index]:.4g}",
        "advantage": f"{case.inputs['advantage'][index]:.4g}",
        "eps": case.inputs["clip_eps"],
        "dual_clip": case.inputs["dual_clip"],
        "got": f"{float(got[index]):.4g}",
        "expected": f"{float(case.expected[index]):.4g}",
    }
    if len(found) == 1:
        message = _(
            "dual_clip_objective differs only where {where}: at ratio {ratio}, advantage "
            "{advantage} (clip_eps {eps}, dual_clip {dual_clip}) it gives {got}, expected "
            "{expected}"
        )
        where = _(_DUAL_CLIP_REGIONS[region])
    else:
        message = _(
            "dual_clip_objective differs where {where}: first at ratio {ratio}, advantage "
            "{advantage} (clip_eps {eps}, dual_clip {dual_clip}), where it gives {got}, "
            "expected {expected}"
        )
        order = [region] + sorted(found - {region})
        where = _(_DUAL_CLIP_REGIONS[order[0]])
        for other in order[1:]:
            where = _("{where}; and where {region}").format(
                where=where, region=_(_DUAL_CLIP_REGIONS[other])
            )
    fail(message.format(where=where, **shown))


@self_check
def check_dual_clip_objective(dual_clip_objective: Callable) -> None:
    """Check ``dual_clip_objective(ratio, advantage, clip_eps, dual_clip)``, to be maximised.

    Dual-clip PPO (Ye et al., 2020): ``min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A)``,
    floored at ``dual_clip * A`` (``dual_clip > 1``) where ``A < 0``. ``ratio``, ``advantage``
    float32 of one shape (e.g. ``(T, N)``); returns float32 of that shape, elementwise. Runs
    the answer under ``jax.jit`` (``clip_eps`` and ``dual_clip`` static).

    Raises:
        CheckFailed: naming the mistake (sign flipped, ``clip(ratio, eps, 1 + eps)``, max for min,
            no dual clip, the dual clip on A > 0, as a min, with its floor's sign flipped or on
            the ratio, nothing clipped), or a result that is not float32 of ``ratio``'s shape.
    """
    ratio = [[1.5, 0.5, 1.1, 0.9], [1.5, 0.5, 1.1, 0.9], [5.0, 4.0, 0.3, 1.0]]
    adv = [[1.0, 1.0, 2.0, 2.0], [-1.0, -1.0, -2.0, -2.0], [-1.0, -0.5, -3.0, 0.5]]
    rng = np.random.default_rng(8)
    cases = [
        _dual_clip_case(ratio, adv, 0.2, 3.0),
        _dual_clip_case(rng.uniform(0.0, 6.0, (2, 3, 5)), rng.normal(size=(2, 3, 5)), 0.1, 2.0),
        # a dual clip below 1 + eps, and ratios below eps with A < 0
        _dual_clip_case(
            [[0.1, 0.15, 1.15, 3.0], [0.05, 0.9, 1.3, 2.0]],
            [[-1.0, -2.0, -1.0, -0.5], [-3.0, 1.0, -1.0, 2.0]],
            0.2,
            1.1,
        ),
    ]
    outputs = []
    for case in cases:
        shape = case.inputs["ratio"].shape
        call = _("dual_clip_objective(ratio, advantage, clip_eps, dual_clip) for {case}").format(
            case=case.label
        )
        got = run_answer(
            dual_clip_objective,
            jnp.asarray(case.inputs["ratio"]),
            jnp.asarray(case.inputs["advantage"]),
            case.inputs["clip_eps"],
            case.inputs["dual_clip"],
            call=call,
            hint=_("ratio and advantage are float32 {shape}; the answer is elementwise").format(
                shape=shape
            ),
        )
        outputs.append(
            require_array(
                got, call, shape, np.float32, why=_("elementwise, like ratio and advantage")
            )
        )
    try:
        verdict("dual_clip_objective", cases, outputs)
    except _Differs:
        _dual_clip_diagnosis(cases, outputs)
        raise
    passed(_("dual_clip_objective: PPO's clip, and dual_clip * A as a floor for A < 0"))


def _softmax(x, axis):
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def _epsilon_case(logits, mask, eps) -> Case:
    logits = np.asarray(logits, np.float32)
    count = mask.sum(-1, keepdims=True)
    masked = np.where(mask, logits, -np.inf)

    def mix(p, spread=None):
        return (1 - eps) * p + eps * (mask / count if spread is None else spread)

    mistakes = {
        _(
            "illegal actions get logit 1.0, so they keep probability (the misplaced "
            "parenthesis bug): use -inf"
        ): mix(_softmax(np.where(mask, logits, 1.0), -1)),
        _("illegal actions get logit 0.0, which still has probability exp(0) / Z: use -inf"): mix(
            _softmax(np.where(mask, logits, 0.0), -1)
        ),
        _(
            "epsilon is spread over all actions, illegal ones too: spread it over the "
            "legal actions of each row only"
        ): mix(_softmax(masked, -1), 1 / 4),
        _(
            "epsilon is divided by the number of actions; divide it by the number of "
            "legal actions in each row (mask.sum(axis=-1, keepdims=True))"
        ): mix(_softmax(masked, -1), mask / 4),
        _(
            "the legal actions are counted over the whole batch; count them per row "
            "(mask.sum(axis=-1, keepdims=True))"
        ): mix(_softmax(masked, -1), mask / mask.sum()),
        _("epsilon is ignored: mix in epsilon, spread uniformly over the legal actions"): (
            _softmax(masked, -1)
        ),
        _("epsilon and 1 - epsilon are swapped: the softmax gets weight 1 - epsilon"): (
            eps * _softmax(masked, -1) + (1 - eps) * mask / count
        ),
        _("the probabilities are multiplied by the mask but not renormalised"): mix(
            _softmax(logits, -1) * mask
        ),
    }
    if logits.ndim > 1:
        mistakes[
            _("the softmax runs over axis 0, not over the actions: normalise over axis=-1")
        ] = mix(_softmax(masked, 0))
    return Case(
        _("logits of shape {shape} and epsilon {epsilon}").format(shape=logits.shape, epsilon=eps),
        {"logits": logits, "mask": mask, "epsilon": eps},
        mix(_softmax(masked, -1)),
        mistakes,
    )


def _epsilon_verdict(cases: list, outputs: list) -> None:
    """verdict, and for an unnamed difference the illegal mass or the row sums."""
    try:
        verdict("epsilon_masked_probs", cases, outputs)
    except _Differs:
        for case, got in zip(cases, outputs):
            if np.any(got[~case.inputs["mask"]] != 0):
                fail(
                    _(
                        "epsilon_masked_probs gives illegal actions probability > 0; they must "
                        "get exactly 0"
                    )
                )
            if not np.allclose(got.sum(-1), 1, atol=1e-5):
                fail(
                    _(
                        "epsilon_masked_probs: for {case} the rows (last axis) sum to {sums}, "
                        "not 1; the softmax and the count of legal actions run over the last "
                        "axis"
                    ).format(case=case.label, sums=np.round(got.sum(-1), 4).tolist())
                )
        _epsilon_rows(cases, outputs)
        raise


def _epsilon_rows(cases: list, outputs: list) -> None:
    """Name an unlisted mistake by its rows: right where every action is legal only, or a
    (1 - epsilon) part that is a distribution over the legal actions but not their softmax."""
    rows = []
    for case, got in zip(cases, outputs):
        logits, mask, eps = case.inputs.values()
        for row in zip(*(np.reshape(a, (-1, 4)) for a in (logits, mask, got, case.expected))):
            rows.append((*row, eps))
    differing = sum(
        not np.allclose(got, case.expected, rtol=1e-5, atol=1e-6)
        for case, got in zip(cases, outputs)
    )
    if differing < 2:  # one case alone may bring out anything
        return
    wrong = [r for r in rows if not np.allclose(r[2], r[3], rtol=1e-5, atol=1e-6)]

    def shown(a):
        return np.array2string(
            np.round(np.asarray(a, np.float64), 4) + 0.0, separator=", ", suppress_small=True
        )

    logits, mask, got, expected, eps = wrong[0]
    if all(not r[1].all() for r in wrong) and any(r[1].all() for r in rows):
        fail(
            _(
                "epsilon_masked_probs is right on rows where every action is legal but differs "
                "on rows with illegal actions: with logits {logits} and mask {mask} it gives "
                "{got}, expected {expected}. The softmax runs over the legal logits only (the "
                "others -inf), then each legal action gets epsilon / (its row's number of legal "
                "actions) more"
            ).format(
                logits=shown(logits),
                mask=np.array2string(mask.astype(int), separator=", "),
                got=shown(got),
                expected=shown(expected),
            )
        )
    parts = [(r, (r[2] - r[4] * r[1] / r[1].sum()) / (1 - r[4])) for r in wrong]
    if all(
        np.all(q > -1e-5) and np.allclose(q.sum(), 1, atol=1e-4) and np.all(q[~r[1]] < 1e-5)
        for r, q in parts
    ):
        (logits, mask, got, expected, eps), part = parts[0]
        softmax = _softmax(np.where(mask, logits, -np.inf), -1)
        greedy = _(" (all on one action: a greedy choice)") if np.isclose(part.max(), 1) else ""
        fail(
            _(
                "epsilon_masked_probs spreads epsilon right, but its (1 - epsilon) part, "
                "(p - epsilon / num_legal) / (1 - epsilon), is not the softmax of the legal "
                "logits: with logits {logits} and mask {mask} it is {part}{greedy}, expected "
                "{softmax}"
            ).format(
                logits=shown(logits),
                mask=np.array2string(mask.astype(int), separator=", "),
                part=shown(part),
                greedy=greedy,
                softmax=shown(softmax),
            )
        )


@self_check
def check_epsilon_masked_probs(epsilon_masked_probs: Callable) -> None:
    """Check ``epsilon_masked_probs(logits, mask, epsilon)``: an ε-mixture over legal actions.

    ``logits`` float32 and ``mask`` bool ``(..., num_actions)``, at least one legal action per row;
    ``epsilon`` in [0, 1]. Returns float32 ``(..., num_actions)``: ``(1 - epsilon) *
    softmax(masked logits) + epsilon / num_legal`` on legal actions, exactly 0 on the others.
    Runs the answer under ``jax.jit`` (``epsilon`` static), and its gradient.

    Raises:
        CheckFailed: naming the mistake (wrong axis, illegal logits filled with 1.0 or 0.0, epsilon
            misspread, ignored or swapped, no renormalisation, a nan or cut gradient in logits,
            a dtype other than float32).
    """
    rng = np.random.default_rng(7)
    mask_a = np.array(
        [[[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]], [[0, 1, 1, 1], [0, 0, 1, 1], [1, 0, 1, 0]]],
        bool,
    )  # 1, 2, 4, 3, 2 and 2 legal actions
    mask_b = rng.uniform(size=(5, 4)) < 0.5
    mask_b[np.arange(5), rng.integers(0, 4, 5)] = True
    cases = [
        _epsilon_case(rng.normal(size=(2, 3, 4)), mask_a, 0.1),
        _epsilon_case(3.0 * rng.normal(size=(5, 4)), mask_b, 0.3),
        _epsilon_case(rng.normal(size=(4,)), np.array([False, True, True, False]), 0.2),
    ]
    outputs = []
    for case in cases:
        logits, mask, eps = case.inputs.values()
        call = _("epsilon_masked_probs(logits, mask, epsilon) for {case}").format(case=case.label)
        got = run_answer(
            epsilon_masked_probs,
            jnp.asarray(logits),
            jnp.asarray(mask),
            eps,
            call=call,
            hint=_("logits float32 (..., 4), mask bool (..., 4): actions last"),
        )
        outputs.append(
            require_array(
                got,
                call,
                logits.shape,
                np.float32,
                why=_("one probability per action, like logits"),
            )
        )
        if np.any(outputs[-1][~mask] != 0) and close(outputs[-1], case.expected):
            fail(
                _(
                    "epsilon_masked_probs gives illegal actions probabilities of up to {top}, "
                    "not exactly 0: a finite fill leaves exp(fill) / Z. Use -inf, or set them "
                    "to 0 with jnp.where(mask, p, 0.0)"
                ).format(top=f"{outputs[-1][~mask].max():.1e}")
            )
        if len(outputs) == 2:  # the batched cases first, then a single row
            _epsilon_verdict(cases[:2], outputs)
    verdict(_("epsilon_masked_probs on one row"), cases[2:], outputs[2:])
    logits, mask, eps = cases[0].inputs.values()
    first_legal = jnp.asarray(np.argmax(mask, -1)[..., None])

    def log_p_first_legal(probs_fn, x):
        p = probs_fn(x, jnp.asarray(mask), eps)
        return jnp.sum(jnp.log(jnp.take_along_axis(p, first_legal, axis=-1)))

    def reference(x, mask, eps):
        count = jnp.sum(mask, axis=-1, keepdims=True)
        return (1 - eps) * jax.nn.softmax(jnp.where(mask, x, -jnp.inf)) + eps * mask / count

    call = _("jax.grad of log epsilon_masked_probs(logits, mask, 0.1)[first legal action]")
    grad = run_answer(
        jax.grad(functools.partial(log_p_first_legal, epsilon_masked_probs)),
        jnp.asarray(logits),
        call=call,
    )
    if not np.all(np.isfinite(np.asarray(grad))):
        fail(
            _(
                "epsilon_masked_probs: the gradient of log p(a legal action) is not finite; mask "
                "the logits with jnp.where before the softmax, not after"
            )
        )
    expected = jax.grad(functools.partial(log_p_first_legal, reference))(jnp.asarray(logits))
    if not close(grad, expected, rtol=1e-4, atol=1e-5):
        fail(
            _(
                "epsilon_masked_probs has the right values but the wrong gradient with respect to "
                "the logits: something holds the probabilities constant (a stop_gradient, or "
                "NumPy instead of jax.numpy), so the policy could not learn through them"
            )
        )
    passed(_("epsilon_masked_probs: illegal actions 0, epsilon over the legal ones, per row"))


def _last_measured(rows, k, skip_from_end=0):
    """Each row's mean of its last ``k`` values that are not nan (leaving out the last
    ``skip_from_end`` of them)."""
    out = []
    for row in np.asarray(rows, np.float64):
        measured = row[~np.isnan(row)]
        measured = measured[: len(measured) - skip_from_end]
        out.append(measured[-k:].mean())
    return np.asarray(out)


def _forward_filled(rows, k):
    """Each row's mean of its last ``k`` values, each nan filled with the value before it."""
    out = []
    for row in np.asarray(rows, np.float64):
        filled = row.copy()
        for i in range(1, len(filled)):
            filled[i] = filled[i - 1] if np.isnan(filled[i]) else filled[i]
        out.append(np.nanmean(filled[-k:]))
    return np.asarray(out)


def _late_success_case(rows, k, label) -> Case:
    x = np.asarray(rows, np.float32)
    x64 = x.astype(np.float64)
    before_first_nan = [
        row[: np.argmax(np.isnan(row))] if np.isnan(row).any() else row for row in x64
    ]
    with np.errstate(all="ignore"):
        mistakes = {
            _(
                "this averages the last k updates, skipping their nan: the last updates are nan "
                "(their episodes were still running when training stopped), so fewer than k "
                "values are left. Take the last k values that are not nan"
            ): np.nanmean(x64[:, -k:], axis=1),
            _(
                "this averages every measured update of the run; take the last k measured values"
            ): np.nanmean(x64, axis=1),
            _(
                "this stops at the first nan, but a nan also marks an update in which no episode "
                "started, in the middle of the run: skip each nan, and take the last k values "
                "left"
            ): np.asarray([row[-k:].mean() for row in before_first_nan]),
            _(
                "nan is counted as a failure (0): a nan is an update with no measurement, not "
                "one with no success; skip it"
            ): np.nan_to_num(x64[:, -k:]).mean(axis=1),
            _(
                "the last measured value is left out: take the last k values that are not nan, "
                "the very last one included"
            ): _last_measured(x64, k, skip_from_end=1),
            _("this averages k + 1 values: take the last k"): _last_measured(x64, k + 1),
            _("this averages k - 1 values: take the last k"): _last_measured(x64, k - 1),
            _("this is the last measured value alone; average the last k"): _last_measured(x64, 1),
            _("this is the median of the last k measured values; take their mean"): np.asarray(
                [np.median(row[~np.isnan(row)][-k:]) for row in x64]
            ),
            _("this is the largest of the last k measured values; take their mean"): np.asarray(
                [row[~np.isnan(row)][-k:].max() for row in x64]
            ),
            _(
                "this averages the first k measured values, early in training; take the last k"
            ): np.asarray([row[~np.isnan(row)][:k].mean() for row in x64]),
            _(
                "this averages the k largest measured values, not the last k: keep the values in "
                "the order of the updates"
            ): np.asarray([np.sort(row[~np.isnan(row)])[-k:].mean() for row in x64]),
            _(
                "a nan is filled with the value before it, so a value is counted twice: skip each "
                "nan, and take the last k values left"
            ): _forward_filled(x64, k),
        }
    return Case(label, {"success_by_start": x, "k": k}, _last_measured(x64, k), mistakes)


@self_check
def check_late_success(late_success: Callable) -> None:
    """Check ``late_success(success_by_start, k)``: each seed's success late in training.

    ``success_by_start`` float32 ``(seeds, updates)``, as ``ppo.make_train``'s metric: nan for
    the last updates, whose episodes were still running when training stopped, and for any
    update in which no episode started; ``k`` an int. Returns a float array ``(seeds,)``: the
    mean of each row's last ``k`` values that are not nan (every row of the check has at least
    ``k``). Called on NumPy arrays, not under ``jit``.

    Raises:
        CheckFailed: naming the mistake (the last k updates' nanmean, the whole run, a stop at
            the first nan, nan counted as 0, the last value left out, k + 1 or k - 1 values, the
            last value alone, a nan in the result), or a result that is not a float array
            ``(seeds,)`` (one value for all seeds, say).
    """
    nan = np.nan
    cases = [
        _late_success_case(
            [
                [0.0, 0.1, 0.0, 0.2, 0.3, 0.5, 0.4, 0.6, 0.7, 0.9, 0.8, 0.9, nan, nan],
                [0.0, nan, nan, 0.1, 0.1, 0.2, 0.2, 0.1, 0.3, nan, 0.2, 0.6, 0.5, nan],
                [0.1, 0.0, 0.2, 0.4, 0.6, 0.9, 1.0, 1.0, 0.8, 1.0, nan, 0.7, 0.9, nan],
            ],
            4,
            _("{seeds} seeds of {updates} updates, k = {k}").format(seeds=3, updates=14, k=4),
        ),
        _late_success_case(
            [
                [0.0, 0.0, 0.25, nan, 0.5, 0.5, 0.75, 1.0, nan],
                [0.0, 0.0, nan, 0.0, 0.25, 0.0, nan, 0.5, nan],
            ],
            3,
            _("{seeds} seeds of {updates} updates, k = {k}").format(seeds=2, updates=9, k=3),
        ),
    ]
    outputs = []
    for case in cases:
        rows, k = case.inputs.values()
        call = _("late_success(success_by_start, {k}) for {case}").format(k=k, case=case.label)
        got = run_answer(
            late_success,
            rows.copy(),
            k,
            call=call,
            jit=False,
            hint=_("success_by_start: a NumPy float32 array {shape} with nan; k an int").format(
                shape=rows.shape
            ),
        )
        values = require_array(
            got,
            call,
            rows.shape[:1],
            "float",
            why=_("one value per seed: a row is a seed, its columns the updates"),
            finite=False,
        )
        if np.isnan(values).any():
            fail(
                _(
                    "{call} gives nan for seeds {seeds}: success_by_start is nan where nothing "
                    "was measured (the last updates, whose episodes were still running, and any "
                    "update in which no episode started). Skip the nan values (np.isnan) and "
                    "average the last k of the others"
                ).format(call=call, seeds=np.flatnonzero(np.isnan(values)).tolist())
            )
        if not np.isfinite(values).all():
            fail(_("{call} contains inf values").format(call=call))
        outputs.append(values)
    verdict("late_success", cases, outputs, rtol=1e-5, atol=1e-6)
    passed(_("late_success: the mean of each seed's last k measured values, nan skipped"))
