"""Self-checks for the exercises of the environment chapters (Maze and CartPole).

:func:`check_legal_fraction` and :func:`check_up_first_policy` (chapter 3),
:func:`check_termination_and_truncation` and :func:`check_count_endings` (chapter 4),
:func:`check_semi_implicit_step` and :func:`check_balancing_policy` (chapter 6).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.core import (
    Case,
    CheckFailed,
    check_shape,
    close,
    fail,
    passed,
    require_function,
    run_answer,
    self_check,
    verdict,
)
from companion.envs import cartpole


def _require_dtype(arr: np.ndarray, dtype: Any, what: str, how: str) -> None:
    """Fail, naming ``what`` and its dtype, unless ``arr`` has ``dtype``; ``how`` says how to
    get it."""
    if arr.dtype != np.dtype(dtype):
        fail(f"{what} has dtype {arr.dtype}, expected {np.dtype(dtype)}: {how}")


# --- chapter 3 ----------------------------------------------------------------------------

def _legal_fraction_case(masks: np.ndarray) -> Case:
    expected = masks.mean(axis=0)
    n = masks.shape[0]
    return Case(f"{n} masks", {"action_masks": masks}, expected, {
        "legal_fraction averages over the actions (axis 1); average over the masks (axis 0)":
            masks.mean(axis=1),
        "legal_fraction counts the masks; divide by their number for a fraction": (
            masks.sum(axis=0)
        ),
        "legal_fraction divides with //, which rounds down to a whole number; / gives the "
        "fraction": masks.sum(axis=0) // n,
        "legal_fraction gives the fraction of masks in which each action is ILLEGAL": (
            1.0 - expected
        ),
    })  # fmt: skip


def _legal_fraction_cases() -> list:
    rng = np.random.default_rng(3)
    return [_legal_fraction_case(masks) for masks in (
        np.array([[1, 0, 1, 1], [1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 1], [1, 0, 1, 0]], bool),
        rng.uniform(size=(7, 4)) < 0.4,
        # four masks: averaged over the wrong axis they still give 4 numbers
        np.array([[1, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]], bool),
    )]  # fmt: skip


@self_check
def check_legal_fraction(legal_fraction: Callable) -> None:
    """Check ``legal_fraction(action_masks)``: bool ``(N, 4)`` -> float32 ``(4,)``, the
    fraction of the masks in which each action is legal. The answer runs under ``jax.jit``
    on three batches, one of them of 4 masks (where the wrong axis gives the right shape).

    Raises:
        CheckFailed: naming the mistake (the wrong axis, ``keepdims=True``, counts, integer
            division, the illegal fraction), for a wrong shape, or a dtype other than float32.
    """
    cases = _legal_fraction_cases()
    outputs = []
    for case in cases:
        masks = case.inputs["action_masks"]
        call = f"legal_fraction(masks) for {case.label}"
        got = run_answer(legal_fraction, jnp.asarray(masks), call=call)
        shape = np.shape(got)
        if shape == masks.shape[:1] and shape != (4,) and close(got, masks.mean(axis=1)):
            fail("legal_fraction averages over the actions (axis 1), one number per mask; "
                 "average over the masks (axis 0)")  # fmt: skip
        if shape == (1, 4) and close(np.asarray(got)[0], case.expected):
            fail("legal_fraction returns shape (1, 4): keepdims=True keeps the averaged axis; "
                 "leave it out for shape (4,)")  # fmt: skip
        arr = check_shape(got, (4,), call, hint="One fraction per action: average over the "
                          "masks (axis 0).")  # fmt: skip
        if jnp.issubdtype(arr.dtype, jnp.floating) and arr.dtype != np.float32:
            _require_dtype(arr, np.float32, f"legal_fraction for {case.label}",
                           "jnp.mean of the bool masks gives float32")  # fmt: skip
        outputs.append(arr)
    verdict("legal_fraction", cases, outputs)
    _require_dtype(outputs[0], np.float32, "legal_fraction",
                   "a fraction is a float; jnp.mean of the bool masks gives float32")  # fmt: skip
    passed("legal_fraction gives the fraction of masks in which each action is legal")


#: (mask, seed) with up legal: the policy must go up. Then masks with up blocked.
_UP_LEGAL = (([True, True, False, True], 0), ([True, False, False, False], 1))
_UP_BLOCKED = (([False, True, False, True], 2), ([False, True, True, True], 3),
               ([False, False, True, True], 4))  # fmt: skip
_DRAWS = 600


@self_check
def check_up_first_policy(policy: Callable) -> None:
    """Check ``policy(key, action_mask) -> action``: int32 ``()``, "up" (0) when legal, else
    uniform among the legal actions; never an illegal action. The check draws 600 actions per
    mask, ``jax.vmap(policy, in_axes=(0, None))`` over 600 keys, under ``jax.jit``: two masks
    with up legal, three with up blocked.

    Raises:
        CheckFailed: for a dtype other than int32, an illegal action, "up" not taken when
            legal, a fallback that ignores the key (always the first legal action, or one
            action for every key) or that is not uniform.
    """
    require_function(policy, "policy")

    def draw(seed, mask):
        keys = jax.random.split(jax.random.key(seed), _DRAWS)
        call = f"jax.vmap(policy, in_axes=(0, None))(keys, {mask})"
        run = jax.vmap(policy, in_axes=(0, None))
        actions = run_answer(run, keys, jnp.asarray(mask), call=call)
        actions = check_shape(actions, (_DRAWS,), call, hint="policy(key, mask) returns one "
                              "action, shape ()")  # fmt: skip
        _require_dtype(actions, np.int32, "the policy's action",
                       "an action is an int32 index (jax.random.categorical and "
                       "jax.random.choice give int32; jnp.where(mask[0], 0, action) keeps it)")
        illegal = sorted(set(actions.tolist()) - set(np.flatnonzero(mask).tolist()))
        if illegal:
            fail(f"with mask {mask} the policy chose illegal action(s) {illegal}")
        return actions

    for mask, seed in _UP_LEGAL:
        actions = draw(seed, mask)
        if not np.all(actions == 0):
            fail(f"with mask {mask} up is legal and the policy should always go up (0); it "
                 f"chose {sorted(set(actions.tolist()))}")  # fmt: skip
    blocked = [(mask, draw(seed, mask)) for mask, seed in _UP_BLOCKED]
    constant = [(mask, acts) for mask, acts in blocked if len(set(acts.tolist())) == 1]
    if len(constant) == len(blocked):
        first = all(int(acts[0]) == int(np.argmax(mask)) for mask, acts in constant)
        fail(
            "the fallback is not random: when up is blocked the policy takes the same action "
            f"for all {_DRAWS} keys ("
            + (
                "the first legal action of every mask, what jnp.argmax(mask) gives"
                if first
                else ", ".join(f"{int(a[0])} with mask {m}" for m, a in constant)
            )
            + "). An argmax of the mask, or a draw with a key of its own (such as "
            "jax.random.key(0)) instead of the one passed in, gives the same action every "
            "time: draw with the key, for example jax.random.choice(key, 4, p=mask / "
            "mask.sum())"
        )
    for mask, actions in blocked:
        legal = np.flatnonzero(mask)
        shares = np.array([np.mean(actions == a) for a in legal])
        if np.abs(shares - 1 / len(legal)).max() > 0.08:
            fail(
                f"when up is blocked the legal actions should be equally likely; with mask "
                f"{mask} the legal actions {legal.tolist()} were chosen "
                f"{', '.join(f'{x:.0%}' for x in shares)} of the time"
            )
    passed("the policy goes up when it can and otherwise picks a legal action uniformly")


# --- chapter 4 ----------------------------------------------------------------------------

def _classify_models(r: np.ndarray, l: np.ndarray, m: np.ndarray) -> tuple:
    """The right ``(terminated, truncated)`` of one case, stacked as int ``(2, T, N)``, and
    what each named mistake returns there."""

    def pair(term, trunc=None):
        term = np.asarray(term, bool)
        return np.stack([term, l & ~term if trunc is None else trunc]).astype(np.int32)

    no_move = ~m.any(-1)
    term = l & ((r > 0) | no_move)
    right = pair(term)
    late = [np.roll(right, 1, axis=1), pair(np.roll(term, 1, 0), right[1]),
            pair(term, np.roll(right[1], 1, 0))]  # fmt: skip
    precedence = (l & (r > 0)) | no_move
    return right, {
        "every LAST step is called a termination; the time limit is a truncation": pair(
            l, np.zeros_like(l)),
        "no step is called a termination, though some end at the target or walled in (are "
        "the two conditions joined with & instead of |?)": pair(np.zeros_like(l)),
        "truncated is True at every LAST step, terminations included: truncated is "
        "last & ~terminated": pair(term, l),
        "truncated is True at steps within an episode: a truncation is a LAST step that did "
        "not terminate, last & ~terminated": pair(term, ~term),
        "the pair comes back in the wrong order: return (terminated, truncated)": right[::-1],
        "a walled-in agent (no legal move in next_mask) is not called a termination: the test "
        "for no legal move is missing, or never fires (jnp.any(next_mask) without axis=-1 "
        "reduces all the masks to one value)": [pair(l & (r > 0)),
                                                pair(l & ((r > 0) | ~m.any()))],
        "reaching the target (reward 1) is not called a termination; only a walled-in agent "
        "is": pair(l & no_move),
        "a LAST step with walls next to the agent is called a termination: the agent is walled "
        "in only when no action is legal, ~jnp.any(next_mask, axis=-1), not when some action "
        "is illegal (~jnp.all)": pair(l & ((r > 0) | ~m.all(-1))),
        "a flag is one step late: it belongs to the step whose timestep is LAST": late,
        "`last & a | b` reads as `(last & a) | b`, so a walled-in mask flags steps that are "
        "not LAST: put the | in parentheses, last & ((reward > 0) | no_move)": [
            pair(precedence), pair(precedence, l & ~precedence)],
    }  # fmt: skip


def _classify_cases() -> list:
    """``[((reward, last, next_mask), Case)]``: two batches, each with its right flags and the
    mistakes' (``(terminated, truncated)`` stacked)."""
    rng = np.random.default_rng(4)
    # Six steps of two environments. Env 0: the target at t=2, a time limit at t=5. Env 1: a
    # walled-in agent at t=1, a time limit at t=4. An empty mask on a step that is not LAST
    # (env 0, t=0): no episode goes on from one, but an answer without `last &` flags it.
    reward = np.zeros((6, 2), np.float32)
    reward[2, 0] = 1.0
    last = np.zeros((6, 2), bool)
    last[[2, 5, 1, 4], [0, 0, 1, 1]] = True
    next_mask = np.ones((6, 2, 4), bool)
    next_mask[1, 1] = False
    next_mask[0, 0] = False
    # Five steps of three environments, masks with some walls: a time limit next to a wall
    # (env 0, t=3), the target (env 1, t=1), a walled-in agent (env 2, t=4), and steps that
    # are not LAST with an empty mask (env 0, t=2) and a reward (env 2, t=2).
    reward_b = np.zeros((5, 3), np.float32)
    reward_b[[1, 2], [1, 2]] = 1.0
    last_b = np.zeros((5, 3), bool)
    last_b[[3, 1, 4], [0, 1, 2]] = True
    mask_b = rng.uniform(size=(5, 3, 4)) < 0.6
    mask_b[..., 0] = True
    mask_b[3, 0] = [False, True, False, False]
    mask_b[2, 0] = False
    mask_b[4, 2] = False
    cases = []
    for r, l, m in ((reward, last, next_mask), (reward_b, last_b, mask_b)):
        right, mistakes = _classify_models(r, l, m)
        label = f"{r.shape[0]} steps of {r.shape[1]} environments"
        shown = {"reward": r, "last": l, "any(next_mask, axis=-1)": m.any(-1)}
        cases.append(((r, l, m), Case(label, shown, right, mistakes)))
    return cases


@self_check
def check_termination_and_truncation(classify: Callable) -> None:
    """Check ``classify(reward, last, next_mask) -> (terminated, truncated)`` for Maze steps.

    ``reward`` float32 ``(T, N)``, ``last`` bool ``(T, N)`` (``timestep.last()``), ``next_mask``
    bool ``(T, N, 4)`` (the mask after each step). Returns two bool arrays ``(T, N)``: a LAST
    step terminates at the target (reward 1) or with no legal move, else it is truncated. The
    answer runs under ``jax.jit`` on two batches (6 steps of 2 environments, 5 of 3).

    Raises:
        CheckFailed: for a result that is not a pair of bool ``(T, N)`` arrays, or naming the
            mistake (every end a termination, terminations also truncated, the pair swapped, a
            walled-in agent or the target missed, walls next to the agent taken for walled in,
            flags one step late, ``last & a | b``); otherwise the first step that differs,
            in words.
    """
    cases = _classify_cases()
    outputs = []
    for (r, l, m), case in cases:
        call = f"classify(reward, last, next_mask) for {case.label}"
        got = run_answer(classify, *map(jnp.asarray, (r, l, m)), call=call,
                         hint="reward and last are (T, N), next_mask (T, N, 4): a reduction "
                         "of next_mask over its last axis (the actions) gives (T, N)")  # fmt: skip
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            fail(f"classify should return a pair (terminated, truncated), got "
                 f"{type(got).__name__} of shape {np.shape(got)}")  # fmt: skip
        flags = [check_shape(g, r.shape, f"{name} of {call}", hint="One flag per step and "
                             "environment.") for g, name in zip(got, ("terminated", "truncated"))]
        for flag, name in zip(flags, ("terminated", "truncated")):
            _require_dtype(flag, bool, name, "flags are bool (compare, or combine with & | ~)")
        outputs.append(np.stack(flags).astype(np.int32))
    shown = [case._replace(label=f"{case.label}, (terminated, truncated) stacked")
             for _, case in cases]  # fmt: skip
    try:
        verdict("classify", shown, outputs)
    except CheckFailed as failure:
        if "differs from the reference" not in str(failure):
            raise
        for ((reward, last, mask), case), out in zip(cases, outputs):
            flagged = np.argwhere(out.any(axis=0) & ~last)
            if len(flagged):
                t, n = (int(i) for i in flagged[0])
                name = "terminated" if out[0, t, n] else "truncated"
                fail(f"classify: a step that is not LAST is flagged: {name} is True at step "
                     f"{t} of environment {n} ({case.label}); only a LAST step ends an "
                     "episode, so combine the conditions with last & (...)")  # fmt: skip
        i = next(i for i, ((_, case), out) in enumerate(zip(cases, outputs))
                 if not close(out, case.expected))  # fmt: skip
        ((reward, last, mask), case), out = cases[i], outputs[i]
        flag, t, n = (int(i) for i in np.argwhere(out != case.expected)[0])
        if reward[t, n] > 0:
            kind = "the target (LAST, reward 1)"
        elif not mask[t, n].any():
            kind = "a walled-in agent (LAST, reward 0, no legal move in next_mask)"
        else:
            kind = "a time limit (LAST, reward 0, a legal move left in next_mask)"
        name = ("terminated", "truncated")[flag]
        fail(f"classify differs from the reference on {case.label}: at step {t} of "
             f"environment {n}, {kind}, {name} is {bool(out[flag, t, n])}, expected "
             f"{bool(case.expected[flag, t, n])}")  # fmt: skip
    passed("terminations (target, no legal move) and truncations (time limit) are told apart")


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
            agent_position=Position(row=jnp.asarray(agent[..., 0], jnp.int32),
                                    col=jnp.asarray(agent[..., 1], jnp.int32)),
            target_position=Position(row=jnp.asarray(target[..., 0], jnp.int32),
                                     col=jnp.asarray(target[..., 1], jnp.int32)),
            walls=jnp.zeros(shape + (size, size), bool),
            action_mask=jnp.asarray(mask),
            step_count=jnp.asarray(step_count, jnp.int32),
        )  # fmt: skip

    steps = np.broadcast_to(np.arange(1, shape[0] + 1)[:, None], shape)
    end_agent = np.where((kinds == _TARGET)[..., None], target, elsewhere())
    next_obs = observation(end_agent, masks(kinds == _WALLED), steps)
    start_agent = np.where(ended[..., None], elsewhere(), end_agent)
    start_mask = np.where(ended[..., None], masks(ended & walled_starts),
                          np.asarray(next_obs.action_mask))  # fmt: skip
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
    return Case(label, {_KINDS: kinds, "next episode starts walled in": walled_starts}, right, {
        "a walled-in ending is counted as a truncation, and a time-out followed by a walled-in "
        "start as a termination: the action mask comes from timestep.observation, which after a "
        "LAST step is already the next episode's; use timestep.extras['next_obs'].action_mask":
            counts(target + stale_walled),
        "an ending at the target is counted as a truncation: the positions come from "
        "timestep.observation, which after a LAST step is already the next episode's; read "
        "them from timestep.extras['next_obs'], or test reward > 0": counts(walled),
        "every ending but the walled-in starts of the next episodes is counted as a "
        "truncation: the whole observation is timestep.observation, already the next "
        "episode's after a LAST step; use timestep.extras['next_obs']": counts(stale_walled),
        "no walled-in ending is counted as a termination: the test for no legal move is "
        "missing, or never fires (jnp.any(mask) without axis=-1 reduces all the masks to one "
        "value)": counts(target),
        "every ending is counted as a termination (jumanji's discount is 0 at a time-out "
        "too): a time-out is a truncation": counts(n_last, 0),
        "the counts come back in the wrong order: return (terminated, truncated)": right[::-1],
        "truncated counts every step that did not terminate, the steps within an episode "
        "too: a truncation is a LAST step, last & ~terminated": counts(
            target + walled, kinds.size - target - walled),
        "truncated counts every ending, the terminations too: truncated is last & "
        "~terminated": counts(target + walled, n_last),
    })  # fmt: skip


def _count_endings_cases() -> list:
    """``[(seed, Case)]``: the rollouts of :func:`check_count_endings`; ``kinds`` says what
    each step was (0 within an episode, 1 the target, 2 walled in, 3 the time limit)."""
    m, t, w, c = _MID, _TARGET, _WALLED, _CLOCK
    first = np.array([[m, m, m], [m, w, m], [t, m, m], [m, m, m], [m, m, m], [m, c, m],
                      [m, m, m], [c, m, m]])  # fmt: skip
    second = np.array([[w, m, t, c], [m, t, m, m], [t, m, m, c], [m, w, m, m], [c, m, t, c]])
    one_step = np.array([[t, w, c, m, c]])
    walled_starts = np.zeros_like(one_step, bool)
    walled_starts[0, 2] = True  # after the time-out, an episode that starts walled in
    return [
        (5, _count_endings_case(first, np.zeros_like(first, bool),
                                "8 steps of 3 environments, one of which never ends")),
        (6, _count_endings_case(second, np.zeros_like(second, bool), "5 steps of 4 environments")),
        (7, _count_endings_case(one_step, walled_starts, "1 step of 5 environments, a "
                                "time-out followed by a start walled in")),
    ]  # fmt: skip


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
            within an episode or terminations counted as truncations); otherwise the counts
            that differ.
    """
    require_function(count_endings, "count_endings")
    cases = _count_endings_cases()
    outputs = []
    for seed, case in cases:
        timesteps = _maze_timesteps(case.inputs[_KINDS],
                                    case.inputs["next episode starts walled in"], seed)
        call = f"count_endings(timesteps) for {case.label}"
        got = run_answer(count_endings, timesteps, call=call,
                         hint="timesteps are stacked (T, N); the flags come from reward, "
                         "last() and extras['next_obs'].action_mask")  # fmt: skip
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            fail(f"count_endings should return a pair (n_terminated, n_truncated), got "
                 f"{type(got).__name__} of shape {np.shape(got)}")  # fmt: skip
        pair = [check_shape(g, (), f"{name} of {call}", hint="One count for the whole "
                            "rollout: sum over the steps and the environments.")
                for g, name in zip(got, ("n_terminated", "n_truncated"))]  # fmt: skip
        for count, name in zip(pair, ("n_terminated", "n_truncated")):
            if count.dtype.kind not in "iu":
                _require_dtype(count, np.int32, name, "a count is a whole number; jnp.sum of "
                               "the bool flags gives int32")  # fmt: skip
        outputs.append(np.array([int(p) for p in pair]))
    shown = [case._replace(label=f"{case.label}, (n_terminated, n_truncated)")
             for _, case in cases]  # fmt: skip
    verdict("count_endings", shown, outputs)
    passed("count_endings counts terminations and truncations from extras['next_obs']")


# --- chapter 6 ----------------------------------------------------------------------------

def _accelerations(physics: np.ndarray, force: float) -> tuple:
    """CartPole's ``(x_acc, theta_acc)`` (gymnasium's equations) in float64."""
    p = cartpole.DEFAULT_PARAMS
    _, _, theta, theta_dot = np.asarray(physics, np.float64)
    cos, sin = np.cos(theta), np.sin(theta)
    temp = (force + p.polemass_length * theta_dot**2 * sin) / p.total_mass
    theta_acc = (p.gravity * sin - cos * temp) / (
        p.length * (4.0 / 3.0 - p.masspole * cos**2 / p.total_mass)
    )
    return temp - p.polemass_length * theta_acc * cos / p.total_mass, theta_acc


def _euler_variants(physics: np.ndarray, force: float) -> dict:
    """The next physics of semi-implicit Euler and of its usual slips, float64 ``(4,)``."""
    tau = cartpole.DEFAULT_PARAMS.tau
    x, x_dot, theta, theta_dot = np.asarray(physics, np.float64)
    x_acc, theta_acc = _accelerations(physics, force)
    new_x_dot, new_theta_dot = x_dot + tau * x_acc, theta_dot + tau * theta_acc
    new_x, new_theta = x + tau * new_x_dot, theta + tau * new_theta_dot
    return {
        "semi": np.array([new_x, new_x_dot, new_theta, new_theta_dot]),
        "explicit": np.array(
            [x + tau * x_dot, new_x_dot, theta + tau * theta_dot, new_theta_dot]
        ),
        "old theta_dot": np.array([new_x, new_x_dot, theta + tau * theta_dot, new_theta_dot]),
        "old x_dot": np.array([x + tau * x_dot, new_x_dot, new_theta, new_theta_dot]),
        "reordered": np.array([new_x, new_theta, new_x_dot, new_theta_dot]),
    }


def _euler_case(physics, action) -> Case:
    physics = np.asarray(physics, np.float32)
    force_mag = cartpole.DEFAULT_PARAMS.force_mag
    right = _euler_variants(physics, force_mag if action else -force_mag)
    push = "pushing right" if action else "pushing left"
    return Case(f"physics {np.round(physics, 4).tolist()}, {push} (action {action})",
                {"physics": physics, "action": action}, right["semi"], {
        "this is explicit Euler: update the velocities first, then the positions with "
        "them": right["explicit"],
        "x moves with the new x_dot but theta with the old theta_dot: move both positions "
        "with the new velocities": right["old theta_dot"],
        "theta moves with the new theta_dot but x with the old x_dot: move both positions "
        "with the new velocities": right["old x_dot"],
        "the push goes the wrong way: action 1 pushes right (+force_mag), 0 pushes left": (
            _euler_variants(physics, -force_mag if action else force_mag)["semi"]
        ),
        "action 0 gives no force (force = action * force_mag?): 0 pushes left, with "
        "-force_mag": _euler_variants(physics, force_mag * action)["semi"],
        "the result is ordered (x, theta, x_dot, theta_dot); the physics is (x, x_dot, theta, "
        "theta_dot)": right["reordered"],
    })  # fmt: skip


@self_check
def check_semi_implicit_step(step: Callable) -> None:
    """Check ``step(physics, action)``: CartPole with the semi-implicit Euler integrator
    (velocities first, then positions with the *new* velocities); ``physics`` float32
    ``(4,)`` (x, x_dot, theta, theta_dot), ``action`` an int32 array of shape ``()``; returns
    float32 ``(4,)``. The answer runs under ``jax.jit`` on three states, pushed both ways.

    Raises:
        CheckFailed: for a wrong shape or a dtype other than float32, or naming the mistake
            (explicit Euler, one position moved with its old velocity, the push reversed or
            zero for action 0, the variables reordered); otherwise the first that differs.
    """
    cases = [
        _euler_case([0.1, -0.3, 0.05, 0.8], 1),
        _euler_case([-1.2, 0.6, -0.15, -1.1], 0),
        _euler_case([0.0, 1.5, 0.2, 0.3], 1),
    ]
    outputs = []
    for case in cases:
        call = f"step(physics, action) with {case.label}"
        args = jnp.asarray(case.inputs["physics"]), jnp.int32(case.inputs["action"])
        got = check_shape(run_answer(step, *args, call=call), (4,), call)
        if jnp.issubdtype(got.dtype, jnp.floating):
            _require_dtype(got, np.float32, "step", "the physics is float32; build the result "
                           "with jnp.stack of float32 values")  # fmt: skip
        outputs.append(got)
    verdict("step", cases, outputs)
    _require_dtype(outputs[0], np.float32, "step", "the physics is float32")
    passed("semi-implicit Euler: velocities first, positions with the new velocities")


#: The scale of the probe observations: x, x_dot, theta, theta_dot in the ranges an episode
#: visits.
_PROBE_SCALE = np.array([1.5, 1.5, 0.2, 1.5], np.float32)
_PROBES = 48


def _probe_observations() -> np.ndarray:
    """float32 ``(13 * 48 + 2, 4)``: 48 observations; the same 4 times with other x and x_dot,
    4 times with another theta, 4 times with another theta_dot; then the pole falling right
    (theta 0.1, theta_dot 0.5) and falling left."""
    rng = np.random.default_rng(6)
    base = rng.uniform(-1, 1, (_PROBES, 4)) * _PROBE_SCALE
    groups = [base[None]]
    for columns in ([0, 1], [2], [3]):
        other = np.repeat(base[None], 4, axis=0)
        other[..., columns] = rng.uniform(-1, 1, (4, _PROBES, len(columns))) * _PROBE_SCALE[
            columns
        ]
        groups.append(other)
    falling = np.array([[0.0, 0.0, 0.1, 0.5], [0.0, 0.0, -0.1, -0.5]])
    return np.concatenate([g.reshape(-1, 4) for g in groups] + [falling]).astype(np.float32)


@self_check
def check_balancing_policy(policy: Callable, episodes: int = 20) -> None:
    """Check ``policy(obs) -> action``, a CartPole policy of the pole alone: ``obs`` float32
    ``(4,)``, the action an int32 ``()``, 0 (push left) or 1 (push right), that reads only
    theta and theta_dot (``obs[2]``, ``obs[3]``) and balances for 500 steps on average (mean
    return >= 475 over ``episodes`` episodes). The check runs the policy under ``jax.jit``
    and ``jax.vmap``: first on probe observations (changing x and x_dot alone, and with the
    pole falling either way), then for whole episodes.

    Raises:
        CheckFailed: for an action that is not int32, or not 0 or 1; one that changes with x or
            x_dot; one that is the same whatever the observation, or pushes away from the side
            the pole falls to; or a mean return below 475, saying how the episodes ended.
    """
    require_function(policy, "policy")
    probes = _probe_observations()
    call = f"jax.vmap(policy)(obs) for {len(probes)} probe observations"
    acts = check_shape(run_answer(jax.vmap(policy), jnp.asarray(probes), call=call),
                       (len(probes),), call, hint="policy(obs) returns one action, shape ()")
    _require_dtype(acts, np.int32, "the policy's action", "an action is an int32 index: "
                   "(condition).astype(jnp.int32), or jnp.where(condition, 1, 0)")
    if not np.isin(acts, (0, 1)).all():
        fail(f"the policy returned the action(s) {sorted(set(acts.tolist()) - {0, 1})}; "
             "CartPole's actions are 0 (push left) and 1 (push right)")  # fmt: skip
    grid = acts[:-2].reshape(13, _PROBES)
    base, moved, theta, theta_dot = grid[0], grid[1:5], grid[5:9], grid[9:]
    if (moved != base).any():
        fail("the policy's action changes when only x or x_dot changes (obs[0], obs[1]): this "
             "exercise asks for a policy of the pole alone, theta and theta_dot (obs[2], "
             "obs[3])")  # fmt: skip
    if len(set(acts.tolist())) == 1:
        side = "left (0)" if acts[0] == 0 else "right (1)"
        fail(f"the policy always pushes {side}, whatever the observation: push towards the side "
             "the pole falls to")  # fmt: skip
    if acts[-2:].tolist() == [0, 1]:
        fail("the policy pushes away from the side the pole falls to: with the pole falling "
             "right (theta = 0.1, theta_dot = 0.5) it pushes left (0), and right when it falls "
             "left; push right (1) when the pole falls right")  # fmt: skip
    reads_theta, reads_theta_dot = (theta != base).any(), (theta_dot != base).any()

    p = cartpole.DEFAULT_PARAMS

    def episode(key):
        state, obs = cartpole.reset(key)

        def body(carry, _):
            state, obs, alive, total, pole, track = carry
            state, ts = cartpole.step(state, jnp.asarray(policy(obs)).astype(jnp.int32))
            ends = alive & ts.terminated
            pole = pole | ends & (jnp.abs(state.physics[2]) > p.theta_threshold)
            track = track | ends & (jnp.abs(state.physics[0]) > p.x_threshold)
            return (state, ts.obs, alive & ~ts.done, total + alive, pole, track), None

        init = (state, obs, jnp.array(True), 0.0, jnp.array(False), jnp.array(False))
        (*_, total, pole, track), _ = jax.lax.scan(body, init, length=p.max_steps)
        return total, pole, track

    keys = jax.random.split(jax.random.key(0), episodes)
    call = f"policy(obs) in {episodes} episodes of CartPole"
    returns, pole, track = (np.asarray(x) for x in run_answer(
        jax.jit(jax.vmap(episode)), keys, call=call, jit=False))  # fmt: skip
    mean = float(returns.mean())
    if mean < 475:
        hint = ""
        if not reads_theta_dot:
            hint = (" The policy reads theta alone (its action never changes with theta_dot): "
                    "a term in theta_dot, obs[3], damps the swing.")  # fmt: skip
        elif not reads_theta:
            hint = (" The policy reads theta_dot alone (its action never changes with "
                    "theta): add a term in theta, obs[2].")  # fmt: skip
        fail(
            f"mean return {mean:.1f} over {episodes} episodes, below 475: the pole fell in "
            f"{int(pole.sum())} of them and the cart left the track in {int(track.sum())}."
            + hint
        )
    passed(f"the policy balances the pole: mean return {mean:.1f} over {episodes} episodes")
