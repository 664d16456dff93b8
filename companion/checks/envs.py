"""Self-checks for the exercises of the environment chapters (Maze and CartPole)."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.core import check_shape, close, fail, passed, require_function, run_answer
from companion.envs import cartpole


def check_legal_fraction(legal_fraction: Callable) -> None:
    """Check ``legal_fraction(action_masks)``: bool (N, 4) -> float (4,), the fraction of
    masks in which each action is legal.

    Raises:
        CheckFailed: for the wrong axis, counts instead of fractions, or a wrong shape.
    """
    require_function(legal_fraction, "legal_fraction")
    masks = jnp.array([[1, 0, 1, 1], [1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 1], [1, 0, 1, 0]], bool)
    got = run_answer(legal_fraction, masks, call="legal_fraction(masks)")
    expected = np.array([0.8, 0.2, 0.6, 0.6])
    arr = np.asarray(got)
    if arr.shape == (5,):
        fail("legal_fraction averages over the actions (axis 1); average over the masks (axis 0)")
    got = check_shape(got, (4,), "legal_fraction(masks) for masks of shape (5, 4)")
    if close(got, expected * 5):
        fail("legal_fraction counts the masks; divide by their number for a fraction")
    if not close(got, expected):
        fail(f"legal_fraction gives {got}, expected {expected}")
    passed("legal_fraction gives the fraction of masks in which each action is legal")


def check_up_first_policy(policy: Callable) -> None:
    """Check ``policy(key, action_mask) -> action``: "up" (0) when legal, else uniform among
    the legal actions; never an illegal action.

    Raises:
        CheckFailed: for an illegal action, "up" not preferred, or a non-uniform fallback.
    """
    require_function(policy, "policy")
    for seed, mask in enumerate(([True, True, False, True], [True, False, False, False])):
        keys = jax.random.split(jax.random.key(seed), 600)
        actions = np.asarray(jax.vmap(policy, in_axes=(0, None))(keys, jnp.array(mask)))
        if not np.all(actions == 0):
            fail(
                f"with mask {mask} the policy should always go up (0); it chose {set(actions.tolist())}"
            )
    mask = jnp.array([False, True, False, True])
    keys = jax.random.split(jax.random.key(2), 600)
    actions = np.asarray(jax.vmap(policy, in_axes=(0, None))(keys, mask))
    if actions.shape != (600,):
        fail(
            f"policy(key, mask) should return one action of shape (), got shape {actions.shape[1:]}"
        )
    illegal = sorted(set(actions.tolist()) - {1, 3})
    if illegal:
        fail(f"with mask {np.asarray(mask).tolist()} the policy chose illegal action(s) {illegal}")
    share = float(np.mean(actions == 1))
    if not 0.4 < share < 0.6:
        fail(
            f"when up is blocked the legal actions should be equally likely; right was chosen "
            f"{share:.0%} of the time between right and left"
        )
    passed("the policy goes up when it can and otherwise picks a legal action uniformly")


def check_termination_and_truncation(classify: Callable) -> None:
    """Check ``classify(reward, last, next_mask) -> (terminated, truncated)`` for Maze steps.

    ``reward`` float ``(T, N)``, ``last`` bool ``(T, N)`` (``timestep.last()``) and
    ``next_mask`` bool ``(T, N, 4)``, the action mask of the observation each step led
    to. A LAST step is a termination when the agent reached the target (reward 1) or has
    no legal move left (an all-False mask), and a truncation (the time limit) otherwise;
    steps that are not LAST are neither.

    Raises:
        CheckFailed: naming the mistake: a time limit counted as termination, a walled-in
            agent counted as truncation, flags on non-LAST steps or one step late, the
            mask reduced over the wrong axis, or wrong shapes.
    """
    require_function(classify, "classify")
    # Two environments over 6 steps. Env 0: the target at t=2, a time limit at t=5.
    # Env 1: a walled-in agent at t=1, a time limit at t=4 (a time limit with nothing else).
    reward = jnp.array([[0, 0], [0, 0], [1, 0], [0, 0], [0, 0], [0, 0]], jnp.float32)
    last = jnp.array([[0, 0], [0, 1], [1, 0], [0, 0], [0, 1], [1, 0]], bool)
    next_mask = jnp.ones((6, 2, 4), bool).at[1, 1].set(False)
    want_term = np.array([[0, 0], [0, 1], [1, 0], [0, 0], [0, 0], [0, 0]], bool)
    want_trunc = np.array([[0, 0], [0, 0], [0, 0], [0, 0], [0, 1], [1, 0]], bool)
    got = run_answer(
        classify,
        reward,
        last,
        next_mask,
        call="classify(reward, last, next_mask)",
        hint="reward (T, N), last (T, N), next_mask (T, N, 4); it returns two arrays",
    )
    if not (isinstance(got, tuple) and len(got) == 2):
        fail("classify should return a pair (terminated, truncated)")
    terminated = check_shape(got[0], (6, 2), "terminated", hint="one flag per step and environment")
    truncated = check_shape(got[1], (6, 2), "truncated", hint="one flag per step and environment")
    terminated, truncated = terminated.astype(bool), truncated.astype(bool)
    if np.array_equal(terminated, np.roll(want_term, 1, axis=0)) or np.array_equal(
        truncated, np.roll(want_trunc, 1, axis=0)
    ):
        fail("a flag is applied one step late: it belongs to the step whose timestep is LAST")
    if np.array_equal(terminated, np.asarray(last)):
        fail("every LAST step is called a termination; the time limit is a truncation")
    if np.any((terminated | truncated) & ~np.asarray(last)):
        fail("a step that is not LAST is flagged; only the last step of an episode ends it")
    if not terminated[1, 1]:
        fail(
            "the walled-in agent (env 1, step 1: reward 0, no legal move in next_mask) is not a "
            "termination; an episode that cannot go on has ended, it was not cut by the clock"
        )
    if not (np.array_equal(terminated, want_term) and np.array_equal(truncated, want_trunc)):
        fail(
            f"expected terminated {want_term.astype(int).tolist()} and truncated "
            f"{want_trunc.astype(int).tolist()}, got {terminated.astype(int).tolist()} and "
            f"{truncated.astype(int).tolist()}; reduce next_mask over its last axis (the actions)"
        )
    passed("terminations (target, no legal move) and truncations (time limit) are told apart")


def check_semi_implicit_step(step: Callable) -> None:
    """Check ``step(physics, action)``: CartPole with the semi-implicit Euler integrator
    (velocities first, then positions with the *new* velocities).

    Raises:
        CheckFailed: for explicit Euler, or a step that disagrees with the reference.
    """
    require_function(step, "step")
    p = cartpole.DEFAULT_PARAMS
    physics = jnp.array([0.1, -0.3, 0.05, 0.8])
    explicit = np.asarray(cartpole.dynamics(physics, 1))
    # the accelerations are the same for both integrators
    acc = (explicit[1] - physics[1]) / p.tau, (explicit[3] - physics[3]) / p.tau
    x_dot, theta_dot = physics[1] + p.tau * acc[0], physics[3] + p.tau * acc[1]
    expected = np.array(
        [physics[0] + p.tau * x_dot, x_dot, physics[2] + p.tau * theta_dot, theta_dot]
    )
    got = run_answer(step, physics, 1, call="step(physics, 1)")
    got = check_shape(got, (4,), "step(physics, action)")
    if close(got, explicit) and not close(explicit, expected):
        fail("this is explicit Euler: update the velocities first, then the positions with them")
    if not close(got, expected, rtol=1e-5, atol=1e-6):
        fail(f"step gives {got}, expected {expected} (pushing right from {np.asarray(physics)})")
    passed("semi-implicit Euler: velocities first, positions with the new velocities")


def check_balancing_policy(policy: Callable, episodes: int = 20) -> None:
    """Check ``policy(obs) -> action`` (0 or 1): it must balance CartPole for 500 steps
    on average (mean return >= 475 over ``episodes`` episodes).

    Raises:
        CheckFailed: with the mean return, and a hint when the pushes go the wrong way.
    """
    require_function(policy, "policy")

    def episode(key):
        state, obs = cartpole.reset(key)

        def body(carry, _):
            state, obs, alive, total = carry
            state, ts = cartpole.step(state, jnp.asarray(policy(obs)).astype(jnp.int32))
            return (state, ts.obs, alive & ~ts.done, total + alive), None

        (_, _, _, total), _ = jax.lax.scan(body, (state, obs, jnp.array(True), 0.0), length=500)
        return total

    returns = np.asarray(jax.jit(jax.vmap(episode))(jax.random.split(jax.random.key(0), episodes)))
    mean = float(returns.mean())
    if mean < 15:
        fail(
            f"mean return {mean:.1f}: the episodes end almost at once. The policy probably "
            "pushes away from the side the pole falls to: push right (1) when theta > 0"
        )
    if mean < 475:
        fail(
            f"mean return {mean:.1f} over {episodes} episodes, below 475: the pole falls or the "
            "cart leaves the track; look at an episode to see which"
        )
    passed(f"the policy balances the pole: mean return {mean:.1f} over {episodes} episodes")
