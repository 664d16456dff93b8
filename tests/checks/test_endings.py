"""check_count_endings (chapter 4): right answers, its bank of wrong answers (``WRONG_*``:
slip, answer, verdict) and its case set.

What the check guards, and the case that breaks each plausible wrong answer:

check_count_endings (terminations and truncations of an auto-reset Maze rollout)
- the ending's observation (``extras["next_obs"]``): a rollout whose next episode starts
  walled in breaks the mask, the positions or the whole observation read from
  ``timestep.observation``, each named;
- a walled-in ending is a termination: the reward alone, named;
- discount 0 is not the only ending: every ending a termination, named;
- truncations are LAST steps only: ~terminated, last, named; an environment that never
  ends keeps the counts honest;
- an ending is a LAST step, each counted: timestep.first() (no ending counted), the MID
  steps, the steps or the environments with an ending (an any before the sum), named;
- the contract: the pair swapped, float counts, per-environment counts, a stacked array;
- any other count: the counts that differ and the whole rollout, every step shown.
The case set: every named mistake differs from the right answer and from every other.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from checks.answers import (
    _classify,
    _count_endings,
    _count_endings_by_position,
    _distinguishable,
    bank_params,
    generic,
    passes,
    rejects,
    right_params,
)
from companion.checks import endings as ending_checks
from companion.envs import maze as maze_lib

# --- check_count_endings: count_endings(timesteps) ----------------------------------------


def _count_endings_companion(timesteps):
    end, last = timesteps.extras["next_obs"], timesteps.last()
    return jnp.sum(last & maze_lib.terminated(end)), jnp.sum(maze_lib.truncated(end, last))


def _count_endings_loop(timesteps):
    counts = [jnp.int32(0), jnp.int32(0)]
    for t in range(timesteps.reward.shape[0]):
        step = jax.tree.map(lambda leaf, t=t: leaf[t], timesteps)
        for i, flag in enumerate(_count_endings(step)):
            counts[i] = counts[i] + flag
    return tuple(counts)


def _count_from(mask_of=None, position_of=None, flags=None):
    """count_endings with one slip: the mask or the positions read from another
    observation, or other flags."""

    def count(timesteps):
        end, last = timesteps.extras["next_obs"], timesteps.last()
        mask = (mask_of or (lambda ts: end.action_mask))(timesteps)
        where = (position_of or (lambda ts: end))(timesteps)
        on_target = (where.agent_position.row == where.target_position.row) & (
            where.agent_position.col == where.target_position.col
        )
        term = last & (on_target | ~mask.any(-1))
        term, trunc = (term, last & ~term) if flags is None else flags(timesteps, term)
        return term.sum(), trunc.sum()

    return count


def _flags(timesteps):
    return _classify(timesteps.reward, timesteps.last(), timesteps.extras["next_obs"].action_mask)


def _count_with_last(timesteps, last):
    flags = _classify(timesteps.reward, last, timesteps.extras["next_obs"].action_mask)
    return tuple(jnp.sum(flag) for flag in flags)


RIGHT_COUNT_ENDINGS = [
    _count_endings,  # classify
    _count_endings_by_position,  # positions
    _count_endings_companion,  # companion.envs.maze
    _count_endings_loop,  # a loop over time
]
WRONG_COUNT_ENDINGS = [
    (
        "stale mask",
        _count_from(mask_of=lambda ts: ts.observation.action_mask),
        "the action mask comes from timestep.observation",
    ),
    (
        "stale positions",
        _count_from(position_of=lambda ts: ts.observation),
        "an ending at the target is counted as a truncation",
    ),
    (
        "stale observation",
        lambda ts: tuple(
            jnp.sum(f)
            for f in (
                ts.last() & maze_lib.terminated(ts.observation),
                maze_lib.truncated(ts.observation, ts.last()),
            )
        ),
        "the whole observation is timestep.observation",
    ),
    (
        "discount 0 as termination",
        lambda ts: (jnp.sum(ts.discount == 0), jnp.int32(0)),
        "every ending is counted as a termination",
    ),
    (
        "reward only",
        lambda ts: (
            jnp.sum(ts.last() & (ts.reward > 0)),
            jnp.sum(ts.last() & (ts.reward == 0)),
        ),
        "no walled-in ending is counted as a termination",
    ),
    ("swapped", lambda ts: _count_endings(ts)[::-1], "wrong order"),
    (
        "truncated = ~terminated",
        _count_from(flags=lambda ts, te: (te, ~te)),
        "the steps within an episode too",
    ),
    (
        "truncated = last",
        _count_from(flags=lambda ts, te: (te, ts.last())),
        "the terminations too",
    ),
    (
        "float counts",
        lambda ts: tuple(c.astype(jnp.float32) for c in _count_endings(ts)),
        r"(it returned|it is) an? float32 array",
    ),
    (
        "per environment",
        lambda ts: tuple(
            f.sum(0) for f in _classify(ts.reward, ts.last(), ts.extras["next_obs"].action_mask)
        ),
        r"scalar \(shape \(\)\).*; it is an int32 array of shape \(3,\)",
    ),
    ("stacked", lambda ts: jnp.stack(_count_endings(ts)), "should return a pair"),
    (
        "first() for last()",
        lambda ts: _count_with_last(ts, ts.first()),
        r"no ending is counted: an episode ends at a LAST step",
    ),
    (
        "the steps with an ending",
        lambda ts: tuple(f.any(axis=1).sum() for f in _flags(ts)),
        r"the steps at which some environment's episode ended",
    ),
    (
        "the environments with an ending",
        lambda ts: tuple(f.any(axis=0).sum() for f in _flags(ts)),
        r"the environments in which some episode ended",
    ),
    (
        "MID steps for LAST",
        lambda ts: _count_with_last(ts, ts.step_type == 1),
        r"the steps within an episode are counted as endings",
    ),
    (
        "one termination too many",
        lambda ts: (_count_endings(ts)[0] + 1, _count_endings(ts)[1]),
        generic(
            r"on 8 steps of 3 environments, one of which never ends: it gives \(n_terminated, "
            r"n_truncated\) = \(3, 2\), expected \(2, 2\)\nThe inputs:\n  step .* = "
            r"\[\[0, 0, 0\],\n +\[0, 2, 0\],\n +\[1, 0, 0\],(\n +\[0, \d, 0\],){4}\n +\[3, 0, 0\]\]"
        ),
    ),
]


#: The check's right answers and its bank of wrong ones.
RIGHTS = {"check_count_endings": RIGHT_COUNT_ENDINGS}
BANKS = {"check_count_endings": WRONG_COUNT_ENDINGS}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)


# --- the check's own case set: every named mistake can be told apart ------------------------

CASE_SETS = {"count_endings": lambda: [c for _, c in ending_checks._count_endings_cases()]}


@pytest.mark.parametrize("name", sorted(CASE_SETS))
def test_named_mistakes_are_told_apart(name):
    _distinguishable(CASE_SETS[name]())
