"""The self-check of the Maze in depth chapter's exercise 2 (chapter 4):
:func:`check_count_endings`, on auto-reset rollouts the check builds by hand.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from companion.checks._contract import require_array
from companion.checks._messages import _
from companion.checks.core import (
    Case,
    _Differs,
    _show,
    close,
    fail,
    passed,
    require_function,
    require_pair,
    run_answer,
    self_check,
    verdict,
)

#: Kinds of step in the check's rollouts of :func:`check_count_endings`.
_MID, _TARGET, _WALLED, _CLOCK = 0, 1, 2, 3
_KINDS = "step (0 within an episode, 1 target, 2 walled in, 3 time limit)"


def _maze_timesteps(kinds: np.ndarray, walled_starts: np.ndarray, seed: int):
    """Timesteps of an auto-reset Maze rollout, stacked ``(T, N)``, as jumanji's
    ``AutoResetWrapper(..., next_obs_in_extras=True)`` returns them: on a LAST step
    ``extras["next_obs"]`` is where the episode ended and ``observation`` the next episode's
    start (walled in where ``walled_starts``)."""
    import companion.envs.maze  # noqa: F401, I001  (first: jumanji without its backend switch)
    from jumanji.environments.routing.maze.types import Observation, Position
    from jumanji.types import StepType, TimeStep

    rng = np.random.default_rng(seed)
    shape, size = kinds.shape, 5
    ended = kinds != _MID
    target = rng.integers(0, size, shape + (2,))

    def elsewhere():  # a cell that is not the target
        return (target + rng.integers(1, size, shape + (2,))) % size

    def masks(empty):
        mask = rng.uniform(size=shape + (4,)) < 0.5
        mask[np.arange(shape[0])[:, None], np.arange(shape[1]), rng.integers(0, 4, shape)] = True
        return mask & ~empty[..., None]

    def observation(agent, mask, step_count):
        return Observation(
            agent_position=Position(
                row=jnp.asarray(agent[..., 0], jnp.int32), col=jnp.asarray(agent[..., 1], jnp.int32)
            ),
            target_position=Position(
                row=jnp.asarray(target[..., 0], jnp.int32),
                col=jnp.asarray(target[..., 1], jnp.int32),
            ),
            walls=jnp.zeros(shape + (size, size), bool),
            action_mask=jnp.asarray(mask),
            step_count=jnp.asarray(step_count, jnp.int32),
        )

    steps = np.broadcast_to(np.arange(1, shape[0] + 1)[:, None], shape)
    end_agent = np.where((kinds == _TARGET)[..., None], target, elsewhere())
    next_obs = observation(end_agent, masks(kinds == _WALLED), steps)
    start_agent = np.where(ended[..., None], elsewhere(), end_agent)
    start_mask = np.where(
        ended[..., None], masks(ended & walled_starts), np.asarray(next_obs.action_mask)
    )
    obs = observation(start_agent, start_mask, np.where(ended, 0, steps))
    return TimeStep(
        step_type=jnp.asarray(np.where(ended, StepType.LAST, StepType.MID), jnp.int8),
        reward=jnp.asarray(kinds == _TARGET, jnp.float32),
        discount=jnp.asarray(~ended, jnp.float32),
        observation=obs,
        extras={"next_obs": next_obs},
    )


def _count_endings_case(kinds, walled_starts, label: str) -> Case:
    kinds = np.asarray(kinds)
    walled_starts = np.asarray(walled_starts, bool)
    ended = kinds != _MID
    target, walled = ((kinds == k).sum() for k in (_TARGET, _WALLED))
    n_last, stale_walled = ended.sum(), (ended & walled_starts).sum()

    def counts(term, trunc=None):
        return np.array([term, n_last - term if trunc is None else trunc])

    right = counts(target + walled)
    flags = np.isin(kinds, (_TARGET, _WALLED)), kinds == _CLOCK
    return Case(
        label,
        {_KINDS: kinds, "next episode starts walled in": walled_starts},
        right,
        {
            _(
                "a walled-in ending is counted as a truncation, and a time-out followed by a walled-in "
                "start as a termination: the action mask comes from timestep.observation, which after a "
                "LAST step is already the next episode's; use timestep.extras['next_obs'].action_mask"
            ): counts(target + stale_walled),
            _(
                "an ending at the target is counted as a truncation: the positions come from "
                "timestep.observation, which after a LAST step is already the next episode's; read "
                "them from timestep.extras['next_obs'], or test reward > 0"
            ): counts(walled),
            _(
                "every ending but the walled-in starts of the next episodes is counted as a "
                "truncation: the whole observation is timestep.observation, already the next "
                "episode's after a LAST step; use timestep.extras['next_obs']"
            ): counts(stale_walled),
            _(
                "no walled-in ending is counted as a termination: the test for no legal move is "
                "missing, or never fires (jnp.any(mask) without axis=-1 reduces all the masks to one "
                "value)"
            ): counts(target),
            _(
                "every ending is counted as a termination (jumanji's discount is 0 at a time-out "
                "too): a time-out is a truncation"
            ): counts(n_last, 0),
            _("the counts come back in the wrong order: return (terminated, truncated)"): right[
                ::-1
            ],
            _(
                "truncated counts every step that did not terminate, the steps within an episode "
                "too: a truncation is a LAST step, last & ~terminated"
            ): counts(target + walled, kinds.size - target - walled),
            _(
                "truncated counts every ending, the terminations too: truncated is last & "
                "~terminated"
            ): counts(target + walled, n_last),
            _(
                "no ending is counted: an episode ends at a LAST step, timestep.last() (an "
                "auto-reset rollout's steps are never FIRST, so timestep.first() finds none)"
            ): counts(0, 0),
            _(
                "each count is of the steps at which some environment's episode ended (an "
                "any over axis 1, the environments, before the sum), not of the endings: sum "
                "the flags over the steps and the environments both"
            ): np.array([f.any(axis=1).sum() for f in flags]),
            _(
                "each count is of the environments in which some episode ended (an any over "
                "axis 0, the steps, before the sum), not of the endings: sum the flags over "
                "the steps and the environments both"
            ): np.array([f.any(axis=0).sum() for f in flags]),
            _(
                "the steps within an episode are counted as endings: an ending is a LAST step "
                "(step_type 2, timestep.last()), not a MID one (step_type 1)"
            ): counts(0, kinds.size - n_last),
        },
    )


def _count_endings_cases() -> list:
    """``[(seed, Case)]``: the rollouts of :func:`check_count_endings`; ``kinds`` says what
    each step was (0 within an episode, 1 the target, 2 walled in, 3 the time limit)."""
    m, t, w, c = _MID, _TARGET, _WALLED, _CLOCK
    first = np.array(
        [[m, m, m], [m, w, m], [t, m, m], [m, m, m], [m, m, m], [m, c, m], [m, m, m], [c, m, m]]
    )
    second = np.array([[w, m, t, c], [m, t, m, m], [t, m, m, c], [m, w, m, m], [c, m, t, c]])
    one_step = np.array([[t, w, c, m, c]])
    walled_starts = np.zeros_like(one_step, bool)
    walled_starts[0, 2] = True  # after the time-out, an episode that starts walled in
    return [
        (
            5,
            _count_endings_case(
                first,
                np.zeros_like(first, bool),
                _("8 steps of 3 environments, one of which never ends"),
            ),
        ),
        (
            6,
            _count_endings_case(
                second, np.zeros_like(second, bool), _("5 steps of 4 environments")
            ),
        ),
        (
            7,
            _count_endings_case(
                one_step,
                walled_starts,
                _("1 step of 5 environments, a time-out followed by a start walled in"),
            ),
        ),
    ]


@self_check
def check_count_endings(count_endings: Callable) -> None:
    """Check ``count_endings(timesteps) -> (n_terminated, n_truncated)``, two int32 scalars:
    how many episodes of a rollout ended by termination (at the target, or with no legal move)
    and how many by truncation (the time limit).

    ``timesteps``: the Maze timesteps of an auto-reset rollout stacked ``(T, N)``, as
    ``AutoResetWrapper(env, next_obs_in_extras=True)`` returns them: on a LAST step
    ``observation`` is the next episode's start and ``extras["next_obs"]`` where the episode
    ended. The answer runs under ``jax.jit`` on three rollouts of the check's own, one with an
    environment that never ends and one whose next episode starts walled in.

    Raises:
        CheckFailed: for a result that is not a pair of integer scalars, or naming the
            mistake (the next episode's observation read instead of ``extras["next_obs"]``,
            no test for a walled-in agent, every ending a termination, the pair swapped, steps
            within an episode or terminations counted as truncations, no ending counted (the
            FIRST steps for the LAST), the steps or the environments with an ending counted
            instead of the endings, the steps within an episode counted as endings); otherwise
            the counts that differ, with the whole rollout step by step.
    """
    require_function(count_endings, "count_endings")
    cases = _count_endings_cases()
    outputs = []
    for seed, case in cases:
        timesteps = _maze_timesteps(
            case.inputs[_KINDS], case.inputs["next episode starts walled in"], seed
        )
        call = _("count_endings(timesteps) for {case}").format(case=case.label)
        got = run_answer(
            count_endings,
            timesteps,
            call=call,
            hint=_(
                "timesteps are stacked (T, N); the flags come from reward, "
                "last() and extras['next_obs'].action_mask"
            ),
        )
        require_pair(got, call, "n_terminated, n_truncated")
        pair = [
            require_array(
                g,
                _("{name} of {call}").format(name=name, call=call),
                (),
                np.int32,
                why=_("one count for the whole rollout, over its steps and environments"),
                dtype_hint=_("A count is a whole number: jnp.sum of bool flags gives int32"),
                returns=False,
            )
            for g, name in zip(got, ("n_terminated", "n_truncated"))
        ]
        outputs.append(np.array([int(p) for p in pair]))
    shown = [
        case._replace(label=_("{case}, (n_terminated, n_truncated)").format(case=case.label))
        for _seed, case in cases
    ]
    try:
        verdict("count_endings", shown, outputs)
    except _Differs:
        case, got = next(
            (case, out)
            for (_seed, case), out in zip(cases, outputs)
            if not close(out, case.expected)
        )
        lines = [
            _(
                "count_endings differs from the reference on {case}: it gives (n_terminated, "
                "n_truncated) = ({got_term}, {got_trunc}), expected ({term}, {trunc})"
            ).format(
                case=case.label,
                got_term=int(got[0]),
                got_trunc=int(got[1]),
                term=int(case.expected[0]),
                trunc=int(case.expected[1]),
            ),
            _("The inputs:"),
        ]
        # every step shown, a row per step and a column per environment
        lines += [_show(value, f"  {key} = ") for key, value in case.inputs.items()]
        fail("\n".join(lines))
    passed(_("count_endings counts terminations and truncations from extras['next_obs']"))
