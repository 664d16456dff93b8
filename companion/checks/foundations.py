"""Self-checks for the exercises of the chapter on reinforcement learning's foundations.

:func:`check_action_values` (one Bellman backup), :func:`check_reinforce_weights` (REINFORCE's
weights) and :func:`check_q_learning` (find-the-bug: tabular Q-learning against Q*).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.basics import _returns_reference
from companion.checks.core import (
    Case,
    check_shape,
    fail,
    passed,
    run_answer,
    self_check,
    verdict,
)
from companion.envs.maze import parse_maze
from companion.tabular import (
    MazeMDP,
    action_values,
    evaluate_policy,
    maze_mdp,
    value_iteration,
)

#: The checks' own maze: not the chapter's, so that an answer cannot fit one layout.
_LAYOUT = (
    "..#...",
    ".#..#.",
    "...#..",
    "#....T",
)


def _mdp() -> MazeMDP:
    walls, _, (target,) = parse_maze(_LAYOUT)
    return maze_mdp(walls, target)


def _action_values_case(mdp: MazeMDP, v: np.ndarray, gamma: float, label: str) -> Case:
    expected = np.asarray(action_values(mdp, jnp.asarray(v), gamma), np.float64)
    reward, terminal = np.asarray(mdp.reward, np.float64), np.asarray(mdp.terminal)
    future = v[np.asarray(mdp.next_state)]
    return Case(label, {"v": v, "gamma": gamma}, expected, {
        "a move onto the target bootstraps from V(s'); the episode ends there, so "
        "multiply the future by (1 - mdp.terminal)": reward + gamma * future,
        "gamma discounts the reward too; the first reward is not discounted": gamma * expected,
        "the future is V of the current state; it is V(s') = v[mdp.next_state]": reward
        + gamma * (~terminal) * v[:, None],
        "the reward r(s, a) is left out": expected - reward,
        "the future is not discounted: r + gamma * (1 - d) * V(s')": reward
        + (~terminal) * future,
    })  # fmt: skip


@self_check
def check_action_values(answer: Callable) -> None:
    """Check ``action_values(mdp, v, gamma)``: ``r + gamma * (1 - terminal) * v[next_state]``.

    ``mdp`` a :class:`companion.tabular.MazeMDP` with ``S`` states, ``v`` float32 ``(S,)``;
    the answer float32 ``(S, 4)``. Two cases: positive values with gamma 0.8, values of
    both signs with gamma 0.5.

    Raises:
        CheckFailed: naming the mistake (bootstrapping past the target, gamma on the reward,
            V of the current state, the reward left out, no discount, a wrong shape).
    """
    mdp = _mdp()
    num_states = mdp.legal.shape[0]
    cases = [
        _action_values_case(mdp, np.linspace(0.1, 0.9, num_states), 0.8, "v > 0, gamma 0.8"),
        _action_values_case(mdp, np.random.default_rng(5).uniform(-1, 1, num_states), 0.5,
                            "v of both signs, gamma 0.5"),
    ]  # fmt: skip
    outputs = []
    for case in cases:
        call = f"action_values(mdp, v, gamma) with {case.label}"
        v = jnp.asarray(case.inputs["v"], jnp.float32)
        got = run_answer(answer, mdp, v, case.inputs["gamma"], call=call)
        hint = "One value per (state, action)."
        outputs.append(check_shape(got, mdp.legal.shape, call, hint=hint))
    verdict("action_values", cases, outputs)
    passed("action_values is one Bellman backup: r + gamma * (1 - d) * V(s')")


def _reinforce_case(rewards, baselines, gamma) -> Case:
    rewards, baselines = np.asarray(rewards, np.float64), np.asarray(baselines, np.float64)
    g = _returns_reference(rewards, gamma)
    discount = gamma ** np.arange(len(rewards))
    forwards = [  # a scan without reverse=True, and a cumulative sum
        _returns_reference(rewards[::-1], gamma)[::-1],
        np.cumsum(rewards * discount) / discount,
    ]
    next_baseline = np.append(baselines[1:], 0.0)
    label = f"T = {len(rewards)}, gamma {gamma}"
    return Case(label, {"rewards": rewards, "baselines": baselines, "gamma": gamma},
                discount * (g - baselines), {
        "the return accumulates forwards in time; G_t sums the rewards from t on "
        "(scan with reverse=True)": [discount * (f - baselines) for f in forwards],
        "gamma is applied to the first reward: G_t = r_t + gamma * G_{t+1}": discount
        * (gamma * g - baselines),
        "the baseline is not subtracted": discount * g,
        "the baseline is added; subtract it": discount * (g + baselines),
        "the baseline is the next step's; b(s_t) belongs to the same step as the "
        "action": discount * (g - next_baseline),
        "the factor gamma^t is missing (the gradient of J has it)": g - baselines,
        "gamma^t multiplies only the return; it multiplies G_t - b(s_t)": discount * g
        - baselines,
        "the power of gamma is one step off: the first step's weight has gamma^0 = 1": (
            gamma * discount * (g - baselines)
        ),
    })  # fmt: skip


@self_check
def check_reinforce_weights(answer: Callable) -> None:
    """Check ``reinforce_weights(rewards, baselines, gamma)``: ``gamma^t (G_t - b_t)``.

    ``rewards``, ``baselines`` float32 ``(T,)``; returns float32 ``(T,)``, with
    ``G_t = r_t + gamma G_{t+1}`` (Williams, 1992; Sutton and Barto, 2018, section 13.4).

    Raises:
        CheckFailed: naming the mistake (a return accumulated forwards, gamma on the first reward,
            the baseline left out, added or from the next step, a missing or misplaced gamma^t).
    """
    cases = [
        _reinforce_case([0.0, 1.0, 0.0, 0.5, 2.0], [0.3, 0.7, 0.2, 0.4, 1.5], 0.9),
        _reinforce_case(
            [1.0, -0.5, 0.0, 0.0, 1.0, 0.25, -1.0], [0.5, -0.2, 0.1, 0.8, 0.0, 0.3, -0.6], 0.6
        ),
    ]
    outputs = []
    for case in cases:
        call = f"reinforce_weights(rewards, baselines, gamma) with {case.label}"
        rewards, baselines = (
            jnp.asarray(case.inputs[k], jnp.float32) for k in ("rewards", "baselines")
        )
        got = run_answer(answer, rewards, baselines, case.inputs["gamma"], call=call)
        outputs.append(check_shape(got, rewards.shape, call, hint="One weight per step."))
    verdict("reinforce_weights", cases, outputs)
    passed("reinforce_weights gives gamma^t * (G_t - b(s_t))")


@self_check
def check_q_learning(q_learning: Callable) -> None:
    """Check ``q_learning(mdp, key, num_steps)``: Q* of the check's own maze on legal actions.

    ``mdp`` a :class:`companion.tabular.MazeMDP`, ``key`` a PRNG key, ``num_steps`` an int (60,000
    uniformly random steps); returns float32 ``(S, 4)``, with the function's default gamma 0.9.

    Raises:
        CheckFailed: naming the symptom (values above 1, from bootstrapping past the target; the
            random behaviour policy's values; no convergence to within 1e-3 of value iteration).
    """
    mdp, gamma = _mdp(), 0.9
    call = "q_learning(mdp, key, 60_000)"
    got = run_answer(q_learning, mdp, jax.random.key(0), 60_000, call=call)
    got = check_shape(got, mdp.legal.shape, call)
    legal = np.asarray(mdp.legal)
    v_star, _ = value_iteration(mdp, gamma)
    q_star = np.asarray(action_values(mdp, v_star, gamma))
    error = float(np.abs(np.where(legal, got - q_star, 0.0)).max())
    if error < 1e-3:
        passed(f"Q-learning reaches Q* (max |Q - Q*| = {error:.1e}, legal actions)")
        return
    if np.where(legal, got, 0.0).max() > 1.0 + 1e-3:
        fail(
            "q_learning: values above 1, but the only reward is 1 at the target. The TD "
            "target bootstraps past the end of the episode: multiply the future by (1 - d)"
        )
    probs = legal / legal.sum(axis=1, keepdims=True)
    q_random = np.asarray(action_values(mdp, evaluate_policy(mdp, probs, gamma), gamma))
    if np.abs(np.where(legal, got - q_random, 0.0)).max() < 0.05:
        fail(
            "q_learning: these are the random behaviour policy's values. Q-learning's target "
            "takes the max over the next state's legal actions, not the action taken next"
        )
    fail(f"q_learning: max |Q - Q*| = {error:.3g} over the legal actions, expected < 1e-3")
