"""check_legal_fraction, check_up_first_policy (chapter 3) and check_termination_and_truncation
(chapter 4): right answers, each check's bank of wrong answers (``WRONG_*``: slip, answer,
verdict) and the checks' case sets.

What each check guards, and the case that breaks each plausible wrong answer:

check_legal_fraction (bool (N, 4) -> float32 (4,))
- the axis: a batch of exactly 4 masks, where the mean over axis 1 has the right shape,
  named from its values (cut to 4, it is generic); keepdims named;
- a fraction, not a count: counts and ``//`` (int32) named; the illegal fraction named;
- the contract: float16, bfloat16; NumPy under jit is told so.

check_up_first_policy (up when legal, else uniform over the legal actions)
- up when legal: two masks with up legal, 600 draws each, every one must be up;
- never illegal: three masks with up blocked, 600 draws each; a policy that picks an
  illegal action in 2% of its draws is caught with probability 1 - 0.98**600 > 0.999999;
- random, with the key passed in: the first or last legal action, a key of its own
  (key(0), key(1)) give one action for all keys, named;
- uniform: every legal share within 0.08 of uniform over 600 draws (the next legal action
  after a random one is caught);
- the contract: float, int8 actions.

check_termination_and_truncation (LAST steps split into terminated and truncated)
- a walled-in agent terminates: reward only, ``any`` without an axis, ``all`` for ``any``
  (walls next to the agent), keepdims (raises, told the axis);
- the target terminates: only walled in, ``&`` for ``|``, precedence ``last & a | b``;
- only LAST steps: flags off LAST, last left out, one step late, truncated = ~terminated;
- time limits truncate: every end a termination, truncated = last;
- the mask of the step itself: the previous or the next step's mask (rolled, or padded by
  its edge row or by a row of legal moves), named as read one step off; the next step's
  reward is named as the target not called a termination;
- one ending each: truncated = last & (reward == 0) or last & a legal move (both flags at a
  step), a walled-in agent left unflagged (neither at a LAST step), and two mistakes at
  once (target only, no truncations), named by the first step that breaks it;
- the contract: the pair swapped, terminated only, int or float flags.
The case sets: every named mistake differs from the right answer and from every other.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from checks.answers import (
    _classify,
    _classify_where,
    _distinguishable,
    bank_params,
    generic,
    passes,
    rejects,
    right_params,
)
from companion.checks import envs as env_checks

# --- check_legal_fraction: legal_fraction(action_masks), bool (N, 4) -> float32 (4,) -----


def _fraction_loop(masks):
    total = sum(masks[i].astype(jnp.float32) for i in range(masks.shape[0]))
    return total / masks.shape[0]


RIGHT_LEGAL_FRACTION = [
    lambda m: jnp.mean(m, axis=0),  # mean over axis 0
    _fraction_loop,  # a loop over the masks
    lambda m: jnp.count_nonzero(m, axis=0) / m.shape[0],  # count_nonzero
]
WRONG_LEGAL_FRACTION = [
    ("mean over axis 1", lambda m: jnp.mean(m, axis=1), r"over the actions \(axis 1\)"),
    # 4 masks: the wrong axis gives 4 numbers, named from its values, not from its shape
    ("axis 1 cut to 4", lambda m: jnp.mean(m, axis=1)[:4], generic("differs from the reference")),
    ("keepdims", lambda m: jnp.mean(m, axis=0, keepdims=True), "keepdims=True"),
    (
        "counts",
        lambda m: jnp.sum(m, axis=0),
        r"it returned an int32 array.*a count of the masks",
    ),
    (
        "integer division",
        lambda m: jnp.sum(m, axis=0) // m.shape[0],
        r"it returned an int32 array.*a division with //",
    ),
    ("illegal fraction", lambda m: jnp.mean(~m, axis=0), "ILLEGAL"),
    (
        "float16",
        lambda m: jnp.mean(m, axis=0).astype(jnp.float16),
        r"(it returned|it is) an? float16 array",
    ),
    (
        "bfloat16",
        lambda m: jnp.mean(m, axis=0).astype(jnp.bfloat16),
        r"(it returned|it is) an? bfloat16 array",
    ),
    ("NumPy under jit", lambda m: np.mean(np.asarray(m), axis=0), "under jax.jit"),
]


# --- check_up_first_policy: up_first(key, action_mask) -> int32 () --------------------


def _uniform_legal(key, mask):
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf))


def _gumbel_legal(key, mask):
    noise = jax.random.gumbel(key, (4,))
    return jnp.argmax(jnp.where(mask, noise, -jnp.inf)).astype(jnp.int32)


def _next_legal_after_random(key, mask):
    """Not uniform: an action after a run of illegal ones is drawn more often."""
    start = jax.random.randint(key, (), 0, 4)
    return (jnp.argmax(jnp.roll(mask, -start)) + start) % 4


def _up_first_with(fallback):
    return lambda key, mask: jnp.where(mask[0], 0, fallback(key, mask))


RIGHT_UP_FIRST = [
    _up_first_with(_uniform_legal),  # categorical
    _up_first_with(lambda k, m: jax.random.choice(k, 4, p=m / m.sum())),  # choice
    _up_first_with(_gumbel_legal),  # Gumbel max
    # log of the mask
    _up_first_with(lambda k, m: jax.random.categorical(k, jnp.log(m.astype(jnp.float32)))),
]
WRONG_UP_FIRST = [
    (
        "float action",
        lambda k, m: jnp.where(m[0], 0.0, _uniform_legal(k, m)),
        r"(it returned|it is) an? float32 array",
    ),
    (
        "int8 action",
        lambda k, m: _up_first_with(_uniform_legal)(k, m).astype(jnp.int8),
        r"(it returned|it is) an? int8 array",
    ),
    ("first legal", _up_first_with(lambda k, m: jnp.argmax(m)), "the first legal action"),
    (
        "last legal",
        _up_first_with(lambda k, m: 3 - jnp.argmax(m[::-1])),
        "not random.*same action for all",
    ),
    (
        "a key of its own",
        _up_first_with(lambda k, m: _uniform_legal(jax.random.key(1), m)),
        "a key of its own",
    ),
    (
        "uniform over all four",
        _up_first_with(lambda k, m: jax.random.randint(k, (), 0, 4)),
        "illegal action",
    ),
    (
        "logits 1 and 0",
        _up_first_with(lambda k, m: jax.random.categorical(k, m.astype(jnp.float32))),
        "illegal action",
    ),
    ("up ignored", _uniform_legal, "should always go up"),
    (
        "the next legal action after a random one",
        _up_first_with(_next_legal_after_random),
        "equally likely",
    ),
]


WRONG_UP_FIRST += [
    (
        "choice with its own key(0)",
        lambda k, m: jnp.where(m[0], 0, jax.random.choice(jax.random.key(0), 4, p=m / m.sum())),
        "a key of its own",
    ),
]


# --- check_termination_and_truncation: classify(reward, last, next_mask) ---------------


def _classify_loop(reward, last, next_mask):
    rows = [_classify(reward[t], last[t], next_mask[t]) for t in range(reward.shape[0])]
    return tuple(jnp.stack(flags) for flags in zip(*rows))


def _classify_with(term_of, trunc_of=None):
    def classify(r, l, m):
        term = term_of(r, l, m)
        return term, (l & ~term) if trunc_of is None else trunc_of(r, l, m, term)

    return classify


RIGHT_CLASSIFY = [
    _classify,  # bitwise
    _classify_where,  # where
    _classify_loop,  # a loop over time
    # reward == 1, all(~mask)
    _classify_with(lambda r, l, m: l & ((r == 1) | jnp.all(~m, -1))),
]
WRONG_CLASSIFY = [
    ("swapped", lambda r, l, m: _classify(r, l, m)[::-1], "wrong order"),
    (
        "truncated = last",
        _classify_with(lambda r, l, m: _classify(r, l, m)[0], lambda r, l, m, te: l),
        "terminations included",
    ),
    (
        "truncated = ~terminated",
        _classify_with(lambda r, l, m: _classify(r, l, m)[0], lambda r, l, m, te: ~te),
        "within an episode",
    ),
    (
        "& for |",
        _classify_with(lambda r, l, m: l & (r > 0) & ~jnp.any(m, -1)),
        "no step is called a termination",
    ),
    (
        "any without axis",
        _classify_with(lambda r, l, m: l & ((r > 0) | ~jnp.any(m))),
        "never fires",
    ),
    (
        "precedence",
        _classify_with(lambda r, l, m: l & (r > 0) | ~jnp.any(m, -1)),
        r"`\(last & a\) \| b`",
    ),
    (
        "only walled in",
        _classify_with(lambda r, l, m: l & ~jnp.any(m, -1)),
        r"target \(reward 1\) is not called a termination",
    ),
    (
        "mask of the previous step",
        _classify_with(lambda r, l, m: l & ((r > 0) | ~jnp.any(jnp.roll(m, 1, 0), -1))),
        r"next_mask is read one step off in time",
    ),
    (
        "keepdims",
        _classify_with(lambda r, l, m: l & ((r > 0) | ~jnp.any(m, -1, keepdims=True))),
        r"raised ValueError.*\(T, N, 4\): a reduction of next_mask over its last axis",
    ),
    (
        "int flags",
        lambda r, l, m: tuple(f.astype(jnp.int32) for f in _classify(r, l, m)),
        r"(it returned|it is) an? int32 array",
    ),
    # two mistakes at once: told the first LAST step that ends its episode neither way
    (
        "target only, no truncations",
        _classify_with(lambda r, l, m: l & (r > 0), lambda r, l, m, te: jnp.zeros_like(l)),
        r"the LAST step 1 of environment 1 \(6 steps of 2 environments\) is neither",
    ),
]


WRONG_CLASSIFY += [
    (
        "every end a termination",
        lambda r, l, m: (l, jnp.zeros_like(l)),
        "time limit is a truncation",
    ),
    (
        "one step late",
        lambda r, l, m: tuple(jnp.roll(x, 1, axis=0) for x in _classify(r, l, m)),
        "one step late",
    ),
    (
        "flags on steps that are not LAST",
        lambda r, l, m: (r > 0, l & ~(r > 0) | (r == 0) & jnp.roll(l, -1, axis=0)),
        "not LAST is flagged",
    ),
    ("the reward only", _classify_with(lambda r, l, m: l & (r > 0)), "walled-in agent"),
    (
        "any over axis 1, truncated = last",
        lambda r, l, m: (l & ((r > 0) | ~jnp.any(m, axis=1)), l),
        "next_mask",
    ),
    ("terminated only", lambda r, l, m: _classify(r, l, m)[0], "should return a pair"),
    (
        "all for any",
        _classify_with(lambda r, l, m: l & ((r > 0) | ~jnp.all(m, -1))),
        "walls next to",
    ),
    (
        "last left out",
        _classify_with(lambda r, l, m: (r > 0) | ~jnp.any(m, -1)),
        "not LAST is flagged",
    ),
    (
        "float flags",
        lambda r, l, m: tuple(x.astype(jnp.float32) for x in _classify(r, l, m)),
        r"(it returned|it is) an? float32 array",
    ),
    (
        "the next step's mask, the last row kept",
        _classify_with(lambda r, l, m: l & ((r > 0) | ~jnp.concatenate([m[1:], m[-1:]]).any(-1))),
        r"next_mask is read one step off in time",
    ),
    (
        "the previous step's mask, all legal before the first",
        _classify_with(
            lambda r, l, m: l & ((r > 0) | ~jnp.concatenate([jnp.ones_like(m[:1]), m[:-1]]).any(-1))
        ),
        r"next_mask is read one step off in time",
    ),
    (
        "the next step's reward",
        _classify_with(lambda r, l, m: l & ((jnp.roll(r, -1, 0) > 0) | ~jnp.any(m, -1))),
        r"reaching the target \(reward 1\) is not called a termination",
    ),
    (
        "truncated = last & reward 0",
        lambda r, l, m: (_classify(r, l, m)[0], l & (r == 0)),
        r"both True at step 1 of environment 1",
    ),
    (
        "truncated = last & a legal move",
        lambda r, l, m: (_classify(r, l, m)[0], l & jnp.any(m, -1)),
        r"both True at step 2 of environment 0",
    ),
    (
        "terminated at the target, truncated at a time limit, walled in neither",
        lambda r, l, m: (l & (r > 0), l & (r == 0) & jnp.any(m, -1)),
        r"LAST step 1 of environment 1 .* is neither terminated nor truncated",
    ),
]


#: Each check's right answers and its bank of wrong ones.
RIGHTS = {
    "check_legal_fraction": RIGHT_LEGAL_FRACTION,
    "check_up_first_policy": RIGHT_UP_FIRST,
    "check_termination_and_truncation": RIGHT_CLASSIFY,
}
BANKS = {
    "check_legal_fraction": WRONG_LEGAL_FRACTION,
    "check_up_first_policy": WRONG_UP_FIRST,
    "check_termination_and_truncation": WRONG_CLASSIFY,
}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)


# --- the checks' own case sets: every named mistake can be told apart ------------------------

CASE_SETS = {
    "legal_fraction": env_checks._legal_fraction_cases,
    "termination_and_truncation": lambda: [c for _, c in env_checks._classify_cases()],
}


@pytest.mark.parametrize("name", sorted(CASE_SETS))
def test_named_mistakes_are_told_apart(name):
    _distinguishable(CASE_SETS[name]())
