"""Self-checks of the foundations chapter: they pass reference answers and name planted
mistakes."""

import jax
import jax.numpy as jnp
import pytest

from companion.checks import (
    CheckFailed,
    check_action_values,
    check_q_learning,
    check_reinforce_weights,
)


def _passes(check, answer, capsys):
    check(answer)
    assert "check passed" in capsys.readouterr().out


def test_action_values(capsys):
    _passes(check_action_values,
            lambda mdp, v, g: mdp.reward + g * (1.0 - mdp.terminal) * v[mdp.next_state], capsys)
    for wrong, msg in [
        (lambda mdp, v, g: mdp.reward + g * v[mdp.next_state], "bootstraps from V"),
        (lambda mdp, v, g: g * (mdp.reward + g * (~mdp.terminal) * v[mdp.next_state]),
         "gamma discounts the reward"),
        (lambda mdp, v, g: mdp.reward + g * (~mdp.terminal) * v[:, None], "V of the current"),
        (lambda mdp, v, g: g * (~mdp.terminal) * v[mdp.next_state], "reward r"),
        (lambda mdp, v, g: v, r"shape \(18,\), expected \(18, 4\)"),
        (lambda mdp, v, g: mdp.reward + 0.5 * v[mdp.next_state], "differs from"),
    ]:
        with pytest.raises(CheckFailed, match=msg):
            check_action_values(wrong)


def _returns(rewards, gamma, reverse=True):
    def body(g, r):
        g = r + gamma * g
        return g, g

    return jax.lax.scan(body, jnp.zeros(()), rewards, reverse=reverse)[1]


def _discount(rewards, gamma):
    return gamma ** jnp.arange(rewards.shape[0])


def test_reinforce_weights(capsys):
    _passes(check_reinforce_weights,
            lambda r, b, g: _discount(r, g) * (_returns(r, g) - b), capsys)
    for wrong, msg in [
        (lambda r, b, g: _discount(r, g) * (_returns(r * _discount(r, g), 1.0, False)
                                            / _discount(r, g) - b), "accumulates forwards"),
        (lambda r, b, g: _discount(r, g) * (g * _returns(r, g) - b), "applied to the first"),
        (lambda r, b, g: _discount(r, g) * _returns(r, g), "not subtracted"),
        (lambda r, b, g: _discount(r, g) * (_returns(r, g) + b), "is added"),
        (lambda r, b, g: _discount(r, g) * (_returns(r, g) - jnp.append(b[1:], 0.0)),
         "next step's"),
        (lambda r, b, g: _returns(r, g) - b, "gamma\\^t is missing"),
        (lambda r, b, g: (_returns(r, g) - b)[:-1], r"shape \(4,\), expected \(5,\)"),
        (lambda r, b, g: 2.0 * _returns(r, g), "expected"),
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
        (_q_learning(bootstrap_past_end=True), "values above 1"),
        (_q_learning(sarsa=True), "random behaviour policy's values"),
        (lambda mdp, key, n: jnp.zeros(mdp.legal.shape), "expected < 1e-3"),
        (lambda mdp, key, n: jnp.zeros(3), r"shape \(3,\)"),
    ]:
        with pytest.raises(CheckFailed, match=msg):
            check_q_learning(wrong)
