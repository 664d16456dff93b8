"""check_action_values, check_reinforce_weights, check_q_learning (chapter 5): right answers,
each check's bank of wrong answers (``WRONG_*``: slip, answer, verdict) and the checks' case
sets.

What each check guards, and the case that breaks each plausible wrong answer:

check_action_values (``r + gamma (1 - terminal) V(next)``, the check's own maze)
- the reward: a maze whose rewards are not the termination flag (a step cost, a bonus
  cell) breaks a reward read from ``mdp.terminal`` and a clamp at 1 (generic);
- no bootstrap past the target, ``(1 - d)`` not on the reward, not ``d``;
- gamma on V only: gamma on the reward or the whole backup, no discount, named; two cases
  (gamma 0.8, positive V; gamma 0.5, V of both signs) tell the gammas apart;
- V of the next state, not the current; illegal actions not zeroed or -inf;
- the contract: V returned, float16.

check_reinforce_weights (``gamma^t (G_t - b_t)``)
- the return: forwards, from the episode's start, the whole episode's G_0, named;
- the baseline: left out, added, the next step's, named;
- gamma^t: missing, on the return only, one step off, gamma instead, reversed, named;
- two episodes (T = 5, gamma 0.9; T = 7, gamma 0.6) tell these apart (case-set test);
- the contract: one step short, float16; twice the return is generic.

check_q_learning (find the bug; 60,000 random steps, Q* by value iteration)
- no bootstrap past the end: the printed bug, named by its values up to 20;
- a maze paying more than 1: a clamp at 1 changes Q*, named;
- the max over legal next actions; gamma on the future only; ``(1 - d)`` placed right;
  the random behaviour's values (expected SARSA) named;
- each wrong update's fixed point is 0.05 or more from Q* and from the others, so the
  tolerance of 0.01 names one; anything else must be within 1e-3 of Q* (generic).
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from checks.answers import (
    FOUNDATIONS,
    _action_values,
    _action_values_where,
    _alternatives,
    _cell,
    _definitions,
    _distinguishable,
    _one_line_fix,
    _reinforce,
    _reinforce_loop,
    _reverse_scan_returns,
    bank_params,
    generic,
    passes,
    rejects,
    right_params,
)
from companion.checks import (
    CheckFailed,
    check_q_learning,
    foundations,
)


def _passes(check, answer, capsys):
    check(answer)
    assert "check passed" in capsys.readouterr().out


# --- check_action_values: action_values(mdp, v, gamma) -----------------------------------


def _action_values_loop(mdp, v, gamma):
    rows = [
        mdp.reward[s] + gamma * (1.0 - mdp.terminal[s]) * v[mdp.next_state[s]]
        for s in range(mdp.legal.shape[0])
    ]
    return jnp.stack(rows)


def _backup(reward=None, future=None, scale=1.0):
    """A Bellman backup with one piece replaced."""

    def answer(mdp, v, gamma):
        r = mdp.reward if reward is None else reward(mdp)
        f = (
            gamma * (1.0 - mdp.terminal) * v[mdp.next_state]
            if future is None
            else future(mdp, v, gamma)
        )
        return scale * (r + f)

    return answer


RIGHT_ACTION_VALUES = [
    _action_values,  # vectorised
    _action_values_where,  # where
    _action_values_loop,  # a loop over states
    # jnp.take
    lambda mdp, v, g: mdp.reward + g * jnp.where(mdp.terminal, 0.0, jnp.take(v, mdp.next_state)),
]
WRONG_ACTION_VALUES = [
    (
        "gamma outside the whole backup",
        lambda mdp, v, g: g * (mdp.reward + (1.0 - mdp.terminal) * v[mdp.next_state]),
        "gamma multiplies the whole",
    ),
    (
        "reward from mdp.terminal",
        _backup(reward=lambda mdp: mdp.terminal.astype(jnp.float32)),
        "the reward is mdp.terminal",
    ),
    (
        "1 at the target, where",
        lambda mdp, v, g: jnp.where(mdp.terminal, 1.0, g * v[mdp.next_state]),
        "the reward is mdp.terminal",
    ),
    # on the chapter's maze (reward 1, the only one) a clamp at 1 changed nothing
    (
        "clamped at 1",
        lambda mdp, v, g: jnp.minimum(1.0, _action_values(mdp, v, g)),
        generic("differs from the reference"),
    ),
    (
        "(1 - d) on the reward",
        lambda mdp, v, g: (1.0 - mdp.terminal) * (mdp.reward + g * v[mdp.next_state]),
        r"\(1 - d\) multiplies the reward too",
    ),
    (
        "d for (1 - d)",
        _backup(future=lambda mdp, v, g: g * mdp.terminal * v[mdp.next_state]),
        r"not by d",
    ),
    (
        "past the target",
        _backup(future=lambda mdp, v, g: g * v[mdp.next_state]),
        "bootstraps from V",
    ),
    (
        "no discount",
        _backup(future=lambda mdp, v, g: (1.0 - mdp.terminal) * v[mdp.next_state]),
        "not discounted",
    ),
    (
        "illegal actions zeroed",
        lambda mdp, v, g: jnp.where(mdp.legal, _action_values(mdp, v, g), 0.0),
        "illegal actions are set to 0",
    ),
    (
        "illegal actions -inf",
        lambda mdp, v, g: jnp.where(mdp.legal, _action_values(mdp, v, g), -jnp.inf),
        "-inf: is something masked",
    ),
    (
        "float16",
        lambda mdp, v, g: _action_values(mdp, v, g).astype(jnp.float16),
        r"(it returned|it is) an? float16 array",
    ),
]


WRONG_ACTION_VALUES += [
    (
        "past the target, by hand",
        lambda mdp, v, g: mdp.reward + g * v[mdp.next_state],
        "bootstraps from V",
    ),
    (
        "gamma on the reward",
        lambda mdp, v, g: g * (mdp.reward + g * (~mdp.terminal) * v[mdp.next_state]),
        "gamma discounts the reward",
    ),
    (
        "V of the current state",
        lambda mdp, v, g: mdp.reward + g * (~mdp.terminal) * v[:, None],
        "V of the current",
    ),
    ("no reward", lambda mdp, v, g: g * (~mdp.terminal) * v[mdp.next_state], "reward r"),
    (
        "V returned",
        lambda mdp, v, g: v,
        r"of shape \(18, 4\).*; it (returned|is) an? \w+ array of shape \(18,\)",
    ),
    (
        "gamma fixed at 0.5, past the target",
        lambda mdp, v, g: mdp.reward + 0.5 * v[mdp.next_state],
        generic("differs from"),
    ),
]


# --- check_reinforce_weights: reinforce_weights(rewards, baselines, gamma) ---------------


def _reinforce_matrix(rewards, baselines, gamma):
    """G = U r with U[t, k] = gamma^(k - t) for k >= t: a matrix instead of a scan."""
    t = jnp.arange(rewards.shape[0])
    powers = jnp.where(t[None, :] >= t[:, None], gamma ** (t[None, :] - t[:, None]), 0.0)
    return gamma**t * (powers @ rewards - baselines)


def _with_powers(powers):
    return lambda r, b, g: powers(r, g) * (_reverse_scan_returns(r, g) - b)


def _from_start(rewards, baselines, gamma):
    t = jnp.arange(rewards.shape[0])
    discounted = jnp.cumsum((gamma**t * rewards)[::-1])[::-1]  # sum_{k>=t} gamma^k r_k
    return gamma**t * (discounted - baselines)


def _discount(rewards, gamma):
    return gamma ** jnp.arange(rewards.shape[0])


def _reinforce_forward_scan(rewards, baselines, gamma):
    g = _reverse_scan_returns(rewards, gamma, reverse=False)
    return gamma ** jnp.arange(rewards.shape[0]) * (g - baselines)


RIGHT_REINFORCE = [
    _reinforce,  # reverse scan
    _reinforce_loop,  # a Python loop
    _reinforce_matrix,  # a matrix
]
WRONG_REINFORCE = [
    (
        "gamma^(t+1)",
        _with_powers(lambda r, g: g ** (jnp.arange(r.shape[0]) + 1)),
        "one step off",
    ),
    ("gamma, not gamma^t", _with_powers(lambda r, g: g), "multiplied by gamma, not by gamma"),
    (
        "powers backwards",
        _with_powers(lambda r, g: g ** jnp.arange(r.shape[0])[::-1]),
        "run backwards",
    ),
    ("weights flipped", lambda r, b, g: _reinforce(r, b, g)[::-1], "reverse time order"),
    (
        "the whole episode's return",
        lambda r, b, g: g ** jnp.arange(r.shape[0]) * (_reverse_scan_returns(r, g)[0] - b),
        "whole episode's return G_0",
    ),
    ("discounted from the start", _from_start, "from the episode's start"),
    (
        "next baseline by roll",
        lambda r, b, g: (
            g ** jnp.arange(r.shape[0]) * (_reverse_scan_returns(r, g) - jnp.roll(b, -1))
        ),
        "next step's",
    ),
    (
        "float16",
        lambda r, b, g: _reinforce(r, b, g).astype(jnp.float16),
        r"(it returned|it is) an? float16 array",
    ),
]


WRONG_REINFORCE += [
    (
        "discounted forwards, divided back",
        lambda r, b, g: (
            _discount(r, g)
            * (_reverse_scan_returns(r * _discount(r, g), 1.0, False) / _discount(r, g) - b)
        ),
        "accumulates forwards",
    ),
    (
        "gamma on the first reward",
        lambda r, b, g: _discount(r, g) * (g * _reverse_scan_returns(r, g) - b),
        "applied to the first",
    ),
    (
        "no baseline",
        lambda r, b, g: _discount(r, g) * _reverse_scan_returns(r, g),
        "not subtracted",
    ),
    (
        "baseline added",
        lambda r, b, g: _discount(r, g) * (_reverse_scan_returns(r, g) + b),
        "is added",
    ),
    (
        "the next step's baseline",
        lambda r, b, g: _discount(r, g) * (_reverse_scan_returns(r, g) - jnp.append(b[1:], 0.0)),
        "next step's",
    ),
    ("gamma^t left out", lambda r, b, g: _reverse_scan_returns(r, g) - b, "gamma\\^t is missing"),
    (
        "one step short",
        lambda r, b, g: (_reverse_scan_returns(r, g) - b)[:-1],
        r"of shape \(5,\).*; it (returned|is) an? \w+ array of shape \(4,\)",
    ),
    ("twice the return", lambda r, b, g: 2.0 * _reverse_scan_returns(r, g), generic("expected")),
    (
        "gamma^t on the return only",
        lambda r, b, g: g ** jnp.arange(r.shape[0]) * _reverse_scan_returns(r, g) - b,
        "multiplies only the return",
    ),
    ("a forward scan", _reinforce_forward_scan, "accumulates forwards"),
]


# --- check_q_learning (find the bug): q_learning(mdp, key, num_steps) --------------------


def test_q_learning_both_ways(capsys):
    buggy = _cell("05_rl_foundations", "q_learning_buggy")
    with pytest.raises(CheckFailed, match="values up to 20.*bootstraps past the end"):
        check_q_learning(_definitions(buggy, FOUNDATIONS)["q_learning_buggy"])
    fixed = _one_line_fix(
        buggy,
        "td_target = r + gamma * best_next",
        "td_target = r + gamma * (1.0 - d) * best_next",
    )
    _passes(check_q_learning, _definitions(fixed, FOUNDATIONS)["q_learning_buggy"], capsys)


_TARGET_LINE = "td_target = r + gamma * best_next"


_BEST_LINE = "best_next = jnp.max(jnp.where(mdp.legal[s_tp1], q[s_tp1], -jnp.inf))"


def q_learning_with(target=None, best=None):
    """The chapter's q_learning_buggy, its TD target line (and the max) replaced."""
    source = _cell("05_rl_foundations", "q_learning_buggy")
    source = _one_line_fix(
        source, _TARGET_LINE, target or "td_target = r + gamma * (1.0 - d) * best_next"
    )
    if best:
        source = _one_line_fix(source, _BEST_LINE, best)
    return jax.jit(_definitions(source, FOUNDATIONS)["q_learning_buggy"], static_argnums=2)


def _q_learning_fori(mdp, key, num_steps, gamma=0.9, alpha=0.5):
    """fori_loop, a one-hot update and jnp.where for the end of an episode."""
    num_states = mdp.legal.shape[0]
    logits = jnp.where(mdp.legal, 0.0, -jnp.inf)
    keys = jax.random.split(key, num_steps)

    def body(i, carry):
        q, s = carry
        action_key, restart_key = jax.random.split(keys[i])
        a = jax.random.categorical(action_key, logits[s])
        s_tp1, d = mdp.next_state[s, a], mdp.terminal[s, a]
        future = jnp.where(d, 0.0, jnp.max(jnp.where(mdp.legal[s_tp1], q[s_tp1], -jnp.inf)))
        update = jax.nn.one_hot(s, num_states)[:, None] * jax.nn.one_hot(a, 4)[None, :]
        q = q + alpha * update * (mdp.reward[s, a] + gamma * future - q[s, a])
        return q, jnp.where(d, jax.random.randint(restart_key, (), 0, num_states), s_tp1)

    init = (jnp.zeros((num_states, 4)), jnp.int32(0))
    return jax.lax.fori_loop(0, num_steps, body, init)[0]


RIGHT_Q_LEARNING = [
    q_learning_with(),  # the one-line fix
    jax.jit(_q_learning_fori, static_argnums=2),  # fori_loop
]
WRONG_Q_LEARNING = [
    ("as printed", q_learning_with(_TARGET_LINE), "values up to 20.*past the end"),
    # the chapter's maze pays 1 at most, so these passed on a maze like it
    (
        "clamped at 1",
        q_learning_with("td_target = jnp.minimum(r + gamma * best_next, 1.0)"),
        "capped at 1",
    ),
    (
        "max over illegal actions",
        q_learning_with(best="best_next = jnp.max(q[s_tp1])"),
        "illegal ones too",
    ),
    (
        "gamma outside the whole target",
        q_learning_with("td_target = gamma * (r + (1.0 - d) * best_next)"),
        r"gamma \* Q\*",
    ),
    ("d for (1 - d)", q_learning_with("td_target = r + gamma * d * best_next"), "not by d"),
    (
        "(1 - d) on the reward",
        q_learning_with("td_target = (1.0 - d) * (r + gamma * best_next)"),
        r"\(1 - d\) multiplies the reward too",
    ),
    ("no discount", q_learning_with("td_target = r + (1.0 - d) * best_next"), "not discounted"),
    (
        "the current state's max",
        q_learning_with(best="best_next = jnp.max(jnp.where(mdp.legal[s], q[s], -jnp.inf))"),
        "current state's actions",
    ),
    (
        "expected SARSA under the behaviour",
        q_learning_with(best="best_next = jnp.sum(behaviour[s_tp1] * q[s_tp1])"),
        "random behaviour policy",
    ),
    (
        "gamma squared",
        q_learning_with("td_target = r + gamma**2 * (1.0 - d) * best_next"),
        generic(r"max \|Q - Q\*\| = .* expected < 1e-3"),
    ),
]


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


RIGHT_Q_LEARNING += [_q_learning()]
WRONG_Q_LEARNING += [
    (
        "bootstraps past the end, by hand",
        _q_learning(bootstrap_past_end=True),
        "values up to 20.*bootstraps past the end",
    ),
    ("expected SARSA, by hand", _q_learning(sarsa=True), "random behaviour policy's values"),
    ("zeros", lambda mdp, key, n: jnp.zeros(mdp.legal.shape), generic("expected < 1e-3")),
    ("three zeros", lambda mdp, key, n: jnp.zeros(3), r"shape \(3,\)"),
]


#: Each check's right answers and its bank of wrong ones.
RIGHTS = {
    "check_action_values": RIGHT_ACTION_VALUES,
    "check_reinforce_weights": RIGHT_REINFORCE,
    "check_q_learning": RIGHT_Q_LEARNING,
}
BANKS = {
    "check_action_values": WRONG_ACTION_VALUES,
    "check_reinforce_weights": WRONG_REINFORCE,
    "check_q_learning": WRONG_Q_LEARNING,
}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)


# --- the checks' own case sets: every named mistake can be told apart ------------------------

CASE_SETS = {
    "action_values": lambda: [
        foundations._action_values_case(foundations._mdp(), v, g, "")
        for v, g in (
            (np.linspace(0.1, 0.9, 18), 0.8),
            (np.random.default_rng(5).uniform(-1, 1, 18), 0.5),
        )
    ],
    "reinforce_weights": lambda: [
        foundations._reinforce_case([0.0, 1.0, 0.0, 0.5, 2.0], [0.3, 0.7, 0.2, 0.4, 1.5], 0.9),
        foundations._reinforce_case(
            [1.0, -0.5, 0.0, 0.0, 1.0, 0.25, -1.0], [0.5, -0.2, 0.1, 0.8, 0.0, 0.3, -0.6], 0.6
        ),
    ],
}


@pytest.mark.parametrize("name", sorted(CASE_SETS))
def test_named_mistakes_are_told_apart(name):
    _distinguishable(CASE_SETS[name]())


def test_q_learning_mistakes_are_told_apart():
    """Each wrong update's fixed point is far (0.05 or more) from Q* and from the others', so
    the check's tolerance of 0.01 names one."""
    mdp = foundations._mdp()
    q_star, models = foundations._q_learning_models(mdp, 0.9)
    legal = np.asarray(mdp.legal)
    points = [("right", q_star)] + [(k, q) for k, v in models.items() for q in _alternatives(v)]
    for (a, p), (b, q) in itertools.combinations(points, 2):
        if a != b:
            assert np.abs(np.where(legal, p - q, 0.0)).max() > 0.05, (a, b)


def test_the_checks_maze_pays_more_than_its_largest_reward():
    """The clamp at 1, and a clamp at the largest reward, change Q* on the checks' maze."""
    mdp = foundations._mdp()
    q_star, _ = foundations._q_learning_models(mdp, 0.9)
    largest = float(np.asarray(mdp.reward).max())
    assert largest > 1 and q_star[np.asarray(mdp.legal)].max() > largest
    assert not np.array_equal(np.asarray(mdp.reward) > 0, np.asarray(mdp.terminal))
