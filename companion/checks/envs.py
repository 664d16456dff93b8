"""Self-checks for the exercises of the environment chapters (Maze and CartPole)."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.core import (
    Case,
    check_shape,
    fail,
    passed,
    require_function,
    run_answer,
    self_check,
    verdict,
)
from companion.envs import cartpole


@self_check
def check_legal_fraction(legal_fraction: Callable) -> None:
    """Check ``legal_fraction(action_masks)``: bool (N, 4) -> float (4,), the fraction of
    masks in which each action is legal.

    Raises:
        CheckFailed: for the wrong axis, counts instead of fractions, the illegal
            fraction, or a wrong shape.
    """
    rng = np.random.default_rng(3)
    cases = []
    for masks in (
        np.array([[1, 0, 1, 1], [1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 1], [1, 0, 1, 0]], bool),
        rng.uniform(size=(7, 4)) < 0.4,
    ):
        expected = masks.mean(axis=0)
        cases.append(Case(f"masks of shape {masks.shape}", {"action_masks": masks}, expected, {
            "legal_fraction counts the masks; divide by their number for a fraction": (
                masks.sum(axis=0)
            ),
            "legal_fraction gives the fraction of masks in which each action is ILLEGAL": (
                1.0 - expected
            ),
        }))  # fmt: skip
    outputs = []
    for case in cases:
        masks = case.inputs["action_masks"]
        call = f"legal_fraction(masks) for {case.label}"
        got = run_answer(legal_fraction, jnp.asarray(masks), call=call)
        if np.shape(got) == masks.shape[:1]:
            fail("legal_fraction averages over the actions (axis 1); average over the masks "
                 "(axis 0)")  # fmt: skip
        outputs.append(check_shape(got, (4,), call, hint="One fraction per action."))
    verdict("legal_fraction", cases, outputs)
    passed("legal_fraction gives the fraction of masks in which each action is legal")


@self_check
def check_up_first_policy(policy: Callable) -> None:
    """Check ``policy(key, action_mask) -> action``: "up" (0) when legal, else uniform among
    the legal actions; never an illegal action. The check draws 600 actions per mask with
    ``jax.vmap`` over keys, under ``jit``.

    Raises:
        CheckFailed: for an illegal action, "up" not preferred, or a fallback that always
            takes the same action (an argmax, a key of its own) or is not uniform.
    """
    require_function(policy, "policy")

    def draw(seed, mask):
        keys = jax.random.split(jax.random.key(seed), 600)
        call = f"jax.vmap(policy, in_axes=(0, None))(keys, {np.asarray(mask).tolist()})"
        run = jax.vmap(policy, in_axes=(0, None))
        actions = run_answer(run, keys, jnp.asarray(mask), call=call)
        return check_shape(actions, (600,), call, hint="policy(key, mask) returns one action, "
                           "shape ()")  # fmt: skip

    for seed, mask in enumerate(([True, True, False, True], [True, False, False, False])):
        actions = draw(seed, mask)
        if not np.all(actions == 0):
            fail(f"with mask {mask} the policy should always go up (0); it chose "
                 f"{sorted(set(actions.tolist()))}")  # fmt: skip
    for seed, mask in ((2, [False, True, False, True]), (3, [False, True, True, True])):
        actions = draw(seed, mask)
        legal = np.flatnonzero(mask)
        illegal = sorted(set(actions.tolist()) - set(legal.tolist()))
        if illegal:
            fail(f"with mask {mask} the policy chose illegal action(s) {illegal}")
        if len(set(actions.tolist())) == 1:
            fail(
                f"with mask {mask} (up blocked) the policy always takes action "
                f"{int(actions[0])}: the fallback is not random (an argmax of the mask, fixed "
                "logits, or a key of its own instead of the one passed in?). Draw uniformly "
                "among the legal actions with the key, for example "
                "jax.random.choice(key, 4, p=mask / mask.sum())"
            )
        shares = np.array([np.mean(actions == a) for a in legal])
        if np.abs(shares - 1 / len(legal)).max() > 0.08:
            fail(
                f"when up is blocked the legal actions should be equally likely; with mask "
                f"{mask} the legal actions {legal.tolist()} were chosen "
                f"{', '.join(f'{x:.0%}' for x in shares)} of the time"
            )
    passed("the policy goes up when it can and otherwise picks a legal action uniformly")


@self_check
def check_termination_and_truncation(classify: Callable) -> None:
    """Check ``classify(reward, last, next_mask) -> (terminated, truncated)`` for Maze steps.

    ``reward`` float ``(T, N)``, ``last`` bool ``(T, N)`` (``timestep.last()``), ``next_mask`` bool
    ``(T, N, 4)`` (the mask after each step). Returns two bool arrays ``(T, N)``: a LAST step
    terminates at the target (reward 1) or with no legal move, else it is truncated.

    Raises:
        CheckFailed: naming the mistake (time limit as termination, walled-in as truncation, some
            walls as walled in, flags on non-LAST steps or late, wrong mask axis, not bool, shapes).
    """
    rng = np.random.default_rng(4)
    # Case 1, two environments over 6 steps. Env 0: the target at t=2, a time limit at t=5.
    # Env 1: a walled-in agent at t=1, a time limit at t=4.
    reward = np.zeros((6, 2), np.float32)
    reward[2, 0] = 1.0
    last = np.zeros((6, 2), bool)
    last[[2, 5, 1, 4], [0, 0, 1, 1]] = True
    next_mask = np.ones((6, 2, 4), bool)
    next_mask[1, 1] = False
    # Case 2, three environments over 5 steps, masks with some walls: a time limit next to a
    # wall (env 0, t=3), the target (env 1, t=1), a walled-in agent (env 2, t=4), and steps
    # that are not LAST with an empty mask (env 0, t=1) and a reward (env 2, t=2).
    reward_b = np.zeros((5, 3), np.float32)
    reward_b[[1, 2], [1, 2]] = 1.0
    last_b = np.zeros((5, 3), bool)
    last_b[[3, 1, 4], [0, 1, 2]] = True
    mask_b = rng.uniform(size=(5, 3, 4)) < 0.6
    mask_b[..., 0] = True
    mask_b[3, 0] = [False, True, False, False]
    mask_b[1, 0] = False
    mask_b[4, 2] = False
    cases = []
    for r, l, m in ((reward, last, next_mask), (reward_b, last_b, mask_b)):
        term = l & ((r > 0) | ~m.any(-1))
        cases.append(((r, l, m), term, l & ~term))
    for (r, l, m), want_term, want_trunc in cases:
        shape = r.shape
        call = f"classify(reward, last, next_mask) for {shape[0]} steps of {shape[1]} environments"
        got = run_answer(classify, *map(jnp.asarray, (r, l, m)), call=call,
                         hint="reward (T, N), last (T, N), next_mask (T, N, 4); it returns two "
                         "arrays")  # fmt: skip
        if not (isinstance(got, tuple) and len(got) == 2):
            fail("classify should return a pair (terminated, truncated)")
        flags = [check_shape(g, shape, f"{name} of {call}", hint="One flag per step and "
                             "environment.") for g, name in zip(got, ("terminated", "truncated"))]
        for flag, name in zip(flags, ("terminated", "truncated")):
            if flag.dtype != bool:
                fail(f"{name} has dtype {flag.dtype}; flags are bool (compare, or use & | ~)")
        terminated, truncated = flags
        if np.array_equal(terminated, np.roll(want_term, 1, axis=0)) or np.array_equal(
            truncated, np.roll(want_trunc, 1, axis=0)
        ):
            fail("a flag is applied one step late: it belongs to the step whose timestep is LAST")
        if np.any(terminated & l & m.any(-1) & ~m.all(-1) & (r == 0)):
            fail(
                "a LAST step with walls next to the agent is called a termination: the agent "
                "is walled in only when no action is legal, ~jnp.any(next_mask, axis=-1), "
                "not when some action is illegal"
            )
        if np.array_equal(terminated, l):
            fail("every LAST step is called a termination; the time limit is a truncation")
        if np.any((terminated | truncated) & ~l):
            fail("a step that is not LAST is flagged; only the last step of an episode ends it "
                 "(combine the conditions with `last &`)")  # fmt: skip
        if not np.all(terminated[l & ~m.any(-1)]):
            fail(
                "a walled-in agent (reward 0, no legal move in next_mask) is not a "
                "termination; an episode that cannot go on has ended, it was not cut by the "
                "clock"
            )
        if not (np.array_equal(terminated, want_term) and np.array_equal(truncated, want_trunc)):
            fail(
                f"{call}: expected terminated {want_term.astype(int).tolist()} and truncated "
                f"{want_trunc.astype(int).tolist()}, got {terminated.astype(int).tolist()} and "
                f"{truncated.astype(int).tolist()}; reduce next_mask over its last axis (the "
                "actions)"
            )
    passed("terminations (target, no legal move) and truncations (time limit) are told apart")


def _semi_implicit(physics: np.ndarray, action: int) -> tuple:
    """Semi-implicit Euler from explicit Euler's accelerations, and explicit Euler itself."""
    p = cartpole.DEFAULT_PARAMS
    explicit = np.asarray(cartpole.dynamics(jnp.asarray(physics), action), np.float64)
    # the accelerations are the same for both integrators
    acc = (explicit[1] - physics[1]) / p.tau, (explicit[3] - physics[3]) / p.tau
    x_dot, theta_dot = physics[1] + p.tau * acc[0], physics[3] + p.tau * acc[1]
    semi = np.array([physics[0] + p.tau * x_dot, x_dot, physics[2] + p.tau * theta_dot, theta_dot])
    return semi, explicit


def _euler_case(physics, action) -> Case:
    physics = np.asarray(physics, np.float32)
    expected, explicit = _semi_implicit(physics, action)
    push = "pushing right" if action else "pushing left"
    return Case(f"physics {physics.tolist()}, {push} (action {action})",
                {"physics": physics, "action": action}, expected, {
        "this is explicit Euler: update the velocities first, then the positions with "
        "them": explicit,
        "the push goes the wrong way: action 1 pushes right (+force_mag), 0 pushes left": (
            _semi_implicit(physics, 1 - action)[0]
        ),
    })  # fmt: skip


@self_check
def check_semi_implicit_step(step: Callable) -> None:
    """Check ``step(physics, action)``: CartPole with the semi-implicit Euler integrator
    (velocities first, then positions with the *new* velocities); ``physics`` float32
    ``(4,)`` (x, x_dot, theta, theta_dot), ``action`` an int32 array of shape ``()``.

    Raises:
        CheckFailed: for explicit Euler, positions moved with the old velocities, the
            push reversed, or a step that disagrees with the reference.
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
        outputs.append(check_shape(run_answer(step, *args, call=call), (4,), call))
    verdict("step", cases, outputs)
    passed("semi-implicit Euler: velocities first, positions with the new velocities")


@self_check
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

    keys = jax.random.split(jax.random.key(0), episodes)
    call = f"policy(obs) in {episodes} episodes of CartPole"
    returns = np.asarray(run_answer(jax.jit(jax.vmap(episode)), keys, call=call, jit=False))
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
