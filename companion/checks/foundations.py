"""Self-checks for the exercises of the chapter on reinforcement learning's foundations.

:func:`check_action_values` (one Bellman backup), :func:`check_reinforce_weights` (REINFORCE's
weights) and :func:`check_q_learning` (find-the-bug: tabular Q-learning against Q*).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import require_array
from companion.checks._messages import _
from companion.checks.basics import _returns_reference
from companion.checks.core import (
    Case,
    close,
    fail,
    passed,
    run_answer,
    self_check,
    verdict,
)
from companion.envs.maze import parse_maze
from companion.tabular import MazeMDP, action_values, maze_mdp, value_iteration

#: The checks' own maze: not the chapter's, so that an answer cannot fit one layout. ``B``
#: is a bonus cell beside the target ``T``.
_LAYOUT = (
    "..#...",
    ".#..#.",
    "...#.B",
    "#....T",
)
#: Its rewards: 2 for the move onto the target, 0.25 for a move onto the bonus cell, -0.3 for
#: every other move (a bump into a wall too). They are neither the termination flag nor
#: capped at 1: the path through the bonus cell is worth more than the largest reward.
_TARGET_REWARD, _BONUS_REWARD, _STEP_COST = 2.0, 0.25, -0.3


def _mdp() -> MazeMDP:
    """The checks' maze with its rewards (:data:`_LAYOUT`)."""
    layout = tuple(row.replace("B", ".") for row in _LAYOUT)
    walls, _, (target,) = parse_maze(layout)
    mdp = maze_mdp(walls, target)
    (bonus,) = [(r, row.index("B")) for r, row in enumerate(_LAYOUT) if "B" in row]
    cells = np.asarray(mdp.cells)[np.asarray(mdp.next_state)]
    terminal, legal = np.asarray(mdp.terminal), np.asarray(mdp.legal)
    onto_bonus = legal & ~terminal & (cells == bonus).all(axis=-1)
    reward = np.where(terminal, _TARGET_REWARD, np.where(onto_bonus, _BONUS_REWARD, _STEP_COST))
    return mdp._replace(reward=jnp.asarray(reward, jnp.float32))


def _action_values_case(mdp: MazeMDP, v: np.ndarray, gamma: float, label: str) -> Case:
    expected = np.asarray(action_values(mdp, jnp.asarray(v), gamma), np.float64)
    reward, terminal = np.asarray(mdp.reward, np.float64), np.asarray(mdp.terminal)
    legal = np.asarray(mdp.legal)
    future = v[np.asarray(mdp.next_state)]
    go_on = 1.0 - terminal
    return Case(
        label,
        {"v": v, "gamma": gamma},
        expected,
        {
            _(
                "a move onto the target bootstraps from V(s'); the episode ends there, so "
                "multiply the future by (1 - mdp.terminal)"
            ): reward + gamma * future,
            _("gamma discounts the reward too; the first reward is not discounted"): gamma
            * expected,
            _(
                "gamma multiplies the whole backup, the reward too: only the future is discounted, "
                "r + gamma * (1 - d) * V(s')"
            ): gamma * (reward + go_on * future),
            _("the future is V of the current state; it is V(s') = v[mdp.next_state]"): reward
            + gamma * go_on * v[:, None],
            _("the reward r(s, a) is left out"): expected - reward,
            _("the future is not discounted: r + gamma * (1 - d) * V(s')"): reward + go_on * future,
            _(
                "(1 - d) multiplies the reward too, so the move onto the target pays nothing: it "
                "removes only the future"
            ): go_on * (reward + gamma * future),
            _(
                "the future is kept only where the episode ends: multiply it by (1 - d), not by d"
            ): reward + gamma * terminal * future,
            _(
                "the reward is mdp.terminal (1 onto the target, 0 elsewhere), as in the chapter's "
                "maze; the check's maze has other rewards: use mdp.reward"
            ): terminal + gamma * go_on * future,
            _(
                "illegal actions are set to 0: the tables define them too (an illegal move stays "
                "put), so compute every entry"
            ): np.where(legal, expected, 0.0),
        },
    )


@self_check
def check_action_values(answer: Callable) -> None:
    """Check ``action_values(mdp, v, gamma)``: ``r + gamma * (1 - terminal) * v[next_state]``.

    ``mdp`` a :class:`companion.tabular.MazeMDP` with ``S`` states, ``v`` float32 ``(S,)``;
    the answer float32 ``(S, 4)``. The answer runs under ``jax.jit`` (``gamma`` a Python
    float) on the check's own maze, whose rewards are not the termination flag (a step cost,
    a bonus cell; :data:`_LAYOUT`), in two cases: positive values with gamma 0.8, values of
    both signs with gamma 0.5.

    Raises:
        CheckFailed: naming the mistake (bootstrapping past the target, gamma on the reward
            or on the whole backup, V of the current state, the reward left out or taken from
            ``mdp.terminal``, no discount, (1 - d) on the reward or d for (1 - d), illegal
            actions zeroed), for a wrong shape or a dtype other than float32.
    """
    mdp = _mdp()
    num_states = mdp.legal.shape[0]
    cases = [
        _action_values_case(
            mdp, np.linspace(0.1, 0.9, num_states), 0.8, _("v > 0, gamma {gamma}").format(gamma=0.8)
        ),
        _action_values_case(
            mdp,
            np.random.default_rng(5).uniform(-1, 1, num_states),
            0.5,
            _("v of both signs, gamma {gamma}").format(gamma=0.5),
        ),
    ]
    outputs = []
    for case in cases:
        call = _("action_values(mdp, v, gamma) with {case}").format(case=case.label)
        v = jnp.asarray(case.inputs["v"], jnp.float32)
        got = run_answer(answer, mdp, v, case.inputs["gamma"], call=call)
        got = require_array(
            got,
            call,
            mdp.legal.shape,
            np.float32,
            why=_("one value per (state, action)"),
            dtype_hint=_("The tables and v are float32"),
        )
        outputs.append(got)
    verdict("action_values", cases, outputs)
    passed(_("action_values is one Bellman backup: r + gamma * (1 - d) * V(s')"))


def _reinforce_case(rewards, baselines, gamma) -> Case:
    rewards, baselines = np.asarray(rewards, np.float64), np.asarray(baselines, np.float64)
    g = _returns_reference(rewards, gamma)
    discount = gamma ** np.arange(len(rewards))
    right = discount * (g - baselines)
    forwards = [  # a scan without reverse=True, and a cumulative sum
        _returns_reference(rewards[::-1], gamma)[::-1],
        np.cumsum(rewards * discount) / discount,
    ]
    from_start = np.cumsum((rewards * discount)[::-1])[::-1]  # sum_{k>=t} gamma^k r_k
    next_baselines = [np.append(baselines[1:], 0.0), np.roll(baselines, -1)]
    label = _("T = {steps}, gamma {gamma}").format(steps=len(rewards), gamma=gamma)
    return Case(
        label,
        {"rewards": rewards, "baselines": baselines, "gamma": gamma},
        right,
        {
            _(
                "the return accumulates forwards in time; G_t sums the rewards from t on "
                "(scan with reverse=True)"
            ): [discount * (f - baselines) for f in forwards],
            _("gamma is applied to the first reward: G_t = r_t + gamma * G_{t+1}"): discount
            * (gamma * g - baselines),
            _("the baseline is not subtracted"): discount * g,
            _("the baseline is added; subtract it"): discount * (g + baselines),
            _("the baseline is the next step's; b(s_t) belongs to the same step as the action"): [
                discount * (g - b) for b in next_baselines
            ],
            _("the factor gamma^t is missing (the gradient of J has it)"): g - baselines,
            _("gamma^t multiplies only the return; it multiplies G_t - b(s_t)"): discount * g
            - baselines,
            _("the power of gamma is one step off: the first step's weight has gamma^0 = 1"): (
                gamma * discount * (g - baselines)
            ),
            _("the weights are multiplied by gamma, not by gamma^t (gamma ** jnp.arange(T))"): gamma
            * (g - baselines),
            _("the powers of gamma run backwards: gamma^t is 1 at the first step, t = 0"): discount[
                ::-1
            ]
            * (g - baselines),
            _(
                "the weights come out in reverse time order: a scan with reverse=True already returns "
                "G_t in time order, do not flip it"
            ): right[::-1],
            _(
                "every step gets the whole episode's return G_0; G_t sums the rewards from t on"
            ): discount * (g[0] - baselines),
            _(
                "G_t is discounted from the episode's start (gamma^k r_k) and then by gamma^t again: "
                "G_t = sum over k >= t of gamma^(k - t) r_k"
            ): discount * (from_start - baselines),
        },
    )


@self_check
def check_reinforce_weights(answer: Callable) -> None:
    """Check ``reinforce_weights(rewards, baselines, gamma)``: ``gamma^t (G_t - b_t)``.

    ``rewards``, ``baselines`` float32 ``(T,)``; returns float32 ``(T,)``, with
    ``G_t = r_t + gamma G_{t+1}`` (Williams, 1992; Sutton and Barto, 2018, section 13.4). The
    answer runs under ``jax.jit`` (``gamma`` a Python float) on two episodes.

    Raises:
        CheckFailed: naming the mistake (a return accumulated forwards, from the episode's
            start or the whole episode's; gamma on the first reward; the baseline left out,
            added or from the next step; gamma^t missing, misplaced, one step off, reversed
            or gamma instead; the weights reversed), for a wrong shape or a dtype other than
            float32.
    """
    cases = [
        _reinforce_case([0.0, 1.0, 0.0, 0.5, 2.0], [0.3, 0.7, 0.2, 0.4, 1.5], 0.9),
        _reinforce_case(
            [1.0, -0.5, 0.0, 0.0, 1.0, 0.25, -1.0], [0.5, -0.2, 0.1, 0.8, 0.0, 0.3, -0.6], 0.6
        ),
    ]
    outputs = []
    for case in cases:
        call = _("reinforce_weights(rewards, baselines, gamma) with {case}").format(case=case.label)
        rewards, baselines = (
            jnp.asarray(case.inputs[k], jnp.float32) for k in ("rewards", "baselines")
        )
        got = run_answer(answer, rewards, baselines, case.inputs["gamma"], call=call)
        got = require_array(
            got,
            call,
            rewards.shape,
            np.float32,
            why=_("one weight per step"),
            dtype_hint=_("The rewards and baselines are float32"),
        )
        outputs.append(got)
    verdict("reinforce_weights", cases, outputs)
    passed(_("reinforce_weights gives gamma^t * (G_t - b(s_t))"))


def _q_fixed_point(target: Callable, legal: np.ndarray) -> np.ndarray:
    """The Q a tabular Q-learning converges to (on legal actions; illegal ones stay 0) when
    its TD target is ``target(q)``, float64 ``(S, 4)``: iterated to a change below 1e-12."""
    q = np.zeros(legal.shape)
    for _sweep in range(5_000):
        new = np.where(legal, target(q), 0.0)
        if np.abs(new - q).max() < 1e-12:
            break
        q = new
    return new


def _q_learning_models(mdp: MazeMDP, gamma: float) -> tuple:
    """Q* of ``mdp`` and, for each named mistake, the values its update converges to."""
    legal, terminal = np.asarray(mdp.legal), np.asarray(mdp.terminal, np.float64)
    nxt, r = np.asarray(mdp.next_state), np.asarray(mdp.reward, np.float64)
    go_on = 1.0 - terminal
    behaviour = legal / legal.sum(axis=1, keepdims=True)

    def best(q):  # max over the next state's legal actions
        return np.max(np.where(legal[nxt], q[nxt], -np.inf), axis=-1)

    def fixed(target):
        return _q_fixed_point(target, legal)

    return fixed(lambda q: r + gamma * go_on * best(q)), {
        _(
            "the TD target bootstraps past the end of the episode: the move onto the target ends "
            "it, so multiply the future by (1 - d)"
        ): fixed(lambda q: r + gamma * best(q)),
        _(
            "the TD target keeps the future only where the episode ends: multiply it by (1 - d), "
            "not by d"
        ): fixed(lambda q: r + gamma * terminal * best(q)),
        _(
            "these are the random behaviour policy's values. Q-learning's target takes the max "
            "over the next state's legal actions, not an average over the policy's or the action "
            "taken next"
        ): fixed(lambda q: r + gamma * go_on * np.sum(behaviour[nxt] * q[nxt], -1)),
        _(
            "the values are gamma * Q*: gamma multiplies the whole TD target, the reward too; "
            "only the future is discounted, r + gamma * (1 - d) * max Q(s')"
        ): fixed(lambda q: gamma * (r + go_on * best(q))),
        _("the future is not discounted: r + gamma * (1 - d) * max Q(s')"): fixed(
            lambda q: r + go_on * best(q)
        ),
        _(
            "(1 - d) multiplies the reward too, so the move onto the target pays nothing: it "
            "removes only the future"
        ): fixed(lambda q: go_on * (r + gamma * best(q))),
        _(
            "the max runs over every action of the next state, the illegal ones too, whose values "
            "stay 0 (never taken): where all legal values are below 0 the target uses 0; take "
            "the max over the legal actions only"
        ): fixed(lambda q: r + gamma * go_on * np.max(np.where(legal, q, 0.0)[nxt], axis=-1)),
        _(
            "the max is over the current state's actions; the target's future is the next state's, "
            "q[s_tp1]"
        ): fixed(
            lambda q: r + gamma * go_on * np.max(np.where(legal, q, -np.inf), axis=1, keepdims=True)
        ),
        _(
            "the TD target is capped at 1: a clamp hides the values above 1 but the check's maze "
            "pays more (2 at the target); the fix is the missing (1 - d)"
        ): [
            fixed(lambda q: np.minimum(1.0, r + gamma * best(q))),
            fixed(lambda q: np.minimum(1.0, r + gamma * go_on * best(q))),
        ],
    }


@self_check
def check_q_learning(q_learning: Callable) -> None:
    """Check ``q_learning(mdp, key, num_steps)``: Q* of the check's own maze on legal actions.

    ``mdp`` a :class:`companion.tabular.MazeMDP`, ``key`` a PRNG key, ``num_steps`` an int (60,000
    uniformly random steps); returns float32 ``(S, 4)``, with the function's default gamma 0.9.
    The answer runs under ``jax.jit`` (``num_steps`` static), once, on a maze whose rewards
    are neither the termination flag nor all 0 or 1 (:data:`_LAYOUT`: a step cost, a bonus
    cell beside the target), so a clamp or a reward read from ``mdp.terminal`` shows.

    Raises:
        CheckFailed: for a wrong shape or a dtype other than float32; naming the mistake
            when the values are the fixed point of a known wrong update (bootstrapping past
            the target, d for (1 - d), the random policy's values, gamma on the whole
            target, no discount, (1 - d) on the reward, a max over illegal actions or the
            current state, a clamp at 1); otherwise the largest error against value
            iteration's Q* (it must be below 1e-3).
    """
    mdp, gamma = _mdp(), 0.9
    call = "q_learning(mdp, key, 60_000)"
    got = run_answer(q_learning, mdp, jax.random.key(0), 60_000, call=call)
    got = require_array(
        got,
        call,
        mdp.legal.shape,
        np.float32,
        why=_("Q, one value per (state, action)"),
        dtype_hint=_("The tables are float32: start Q from jnp.zeros((num_states, 4))"),
    )
    legal = np.asarray(mdp.legal)
    v_star, _policy = value_iteration(mdp, gamma)
    q_star = np.asarray(action_values(mdp, v_star, gamma))
    error = float(np.abs(np.where(legal, got - q_star, 0.0)).max())
    if error < 1e-3:
        passed(
            _("Q-learning reaches Q* (max |Q - Q*| = {error}, legal actions)").format(
                error=f"{error:.1e}"
            )
        )
        return
    _q_star, models = _q_learning_models(mdp, gamma)
    on_legal = np.where(legal, got, 0.0)
    for message, values in models.items():
        for model in values if isinstance(values, list) else [values]:
            if close(on_legal, model, rtol=0.0, atol=1e-2):
                top, best = on_legal[legal].max(), q_star[legal].max()
                above = (
                    _(
                        "values up to {top}, above the {best} that the best path of this maze "
                        "is worth: "
                    ).format(top=f"{top:.3g}", best=f"{best:.3g}")
                    if top > best + 1e-2
                    else ""
                )
                fail(_("q_learning: {above}{mistake}").format(above=above, mistake=message))
    fail(
        _(
            "q_learning: max |Q - Q*| = {error} over the legal actions, expected < 1e-3; the "
            "largest value is {top}, Q*'s {best}, and the smallest {low}, Q*'s {worst}"
        ).format(
            error=f"{error:.3g}",
            top=f"{on_legal[legal].max():.3g}",
            best=f"{q_star[legal].max():.3g}",
            low=f"{on_legal[legal].min():.3g}",
            worst=f"{q_star[legal].min():.3g}",
        )
    )
