"""Self-checks for the exercises of the Maze chapters.

:func:`check_legal_fraction` and :func:`check_up_first_policy` (chapter 3),
:func:`check_termination_and_truncation` (chapter 4); chapter 4's
:func:`check_count_endings` is in :mod:`companion.checks.endings`, the CartPole chapter's
checks in :mod:`companion.checks.cartpole`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import require_array
from companion.checks._messages import _
from companion.checks.core import (
    Case,
    _Differs,
    close,
    fail,
    passed,
    require_function,
    require_pair,
    run_answer,
    self_check,
    verdict,
)

# --- chapter 3 ----------------------------------------------------------------------------


def _legal_fraction_case(masks: np.ndarray) -> Case:
    expected = masks.mean(axis=0)
    n = masks.shape[0]
    return Case(
        _("{count} masks").format(count=n),
        {"action_masks": masks},
        expected,
        {
            _(
                "legal_fraction averages over the actions (axis 1); average over the masks (axis 0)"
            ): masks.mean(axis=1),
            _("legal_fraction counts the masks; divide by their number for a fraction"): (
                masks.sum(axis=0)
            ),
            _(
                "legal_fraction divides with //, which rounds down to a whole number; / gives the "
                "fraction"
            ): masks.sum(axis=0) // n,
            _("legal_fraction gives the fraction of masks in which each action is ILLEGAL"): (
                1.0 - expected
            ),
        },
    )


def _legal_fraction_cases() -> list:
    rng = np.random.default_rng(3)
    return [
        _legal_fraction_case(masks)
        for masks in (
            np.array([[1, 0, 1, 1], [1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 1], [1, 0, 1, 0]], bool),
            rng.uniform(size=(7, 4)) < 0.4,
            # four masks: averaged over the wrong axis they still give 4 numbers
            np.array([[1, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]], bool),
        )
    ]


def _legal_fraction_hint(got: Any, case: Case) -> str:
    """What an answer of the wrong dtype or shape did, where it shows."""
    masks = case.inputs["action_masks"]
    shape = np.shape(got)
    if shape == masks.shape[:1] and close(got, masks.mean(axis=1)):
        return _(
            "It averages over the actions (axis 1), one number per mask; average over the "
            "masks (axis 0)"
        )
    if shape == (1, 4) and close(np.asarray(got)[0], case.expected):
        return _("keepdims=True keeps the averaged axis; leave it out for shape (4,)")
    if shape == (4,) and jnp.issubdtype(got.dtype, jnp.integer):
        return _(
            "A fraction is a float: a count of the masks, or a division with //, which "
            "rounds down, gives integers. jnp.mean of the bool masks gives float32"
        )
    if shape == (4,):
        return _("jnp.mean of the bool masks gives float32")
    return _("Average over the masks (axis 0)")


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
        call = _("legal_fraction(masks) for {case}").format(case=case.label)
        got = run_answer(legal_fraction, jnp.asarray(masks), call=call)
        arr = require_array(
            got,
            call,
            (4,),
            np.float32,
            why=_("one fraction per action"),
            hint=lambda got, case=case: _legal_fraction_hint(got, case),
        )
        outputs.append(arr)
    verdict("legal_fraction", cases, outputs)
    passed(_("legal_fraction gives the fraction of masks in which each action is legal"))


#: (mask, seed) with up legal: the policy must go up. Then masks with up blocked.
_UP_LEGAL = (([True, True, False, True], 0), ([True, False, False, False], 1))
_UP_BLOCKED = (
    ([False, True, False, True], 2),
    ([False, True, True, True], 3),
    ([False, False, True, True], 4),
)
_DRAWS = 600


@self_check
def check_up_first_policy(policy: Callable) -> None:
    """Check ``policy(key, action_mask) -> action``: int32 ``()``, "up" (0) when legal, else
    uniform among the legal actions; never an illegal action. The check draws 600 actions per
    mask, ``jax.vmap(policy, in_axes=(0, None))`` over 600 keys, under ``jax.jit``: two masks
    with up legal, three with up blocked.

    Raises:
        CheckFailed: for an action that is not an int32 scalar, an illegal action, "up" not
            taken when legal, a fallback that ignores the key (always the first legal action,
            or one action for every key) or that is not uniform.
    """
    require_function(policy, "policy")
    action = _(
        "An action is an int32 index (jax.random.categorical and jax.random.choice give "
        "int32; jnp.where(mask[0], 0, action) keeps it)"
    )
    mask, seed = _UP_BLOCKED[0]
    call = _("policy(key, mask) with mask {mask}").format(mask=mask)
    require_array(
        run_answer(policy, jax.random.key(seed), jnp.asarray(mask), call=call),
        call,
        (),
        np.int32,
        why=_("one action"),
        dtype_hint=action,
    )

    def draw(seed, mask):
        keys = jax.random.split(jax.random.key(seed), _DRAWS)
        call = f"jax.vmap(policy, in_axes=(0, None))(keys, {mask})"
        run = jax.vmap(policy, in_axes=(0, None))
        actions = run_answer(run, keys, jnp.asarray(mask), call=call)
        actions = require_array(
            actions, call, (_DRAWS,), np.int32, why=_("one action per key"), dtype_hint=action
        )
        illegal = sorted(set(actions.tolist()) - set(np.flatnonzero(mask).tolist()))
        if illegal:
            fail(
                _("with mask {mask} the policy chose illegal action(s) {illegal}").format(
                    mask=mask, illegal=illegal
                )
            )
        return actions

    for mask, seed in _UP_LEGAL:
        actions = draw(seed, mask)
        if not np.all(actions == 0):
            fail(
                _(
                    "with mask {mask} up is legal and the policy should always go up (0); it "
                    "chose {actions}"
                ).format(mask=mask, actions=sorted(set(actions.tolist())))
            )
    blocked = [(mask, draw(seed, mask)) for mask, seed in _UP_BLOCKED]
    constant = [(mask, acts) for mask, acts in blocked if len(set(acts.tolist())) == 1]
    if len(constant) == len(blocked):
        first = all(int(acts[0]) == int(np.argmax(mask)) for mask, acts in constant)
        which = (
            _("the first legal action of every mask, what jnp.argmax(mask) gives")
            if first
            else functools.reduce(
                lambda items, item: _("{items}, {item}").format(items=items, item=item),
                (
                    _("{action} with mask {mask}").format(action=int(a[0]), mask=m)
                    for m, a in constant
                ),
            )
        )
        fail(
            _(
                "the fallback is not random: when up is blocked the policy takes the same "
                "action for all {draws} keys ({which}). An argmax of the mask, or a draw with "
                "a key of its own (such as jax.random.key(0)) instead of the one passed in, "
                "gives the same action every time: draw with the key, for example "
                "jax.random.choice(key, 4, p=mask / mask.sum())"
            ).format(draws=_DRAWS, which=which)
        )
    for mask, actions in blocked:
        legal = np.flatnonzero(mask)
        shares = np.array([np.mean(actions == a) for a in legal])
        if np.abs(shares - 1 / len(legal)).max() > 0.08:
            fail(
                _(
                    "when up is blocked the legal actions should be equally likely; with mask "
                    "{mask} the legal actions {legal} were chosen {shares} of the time"
                ).format(
                    mask=mask,
                    legal=legal.tolist(),
                    shares=", ".join(f"{x:.0%}" for x in shares),
                )
            )
    passed(_("the policy goes up when it can and otherwise picks a legal action uniformly"))


# --- chapter 4 ----------------------------------------------------------------------------


#: How an array shifted one step in time is filled at the edge: by its edge row, or by the
#: row that ``jnp.roll`` brings round.
_FILLS = ("edge", "wrap")


def _shifted(a: np.ndarray, k: int, fill) -> np.ndarray:
    """``a`` with ``out[t] = a[t + k]`` along time (axis 0), ``fill`` says what fills the
    step that falls off the end."""
    out = np.roll(a, -k, axis=0)
    if fill == "edge":
        edge = slice(-1, None) if k > 0 else slice(0, 1)
        out[edge] = a[edge]
    return out


def _classify_models(r: np.ndarray, l: np.ndarray, m: np.ndarray) -> tuple:
    """The right ``(terminated, truncated)`` of one case, stacked as int ``(2, T, N)``, and
    what each named mistake returns there."""

    def pair(term, trunc=None):
        term = np.asarray(term, bool)
        return np.stack([term, l & ~term if trunc is None else trunc]).astype(np.int32)

    no_move = ~m.any(-1)
    term = l & ((r > 0) | no_move)
    right = pair(term)
    late = [
        np.roll(right, 1, axis=1),
        pair(np.roll(term, 1, 0), right[1]),
        pair(term, np.roll(right[1], 1, 0)),
    ]
    precedence = (l & (r > 0)) | no_move
    shifted = [
        pair(l & ((r > 0) | ~_shifted(m, k, fill).any(-1))) for k in (1, -1) for fill in _FILLS
    ]
    mistakes = {
        _("every LAST step is called a termination; the time limit is a truncation"): pair(
            l, np.zeros_like(l)
        ),
        _(
            "no step is called a termination, though some end at the target or walled in (are "
            "the two conditions joined with & instead of |?)"
        ): pair(np.zeros_like(l)),
        _(
            "truncated is True at every LAST step, terminations included: truncated is "
            "last & ~terminated"
        ): pair(term, l),
        _(
            "truncated is True at steps within an episode: a truncation is a LAST step that did "
            "not terminate, last & ~terminated"
        ): pair(term, ~term),
        _("the pair comes back in the wrong order: return (terminated, truncated)"): right[::-1],
        _(
            "a walled-in agent (no legal move in next_mask) is not called a termination: the test "
            "for no legal move is missing, or never fires (jnp.any(next_mask) without axis=-1 "
            "reduces all the masks to one value)"
        ): [pair(l & (r > 0)), pair(l & ((r > 0) | ~m.any()))],
        _(
            "reaching the target (reward 1) is not called a termination; only a walled-in agent is"
        ): pair(l & no_move),
        _(
            "a LAST step with walls next to the agent is called a termination: the agent is walled "
            "in only when no action is legal, ~jnp.any(next_mask, axis=-1), not when some action "
            "is illegal (~jnp.all)"
        ): pair(l & ((r > 0) | ~m.all(-1))),
        _("a flag is one step late: it belongs to the step whose timestep is LAST"): late,
        _(
            "next_mask is read one step off in time: next_mask[t] is the mask after step t, "
            "the step of reward[t] and last[t], so combine them at the same index, without "
            "shifting it"
        ): shifted,
        _(
            "`last & a | b` reads as `(last & a) | b`, so a walled-in mask flags steps that are "
            "not LAST: put the | in parentheses, last & ((reward > 0) | no_move)"
        ): [
            pair(precedence),
            pair(precedence, l & ~precedence),
        ],
    }
    return right, mistakes


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
    # are not LAST with an empty mask (env 0, t=2; env 2, t=0) and a reward (env 2, t=2).
    reward_b = np.zeros((5, 3), np.float32)
    reward_b[[1, 2], [1, 2]] = 1.0
    last_b = np.zeros((5, 3), bool)
    last_b[[3, 1, 4], [0, 1, 2]] = True
    mask_b = rng.uniform(size=(5, 3, 4)) < 0.6
    mask_b[..., 0] = True
    mask_b[3, 0] = [False, True, False, False]
    mask_b[2, 0] = False
    mask_b[4, 2] = False
    mask_b[0, 2] = False  # rolled round one step, the walled-in step (env 2, t=4) keeps its mask
    cases = []
    for r, l, m in ((reward, last, next_mask), (reward_b, last_b, mask_b)):
        right, mistakes = _classify_models(r, l, m)
        label = _("{steps} steps of {envs} environments").format(steps=r.shape[0], envs=r.shape[1])
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
            flags one step late, next_mask read one step off, ``last & a | b``, a
            step both terminated and truncated, a LAST step neither); otherwise the first
            step that differs, in words.
    """
    cases = _classify_cases()
    outputs = []
    for (r, l, m), case in cases:
        call = _("classify(reward, last, next_mask) for {case}").format(case=case.label)
        got = run_answer(
            classify,
            *map(jnp.asarray, (r, l, m)),
            call=call,
            hint=_(
                "reward and last are (T, N), next_mask (T, N, 4): a reduction "
                "of next_mask over its last axis (the actions) gives (T, N)"
            ),
        )
        require_pair(got, call, "terminated, truncated")
        flags = [
            require_array(
                g,
                _("{name} of {call}").format(name=name, call=call),
                r.shape,
                bool,
                why=_("one flag per step and environment"),
                dtype_hint=_("Flags are bool: compare, or combine with & | ~"),
                returns=False,
            )
            for g, name in zip(got, ("terminated", "truncated"))
        ]
        outputs.append(np.stack(flags).astype(np.int32))
    shown = [
        case._replace(label=_("{case}, (terminated, truncated) stacked").format(case=case.label))
        for _inputs, case in cases
    ]
    try:
        verdict("classify", shown, outputs)
    except _Differs:
        for ((_reward, last, _mask), case), out in zip(cases, outputs):
            flagged = np.argwhere(out.any(axis=0) & ~last)
            if len(flagged):
                t, n = (int(i) for i in flagged[0])
                name = "terminated" if out[0, t, n] else "truncated"
                fail(
                    _(
                        "classify: a step that is not LAST is flagged: {name} is True at step "
                        "{step} of environment {env} ({case}); only a LAST step ends an "
                        "episode, so combine the conditions with last & (...)"
                    ).format(name=name, step=t, env=n, case=case.label)
                )
        for ((_reward, last, _mask), case), out in zip(cases, outputs):
            both = np.argwhere(out[0] & out[1])
            if len(both):
                t, n = (int(i) for i in both[0])
                fail(
                    _(
                        "classify: terminated and truncated are both True at step {step} of "
                        "environment {env} ({case}): an episode ends one way only, so a "
                        "truncation is a LAST step that did not terminate, last & ~terminated"
                    ).format(step=t, env=n, case=case.label)
                )
            neither = np.argwhere(last & ~out[0].astype(bool) & ~out[1].astype(bool))
            if len(neither):
                t, n = (int(i) for i in neither[0])
                fail(
                    _(
                        "classify: the LAST step {step} of environment {env} ({case}) is "
                        "neither terminated nor truncated: every LAST step ends its episode one "
                        "way or the other, so truncated is last & ~terminated"
                    ).format(step=t, env=n, case=case.label)
                )
        i = next(
            i
            for i, ((_inputs, case), out) in enumerate(zip(cases, outputs))
            if not close(out, case.expected)
        )
        ((reward, last, mask), case), out = cases[i], outputs[i]
        flag, t, n = (int(i) for i in np.argwhere(out != case.expected)[0])
        if reward[t, n] > 0:
            kind = _("the target (LAST, reward 1)")
        elif not mask[t, n].any():
            kind = _("a walled-in agent (LAST, reward 0, no legal move in next_mask)")
        else:
            kind = _("a time limit (LAST, reward 0, a legal move left in next_mask)")
        name = ("terminated", "truncated")[flag]
        fail(
            _(
                "classify differs from the reference on {case}: at step {step} of environment "
                "{env}, {kind}, {name} is {got}, expected {expected}"
            ).format(
                case=case.label,
                step=t,
                env=n,
                kind=kind,
                name=name,
                got=bool(out[flag, t, n]),
                expected=bool(case.expected[flag, t, n]),
            )
        )
    passed(_("terminations (target, no legal move) and truncations (time limit) are told apart"))
