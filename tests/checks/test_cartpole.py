"""check_semi_implicit_step and check_balancing_policy (chapter 6): right answers, each
check's bank of wrong answers (``WRONG_*``: slip, answer, verdict) and the case set.

What each check guards, and the case that breaks each plausible wrong answer:

check_semi_implicit_step (velocities first, positions with the new velocities)
- semi-implicit, not explicit Euler: named; one position with its old velocity, named;
- the push: reversed, zero for action 0, named (three states, pushed both ways);
- the order (x, x_dot, theta, theta_dot); float32; an offset of 0.001 is generic, shown
  at the first element whose difference shows to 4 decimals (or to more decimals).

check_balancing_policy (a pole-only policy, 500 steps in each of 150 episodes)
- reads theta and theta_dot only: probes that change x or x_dot alone break the linear
  controller with x terms;
- not constant, not reversed: probes with the pole falling either way;
- which it reads: pairs that differ in theta_dot alone (or theta alone) near the upright
  pole find a weak gain, so a weak theta_dot gain is not told that it reads theta alone;
- int32 0 or 1: bool, float, actions 0 and 2 named;
- balances: 150 episodes of 500 steps from fixed starts (``key(0)``), every one of which
  must reach 500 steps. Power: a policy that fails 2% of its episodes passes only when all
  150 succeed, probability 0.98**150 = 0.048, so it is caught with probability 0.952 (a
  mean return >= 475 over 20 episodes caught it with probability at most 0.06).
  theta + theta_dot, whose mean return is 485, fails 15 of the 150 (the cart leaves the
  track); theta alone and theta_dot alone fail all 150.
"""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from checks.answers import (
    _distinguishable,
    _euler_by_hand,
    _semi_implicit,
    bank_params,
    generic,
    passes,
    rejects,
    right_params,
)
from companion.checks import cartpole as cartpole_checks
from companion.envs import cartpole

# --- check_semi_implicit_step: semi_implicit_step(physics, action) -------------------------


def _semi_implicit_array(physics, action):
    p = cartpole.DEFAULT_PARAMS
    x_acc = (cartpole.dynamics(physics, action)[1] - physics[1]) / p.tau
    theta_acc = (cartpole.dynamics(physics, action)[3] - physics[3]) / p.tau
    velocities = physics[jnp.array([1, 3])] + p.tau * jnp.stack([x_acc, theta_acc])
    positions = physics[jnp.array([0, 2])] + p.tau * velocities
    return jnp.stack([positions, velocities], axis=1).reshape(4)


def _euler_slip(slip):
    p = cartpole.DEFAULT_PARAMS

    def step(physics, action):
        x, x_dot, theta, theta_dot = physics
        force = (
            action * p.force_mag
            if slip == "zero force"
            else jnp.where(action == 1, p.force_mag, -p.force_mag)
        )
        cos, sin = jnp.cos(theta), jnp.sin(theta)
        temp = (force + p.polemass_length * theta_dot**2 * sin) / p.total_mass
        theta_acc = (p.gravity * sin - cos * temp) / (
            p.length * (4.0 / 3.0 - p.masspole * cos**2 / p.total_mass)
        )
        x_acc = temp - p.polemass_length * theta_acc * cos / p.total_mass
        new_x_dot, new_theta_dot = x_dot + p.tau * x_acc, theta_dot + p.tau * theta_acc
        new_x = x + p.tau * (x_dot if slip == "old x_dot" else new_x_dot)
        new_theta = theta + p.tau * (theta_dot if slip == "old theta_dot" else new_theta_dot)
        if slip == "reordered":
            return jnp.stack([new_x, new_theta, new_x_dot, new_theta_dot])
        return jnp.stack([new_x, new_x_dot, new_theta, new_theta_dot])

    return step


RIGHT_SEMI_IMPLICIT = [
    _semi_implicit,  # from explicit Euler's velocities
    _euler_by_hand,  # by hand
    _semi_implicit_array,  # positions and velocities as pairs
]
WRONG_SEMI_IMPLICIT = [
    ("explicit Euler", cartpole.dynamics, "explicit Euler"),
    (
        "theta with the old theta_dot",
        _euler_slip("old theta_dot"),
        "theta with the old theta_dot",
    ),
    ("x with the old x_dot", _euler_slip("old x_dot"), "x with the old x_dot"),
    ("no force for action 0", _euler_slip("zero force"), "action 0 gives no force"),
    ("the push reversed", lambda p, a: _semi_implicit(p, 1 - a), "wrong way"),
    ("reordered", _euler_slip("reordered"), r"ordered \(x, theta, x_dot, theta_dot\)"),
    (
        "float16",
        lambda p, a: _semi_implicit(p, a).astype(jnp.float16),
        r"(it returned|it is) an? float16 array",
    ),
]


WRONG_SEMI_IMPLICIT += [
    ("an offset", lambda p, a: _semi_implicit(p, a) + 0.001, generic()),
    # a difference that 4 decimals hide in the first element: shown where it shows
    (
        "a relative error of 1e-4, and theta_dot off by 0.001",
        lambda p, a: _semi_implicit(p, a) * (1 + 1e-4) + jnp.array([0.0, 0.0, 0.0, 0.001]),
        generic(r"first at index 3, it gives 0\.5245, expected 0\.5235"),
    ),
    # ... or, where every difference hides at 4 decimals, printed to the digits that show it
    (
        "a relative error of 1e-4",
        lambda p, a: _semi_implicit(p, a) * (1 + 1e-4),
        generic(r"first at index 0, it gives 0\.09790, expected 0\.09789"),
    ),
]


# --- check_balancing_policy: pole_policy(obs) -> int32 () ------------------------------


RIGHT_BALANCING = [
    lambda obs: (obs[2] + 0.5 * obs[3] > 0).astype(jnp.int32),  # theta + theta_dot / 2
    # the chapter's gains, where
    lambda obs: jnp.where(10 * obs[2] + 2 * obs[3] > 0, 1, 0),
]
WRONG_BALANCING = [
    (
        "the linear controller, x too",
        lambda obs: (jnp.dot(jnp.array([0.1, 0.5, 10.0, 2.0]), obs) > 0).astype(jnp.int32),
        r"changes when only x or x_dot changes",
    ),
    ("always left", lambda obs: jnp.int32(0), r"always pushes left \(0\)"),
    ("always right", lambda obs: jnp.int32(1), r"always pushes right \(1\)"),
    ("reversed", lambda obs: (obs[2] + obs[3] < 0).astype(jnp.int32), "pushes away"),
    ("bool action", lambda obs: obs[2] + obs[3] > 0, r"(it returned|it is) an? bool array"),
    (
        "float action",
        lambda obs: (obs[2] + obs[3] > 0).astype(jnp.float32),
        r"(it returned|it is) an? float32 array",
    ),
    (
        "actions 0 and 2",
        lambda obs: 2 * (obs[2] + obs[3] > 0).astype(jnp.int32),
        r"action\(s\) \[2\]",
    ),
    # the pole falls: told so, with the hint that is true of theta alone
    (
        "theta alone",
        lambda obs: (obs[2] > 0).astype(jnp.int32),
        "the pole fell in 150 of them and the cart left the track in 0.*reads theta alone",
    ),
    # the cart leaves the track, the pole stands: not told that the pole fell
    (
        "theta_dot alone",
        lambda obs: (obs[3] > 0).astype(jnp.int32),
        "the pole fell in 0 of them and the cart left the track in 150.*reads theta_dot alone",
    ),
    # both read, the theta_dot gain too weak: not told that it reads theta alone
    (
        "a weak theta_dot gain",
        lambda obs: (obs[2] + 0.01 * obs[3] > 0).astype(jnp.int32),
        r"150 of 150 episodes ended .*: the pole fell in 150 of them and the cart left the "
        r"track in 0\.$",
    ),
    # balances on average (mean return 485), but the cart leaves the track in 10% of the
    # episodes: every episode must reach 500 steps
    (
        "theta + theta_dot, off the track in 10% of the episodes",
        lambda obs: (obs[2] + obs[3] > 0).astype(jnp.int32),
        r"15 of 150 episodes ended before 500 steps \(mean return 485\.4\): the pole fell in 0 "
        r"of them and the cart left the track in 15\.$",
    ),
    ("Python if", lambda obs: 1 if obs[2] + obs[3] > 0 else 0, "under jax.jit"),
]


RIGHT_BALANCING += [
    lambda obs: (jnp.dot(jnp.array([0.0, 0.0, 10.0, 2.0]), obs) > 0).astype(jnp.int32),
]
WRONG_BALANCING += [
    ("theta, the push reversed", lambda obs: (obs[2] < 0).astype(jnp.int32), "push right"),
]


#: Each check's right answers and its bank of wrong ones.
RIGHTS = {
    "check_semi_implicit_step": RIGHT_SEMI_IMPLICIT,
    "check_balancing_policy": RIGHT_BALANCING,
}
BANKS = {
    "check_semi_implicit_step": WRONG_SEMI_IMPLICIT,
    "check_balancing_policy": WRONG_BALANCING,
}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)


# --- the check's own case set: every named mistake can be told apart ------------------------

CASE_SETS = {
    "semi_implicit_step": lambda: [
        cartpole_checks._euler_case([0.1, -0.3, 0.05, 0.8], 1),
        cartpole_checks._euler_case([-1.2, 0.6, -0.15, -1.1], 0),
    ],
}


@pytest.mark.parametrize("name", sorted(CASE_SETS))
def test_named_mistakes_are_told_apart(name):
    _distinguishable(CASE_SETS[name]())
