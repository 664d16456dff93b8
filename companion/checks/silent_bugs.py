"""The self-check of the silent-bugs chapter's exercise 1: :func:`check_cross_talk` (a detector
of a loss whose samples talk to each other); exercise 2's is in
:mod:`companion.checks.compilations`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import require_number
from companion.checks._messages import N_, _
from companion.checks.core import (
    Case,
    CheckFailed,
    _Differs,
    fail,
    passed,
    require_function,
    run_answer,
    self_check,
    verdict,
)

# --- exercise 1: cross-talk between samples -----------------------------------------------


def _mse(v, t):
    return jnp.mean(0.5 * (v - t) ** 2)


def _reshaped_mse(v, t):
    return jnp.mean(0.5 * (v.reshape(t.shape) - t) ** 2)


def _mse_with_spread_penalty(v, t):
    return jnp.mean(0.5 * (v - t) ** 2) + 0.5 * jnp.var(v)


def _mse_targets_centred_in_threes(v, t):
    groups = t.reshape(-1, 3)
    centred = (groups - groups.mean(axis=1, keepdims=True)).reshape(t.shape)
    return jnp.mean(0.5 * (v - centred) ** 2)


def _softmax_weighted_mse(v, t):
    return jnp.sum(jax.nn.softmax(t) * 0.5 * (v - t) ** 2)


def _lagged_mse(v, t):
    return jnp.mean((v[1:] - t[:-1]) ** 2)


def _f32(values) -> jax.Array:
    return jnp.asarray(values, jnp.float32)


#: (label, loss, values, targets): a per-sample loss gives no cross-talk, whatever the shapes.
_CROSS_TALK_CASES = [
    (
        N_("a per-sample loss, jnp.mean(0.5 * (v - t) ** 2), values (5,)"),
        _mse,
        _f32([0.5, -1.0, 2.0, 0.0, 1.5]),
        _f32([1.0, 0.5, -0.5, 2.0, 1.0]),
    ),
    (
        N_("the broadcast loss: the same with values (5, 1) against targets (5,)"),
        _mse,
        _f32([[0.5], [-1.0], [2.0], [0.0], [1.5]]),
        _f32([1.0, 0.5, -0.5, 2.0, 1.0]),
    ),
    (
        N_(
            "a per-sample loss that reshapes (4, 1) values, "
            "jnp.mean(0.5 * (v.reshape(t.shape) - t) ** 2)"
        ),
        _reshaped_mse,
        _f32([[0.0], [1.0], [2.0], [3.0]]),
        _f32([1.0, 2.0, 3.0, 4.0]),
    ),
    (
        N_(
            "a per-sample loss plus a penalty on the values' spread, "
            "jnp.mean(0.5 * (v - t) ** 2) + 0.5 * jnp.var(v)"
        ),
        _mse_with_spread_penalty,
        _f32([0.0, 1.0, 2.0, 3.0]),
        _f32([1.0, 2.0, 3.0, 4.0]),
    ),
    (
        N_("targets centred within groups of three samples (cross-talk inside a group only)"),
        _mse_targets_centred_in_threes,
        _f32([0.0, 1.0, -1.0, 2.0, 0.5, 1.5]),
        _f32([1.0, 3.0, 2.0, 0.0, -1.0, 4.0]),
    ),
    (
        N_("a loss weighted by jax.nn.softmax(t), computed from the targets without stop_gradient"),
        _softmax_weighted_mse,
        _f32([-1.0, 3.0, 0.5, 1.0]),
        _f32([0.0, 1.0, 0.5, 2.0]),
    ),
    (
        N_(
            "a lagged loss, jnp.mean((v[1:] - t[:-1]) ** 2), each value against the previous "
            "target (cross-talk below the diagonal only)"
        ),
        _lagged_mse,
        _f32([0.5, -1.0, 2.0, 0.0]),
        _f32([1.0, 0.5, -0.5, 2.0]),
    ),
]

_INCLUDES_DIAGONAL = N_(
    "it includes the diagonal i = j, where a per-sample loss is not 0 either "
    "(∂²L/∂v_i∂t_i = -1/B for the mean squared error), so every loss seems to have "
    "cross-talk: take the largest |entry| off the diagonal only"
)
_DIAGONAL_OF_COLUMNS = N_(
    "with values of shape (B, 1) it includes the diagonal i = j (the per-sample loss that "
    "reshapes its (4, 1) values gives 0.25, its |∂²L/∂v_i∂t_i|): the Jacobian has shape "
    "(B, 1, B) there; reshape it to (values.size, targets.size) before leaving out the diagonal"
)
_NEVER_FIRES = N_(
    "it returns 0 for every loss, also for the broadcast one (values (5, 1) against targets "
    "(5,)), whose ∂L/∂v_i depends on every target: ∂²L/∂v_i∂t_j = -1/25 for every pair. "
    "Differentiate jax.grad(loss), the gradient with respect to the values, once more with "
    "respect to the targets (argnums=1)"
)
_VALUES_TWICE = N_(
    "it measures ∂²L/∂v_i∂v_j, the values against each other (jax.hessian(loss) "
    "differentiates twice with respect to the first argument): it finds cross-talk in the "
    "per-sample loss with a penalty on the values' spread, and none in the broadcast loss. "
    "Differentiate the gradient with respect to the targets (argnums=1)"
)
_TARGETS_TWICE = N_(
    "it measures ∂²L/∂t_i∂t_j, the targets against each other (jax.hessian(loss, "
    "argnums=1)): it finds none in the broadcast loss, whose ∂L/∂v_i depends on every target. "
    "Differentiate the gradient with respect to the values (argnums=0) once more with respect "
    "to the targets (argnums=1)"
)
_SIGNED = N_(
    "it returns the largest signed entry, not the largest absolute value: the broadcast "
    "loss's cross-talk is negative, -1/25 for every pair; take the maximum of the absolute "
    "values"
)
_ONE_TRIANGLE = N_(
    "it reads one triangle of the block only (np.triu or np.tril with an offset), as if "
    "∂²L/∂v_i∂t_j were symmetric: in the lagged loss, where each value meets the previous "
    "target, all the cross-talk lies below the diagonal; take the largest |entry| over every "
    "pair i ≠ j, above and below the diagonal"
)
_ABS_AFTER_MAX = N_(
    "it takes the absolute value after the maximum: in the softmax-weighted loss the largest "
    "cross-talk is a negative entry, which |max| misses; take the maximum of the absolute "
    "values"
)
_FIRST_ORDER = N_(
    "it returns a first derivative, the largest |∂L/∂v_i| or |∂L/∂t_j|, which a per-sample "
    "loss has too (it is not 0 while a value differs from its target). Cross-talk is the "
    "mixed second derivative ∂²L/∂v_i∂t_j of i ≠ j: "
    "jax.jacfwd(jax.grad(loss), argnums=1)(values, targets)"
)
_MEAN = N_(
    "it averages the |entries| off the diagonal instead of taking the largest: cross-talk "
    "inside groups of three samples is diluted by the many pairs without it"
)
_SUMMED = N_(
    "it adds entries of ∂²L/∂v_i∂t_j together (over every pair, or over j for each i, as a "
    "jvp that moves all targets at once does), where the largest single |entry| off the "
    "diagonal is asked for"
)

_SYMMETRISED = N_(
    "it averages ∂²L/∂v_i∂t_j with ∂²L/∂v_j∂t_i ((H + H.T) / 2), as if the block were "
    "symmetric: in the softmax-weighted loss the two differ; take the largest |entry| of the "
    "block itself over every pair i ≠ j"
)


def _second_block(loss: Callable, values, targets, first: int = 0, then: int = 1) -> Any:
    """``∂²L/∂x_i∂y_j`` as a ``(x.size, y.size)`` matrix: ``x`` and ``y`` the values (0) or the
    targets (1), ``first`` and ``then``."""
    block = jax.jit(jax.jacfwd(jax.grad(loss, argnums=first), argnums=then))(values, targets)
    x, y = (values, targets)[first], (values, targets)[then]
    return np.asarray(block, np.float64).reshape(x.size, y.size)


def _off_diagonal(matrix: np.ndarray) -> np.ndarray:
    return matrix[~np.eye(*matrix.shape, dtype=bool)]


def _cross_talk_case(label: str, loss: Callable, values, targets) -> Case:
    block = _second_block(loss, values, targets)
    off = _off_diagonal(block)
    mistakes = {
        _INCLUDES_DIAGONAL: np.abs(block).max(),
        _DIAGONAL_OF_COLUMNS: np.abs(block).max() if values.ndim == 2 else np.abs(off).max(),
        _NEVER_FIRES: 0.0,
        _VALUES_TWICE: np.abs(_off_diagonal(_second_block(loss, values, targets, 0, 0))).max(),
        _TARGETS_TWICE: np.abs(_off_diagonal(_second_block(loss, values, targets, 1, 1))).max(),
        _SIGNED: off.max(),
        _ABS_AFTER_MAX: abs(off.max()),
        _ONE_TRIANGLE: [np.abs(np.triu(block, 1)).max(), np.abs(np.tril(block, -1)).max()],
        _FIRST_ORDER: [
            np.abs(np.asarray(jax.jit(jax.grad(loss, argnums=n))(values, targets))).max()
            for n in (0, 1)
        ],
        _MEAN: np.abs(off).mean(),
        _SYMMETRISED: np.abs(_off_diagonal((block + block.T) / 2)).max()
        if block.shape[0] == block.shape[1]
        else np.abs(off).max(),
        _SUMMED: [
            np.abs(off).sum(),
            np.abs(block.sum(axis=1)).max(),
            np.abs(block.sum(axis=1) - np.diag(block)).max(),
        ],
    }
    inputs = {"values": np.asarray(values), "targets": np.asarray(targets)}
    return Case(label, inputs, np.abs(off).max(), mistakes)


_cross_talk_cases: list = []  # the Cases of _CROSS_TALK_CASES, computed at the first check


def _cross_talk_reference() -> list:
    if not _cross_talk_cases:
        _cross_talk_cases.extend(_cross_talk_case(*case) for case in _CROSS_TALK_CASES)
    # kept in English, told in the reader's language
    return [
        case._replace(label=_(case.label), mistakes={_(m): v for m, v in case.mistakes.items()})
        for case in _cross_talk_cases
    ]


def _cross_talk_hint(got: Any) -> str:
    """What a result that is not one float did wrong, where it shows."""
    if isinstance(got, (bool, np.bool_)) or getattr(got, "dtype", None) == np.dtype(bool):
        return _(
            "Return the largest |∂²L/∂v_i∂t_j| itself, a float, so that it says how much "
            "cross-talk there is"
        )
    if np.ndim(got) > 0:
        return _("Return one float, the largest over all pairs i != j")
    return ""


def _near(got: float, expected: float, share: float) -> bool:
    return abs(got - expected) <= share * abs(expected) + 1e-6


def _cross_talk_diagnosis(cross_talk: Callable, cases: list, outputs: list) -> None:
    """Name an unlisted mistake by what its results share: close but not exact, the same
    result wherever the loss is measured, one entry that is not the largest, or scaled."""
    wrong = [
        (i, case, got)
        for i, (case, got) in enumerate(zip(cases, outputs))
        if not np.isclose(got, case.expected, rtol=1e-4, atol=1e-6)
    ]
    _i, case, got = wrong[0]
    shown = {"case": case.label, "got": f"{got:.4g}", "expected": f"{case.expected:.4g}"}
    if all(_near(g, c.expected, 0.05) for c, g in zip(cases, outputs)):
        fail(
            _(
                "cross_talk is within 5% of the largest entry but not exact (on {case} it gives "
                "{got}, expected {expected}): a finite difference approximates the derivative; "
                "jax.jacfwd(jax.grad(loss), argnums=1)(values, targets) gives it exactly"
            ).format(**shown)
        )
    _label, loss, values, targets = _CROSS_TALK_CASES[wrong[0][0]]
    moved = (values + 1.0, targets[::-1] * 0.5 + 0.25)
    try:
        again = float(run_answer(cross_talk, loss, *moved, call="cross_talk", jit=False))
    except (CheckFailed, TypeError, ValueError):
        again = None
    expected_there = float(np.abs(_off_diagonal(_second_block(loss, *moved))).max())
    if (
        again is not None
        and np.isclose(again, outputs[wrong[0][0]], rtol=1e-6, atol=1e-9)
        and not np.isclose(expected_there, float(wrong[0][1].expected), rtol=1e-3)
    ):
        fail(
            _(
                "cross_talk gives the same result, {got}, on {case} wherever the loss is "
                "measured (other values and targets give {expected_there} there): it ignores "
                "the values and targets passed; differentiate at them"
            ).format(
                got=f"{outputs[wrong[0][0]]:.4g}",
                case=wrong[0][1].label,
                expected_there=f"{expected_there:.4g}",
            )
        )

    for i, case, got in wrong:
        _label, loss, values, targets = _CROSS_TALK_CASES[i]
        block = np.abs(_second_block(loss, values, targets))
        found = np.argwhere(np.isclose(block, got, rtol=1e-4, atol=1e-6))
        if len(found):
            row, column = (int(k) for k in found[0])
            largest = np.unravel_index(np.argmax(np.abs(_off_diagonal_masked(block))), block.shape)
            message = (
                _(
                    "cross_talk gives |∂²L/∂v_i∂t_j| of the pair (i, j) = ({i}, {j}) on {case}, "
                    "{got}, but the largest off the diagonal is {expected}, at (i, j) = ({k}, "
                    "{m}): it reads some of the pairs only (one row or one column?); take the "
                    "maximum over every pair i != j"
                )
                if row != column
                else _(
                    "cross_talk gives |∂²L/∂v_i∂t_i| of a diagonal entry, i = j = {i}, on "
                    "{case}, {got}, but the largest off the diagonal is {expected}, at (i, j) "
                    "= ({k}, {m}): leave out the diagonal"
                )
            )
            fail(
                message.format(
                    i=row,
                    j=column,
                    k=int(largest[0]),
                    m=int(largest[1]),
                    case=case.label,
                    got=f"{got:.4g}",
                    expected=f"{case.expected:.4g}",
                )
            )
    _i, case, got = wrong[0]
    zeros_kept = all(
        abs(g) <= 1e-6 for c, g in zip(cases, outputs) if abs(float(c.expected)) <= 1e-6
    )
    if zeros_kept and all(abs(float(c.expected)) > 1e-6 and abs(g) > 1e-6 for _i, c, g in wrong):
        fail(
            _(
                "cross_talk is 0 where it should be, but scaled elsewhere: on {case} it gives "
                "{got}, {ratio} times the largest |∂²L/∂v_i∂t_j| off the diagonal, {expected}. "
                "Return that entry itself, not divided or multiplied by anything (a diagonal "
                "entry, the batch size)"
            ).format(**shown, ratio=f"{got / float(case.expected):.4g}")
        )


def _off_diagonal_masked(matrix: np.ndarray) -> np.ndarray:
    return np.where(np.eye(*matrix.shape, dtype=bool), 0.0, matrix)


@self_check
def check_cross_talk(cross_talk: Callable) -> None:
    """Check ``cross_talk(loss, values, targets) -> float``: the largest ``|∂²L/∂v_i∂t_j|``
    over pairs ``i != j`` (0 for a per-sample loss).

    ``loss(values, targets)`` returns a float32 scalar; ``values`` float32 ``(B,)`` or
    ``(B, 1)``, ``targets`` float32 ``(B,)``. The answer is called as it is (not under ``jit``:
    NumPy is fine) on seven losses whose cross-talk is known: three per-sample ones (the mean
    squared error, one that reshapes ``(B, 1)`` values, one with a penalty on the values'
    spread), the broadcast ``(B, 1)``-against-``(B,)`` loss, targets centred within groups of
    three (cross-talk between some samples only), a loss weighted by a softmax of the
    targets (cross-talk of both signs) and a lagged loss (cross-talk below the diagonal
    only).

    Raises:
        CheckFailed: naming the mistake (the diagonal included, for all shapes or for
            ``(B, 1)`` values only; a detector that never fires; the values or the targets
            differentiated twice; one triangle of the block; a signed maximum or the absolute value after it; a first
            derivative; a mean or a sum of entries); or a result that is not one float (an
            array, a bool, an int).
    """
    require_function(cross_talk, "cross_talk")
    outputs = []
    for _label, loss, values, targets in _CROSS_TALK_CASES:
        call = _("cross_talk({loss}, values {values}, targets {targets})").format(
            loss=loss.__name__.lstrip("_"),
            values=tuple(values.shape),
            targets=tuple(targets.shape),
        )
        columns = values.ndim == 2
        hint = (
            _(
                "Here values have shape (B, 1) against targets (B,): the Jacobian d/dt (dL/dv) "
                "then has shape (B, 1, B)"
            )
            if columns
            else ""
        )
        got = run_answer(cross_talk, loss, values, targets, call=call, jit=False, hint=hint)
        value = require_number(
            got,
            call,
            "float",
            why=_("the largest |∂²L/∂v_i∂t_j| over the pairs i != j"),
            hint=_cross_talk_hint,
        )
        if not np.isfinite(value):
            fail(
                _("{call} returned {value}, where the largest entry is a finite float").format(
                    call=call, value=value
                )
            )
        outputs.append(value)
    cases = _cross_talk_reference()
    try:
        verdict("cross_talk", cases, outputs, rtol=1e-4, atol=1e-6)
    except _Differs:
        _cross_talk_diagnosis(cross_talk, cases, outputs)
        raise
    passed(
        _("cross_talk gives 0 for three per-sample losses and the largest entry for four others")
    )
