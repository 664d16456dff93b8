"""Self-checks for the exercises of the chapter on reinforcement learning's foundations.

- :func:`check_action_values`: Q from V by one Bellman backup on a :class:`MazeMDP`;
- :func:`check_reinforce_weights`: REINFORCE's per-step weights gamma^t (G_t - b(s_t));
- :func:`check_q_learning`: the find-the-bug exercise, tabular Q-learning compared with
  value iteration on a maze of the check's own.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.basics import _returns_reference
from companion.checks.core import (
    check_shape,
    close,
    fail,
    name_mistake,
    passed,
    run_answer,
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


def check_action_values(answer: Callable) -> None:
    """Check ``action_values(mdp, v, gamma)``: ``r + gamma * (1 - terminal) * v[next_state]``.

    ``mdp`` a :class:`companion.tabular.MazeMDP` with ``S`` states, ``v`` float32 ``(S,)``;
    the answer float32 ``(S, 4)``.

    Raises:
        CheckFailed: naming the mistake (bootstrapping past the target, gamma on the reward,
            V of the current state, the reward left out, a wrong shape).
    """
    mdp, gamma = _mdp(), 0.8
    v = jnp.linspace(0.1, 0.9, mdp.legal.shape[0])
    call = "action_values(mdp, v, 0.8)"
    got = run_answer(answer, mdp, v, gamma, call=call)
    got = check_shape(got, mdp.legal.shape, call, hint="One value per (state, action).")
    expected = action_values(mdp, v, gamma)
    if close(got, expected):
        passed("action_values is one Bellman backup: r + gamma * (1 - d) * V(s')")
        return
    future = v[mdp.next_state]
    name_mistake(
        got,
        {
            "a move onto the target bootstraps from V(s'); the episode ends there, so "
            "multiply the future by (1 - mdp.terminal)": mdp.reward + gamma * future,
            "gamma discounts the reward too; the first reward is not discounted": gamma
            * expected,
            "the future is V of the current state; it is V(s') = v[mdp.next_state]": mdp.reward
            + gamma * (~mdp.terminal) * v[:, None],
            "the reward r(s, a) is left out": expected - mdp.reward,
        },
        "action_values",
    )
    fail(f"{call} differs from r + gamma * (1 - d) * V(s') (largest difference "
         f"{float(np.abs(np.asarray(got) - np.asarray(expected)).max()):.3g})")


def check_reinforce_weights(answer: Callable) -> None:
    """Check ``reinforce_weights(rewards, baselines, gamma)``: ``gamma^t (G_t - b_t)``.

    ``rewards`` and ``baselines`` float32 ``(T,)``; the answer float32 ``(T,)``, with
    ``G_t = r_t + gamma G_{t+1}`` computed backwards (Williams, 1992; Sutton and Barto, 2018,
    section 13.4).

    Raises:
        CheckFailed: naming the mistake (a return accumulated forwards, gamma applied to the
            first reward, the baseline left out, added or taken from the next step, a missing
            gamma^t).
    """
    gamma = 0.9
    rewards = np.array([0.0, 1.0, 0.0, 0.5, 2.0], np.float32)
    baselines = np.array([0.3, 0.7, 0.2, 0.4, 1.5], np.float32)
    call = "reinforce_weights(rewards, baselines, 0.9) with T = 5"
    got = run_answer(answer, jnp.asarray(rewards), jnp.asarray(baselines), gamma, call=call)
    got = check_shape(got, rewards.shape, call, hint="One weight per step.")
    g = _returns_reference(rewards, gamma)
    discount = gamma ** np.arange(len(rewards))
    expected = discount * (g - baselines)
    if close(got, expected):
        passed("reinforce_weights gives gamma^t * (G_t - b(s_t))")
        return
    forwards = np.cumsum(rewards * discount) / discount
    next_baseline = np.append(baselines[1:], 0.0)
    name_mistake(
        got,
        {
            "the return accumulates forwards in time; G_t sums the rewards from t on "
            "(scan with reverse=True)": discount * (forwards - baselines),
            "gamma is applied to the first reward: G_t = r_t + gamma * G_{t+1}": discount
            * (gamma * g - baselines),
            "the baseline is not subtracted": discount * g,
            "the baseline is added; subtract it": discount * (g + baselines),
            "the baseline is the next step's; b(s_t) belongs to the same step as the "
            "action": discount * (g - next_baseline),
            "the factor gamma^t is missing (the gradient of J has it)": g - baselines,
        },
        "reinforce_weights",
    )
    fail(f"{call} gives {np.round(got, 4)}, expected {np.round(expected, 4)}")


def check_q_learning(q_learning: Callable) -> None:
    """Check ``q_learning(mdp, key, num_steps)`` on a maze of the check's own: after 60,000
    uniformly random steps its Q must match value iteration's Q* on the legal actions.

    ``mdp`` a :class:`companion.tabular.MazeMDP`, ``key`` a PRNG key, ``num_steps`` an int;
    the answer float32 ``(S, 4)`` (with the function's default gamma 0.9).

    Raises:
        CheckFailed: naming the symptom (values above 1, the largest return the maze pays,
            from bootstrapping past the target; the random behaviour policy's values instead
            of the optimal ones; values that did not converge).
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
