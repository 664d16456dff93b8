"""Self-checks for the exercises of the CartPole chapter (chapter 6):
:func:`check_semi_implicit_step` and :func:`check_balancing_policy`.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import require_array
from companion.checks._messages import _
from companion.checks.core import (
    Case,
    fail,
    passed,
    require_function,
    run_answer,
    self_check,
    verdict,
)
from companion.envs import cartpole

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
        "explicit": np.array([x + tau * x_dot, new_x_dot, theta + tau * theta_dot, new_theta_dot]),
        "old theta_dot": np.array([new_x, new_x_dot, theta + tau * theta_dot, new_theta_dot]),
        "old x_dot": np.array([x + tau * x_dot, new_x_dot, new_theta, new_theta_dot]),
        "reordered": np.array([new_x, new_theta, new_x_dot, new_theta_dot]),
    }


def _euler_case(physics, action) -> Case:
    physics = np.asarray(physics, np.float32)
    force_mag = cartpole.DEFAULT_PARAMS.force_mag
    right = _euler_variants(physics, force_mag if action else -force_mag)
    push = _("pushing right") if action else _("pushing left")
    return Case(
        _("physics {physics}, {push} (action {action})").format(
            physics=[round(float(v), 4) for v in physics], push=push, action=action
        ),
        {"physics": physics, "action": action},
        right["semi"],
        {
            _(
                "this is explicit Euler: update the velocities first, then the positions with them"
            ): right["explicit"],
            _(
                "x moves with the new x_dot but theta with the old theta_dot: move both positions "
                "with the new velocities"
            ): right["old theta_dot"],
            _(
                "theta moves with the new theta_dot but x with the old x_dot: move both positions "
                "with the new velocities"
            ): right["old x_dot"],
            _("the push goes the wrong way: action 1 pushes right (+force_mag), 0 pushes left"): (
                _euler_variants(physics, -force_mag if action else force_mag)["semi"]
            ),
            _(
                "action 0 gives no force (force = action * force_mag?): 0 pushes left, with "
                "-force_mag"
            ): _euler_variants(physics, force_mag * action)["semi"],
            _(
                "the result is ordered (x, theta, x_dot, theta_dot); the physics is (x, x_dot, theta, "
                "theta_dot)"
            ): right["reordered"],
        },
    )


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
        call = _("step(physics, action) with {case}").format(case=case.label)
        args = jnp.asarray(case.inputs["physics"]), jnp.int32(case.inputs["action"])
        got = require_array(
            run_answer(step, *args, call=call),
            call,
            (4,),
            np.float32,
            why=_("the next (x, x_dot, theta, theta_dot)"),
            dtype_hint=_(
                "The physics is float32: build the result with jnp.stack of float32 values"
            ),
        )
        outputs.append(got)
    verdict("step", cases, outputs)
    passed(_("semi-implicit Euler: velocities first, positions with the new velocities"))


#: The scale of the probe observations: x, x_dot, theta, theta_dot in the ranges an episode
#: visits.
_PROBE_SCALE = np.array([1.5, 1.5, 0.2, 1.5], np.float32)
_PROBES = 48


#: Pairs of observations that differ in one variable only, the other held at 11 values near
#: the upright pole: theta_dot -2 and 2 (theta from -0.05 to 0.05), theta -0.2 and 0.2
#: (theta_dot from -1.5 to 1.5). A weak gain on either still flips the action in some pair.
_PAIR_VALUES = 11


def _pair_observations() -> np.ndarray:
    """float32 ``(4 * 11, 4)``: the pairs of :data:`_PAIR_VALUES`, theta_dot's then theta's."""
    rows = []
    for theta in np.linspace(-0.05, 0.05, _PAIR_VALUES):
        rows += [[0.0, 0.0, theta, -2.0], [0.0, 0.0, theta, 2.0]]
    for theta_dot in np.linspace(-1.5, 1.5, _PAIR_VALUES):
        rows += [[0.0, 0.0, -0.2, theta_dot], [0.0, 0.0, 0.2, theta_dot]]
    return np.array(rows, np.float32)


def _probe_observations() -> np.ndarray:
    """float32 ``(13 * 48 + 2 + 4 * 11, 4)``: 48 observations; the same 4 times with other x
    and x_dot, 4 times with another theta, 4 times with another theta_dot; then the pole
    falling right (theta 0.1, theta_dot 0.5) and falling left; then the pairs of
    :func:`_pair_observations`."""
    rng = np.random.default_rng(6)
    base = rng.uniform(-1, 1, (_PROBES, 4)) * _PROBE_SCALE
    groups = [base[None]]
    for columns in ([0, 1], [2], [3]):
        other = np.repeat(base[None], 4, axis=0)
        other[..., columns] = rng.uniform(-1, 1, (4, _PROBES, len(columns))) * _PROBE_SCALE[columns]
        groups.append(other)
    falling = np.array([[0.0, 0.0, 0.1, 0.5], [0.0, 0.0, -0.1, -0.5]])
    return np.concatenate(
        [g.reshape(-1, 4) for g in groups] + [falling, _pair_observations()]
    ).astype(np.float32)


@self_check
def check_balancing_policy(policy: Callable, episodes: int = 150) -> None:
    """Check ``policy(obs) -> action``, a CartPole policy of the pole alone: ``obs`` float32
    ``(4,)``, the action an int32 ``()``, 0 (push left) or 1 (push right), that reads only
    theta and theta_dot (``obs[2]``, ``obs[3]``) and balances for 500 steps in every one of
    ``episodes`` episodes (150: a policy that fails 2% of its episodes is caught with
    probability 1 - 0.98**150 > 0.95). The check runs the policy under ``jax.jit``
    and ``jax.vmap``: first on probe observations (changing x and x_dot alone, and with the
    pole falling either way), then for whole episodes.

    Raises:
        CheckFailed: for an action that is not an int32 scalar (shape ``()``), or not 0 or 1;
            one that changes with x or x_dot; one that is the same whatever the observation,
            or pushes away from the side the pole falls to; or an episode that ends before
            500 steps, saying how the episodes ended.
    """
    require_function(policy, "policy")
    probes = _probe_observations()
    action = _(
        "An action is an int32 index: (condition).astype(jnp.int32), or jnp.where(condition, 1, 0)"
    )
    call = _("policy(obs) with obs = {obs}").format(obs=[round(float(v), 3) for v in probes[0]])
    require_array(
        run_answer(policy, jnp.asarray(probes[0]), call=call),
        call,
        (),
        np.int32,
        why=_("one action: 0 pushes left, 1 pushes right"),
        dtype_hint=action,
    )
    call = _("jax.vmap(policy)(obs) for {count} probe observations").format(count=len(probes))
    acts = require_array(
        run_answer(jax.vmap(policy), jnp.asarray(probes), call=call),
        call,
        (len(probes),),
        np.int32,
        why=_("one action per observation"),
        dtype_hint=action,
    )
    if not np.isin(acts, (0, 1)).all():
        fail(
            _(
                "the policy returned the action(s) {actions}; CartPole's actions are 0 (push "
                "left) and 1 (push right)"
            ).format(actions=sorted(set(acts.tolist()) - {0, 1}))
        )
    grid = acts[: 13 * _PROBES].reshape(13, _PROBES)
    falls = acts[13 * _PROBES : 13 * _PROBES + 2]
    pairs = acts[13 * _PROBES + 2 :].reshape(2, _PAIR_VALUES, 2)
    base, moved, theta, theta_dot = grid[0], grid[1:5], grid[5:9], grid[9:]
    if (moved != base).any():
        fail(
            _(
                "the policy's action changes when only x or x_dot changes (obs[0], obs[1]): this "
                "exercise asks for a policy of the pole alone, theta and theta_dot (obs[2], "
                "obs[3])"
            )
        )
    if len(set(acts.tolist())) == 1:
        side = _("left (0)") if acts[0] == 0 else _("right (1)")
        fail(
            _(
                "the policy always pushes {side}, whatever the observation: push towards the "
                "side the pole falls to"
            ).format(side=side)
        )
    if falls.tolist() == [0, 1]:
        fail(
            _(
                "the policy pushes away from the side the pole falls to: with the pole falling "
                "right (theta = 0.1, theta_dot = 0.5) it pushes left (0), and right when it falls "
                "left; push right (1) when the pole falls right"
            )
        )
    reads_theta = (theta != base).any() or (pairs[1, :, 0] != pairs[1, :, 1]).any()
    reads_theta_dot = (theta_dot != base).any() or (pairs[0, :, 0] != pairs[0, :, 1]).any()

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
    call = _("policy(obs) in {episodes} episodes of CartPole").format(episodes=episodes)
    returns, pole, track = (
        np.asarray(x) for x in run_answer(jax.jit(jax.vmap(episode)), keys, call=call, jit=False)
    )
    mean = float(returns.mean())
    short = int((returns < p.max_steps).sum())
    if short:
        hint = ""
        if not reads_theta_dot:
            hint = _(
                " The policy reads theta alone (its action never changes with theta_dot): "
                "a term in theta_dot, obs[3], damps the swing."
            )
        elif not reads_theta:
            hint = _(
                " The policy reads theta_dot alone (its action never changes with "
                "theta): add a term in theta, obs[2]."
            )
        fail(
            _(
                "{short} of {episodes} episodes ended before {steps} steps (mean return "
                "{mean}): the pole fell in {fell} of them and the cart left the track in "
                "{left}.{hint}"
            ).format(
                short=short,
                steps=p.max_steps,
                mean=f"{mean:.1f}",
                episodes=episodes,
                fell=int(pole.sum()),
                left=int(track.sum()),
                hint=hint,
            )
        )
    passed(
        _("the policy balances the pole for {steps} steps in all {episodes} episodes").format(
            steps=p.max_steps, episodes=episodes
        )
    )
