"""Self-checks of chapters 1, 3-7: they pass reference answers and name planted mistakes."""

import jax
import jax.numpy as jnp
import pytest

from companion.checks import (
    CheckFailed,
    check_action_values,
    check_balancing_policy,
    check_discounted_returns,
    check_double_dqn_target,
    check_legal_fraction,
    check_noisy_batch,
    check_q_learning,
    check_reinforce_weights,
    check_semi_implicit_step,
    check_softplus_grad,
    check_termination_and_truncation,
    check_up_first_policy,
)
from companion.envs import cartpole


def _passes(check, answer, capsys):
    check(answer)
    assert "check passed" in capsys.readouterr().out


# --- chapter 1 ----------------------------------------------------------------------------


#: Planted mistakes, (wrong answer, message): the messages' Japanese is tested on them too
#: (test_checks_language.py).
PLANTED_SOFTPLUS = [
    (lambda w, x: jax.nn.sigmoid(w * x), "factor x is missing"),
    (lambda w, x: x * jax.nn.softplus(w * x), "softplus itself"),
    (lambda w, x: -x * jax.nn.sigmoid(w * x), "sign is wrong"),
    (
        lambda w, x: jnp.sum(x * jax.nn.sigmoid(w * x)),
        r"of shape \(3,\).*; it (returned|is) an? \w+ array of shape \(\)",
    ),
]


def test_softplus_grad(capsys):
    _passes(check_softplus_grad, lambda w, x: x * jax.nn.sigmoid(w * x), capsys)
    _passes(check_softplus_grad, jax.grad(lambda w, x: jnp.sum(jnp.log1p(jnp.exp(w * x)))), capsys)
    for wrong, msg in PLANTED_SOFTPLUS:
        with pytest.raises(CheckFailed, match=msg):
            check_softplus_grad(wrong)


def _reverse_scan_returns(rewards, gamma, reverse=True, init=jnp.zeros_like):
    def body(g, r):
        g = r + gamma * g
        return g, g

    return jax.lax.scan(body, init(rewards[0]), rewards, reverse=reverse)[1]


def _loop_returns(rewards, gamma):
    g, out = jnp.zeros_like(rewards[0]), []
    for t in reversed(range(rewards.shape[0])):
        g = rewards[t] + gamma * g
        out.append(g)
    return jnp.stack(out[::-1])


PLANTED_RETURNS = [
    (lambda r, g: _reverse_scan_returns(r, g, reverse=False), "accumulate forwards"),
    (lambda r, g: g * _reverse_scan_returns(r, g), "current reward is discounted"),
    (lambda r, g: _reverse_scan_returns(r, g) - r, "leaves out r_t"),
    (lambda r, g: jnp.cumsum(r[::-1], axis=0)[::-1], "without discounting"),
    (lambda r, g: _reverse_scan_returns(r.T, g).T, "run along the last axis"),
    (
        lambda r, g: _reverse_scan_returns(r, g, init=lambda x: jnp.zeros(())),
        "(?s)raised TypeError.*jnp.zeros_like",
    ),
    (_loop_returns, "a Python loop is unrolled"),
    (
        lambda r, g: _reverse_scan_returns(r, g)[:-1],
        r"of shape \(5,\).*; it (returned|is) an? \w+ array of shape \(4,\)",
    ),
]


def test_discounted_returns(capsys):
    _passes(check_discounted_returns, _reverse_scan_returns, capsys)
    for wrong, msg in PLANTED_RETURNS:
        with pytest.raises(CheckFailed, match=msg):
            check_discounted_returns(wrong)


def good_noisy_batch(key, n):
    key, sub = jax.random.split(key)
    return jax.random.normal(sub, (n,)), key


PLANTED_NOISY = [
    (lambda key, n: (jax.random.normal(key, (n,)), key), "returns the key it was given"),
    (
        lambda key, n: (jax.random.normal(key, (n,)), jax.random.split(key)[0]),
        "draws with the key",
    ),
    (
        lambda key, n: (jax.random.normal(jax.random.key(9), (n,)), jax.random.split(key)[0]),
        "same samples",
    ),
    (
        lambda key, n: (
            jax.random.uniform(jax.random.split(key)[1], (n,)),
            jax.random.split(key)[0],
        ),
        "mean",
    ),
]


@pytest.mark.usefixtures("no_key_reuse_check")
def test_noisy_batch(capsys):
    _passes(check_noisy_batch, good_noisy_batch, capsys)
    for wrong, msg in PLANTED_NOISY:
        with pytest.raises(CheckFailed, match=msg):
            check_noisy_batch(wrong)


# --- chapters 3 and 4 ---------------------------------------------------------------------


def test_legal_fraction(capsys):
    _passes(check_legal_fraction, lambda m: jnp.mean(m, axis=0), capsys)
    for wrong, msg in [
        (lambda m: jnp.mean(m, axis=1), "axis 0"),
        (lambda m: jnp.sum(m, axis=0), r"it returned an int32 array.*a count of the masks"),
    ]:
        with pytest.raises(CheckFailed, match=msg):
            check_legal_fraction(wrong)


def _random_legal(key, mask):
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf))


def test_up_first_policy(capsys):
    _passes(check_up_first_policy, lambda k, m: jnp.where(m[0], 0, _random_legal(k, m)), capsys)
    for wrong, msg in [
        (_random_legal, "should always go up"),
        (lambda k, m: jnp.where(m[0], 0, jax.random.randint(k, (), 0, 4)), "illegal"),
        (lambda k, m: jnp.where(m[0], 0, jnp.argmax(m)), "the fallback is not random"),
    ]:
        with pytest.raises(CheckFailed, match=msg):
            check_up_first_policy(wrong)


def test_termination_and_truncation(capsys):
    def good(reward, last, next_mask):
        terminated = last & ((reward > 0) | ~jnp.any(next_mask, axis=-1))
        return terminated, last & ~terminated

    def reward_only(reward, last, next_mask):  # the rule that ignores a walled-in agent
        terminated = last & (reward > 0)
        return terminated, last & ~terminated

    _passes(check_termination_and_truncation, good, capsys)
    for wrong, msg in [
        (lambda r, l, m: (l, jnp.zeros_like(l)), "time limit is a truncation"),
        (lambda r, l, m: tuple(jnp.roll(x, 1, axis=0) for x in good(r, l, m)), "one step late"),
        (
            lambda r, l, m: (r > 0, l & ~(r > 0) | (r == 0) & jnp.roll(l, -1, axis=0)),
            "not LAST is flagged",
        ),
        (reward_only, "walled-in agent"),
        (lambda r, l, m: (l & ((r > 0) | ~jnp.any(m, axis=1)), l), "next_mask"),
        (lambda r, l, m: (l & (r > 0), jnp.zeros_like(l)), "walled-in agent"),
        (lambda r, l, m: good(r, l, m)[0], "should return a pair"),
    ]:
        with pytest.raises(CheckFailed, match=msg):
            check_termination_and_truncation(wrong)


# --- chapter 5 ----------------------------------------------------------------------------


def test_action_values(capsys):
    _passes(
        check_action_values,
        lambda mdp, v, g: mdp.reward + g * (1.0 - mdp.terminal) * v[mdp.next_state],
        capsys,
    )
    for wrong, msg in [
        (lambda mdp, v, g: mdp.reward + g * v[mdp.next_state], "bootstraps from V"),
        (
            lambda mdp, v, g: g * (mdp.reward + g * (~mdp.terminal) * v[mdp.next_state]),
            "gamma discounts the reward",
        ),
        (lambda mdp, v, g: mdp.reward + g * (~mdp.terminal) * v[:, None], "V of the current"),
        (lambda mdp, v, g: g * (~mdp.terminal) * v[mdp.next_state], "reward r"),
        (
            lambda mdp, v, g: v,
            r"of shape \(18, 4\).*; it (returned|is) an? \w+ array of shape \(18,\)",
        ),
        (lambda mdp, v, g: mdp.reward + 0.5 * v[mdp.next_state], "differs from"),
    ]:
        with pytest.raises(CheckFailed, match=msg):
            check_action_values(wrong)


def _discount(rewards, gamma):
    return gamma ** jnp.arange(rewards.shape[0])


def test_reinforce_weights(capsys):
    _passes(
        check_reinforce_weights,
        lambda r, b, g: _discount(r, g) * (_reverse_scan_returns(r, g) - b),
        capsys,
    )
    for wrong, msg in [
        (
            lambda r, b, g: (
                _discount(r, g)
                * (_reverse_scan_returns(r * _discount(r, g), 1.0, False) / _discount(r, g) - b)
            ),
            "accumulates forwards",
        ),
        (
            lambda r, b, g: _discount(r, g) * (g * _reverse_scan_returns(r, g) - b),
            "applied to the first",
        ),
        (lambda r, b, g: _discount(r, g) * _reverse_scan_returns(r, g), "not subtracted"),
        (lambda r, b, g: _discount(r, g) * (_reverse_scan_returns(r, g) + b), "is added"),
        (
            lambda r, b, g: (
                _discount(r, g) * (_reverse_scan_returns(r, g) - jnp.append(b[1:], 0.0))
            ),
            "next step's",
        ),
        (lambda r, b, g: _reverse_scan_returns(r, g) - b, "gamma\\^t is missing"),
        (
            lambda r, b, g: (_reverse_scan_returns(r, g) - b)[:-1],
            r"of shape \(5,\).*; it (returned|is) an? \w+ array of shape \(4,\)",
        ),
        (lambda r, b, g: 2.0 * _reverse_scan_returns(r, g), "expected"),
    ]:
        with pytest.raises(CheckFailed, match=msg):
            check_reinforce_weights(wrong)


def _q_learning(bootstrap_past_end=False, sarsa=False):
    def q_learning(mdp, key, num_steps, gamma=0.9, alpha=0.5):
        num_states = mdp.legal.shape[0]
        behaviour = mdp.legal / mdp.legal.sum(axis=1, keepdims=True)

        def step(carry, step_key):
            q, s = carry
            action_key, restart_key = jax.random.split(step_key)
            a = jax.random.categorical(action_key, jnp.log(behaviour[s]))
            s_tp1, r, d = mdp.next_state[s, a], mdp.reward[s, a], mdp.terminal[s, a]
            if sarsa:  # expected value under the behaviour policy: its own values
                future = jnp.sum(behaviour[s_tp1] * q[s_tp1])
            else:
                future = jnp.max(jnp.where(mdp.legal[s_tp1], q[s_tp1], -jnp.inf))
            cont = 1.0 if bootstrap_past_end else 1.0 - d
            q = q.at[s, a].add(alpha * (r + gamma * cont * future - q[s, a]))
            s_next = jnp.where(d, jax.random.randint(restart_key, (), 0, num_states), s_tp1)
            return (q, s_next), None

        init = (jnp.zeros((num_states, 4)), jnp.int32(0))
        return jax.lax.scan(step, init, jax.random.split(key, num_steps))[0][0]

    return jax.jit(q_learning, static_argnums=2)


def test_q_learning(capsys):
    _passes(check_q_learning, _q_learning(), capsys)
    for wrong, msg in [
        (_q_learning(bootstrap_past_end=True), "values up to 20.*bootstraps past the end"),
        (_q_learning(sarsa=True), "random behaviour policy's values"),
        (lambda mdp, key, n: jnp.zeros(mdp.legal.shape), "expected < 1e-3"),
        (lambda mdp, key, n: jnp.zeros(3), r"shape \(3,\)"),
    ]:
        with pytest.raises(CheckFailed, match=msg):
            check_q_learning(wrong)


# --- chapter 6 ----------------------------------------------------------------------------


def _semi_implicit(physics, action):
    p = cartpole.DEFAULT_PARAMS
    explicit = cartpole.dynamics(physics, action)
    x_dot = explicit[1]  # explicit Euler's new velocities are the same
    theta_dot = explicit[3]
    return jnp.stack([physics[0] + p.tau * x_dot, x_dot, physics[2] + p.tau * theta_dot, theta_dot])


def test_semi_implicit_step(capsys):
    _passes(check_semi_implicit_step, _semi_implicit, capsys)
    with pytest.raises(CheckFailed, match="explicit Euler"):
        check_semi_implicit_step(cartpole.dynamics)
    with pytest.raises(CheckFailed, match="the push goes the wrong way"):
        check_semi_implicit_step(lambda p, a: _semi_implicit(p, 1 - a))
    with pytest.raises(CheckFailed, match="differs from the reference"):
        check_semi_implicit_step(lambda p, a: _semi_implicit(p, a) + 0.001)


def test_balancing_policy(capsys):
    _passes(
        check_balancing_policy,
        lambda obs: (jnp.dot(jnp.array([0.0, 0.0, 10.0, 2.0]), obs) > 0).astype(jnp.int32),
        capsys,
    )
    with pytest.raises(CheckFailed, match="push right"):
        check_balancing_policy(lambda obs: (obs[2] < 0).astype(jnp.int32))
    with pytest.raises(CheckFailed, match="below 475"):
        check_balancing_policy(lambda obs: (obs[2] > 0).astype(jnp.int32))


# --- chapter 7 ----------------------------------------------------------------------------


def test_double_dqn_target(capsys):
    def good(r, d, q_online, q_target, gamma):
        a = jnp.argmax(q_online, axis=-1)
        return r + gamma * (1 - d) * jnp.take_along_axis(q_target, a[:, None], -1)[:, 0]

    _passes(check_double_dqn_target, good, capsys)
    for wrong, msg in [
        (lambda r, d, qo, qt, g: r + g * (1 - d) * qt.max(-1), "plain DQN target"),
        (lambda r, d, qo, qt, g: r + g * (1 - d) * qo.max(-1), "evaluated with the online"),
        (lambda r, d, qo, qt, g: good(r, jnp.zeros_like(d), qo, qt, g), "termination is ignored"),
        (lambda r, d, qo, qt, g: good(r, d, qt, qo, g), "roles are swapped"),
    ]:
        with pytest.raises(CheckFailed, match=msg):
            check_double_dqn_target(wrong)
