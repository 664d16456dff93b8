"""A catalogue of answers to the exercises of the DQN and PPO chapters (7 and 8), each with the
verdict its self-check gives.

One table per check: every row is an answer a student writes, and ``None`` where the check
must pass it, or a regex of the message it must fail with (the mistake, named). Each table
holds right answers in different styles (a loop, a vectorised form, NumPy where the check
runs the answer outside ``jit``) and the wrong answers of issue #57's kinds: a case set that
never exercised the property (a clock that restarts, a stale observation, a nan in the middle
of a run), a mistake named after a symptom another shares, a generic message where a common
slip can be named, a hint that was not true of the answer. The older rows of these checks
are in ``test_checks_dqn.py``, ``test_checks_ppo.py``, ``test_checks_bugs.py`` and
``test_checks_unfoolable.py``; the right answers written there are reused, not repeated.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_checks_bugs import DQN, _cell, _definitions, _one_line_fix, ppo_namespace
from test_checks_dqn import n_step_answer, uniform_start, windows_with
from test_checks_ppo import dual_clip, eps_probs, gae_from_values_answer

import companion.checks as checks
from companion.checks import CheckFailed


def _table(check: str, rows: list) -> list:
    """``pytest.param(check, answer, message)`` for each ``(name, answer, message)`` row."""
    return [
        pytest.param(check, answer, message, id=f"{check[6:]}-{name}")
        for name, answer, message in rows
    ]


# --- chapter 7, exercise 1: the n-step target (run under jit) ------------------------------


def n_step_vectorised(reward, terminated, truncated, q_next_target, gamma, slip=None):
    """m = the first episode end (n - 1 if none), then one masked sum; ``slip`` plants one
    mistake."""
    n = reward.shape[1]
    done = terminated | truncated
    first_end = jnp.argmax(done, axis=1)
    m = first_end if slip == "argmax" else jnp.where(done.any(axis=1), first_end, n - 1)
    k = jnp.arange(n)
    weight = gamma ** (k + 1) if slip == "k+1" else gamma**k
    total = jnp.sum(jnp.where(k <= m[:, None], weight * reward, 0.0), axis=1)
    best = jnp.take_along_axis(q_next_target.max(-1), m[:, None], axis=1)[:, 0]
    flag = {"any": terminated.any(axis=1), "last": terminated[:, -1]}.get(
        slip, jnp.take_along_axis(terminated, m[:, None], axis=1)[:, 0]
    )
    target = total + gamma ** (m + 1) * (1.0 - flag) * best
    return gamma * target if slip == "outside" else target


def n_step_numpy(reward, terminated, truncated, q_next_target, gamma):
    """Right on NumPy arrays, but NumPy under jit: the check says the book jits it."""
    reward = np.asarray(reward)
    return reward.sum(axis=1)


N_STEP = _table(
    "check_n_step_target",
    [
        ("backward loop", n_step_answer, None),
        ("masked sum", n_step_vectorised, None),
        (
            "argmax of a window with no end",
            lambda *a: n_step_vectorised(*a, slip="argmax"),
            "argmax of an all-False row is 0",
        ),
        (
            "rewards discounted by gamma**(k+1)",
            lambda *a: n_step_vectorised(*a, slip="k+1"),
            r"one power too far: r_k gets gamma \*\* k",
        ),
        (
            "terminated read with any",
            lambda *a: n_step_vectorised(*a, slip="any"),
            r"terminated read with any.*terminated\[:, m\]",
        ),
        (
            "terminated read at the last step",
            lambda *a: n_step_vectorised(*a, slip="last"),
            "read at the window's last step",
        ),
        (
            "gamma outside the whole target",
            lambda *a: n_step_vectorised(*a, slip="outside"),
            "gamma multiplies the whole target, r_0 included",
        ),
        ("NumPy inside", n_step_numpy, "under jax.jit"),
    ],
)


# --- chapter 7, exercise 2: sampling n-step windows (run under jit) -------------------------


def windows_by_columns(buffer, key, batch_size, n):
    """One gather per step of the window, stacked along axis 1."""
    oldest = (buffer.position - buffer.size) % buffer.capacity
    start = jax.random.randint(key, (batch_size,), 0, buffer.size - n + 1)
    columns = [
        jax.tree.map(lambda store, k=k: store[(oldest + start + k) % buffer.capacity], buffer.data)
        for k in range(n)
    ]
    return jax.tree.map(lambda *steps: jnp.stack(steps, axis=1), *columns)


SAMPLE_WINDOWS = _table(
    "check_sample_windows",
    [
        ("one gather of (batch, n) slots", windows_with(uniform_start), None),
        ("a gather per step, stacked", windows_by_columns, None),
        # wraps its indices, yet repeats a step: told how a window's slots go, not to wrap them
        (
            "every slot of a window the same",
            windows_with(uniform_start, order=lambda n: jnp.zeros(n, jnp.int32)),
            r"start \+ 1, \.\.\., start",
        ),
        (
            "the steps cast to float",
            lambda b, k, size, n: jax.tree.map(
                lambda leaf: leaf.astype(jnp.float32), windows_with(uniform_start)(b, k, size, n)
            ),
            r"\['t'\] should be an int32 array .*; it is a float32 array",
        ),
    ],
)


# --- chapter 7, exercise 3: the double-DQN target (run under jit) ---------------------------


def double_dqn_where(reward, terminated, q_next_online, q_next_target, gamma):
    best = jnp.argmax(q_next_online, axis=-1)
    chosen = jnp.sum(
        jnp.where(jnp.arange(q_next_target.shape[-1]) == best[:, None], q_next_target, 0.0), axis=-1
    )
    return jnp.where(terminated, reward, reward + gamma * chosen)


def double_dqn_loop(reward, terminated, q_next_online, q_next_target, gamma):
    rows = []
    for i in range(reward.shape[0]):
        chosen = q_next_target[i, jnp.argmax(q_next_online[i])]
        rows.append(reward[i] + gamma * (1.0 - terminated[i]) * chosen)
    return jnp.stack(rows)


DOUBLE_DQN = _table(
    "check_double_dqn_target",
    [
        ("where and a mask", double_dqn_where, None),
        ("a loop over the batch", double_dqn_loop, None),
        (
            "gamma outside the whole target",
            lambda r, d, qo, qt, g: g * double_dqn_where(r, d, qo, qt, 1.0),
            "gamma multiplies the whole target, the reward too",
        ),
        (
            "the reward dropped at a termination",
            lambda r, d, qo, qt, g: (1.0 - d) * double_dqn_where(r, jnp.zeros_like(d), qo, qt, g),
            "the reward is dropped at a termination",
        ),
        (
            "a bfloat16 target",
            lambda *a: double_dqn_where(*a).astype(jnp.bfloat16),
            r"(it returned|it is) an? bfloat16 array",
        ),
    ],
)


# --- chapter 7, exercise 4: the project's measure, Q past the bound (NumPy) -----------------


def q_overshoot_by_steps(q_mean, env_steps, gamma):
    late = env_steps > 0.75 * env_steps.max(axis=1, keepdims=True)
    return (q_mean * late).sum(axis=1) / late.sum(axis=1) - 1.0 / (1.0 - gamma)


def q_overshoot_by_index(q_mean, env_steps, gamma):
    quarter = q_mean.shape[1] // 4
    return np.array([row[-quarter:].mean() for row in q_mean]) - 1.0 / (1.0 - gamma)


def q_overshoot_jax(q_mean, env_steps, gamma):
    late = env_steps >= 0.75 * (env_steps[:, -1:] + env_steps[:, 1:2] - env_steps[:, :1])
    return jnp.sum(jnp.where(late, q_mean, 0.0), 1) / jnp.sum(late, 1) - 1 / (1 - gamma)


Q_OVERSHOOT = _table(
    "check_q_overshoot",
    [
        ("by steps, vectorised", q_overshoot_by_steps, None),
        ("by index, a loop", q_overshoot_by_index, None),
        ("by steps >= 3/4 of the total, jax.numpy", q_overshoot_jax, None),
        (
            "the whole run",
            lambda q, s, g: q.mean(1) - 1 / (1 - g),
            "whole run, the warm-up's zeros",
        ),
        (
            "all of training after the warm-up",
            lambda q, s, g: np.array([r[r != 0].mean() for r in q]) - 1 / (1 - g),
            "all of training after the warm-up",
        ),
        (
            "no bound",
            lambda q, s, g: q_overshoot_by_steps(q, s, g) + 1 / (1 - g),
            r"subtract the bound 1 / \(1 - gamma\)",
        ),
        ("the bound minus Q", lambda q, s, g: -q_overshoot_by_steps(q, s, g), "reversed"),
        (
            "clipped at 0",
            lambda q, s, g: np.maximum(q_overshoot_by_steps(q, s, g), 0.0),
            "clipped at 0",
        ),
        (
            "the bound typed as 100",
            lambda q, s, g: q_overshoot_by_steps(q, s, g) + 1 / (1 - g) - 100,
            "the number 100",
        ),
        ("the last iteration", lambda q, s, g: q[:, -1] - 1 / (1 - g), "last iteration's value"),
        (
            "the largest value",
            lambda q, s, g: q[:, -(q.shape[1] // 4) :].max(1) - 1 / (1 - g),
            "largest value",
        ),
        (
            "one value for all seeds",
            lambda q, s, g: q_overshoot_by_steps(q, s, g).mean(),
            r"float array of shape \(3,\) \(one value per seed\); it returned a float64 NumPy "
            r"scalar\. Average over the iterations",
        ),
    ],
)


# --- chapter 7, find the bug: the collector (run under jit) ---------------------------------

_LATE_FLAG = ("terminated=terminated_t,", "terminated=timestep.terminated,")
_CARRY = "return (env_state, timestep.obs, timestep.terminated), transition"
_DRAW = "jax.random.bernoulli(action_key).astype(jnp.int32)"


def collector(*edits):
    """The chapter's collect with its flag fixed, and ``edits`` (old, new) applied."""
    source = _one_line_fix(_cell("07_dqn", "collect"), *_LATE_FLAG)
    for old, new in edits:
        source = _one_line_fix(source, old, new)
    return _definitions(source, DQN)["collect"]


COLLECTOR = _table(
    "check_collector",
    [
        ("the fixed chapter collector", collector(), None),
        (
            "randint for the coin",
            collector((_DRAW, "jax.random.randint(action_key, (), 0, 2).astype(jnp.int32)")),
            None,
        ),
        # a stale observation: told that obs is stale, not that no episode ended
        (
            "obs never carried",
            collector((_CARRY, _CARRY.replace("timestep.obs", "obs_t"))),
            "obs at steps .* is not the previous transition's next_obs.*stale",
        ),
        (
            "next_obs carried as obs",
            collector((_CARRY, _CARRY.replace("obs,", "next_obs,"))),
            "after an episode ends, obs .* is the state it ended in",
        ),
        # a biased coin: told to draw a fair coin, not that its steps share a key
        (
            "a biased coin",
            collector((_DRAW, _DRAW.replace("action_key)", "action_key, 0.75)"))),
            "a fair coin gives 50%",
        ),
        (
            "one key for every step",
            collector((_DRAW, _DRAW.replace("action_key", "reset_key"))),
            "at every step: the steps share one key",
        ),
        (
            "actions that alternate",
            collector((_DRAW, "(env_state.step_count % 2).astype(jnp.int32)")),
            "not independent from step to step",
        ),
    ],
)


# --- chapter 8, exercise 1: GAE from stored values (run under jit) -------------------------


def gae_loop(reward, value, value_last, value_final, terminated, truncated, gamma, lam):
    """A Python loop over time (unrolled under jit, but right)."""
    value_tp1 = jnp.concatenate([value[1:], value_last[None]])
    value_tp1 = jnp.where(truncated, value_final, value_tp1)
    delta = reward + gamma * (1.0 - terminated) * value_tp1 - value
    not_done = 1.0 - (terminated | truncated)
    advantage, out = jnp.zeros_like(value_last), []
    for t in reversed(range(reward.shape[0])):
        advantage = delta[t] + gamma * lam * not_done[t] * advantage
        out.insert(0, advantage)
    return jnp.stack(out)


GAE = _table(
    "check_gae_from_values",
    [
        ("a reverse scan", gae_from_values_answer, None),
        ("a loop over time", gae_loop, None),
        (
            "advantage + value",
            lambda *a: gae_from_values_answer(*a) + a[1],
            "advantage \\+ value, the critic's targets",
        ),
        (
            "no gamma in delta",
            lambda *a: gae_from_values_answer(*a[:6], 1.0, a[6] * a[7]),
            "gamma is missing from the TD error",
        ),
    ],
)


# --- chapter 8, exercise 2: the dual-clip objective (run under jit) -------------------------


def dual_clip_floor(ratio, advantage, clip_eps, dual_clip_c, floor_of):
    standard = jnp.minimum(
        ratio * advantage, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * advantage
    )
    return jnp.where(
        advantage < 0, jnp.maximum(standard, floor_of(dual_clip_c, advantage)), standard
    )


DUAL_CLIP = _table(
    "check_dual_clip_objective",
    [
        ("where and two clips", dual_clip, None),
        (
            "max with the floor",
            lambda r, a, e, c: dual_clip_floor(r, a, e, c, lambda c, a: c * a),
            None,
        ),
        (
            "the floor's sign flipped",
            lambda r, a, e, c: dual_clip_floor(r, a, e, c, lambda c, a: -c * a),
            "the dual clip's floor has the wrong sign",
        ),
        (
            "the floor on |A|",
            lambda r, a, e, c: dual_clip_floor(r, a, e, c, lambda c, a: c * jnp.abs(a)),
            "the dual clip's floor has the wrong sign",
        ),
        ("the surrogate's sign flipped", lambda *a: -dual_clip(*a), "the sign is flipped"),
        (
            "a bfloat16 objective",
            lambda *a: dual_clip(*a).astype(jnp.bfloat16),
            r"(it returned|it is) an? bfloat16 array",
        ),
    ],
)


# --- chapter 8, exercise 3: an epsilon-mixture over legal moves (run under jit) -------------


def eps_probs_where(logits, mask, epsilon):
    probs = jax.nn.softmax(jnp.where(mask, logits, -jnp.inf), axis=-1)
    return jnp.where(mask, (1 - epsilon) * probs + epsilon / mask.sum(-1, keepdims=True), 0.0)


EPSILON = _table(
    "check_epsilon_masked_probs",
    [
        ("mask / count", eps_probs, None),
        ("where on the mixture", eps_probs_where, None),
        (
            "a float16 result",
            lambda *a: eps_probs(*a).astype(jnp.float16),
            r"(it returned|it is) an? float16 array",
        ),
    ],
)


# --- chapter 8, exercise 4: the project's measure, late success per seed (NumPy) ------------


def late_success_loop(success_by_start, k):
    return np.array([row[~np.isnan(row)][-k:].mean() for row in success_by_start])


def late_success_vectorised(success_by_start, k):
    measured = ~np.isnan(success_by_start)
    from_the_end = np.cumsum(measured[:, ::-1], axis=1)[:, ::-1]  # measured values at or after
    keep = measured & (from_the_end <= k)
    return np.where(keep, success_by_start, 0.0).sum(axis=1) / k


def late_success_jax(success_by_start, k):
    x = jnp.asarray(success_by_start)
    measured = ~jnp.isnan(x)
    keep = measured & (jnp.cumsum(measured[:, ::-1], axis=1)[:, ::-1] <= k)
    return jnp.sum(jnp.where(keep, x, 0.0), axis=1) / k


def _before_first_nan(row):
    return row[: np.argmax(np.isnan(row))] if np.isnan(row).any() else row


LATE_SUCCESS = _table(
    "check_late_success",
    [
        ("a loop over the seeds", late_success_loop, None),
        ("a count from the end", late_success_vectorised, None),
        ("the same in jax.numpy", late_success_jax, None),
        (
            "nanmean of the last k updates",
            lambda x, k: np.nanmean(x[:, -k:], axis=1),
            "averages the last k updates, skipping their nan",
        ),
        (
            "mean of the last k updates",
            lambda x, k: x[:, -k:].mean(axis=1),
            r"gives nan for seeds \[0, 1, 2\].*Skip the nan",
        ),
        ("nanmean of the whole run", lambda x, k: np.nanmean(x, axis=1), "every measured update"),
        (
            "a stop at the first nan",
            lambda x, k: np.array([_before_first_nan(row)[-k:].mean() for row in x]),
            "stops at the first nan",
        ),
        ("nan as 0", lambda x, k: np.nan_to_num(x)[:, -k:].mean(axis=1), "counted as a failure"),
        (
            "the last measured value left out",
            lambda x, k: np.array([row[~np.isnan(row)][-k - 1 : -1].mean() for row in x]),
            "the last measured value is left out",
        ),
        (
            "one value per update",
            lambda x, k: np.nanmean(x[:, -k:], axis=0),
            r"of shape \(3,\).*; it (returned|is) an? \w+ array of shape \(4,\)",
        ),
    ],
)


# --- chapter 8, find the bug: a fresh key at every step (run under jit) ---------------------

_FIX = (
    "return (env_state, timestep, key), transition",
    "return (env_state, timestep, next_key), transition",
)
_SPLIT = "next_key, key_t = jax.random.split(key)"
_SAMPLE = "action_t = jax.random.categorical(key_t, logits_t).astype(jnp.int32)"


def rollout(*edits, step=(), fixed=True):
    """The chapter's rollout_with_a_bug, fixed (or not), with ``edits`` applied, calling
    section 3's rollout_step with the edits ``step`` (where the action is sampled)."""
    source = _cell("08_ppo_maze", "rollout_with_a_bug")
    for old, new in ((_FIX,) if fixed else ()) + edits:
        source = _one_line_fix(source, old, new)
    return _definitions(source, ppo_namespace(*step))["rollout_with_a_bug"]


ROLLOUT_KEYS = _table(
    "check_rollout_keys",
    [
        ("split and carry", rollout(), None),
        (
            "fold_in, then split",
            rollout((_SPLIT, "next_key, key_t = jax.random.split(jax.random.fold_in(key, 1))")),
            None,
        ),
        # a clock that restarts at every reset: the keys repeat from episode to episode
        # the carried key, unchanged, reaches rollout_step as key_t
        (
            "keys from each environment's step count",
            rollout(
                (_SPLIT, "next_key = key_t = key"),
                step=[
                    (
                        _SAMPLE,
                        (
                            "action_t = jax.vmap(lambda i, s, l: jax.random.categorical(jax.random."
                            "fold_in(jax.random.fold_in(key_t, i), s), l))(jnp.arange("
                            "logits_t.shape[0]), obs_t.step_count, logits_t).astype(jnp.int32)"
                        ),
                    )
                ],
            ),
            "same state at the same step count of another episode",
        ),
        (
            "keys from the step count alone",
            rollout(
                (_SPLIT, "next_key = key_t = key"),
                step=[
                    (
                        _SAMPLE,
                        (
                            "action_t = jax.vmap(lambda s, l: jax.random.categorical(jax.random."
                            "fold_in(key_t, s), l))(obs_t.step_count, logits_t).astype(jnp.int32)"
                        ),
                    )
                ],
            ),
            "neighbouring environments .* such as the step count",
        ),
        # the rollout's own key, closed over by the step: told so, not only that a key is carried
        (
            "the rollout's key closed over",
            rollout(("env_state, timestep, key = carry", "env_state, timestep, _ = carry")),
            "one made before the scan and used inside it",
        ),
        (
            "per-environment keys from the unchanged carried key",
            rollout(
                step=[
                    (
                        _SAMPLE,
                        (
                            "action_t = jax.vmap(jax.random.categorical)(jax.random.split(jax."
                            "random.fold_in(key_t, 7), logits_t.shape[0]), logits_t).astype("
                            "jnp.int32)"
                        ),
                    )
                ],
                fixed=False,
            ),
            "one carried unchanged from step to step",
        ),
    ],
)


@pytest.mark.parametrize(
    "check, answer, message",
    N_STEP
    + SAMPLE_WINDOWS
    + DOUBLE_DQN
    + Q_OVERSHOOT
    + COLLECTOR
    + GAE
    + DUAL_CLIP
    + EPSILON
    + LATE_SUCCESS
    + ROLLOUT_KEYS,
)
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_the_check_gives_its_verdict(check, answer, message, capsys):
    with jax.debug_key_reuse(False):
        if message is None:
            getattr(checks, check)(answer)
            assert "check passed" in capsys.readouterr().out
        else:
            with pytest.raises(CheckFailed, match=message):
                getattr(checks, check)(answer)


@pytest.mark.parametrize(
    "table",
    [
        N_STEP,
        SAMPLE_WINDOWS,
        DOUBLE_DQN,
        Q_OVERSHOOT,
        COLLECTOR,
        GAE,
        DUAL_CLIP,
        EPSILON,
        LATE_SUCCESS,
        ROLLOUT_KEYS,
    ],
    ids=lambda t: t[0].values[0][6:],
)
def test_every_table_has_two_right_answers(table):
    assert sum(row.values[2] is None for row in table) >= 2
