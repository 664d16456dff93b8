"""check_cross_talk (chapter 10): right answers and its bank of wrong answers (``WRONG_*``:
slip, answer, verdict).

What the check guards, and the case that breaks each plausible wrong answer:

check_cross_talk (largest |d2L/dv_i dt_j| over i != j; seven losses of known cross-talk)
- off the diagonal: the diagonal included, for all shapes or (B, 1) values only (a
  square mask on the (B, 1, B) Jacobian raises and is told the shape), named; on one
  case only, told the diagonal entry it returned;
- the largest pair: one row, one column, the smallest pair: told the pair it returned and
  where the largest is; the block symmetrised (the softmax-weighted loss's is not), named;
- exact and at the inputs: a forward or central finite difference is within 5% (named);
  a derivative taken at 0 or where values meet targets is told the result does not move
  when the values and targets do (the softmax-weighted loss's cross-talk does);
- unscaled: divided by the diagonal or the batch size, 0 where it should be but scaled
  elsewhere, named;
- the mixed derivative: the values or targets twice, a first derivative, named;
- every pair: one triangle of the block (a lagged loss has cross-talk below the diagonal
  only, the softmax-weighted one a larger |entry| above it), named;
- |entries| and their maximum: signed, abs after the max, mean, sum, a jvp summing rows;
- fires: a detector that returns 0; a float, not a bool or an array, a function passed.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from checks.answers import (
    _mixed_block,
    bank_params,
    cross_talk_hessian,
    cross_talk_jacobian,
    rejects,
)
from companion.checks import check_cross_talk

# --- check_cross_talk: cross_talk(loss, values, targets) ------------------------------


def cross_talk_loop(loss, values, targets):
    """One pair at a time: the derivative of one entry of the gradient by one target."""
    flat = values.reshape(-1)
    largest = 0.0
    for i in range(flat.size):

        def grad_i(t, i=i):
            return jax.grad(loss)(values, t).reshape(-1)[i]

        row = jax.grad(grad_i)(targets)
        for j in range(targets.size):
            if j != i:
                largest = max(largest, abs(float(row[j])))
    return largest


RIGHT_CROSS_TALK = [cross_talk_jacobian, cross_talk_loop, cross_talk_hessian]


def _with_diagonal(loss, values, targets):
    return float(np.abs(_mixed_block(loss, values, targets)).max())


def _mask_without_reshape(loss, values, targets):
    jac = jax.jacfwd(jax.grad(loss), argnums=1)(values, targets)  # (B, 1, B) for (B, 1) values
    return float(jnp.abs(jac * (1.0 - jnp.eye(targets.size))).max())


def _values_twice(loss, values, targets):
    hess = jax.hessian(loss)(values, targets).reshape(values.size, values.size)
    return float(jnp.abs(hess * (1.0 - jnp.eye(values.size))).max())


def _targets_twice(loss, values, targets):
    hess = jax.hessian(loss, argnums=1)(values, targets)
    return float(jnp.abs(hess * (1.0 - jnp.eye(targets.size))).max())


def _off_diagonal(loss, values, targets):
    block = _mixed_block(loss, values, targets)
    return block[~np.eye(values.size, targets.size, dtype=bool)]


def _jvp_all_targets(loss, values, targets):
    """Moves every target at once: the sums of the rows, diagonal included."""
    _, rows = jax.jvp(lambda t: jax.grad(loss)(values, t), (targets,), (jnp.ones_like(targets),))
    return float(jnp.abs(rows).max())


def _index_with_a_square_mask(loss, values, targets):
    jac = np.asarray(jax.jacfwd(jax.grad(loss), argnums=1)(values, targets))
    return float(np.abs(jac[~np.eye(values.shape[0], dtype=bool)]).max())


def _diagonal_on_one_case(loss, values, targets):
    """Includes the diagonal only for B = 6: a mistake on one case is not named."""
    full = values.size == 6
    block = _mixed_block(loss, values, targets)
    mask = np.ones_like(block, bool) if full else ~np.eye(values.size, dtype=bool)
    return float(np.abs(block[mask]).max())


WRONG_CROSS_TALK = [
    ("the diagonal included", _with_diagonal, r"includes the diagonal i = j, where a per-sample"),
    (
        "a (B, 1, B) Jacobian masked without a reshape",
        _mask_without_reshape,
        r"with values of shape \(B, 1\) it includes the diagonal.*reshape it",
    ),
    ("never fires: always 0", lambda loss, v, t: 0.0, r"returns 0 for every loss"),
    (
        "never fires: jax.hessian(loss), the values twice",
        _values_twice,
        r"∂²L/∂v_i∂v_j, the values against each other",
    ),
    ("the targets twice", _targets_twice, r"∂²L/∂t_i∂t_j, the targets against each other"),
    (
        "one triangle: the block's upper triangle",
        lambda loss, v, t: float(np.abs(np.triu(_mixed_block(loss, v, t), 1)).max()),
        r"reads one triangle of the block only",
    ),
    (
        "one triangle: the block's lower triangle",
        lambda loss, v, t: float(np.abs(np.tril(_mixed_block(loss, v, t), -1)).max()),
        r"reads one triangle of the block only",
    ),
    ("a signed maximum", lambda *a: float(_off_diagonal(*a).max()), r"largest signed entry"),
    (
        "the absolute value after the maximum",
        lambda *a: abs(float(_off_diagonal(*a).max())),
        r"absolute value after the maximum",
    ),
    (
        "first order: the gradient by the targets",
        lambda loss, v, t: float(jnp.abs(jax.grad(loss, argnums=1)(v, t)).max()),
        r"returns a first derivative",
    ),
    (
        "first order: the gradient by the values",
        lambda loss, v, t: float(jnp.abs(jax.grad(loss)(v, t)).max()),
        r"returns a first derivative",
    ),
    (
        "the mean off the diagonal",
        lambda *a: float(np.abs(_off_diagonal(*a)).mean()),
        r"averages the \|entries\|",
    ),
    (
        "the sum off the diagonal",
        lambda *a: float(np.abs(_off_diagonal(*a)).sum()),
        r"adds entries of ∂²L/∂v_i∂t_j together",
    ),
    (
        "a jvp that moves all targets at once",
        _jvp_all_targets,
        r"adds entries of ∂²L/∂v_i∂t_j together",
    ),
    (
        "a bool: is there cross-talk?",
        lambda *a: bool(np.abs(_off_diagonal(*a)).max() > 0),
        r"it returned the bool (True|False)",
    ),
    (
        "one maximum per row",
        lambda *a: np.abs(_mixed_block(*a)).max(axis=1),
        r"should return a float .*; it returned a float32 array of shape \(\d,\)",
    ),
    (
        "a square mask on the (B, 1, B) Jacobian",
        _index_with_a_square_mask,
        r"raised IndexError.*Here values have shape \(B, 1\).*\(B, 1, B\)",
    ),
    (
        "the diagonal on one case only",
        _diagonal_on_one_case,
        r"a diagonal entry, i = j = \d, on targets centred within groups of three",
    ),
    ("a function not passed", 0.0, r"expected your function, got float"),
]


def _relative_to_diagonal(loss, values, targets):
    block = _mixed_block(loss, values, targets)
    scale = np.abs(np.diag(block)).max()
    largest = np.abs(_off_diagonal(loss, values, targets)).max()
    return float(largest / scale) if scale else float(largest)


def _at_zero(loss, values, targets):
    return float(np.abs(_off_diagonal(loss, jnp.zeros_like(values), jnp.zeros_like(targets))).max())


def _first_row(loss, values, targets):
    block = _mixed_block(loss, values, targets)
    return float(np.abs(np.delete(block[0], 0)).max())


def _finite_difference(loss, values, targets, eps=1e-1, central=False):
    """∂L/∂v by jax.grad, then differences of it over each target moved by eps."""
    grad = lambda t: np.asarray(jax.grad(loss)(values, t), np.float64).reshape(-1)  # noqa: E731
    columns = []
    for j in range(targets.size):
        step = eps * jnp.eye(targets.size)[j]
        back = grad(targets - step) if central else grad(targets)
        columns.append((grad(targets + step) - back) / (2 * eps if central else eps))
    block = np.stack(columns, axis=1)
    return float(np.abs(block[~np.eye(*block.shape, dtype=bool)]).max())


def _symmetrised(loss, values, targets):
    block = _mixed_block(loss, values, targets)
    block = (block + block.T) / 2
    return float(np.abs(block[~np.eye(*block.shape, dtype=bool)]).max())


def _smallest_pair(loss, values, targets):
    return float(np.abs(_off_diagonal(loss, values, targets)).min())


def _per_batch_size(loss, values, targets):
    return float(np.abs(_off_diagonal(loss, values, targets)).max() / targets.size)


def _first_column(loss, values, targets):
    block = _mixed_block(loss, values, targets)
    return float(np.abs(np.delete(block[:, 0], 0)).max())


def _at_values_as_targets(loss, values, targets):
    """Differentiates at targets equal to the values (where each error is 0)."""
    return float(np.abs(_off_diagonal(loss, values, values.reshape(targets.shape))).max())


def _transposed_block(loss, values, targets):
    """∂/∂v of ∂L/∂t: the same block transposed, so the same largest |entry|."""
    jac = jax.jacfwd(jax.grad(loss, argnums=1), argnums=0)(values, targets)
    block = np.asarray(jac).reshape(targets.size, values.size)
    return float(np.abs(block[~np.eye(*block.shape, dtype=bool)]).max())


RIGHT_CROSS_TALK += [_transposed_block]

WRONG_CROSS_TALK += [
    (
        "relative to the largest diagonal entry",
        _relative_to_diagonal,
        r"0 where it should be, but scaled elsewhere: .* 25 times",
    ),
    ("measured at zero values and targets", _at_zero, r"the same result, 0, .* wherever the loss"),
    ("the first row only", _first_row, r"pair \(i, j\) = \(0, 3\).*some of the pairs only"),
    ("a forward difference of 0.1", _finite_difference, r"within 5% of the largest entry"),
    # new slips
    (
        "a central difference of 0.1",
        functools.partial(_finite_difference, central=True),
        r"within 5% of the largest entry",
    ),
    (
        "the block symmetrised, (H + H.T) / 2",
        _symmetrised,
        r"averages ∂²L/∂v_i∂t_j with ∂²L/∂v_j∂t_i",
    ),
    ("the smallest pair", _smallest_pair, r"pair \(i, j\).*some of the pairs only"),
    ("divided by the batch size", _per_batch_size, r"scaled elsewhere: .* 0.2 times"),
    ("the first column only", _first_column, r"pair \(i, j\).*some of the pairs only"),
    (
        "measured where each value meets its target",
        _at_values_as_targets,
        r"ignores",
    ),
]


@pytest.mark.parametrize("answer", RIGHT_CROSS_TALK, ids=lambda f: f.__name__)
def test_cross_talk_right_answers_pass(answer, capsys):
    check_cross_talk(answer)
    assert "check passed: cross_talk gives 0 for three per-sample" in capsys.readouterr().out


#: The check's right answers (they pass in their own test, above) and its bank of wrong ones.
RIGHTS = {"check_cross_talk": RIGHT_CROSS_TALK}
BANKS = {"check_cross_talk": WRONG_CROSS_TALK}


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)
