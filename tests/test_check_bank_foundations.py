"""A catalogue of answers to the exercises of chapters 3-6 (the Maze, its episode ends, the
foundations, CartPole), each with the verdict its self-check gives.

One table per check: every row is an answer a student writes, and ``None`` where the check
must pass it, or a regex of the message it must fail with (the mistake, named). Each table
holds right answers in different styles (a loop, a vectorised form, another library call)
and the wrong answers of issue #57's kinds:

- a case set that never exercised the property: the maze whose only reward was 1 (a clamp
  at 1, a reward read from ``mdp.terminal``, a max over illegal actions passed), a dtype the
  docstring requires (float16 fractions, float or int8 actions, int flags, float counts), a
  batch of exactly 4 masks (the wrong axis with the right shape), a next episode that starts
  walled in (a mask read from the stale observation);
- a mistake named after a symptom another shares (a swapped pair told that a walled-in agent
  was missed, a constant policy told that it pushes the wrong way);
- a generic message where a common slip can be named (gamma outside the whole backup,
  ``(1 - d)`` on the reward, ``gamma**(t+1)``, a reversed power of gamma);
- a hint that was not true of the answer (a pole-only policy whose cart left the track told
  that the pole fell; a flag set on a time limit told to reduce the mask over its last axis).

The older rows of these checks are in ``test_checks_chapters.py``, ``test_checks_bugs.py`` and
``test_checks_unfoolable.py``; the right answers written there are reused, not repeated. The
last tests check the checks' own case sets: every named mistake differs from the right
answer and from every other named mistake on some case, so a name is never a coin toss.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_checks_bugs import FOUNDATIONS, _cell, _definitions, _one_line_fix
from test_checks_chapters import _reverse_scan_returns, _semi_implicit
from test_checks_unfoolable import (
    _action_values,
    _action_values_where,
    _classify,
    _classify_where,
    _count_endings,
    _count_endings_by_position,
    _euler_by_hand,
    _reinforce,
    _reinforce_loop,
)

import companion.checks as checks
from companion.checks import CheckFailed, foundations
from companion.checks import cartpole as cartpole_checks
from companion.checks import endings as ending_checks
from companion.checks import envs as env_checks
from companion.envs import cartpole
from companion.envs import maze as maze_lib


def _table(check: str, rows: list) -> list:
    """``pytest.param(check, answer, message)`` for each ``(name, answer, message)`` row."""
    return [
        pytest.param(check, answer, message, id=f"{check[6:]}-{name}")
        for name, answer, message in rows
    ]


# --- chapter 3, exercise 1: legal_fraction(action_masks), bool (N, 4) -> float32 (4,) -------


def _fraction_loop(masks):
    total = sum(masks[i].astype(jnp.float32) for i in range(masks.shape[0]))
    return total / masks.shape[0]


LEGAL_FRACTION = _table(
    "check_legal_fraction",
    [
        ("mean over axis 0", lambda m: jnp.mean(m, axis=0), None),
        ("a loop over the masks", _fraction_loop, None),
        ("count_nonzero", lambda m: jnp.count_nonzero(m, axis=0) / m.shape[0], None),
        ("mean over axis 1", lambda m: jnp.mean(m, axis=1), r"over the actions \(axis 1\)"),
        # 4 masks: the wrong axis gives 4 numbers, named from its values, not from its shape
        ("axis 1 cut to 4", lambda m: jnp.mean(m, axis=1)[:4], "differs from the reference"),
        ("keepdims", lambda m: jnp.mean(m, axis=0, keepdims=True), "keepdims=True"),
        (
            "counts",
            lambda m: jnp.sum(m, axis=0),
            r"it returned an int32 array.*a count of the masks",
        ),
        (
            "integer division",
            lambda m: jnp.sum(m, axis=0) // m.shape[0],
            r"it returned an int32 array.*a division with //",
        ),
        ("illegal fraction", lambda m: jnp.mean(~m, axis=0), "ILLEGAL"),
        (
            "float16",
            lambda m: jnp.mean(m, axis=0).astype(jnp.float16),
            r"(it returned|it is) an? float16 array",
        ),
        (
            "bfloat16",
            lambda m: jnp.mean(m, axis=0).astype(jnp.bfloat16),
            r"(it returned|it is) an? bfloat16 array",
        ),
        ("NumPy under jit", lambda m: np.mean(np.asarray(m), axis=0), "under jax.jit"),
    ],
)


# --- chapter 3, exercise 2: up_first(key, action_mask) -> int32 () ---------------------------


def _uniform_legal(key, mask):
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf))


def _gumbel_legal(key, mask):
    noise = jax.random.gumbel(key, (4,))
    return jnp.argmax(jnp.where(mask, noise, -jnp.inf)).astype(jnp.int32)


def _next_legal_after_random(key, mask):
    """Not uniform: an action after a run of illegal ones is drawn more often."""
    start = jax.random.randint(key, (), 0, 4)
    return (jnp.argmax(jnp.roll(mask, -start)) + start) % 4


def _up_first_with(fallback):
    return lambda key, mask: jnp.where(mask[0], 0, fallback(key, mask))


UP_FIRST = _table(
    "check_up_first_policy",
    [
        ("categorical", _up_first_with(_uniform_legal), None),
        ("choice", _up_first_with(lambda k, m: jax.random.choice(k, 4, p=m / m.sum())), None),
        ("Gumbel max", _up_first_with(_gumbel_legal), None),
        (
            "log of the mask",
            _up_first_with(lambda k, m: jax.random.categorical(k, jnp.log(m.astype(jnp.float32)))),
            None,
        ),
        (
            "float action",
            lambda k, m: jnp.where(m[0], 0.0, _uniform_legal(k, m)),
            r"(it returned|it is) an? float32 array",
        ),
        (
            "int8 action",
            lambda k, m: _up_first_with(_uniform_legal)(k, m).astype(jnp.int8),
            r"(it returned|it is) an? int8 array",
        ),
        ("first legal", _up_first_with(lambda k, m: jnp.argmax(m)), "the first legal action"),
        (
            "last legal",
            _up_first_with(lambda k, m: 3 - jnp.argmax(m[::-1])),
            "not random.*same action for all",
        ),
        (
            "a key of its own",
            _up_first_with(lambda k, m: _uniform_legal(jax.random.key(1), m)),
            "a key of its own",
        ),
        (
            "uniform over all four",
            _up_first_with(lambda k, m: jax.random.randint(k, (), 0, 4)),
            "illegal action",
        ),
        (
            "logits 1 and 0",
            _up_first_with(lambda k, m: jax.random.categorical(k, m.astype(jnp.float32))),
            "illegal action",
        ),
        ("up ignored", _uniform_legal, "should always go up"),
        (
            "the next legal action after a random one",
            _up_first_with(_next_legal_after_random),
            "equally likely",
        ),
    ],
)


# --- chapter 4, exercise 1: classify(reward, last, next_mask) -------------------------------


def _classify_loop(reward, last, next_mask):
    rows = [_classify(reward[t], last[t], next_mask[t]) for t in range(reward.shape[0])]
    return tuple(jnp.stack(flags) for flags in zip(*rows))


def _classify_with(term_of, trunc_of=None):
    def classify(r, l, m):
        term = term_of(r, l, m)
        return term, (l & ~term) if trunc_of is None else trunc_of(r, l, m, term)

    return classify


CLASSIFY = _table(
    "check_termination_and_truncation",
    [
        ("bitwise", _classify, None),
        ("where", _classify_where, None),
        ("a loop over time", _classify_loop, None),
        (
            "reward == 1, all(~mask)",
            _classify_with(lambda r, l, m: l & ((r == 1) | jnp.all(~m, -1))),
            None,
        ),
        ("swapped", lambda r, l, m: _classify(r, l, m)[::-1], "wrong order"),
        (
            "truncated = last",
            _classify_with(lambda r, l, m: _classify(r, l, m)[0], lambda r, l, m, te: l),
            "terminations included",
        ),
        (
            "truncated = ~terminated",
            _classify_with(lambda r, l, m: _classify(r, l, m)[0], lambda r, l, m, te: ~te),
            "within an episode",
        ),
        (
            "& for |",
            _classify_with(lambda r, l, m: l & (r > 0) & ~jnp.any(m, -1)),
            "no step is called a termination",
        ),
        (
            "any without axis",
            _classify_with(lambda r, l, m: l & ((r > 0) | ~jnp.any(m))),
            "never fires",
        ),
        (
            "precedence",
            _classify_with(lambda r, l, m: l & (r > 0) | ~jnp.any(m, -1)),
            r"`\(last & a\) \| b`",
        ),
        (
            "only walled in",
            _classify_with(lambda r, l, m: l & ~jnp.any(m, -1)),
            r"target \(reward 1\) is not called a termination",
        ),
        # the mask of the step before: told what differs, not named after another mistake
        (
            "mask of the previous step",
            _classify_with(lambda r, l, m: l & ((r > 0) | ~jnp.any(jnp.roll(m, 1, 0), -1))),
            "differs from the reference on 6 steps .* at step 1 of environment 1, a walled-in",
        ),
        (
            "keepdims",
            _classify_with(lambda r, l, m: l & ((r > 0) | ~jnp.any(m, -1, keepdims=True))),
            r"raised ValueError.*\(T, N, 4\): a reduction of next_mask over its last axis",
        ),
        (
            "int flags",
            lambda r, l, m: tuple(f.astype(jnp.int32) for f in _classify(r, l, m)),
            r"(it returned|it is) an? int32 array",
        ),
        # two mistakes at once: told what differs, at which step, in words
        (
            "target only, no truncations",
            _classify_with(lambda r, l, m: l & (r > 0), lambda r, l, m, te: jnp.zeros_like(l)),
            "at step 1 of environment 1, a walled-in agent .* terminated is False, expected True",
        ),
    ],
)


# --- chapter 4, exercise 2: count_endings(timesteps) ----------------------------------------


def _count_endings_companion(timesteps):
    end, last = timesteps.extras["next_obs"], timesteps.last()
    return jnp.sum(last & maze_lib.terminated(end)), jnp.sum(maze_lib.truncated(end, last))


def _count_endings_loop(timesteps):
    counts = [jnp.int32(0), jnp.int32(0)]
    for t in range(timesteps.reward.shape[0]):
        step = jax.tree.map(lambda leaf, t=t: leaf[t], timesteps)
        for i, flag in enumerate(_count_endings(step)):
            counts[i] = counts[i] + flag
    return tuple(counts)


def _count_from(mask_of=None, position_of=None, flags=None):
    """count_endings with one slip: the mask or the positions read from another
    observation, or other flags."""

    def count(timesteps):
        end, last = timesteps.extras["next_obs"], timesteps.last()
        mask = (mask_of or (lambda ts: end.action_mask))(timesteps)
        where = (position_of or (lambda ts: end))(timesteps)
        on_target = (where.agent_position.row == where.target_position.row) & (
            where.agent_position.col == where.target_position.col
        )
        term = last & (on_target | ~mask.any(-1))
        term, trunc = (term, last & ~term) if flags is None else flags(timesteps, term)
        return term.sum(), trunc.sum()

    return count


COUNT_ENDINGS = _table(
    "check_count_endings",
    [
        ("classify", _count_endings, None),
        ("positions", _count_endings_by_position, None),
        ("companion.envs.maze", _count_endings_companion, None),
        ("a loop over time", _count_endings_loop, None),
        (
            "stale mask",
            _count_from(mask_of=lambda ts: ts.observation.action_mask),
            "the action mask comes from timestep.observation",
        ),
        (
            "stale positions",
            _count_from(position_of=lambda ts: ts.observation),
            "an ending at the target is counted as a truncation",
        ),
        (
            "stale observation",
            lambda ts: tuple(
                jnp.sum(f)
                for f in (
                    ts.last() & maze_lib.terminated(ts.observation),
                    maze_lib.truncated(ts.observation, ts.last()),
                )
            ),
            "the whole observation is timestep.observation",
        ),
        (
            "discount 0 as termination",
            lambda ts: (jnp.sum(ts.discount == 0), jnp.int32(0)),
            "every ending is counted as a termination",
        ),
        (
            "reward only",
            lambda ts: (
                jnp.sum(ts.last() & (ts.reward > 0)),
                jnp.sum(ts.last() & (ts.reward == 0)),
            ),
            "no walled-in ending is counted as a termination",
        ),
        ("swapped", lambda ts: _count_endings(ts)[::-1], "wrong order"),
        (
            "truncated = ~terminated",
            _count_from(flags=lambda ts, te: (te, ~te)),
            "the steps within an episode too",
        ),
        (
            "truncated = last",
            _count_from(flags=lambda ts, te: (te, ts.last())),
            "the terminations too",
        ),
        (
            "float counts",
            lambda ts: tuple(c.astype(jnp.float32) for c in _count_endings(ts)),
            r"(it returned|it is) an? float32 array",
        ),
        (
            "per environment",
            lambda ts: tuple(
                f.sum(0) for f in _classify(ts.reward, ts.last(), ts.extras["next_obs"].action_mask)
            ),
            r"scalar \(shape \(\)\).*; it is an int32 array of shape \(3,\)",
        ),
        ("stacked", lambda ts: jnp.stack(_count_endings(ts)), "should return a pair"),
    ],
)


# --- chapter 5, exercise 1: action_values(mdp, v, gamma) ------------------------------------


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


ACTION_VALUES = _table(
    "check_action_values",
    [
        ("vectorised", _action_values, None),
        ("where", _action_values_where, None),
        ("a loop over states", _action_values_loop, None),
        (
            "jnp.take",
            lambda mdp, v, g: (
                mdp.reward + g * jnp.where(mdp.terminal, 0.0, jnp.take(v, mdp.next_state))
            ),
            None,
        ),
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
            "differs from the reference",
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
    ],
)


# --- chapter 5, exercise 2: reinforce_weights(rewards, baselines, gamma) --------------------


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


REINFORCE = _table(
    "check_reinforce_weights",
    [
        ("reverse scan", _reinforce, None),
        ("a Python loop", _reinforce_loop, None),
        ("a matrix", _reinforce_matrix, None),
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
    ],
)


# --- chapter 5, exercise 3 (find the bug): q_learning(mdp, key, num_steps) ------------------

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


Q_LEARNING = _table(
    "check_q_learning",
    [
        ("the one-line fix", q_learning_with(), None),
        ("fori_loop", jax.jit(_q_learning_fori, static_argnums=2), None),
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
            r"max \|Q - Q\*\| = .* expected < 1e-3",
        ),
    ],
)


# --- chapter 6, exercise 1: semi_implicit_step(physics, action) -----------------------------


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


SEMI_IMPLICIT = _table(
    "check_semi_implicit_step",
    [
        ("from explicit Euler's velocities", _semi_implicit, None),
        ("by hand", _euler_by_hand, None),
        ("positions and velocities as pairs", _semi_implicit_array, None),
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
    ],
)


# --- chapter 6, exercise 2: pole_policy(obs) -> int32 () ------------------------------------

BALANCING = _table(
    "check_balancing_policy",
    [
        ("theta + theta_dot", lambda obs: (obs[2] + obs[3] > 0).astype(jnp.int32), None),
        (
            "the chapter's gains, where",
            lambda obs: jnp.where(10 * obs[2] + 2 * obs[3] > 0, 1, 0),
            None,
        ),
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
            "the pole fell in 20 of them and the cart left the track in 0.*reads theta alone",
        ),
        # the cart leaves the track, the pole stands: not told that the pole fell
        (
            "theta_dot alone",
            lambda obs: (obs[3] > 0).astype(jnp.int32),
            "the pole fell in 0 of them and the cart left the track in 20.*reads theta_dot alone",
        ),
        ("Python if", lambda obs: 1 if obs[2] + obs[3] > 0 else 0, "under jax.jit"),
    ],
)


TABLES = [
    LEGAL_FRACTION,
    UP_FIRST,
    CLASSIFY,
    COUNT_ENDINGS,
    ACTION_VALUES,
    REINFORCE,
    Q_LEARNING,
    SEMI_IMPLICIT,
    BALANCING,
]


@pytest.mark.parametrize("check, answer, message", list(itertools.chain(*TABLES)))
def test_the_check_gives_its_verdict(check, answer, message, capsys):
    with jax.debug_key_reuse(False):
        if message is None:
            getattr(checks, check)(answer)
            assert "check passed" in capsys.readouterr().out
        else:
            with pytest.raises(CheckFailed, match=message):
                getattr(checks, check)(answer)


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t[0].values[0][6:])
def test_every_table_has_two_right_answers(table):
    assert sum(row.values[2] is None for row in table) >= 2


# --- the checks' own case sets: every named mistake can be told apart ------------------------


def _alternatives(value) -> list:
    return value if isinstance(value, list) else [value]


def _distinguishable(cases: list) -> None:
    """Every named mistake differs from the right answer on some case (else the check could
    not fail it), and any two mistakes differ on some case (else the first would be named for
    both)."""
    from companion.checks.core import close

    names = list(dict.fromkeys(m for case in cases for m in case.mistakes))

    def same(a, b):  # the two give the same result on every case, for some alternatives
        return all(
            any(
                close(x, y)
                for x in _alternatives(case.mistakes.get(a, case.expected))
                for y in _alternatives(case.mistakes.get(b, case.expected))
            )
            for case in cases
        )

    for name in names:
        assert not all(
            any(close(x, case.expected) for x in _alternatives(case.mistakes[name]))
            for case in cases
        ), f"never differs from the right answer: {name}"
    for a, b in itertools.combinations(names, 2):
        assert not same(a, b), f"indistinguishable: {a!r} and {b!r}"


CASE_SETS = {
    "legal_fraction": env_checks._legal_fraction_cases,
    "termination_and_truncation": lambda: [c for _, c in env_checks._classify_cases()],
    "count_endings": lambda: [c for _, c in ending_checks._count_endings_cases()],
    "semi_implicit_step": lambda: [
        cartpole_checks._euler_case([0.1, -0.3, 0.05, 0.8], 1),
        cartpole_checks._euler_case([-1.2, 0.6, -0.15, -1.1], 0),
    ],
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
