"""check_settle and check_success_by_reach (chapter 9): right answers and each check's bank
of wrong answers (``WRONG_*``: slip, answer, verdict).

What each check guards, and the case that breaks each plausible wrong answer:

check_settle (max-plus backups in a while_loop until nothing changes; four mazes)
- the count: the last backup counted or a count from 1 (the same counts), a float count,
  named;
- the stop: jnp.all for jnp.any, a nan difference of -inf cells (stops after one), a
  fixed number of backups (fori_loop or while_loop), named;
- the backup: cost taken as 1, no mask (through walls), jnp.roll the wrong way, max(v, ...)
  left out (never settles; the loop is stopped, and while_loop restored), named;
- what the values break, for slips not modelled: +cost (a value above the target's 0; it
  never settles either), cost subtracted twice (every value 2 times the expected), a
  forbidden move as 0 (a wall with a finite value), a changed flag that starts False (v_0
  returned, count 0), named; the changed cells counted (a sum for jnp.any), named; the
  distances returned (-v: the sign flipped, +inf where the target is out of reach), named;
- traced values: an ``if`` on one is told the book runs it under jit.

check_success_by_reach (success rates within reach K + 1 and beyond)
- the reach: split at K or a fixed 9, named; at K + 2, named by the rate within reach;
- the rates: swapped, divided by all episodes, failure rates, named;
- one rate wrong, named by what it is: the rate of all the episodes, the other part's rate
  (the within mask used twice), one minus the other, a part from iterations + 1 on (the
  episodes at the reach in both parts) or below it (in neither).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest

import companion.checks as checks
from checks.answers import (
    _backup,
    _reach_sums,
    _settle_test_in_condition,
    bank_params,
    generic,
    passes,
    reach_answer,
    rejects,
    right_params,
    settle_answer,
)
from companion.agents import ppo
from companion.checks import CheckFailed


def _fails(check, answer, message):
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed, match=message):
        check(answer)


# --- check_settle: settle(v_0, can_move, cost) ----------------------------------------


def _settle_stacked(v_0, can_move, cost):
    """The four directions stacked, one maximum over them."""

    def body(carry):
        v, _, n = carry
        shifted = jnp.stack([ppo.neighbour(v, d) for d in range(4)]) - cost
        v_next = jnp.maximum(v, jnp.max(jnp.where(can_move, shifted, -jnp.inf), axis=0))
        moved = jnp.any(v_next != v)
        return v_next, moved, n + moved.astype(jnp.int32)

    v, _, n = jax.lax.while_loop(lambda c: c[1], body, (v_0, True, jnp.int32(0)))
    return v, n


def _roll(v, d, sign=1):
    dr, dc = ((-1, 0), (0, 1), (1, 0), (0, -1))[d]
    return jnp.roll(v, (-sign * dr, -sign * dc), (0, 1))


def _settle_fixed_while(v_0, can_move, cost):
    def body(carry):
        i, v, n = carry
        v_next = _backup(v, can_move, cost)
        return i + 1, v_next, n + jnp.any(v_next != v).astype(jnp.int32)

    return jax.lax.while_loop(lambda c: c[0] < v_0.size, body, (0, v_0, jnp.int32(0)))[1:]


def _settle_starting_unchanged(v_0, can_move, cost):
    def body(carry):
        v, _, n = carry
        v_next = _backup(v, can_move, cost)
        moved = jnp.any(v_next != v)
        return v_next, moved, n + moved.astype(jnp.int32)

    v, _, n = jax.lax.while_loop(lambda c: c[1], body, (v_0, jnp.bool_(False), jnp.int32(0)))
    return v, n


def _settle_counting_cells(v_0, can_move, cost):
    def body(carry):
        v, _, n = carry
        v_next = _backup(v, can_move, cost)
        return v_next, jnp.any(v_next != v), n + jnp.sum(v_next != v, dtype=jnp.int32)

    v, _, n = jax.lax.while_loop(lambda c: c[1], body, (v_0, jnp.bool_(True), jnp.int32(0)))
    return v, n


def _backup_blocked_as_zero(v, can_move, cost):
    """A move that can_move forbids gives 0 instead of -inf."""
    v_next = v
    for d in range(4):
        v_next = jnp.maximum(v_next, jnp.where(can_move[d], ppo.neighbour(v, d) - cost, 0.0))
    return v_next


RIGHT_SETTLE = [
    settle_answer,
    _settle_test_in_condition,
    _settle_stacked,
    functools.partial(settle_answer, backup=functools.partial(_backup, shift=_roll)),  # jnp.roll
]


def _distances(v_0, can_move, cost):
    """The costs of the way to the target (-v), not the values."""
    values, count = settle_answer(v_0, can_move, cost)
    return -values, count


WRONG_SETTLE = [
    (
        "the last backup counted",
        functools.partial(settle_answer, count_every=True),
        r"the count is one more than the backups that changed something: it includes the last",
    ),
    (
        "jnp.all for jnp.any",
        functools.partial(settle_answer, changed=lambda new, old: jnp.all(new != old)),
        r"stops after one backup",
    ),
    (
        "a difference of -inf cells (nan)",
        functools.partial(settle_answer, changed=lambda new, old: jnp.max(jnp.abs(new - old)) > 0),
        r"stops after one backup.*nan",
    ),
    ("cost taken as 1", lambda v, m, c: settle_answer(v, m, 1.0), r"subtracts 1, not cost"),
    (
        "no mask",
        functools.partial(settle_answer, backup=functools.partial(_backup, mask=False)),
        r"moves go through walls",
    ),
    (
        "jnp.roll the wrong way",
        functools.partial(
            settle_answer,
            backup=functools.partial(_backup, shift=functools.partial(_roll, sign=-1)),
        ),
        r"paired with the neighbour in the opposite direction",
    ),
    (
        "max(v, ...) left out",
        functools.partial(settle_answer, backup=functools.partial(_backup, keep=False)),
        r"forgets what a cell already has, so the values never settle",
    ),
    (
        "a fori_loop of rows x cols backups",
        lambda v_0, m, c: (
            jax.lax.fori_loop(0, v_0.size, lambda i, v: _backup(v, m, c), v_0),
            jnp.int32(0),
        ),
        r"runs a fixed number of backups",
    ),
    (
        "a while_loop of rows x cols backups",
        _settle_fixed_while,
        r"values and count are right, but .* ran \d+ backups",
    ),
    (
        "a float count",
        lambda *a: (settle_answer(*a)[0], settle_answer(*a)[1] * 1.0),
        r"(it returned|it is) an? float32 array",
    ),
    ("the values only", lambda *a: settle_answer(*a)[0], r"should return a pair"),
    (
        "an `if` on a traced value",
        lambda v, m, c: settle_answer(v, m, c) if c > 0 else v,
        r"turns a traced array into a Python value",
    ),
    (
        "a count from 1",
        lambda v, m, c: (settle_answer(v, m, c)[0], settle_answer(v, m, c)[1] + 1),
        r"the count is one more .*, or starts at 1",
    ),
    (
        "+cost for -cost",
        lambda v, m, c: settle_answer(v, m, -c),
        r"above the target's 0: a move adds cost instead of subtracting it",
    ),
    (
        "cost subtracted twice",
        lambda v, m, c: settle_answer(v, m, 2 * c),
        r"every value is 2 times the expected one",
    ),
    (
        "the changed flag starts False",
        _settle_starting_unchanged,
        r"returns v_0 as it came, with a count of 0: the loop ran no backup",
    ),
    ("the changed cells counted", _settle_counting_cells, r"adds up the cells that changed"),
    (
        "a forbidden move as 0",
        functools.partial(settle_answer, backup=_backup_blocked_as_zero),
        r"a wall at row 0 and column 5, from which the target cannot be reached, has the "
        r"value 0, not -inf",
    ),
    (
        "the distances (-v) returned for the values",
        _distances,
        r"the expected ones with their sign flipped \(\+inf where the target cannot be reached\)",
    ),
]


def test_settle_restores_while_loop():
    _fails(checks.check_settle, WRONG_SETTLE[6][1], "never settle")
    assert jax.lax.while_loop.__module__.startswith("jax")


# --- check_success_by_reach: success_by_reach(success, shortest, iterations) ----------


RIGHT_REACH = [
    reach_answer,
    _reach_sums,
    lambda s, d, k: reach_answer(s, d, k, reach=lambda k: k + 1.5),
]


WRONG_REACH = [
    (
        "split at K",
        functools.partial(reach_answer, reach=lambda k: k),
        r"the split is at K = iterations moves",
    ),
    ("reach fixed at 9", functools.partial(reach_answer, reach=lambda k: 9), r"fixed at 9 moves"),
    ("swapped", lambda *a: reach_answer(*a)[::-1], r"the two rates are swapped"),
    (
        "divided by all",
        lambda s, d, k: jnp.stack([jnp.sum(s & (d <= k + 1)), jnp.sum(s & (d > k + 1))]) / s.size,
        r"divided by all the episodes",
    ),
    ("failure rates", lambda *a: 1.0 - reach_answer(*a), r"failure rates"),
    (
        "split at K + 2",
        functools.partial(reach_answer, reach=lambda k: k + 2),
        r"the rate within reach is taken over the episodes with shortest <= iterations \+ 2",
    ),
    (
        "both rates scaled by 0.9",
        lambda s, d, k: reach_answer(s, d, k) * 0.9,
        generic(r"differs from the reference on 12 episodes"),
    ),
    (
        "beyond reach as all the episodes",
        lambda s, d, k: jnp.stack([jnp.mean(s, where=d <= k + 1), jnp.mean(s)]),
        r"the rate beyond reach is the success rate of all the episodes",
    ),
    (
        "the within mask used twice",
        lambda s, d, k: jnp.stack([jnp.mean(s, where=d <= k + 1), jnp.mean(s, where=d <= k + 1)]),
        r"the rate beyond reach is the other part's rate",
    ),
    (
        "beyond as one minus within",
        lambda s, d, k: jnp.stack([reach_answer(s, d, k)[0], 1 - reach_answer(s, d, k)[0]]),
        r"the rate beyond reach is one minus the other part's rate",
    ),
    (
        "beyond from iterations + 1 on",
        lambda s, d, k: jnp.stack([jnp.mean(s, where=d <= k + 1), jnp.mean(s, where=d >= k + 1)]),
        r"the rate beyond reach is taken over the episodes with shortest >= iterations \+ 1",
    ),
    (
        "within below iterations + 1",
        lambda s, d, k: jnp.stack([jnp.mean(s, where=d < k + 1), jnp.mean(s, where=d > k + 1)]),
        r"the rate within reach is taken over the episodes with shortest <= iterations:",
    ),
]


#: Each check's right answers and its bank of wrong ones.
RIGHTS = {"check_settle": RIGHT_SETTLE, "check_success_by_reach": RIGHT_REACH}
BANKS = {"check_settle": WRONG_SETTLE, "check_success_by_reach": WRONG_REACH}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)
