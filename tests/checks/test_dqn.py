"""check_n_step_target, check_double_dqn_target, check_q_overshoot (chapter 7): right answers
and each check's bank of wrong answers (``WRONG_*``: slip, answer, verdict).

What each check guards, and the case that breaks each plausible wrong answer:

check_n_step_target (sum to the first episode end, bootstrap unless terminated)
- stops at a termination and does not bootstrap after it; stops at a truncation and
  bootstraps there; windows with no end use m = n - 1 (argmax's 0 named);
- the bootstrap's step and power: from the last step, gamma ** n always, named;
- the rewards' powers: gamma ** (k + 1), undiscounted, gamma outside, named;
- the termination flag at m: read with any, at the last step, named;
- jax.numpy, not NumPy, under jit; the one-step target; one target per step;
- m the first end: the last end of the window (the window run to its end, terminated read
  there), the rewards after m summed, named; the bootstrap's value: the mean over the
  actions, the argmax index, the first step's, named.

check_double_dqn_target (online argmax, target network's value)
- the roles: the plain DQN target, the online max, the networks swapped, named;
- termination: ignored, or dropping the reward, named; gamma on the reward named;
- the gather: a (B, 1) column broadcast to (B, B) is told so; a one-hot product maxed
  (negative values) named; a finite fill of -10 is generic;
- the contract: bfloat16;
- the action: where each target is some action's target value and every case has a row
  whose action is not the online argmax, the first such row is named (argmin, the two
  networks' sum); the argmax over the batch axis, right on the first case by chance, is
  generic;
- the values: the smaller of the two networks' (clipped double Q), the networks averaged
  and maxed, no gamma, named.

check_q_overshoot (late mean Q minus 1 / (1 - gamma), per seed; NumPy)
- late training: the whole run, all after the warm-up, the last value, the largest;
- the bound: none, reversed, typed as 100, clipped at 0, named;
- one value per seed (a float array (seeds,)); the mean, not the median, named;
- the last quarter of each seed's environment steps, as the exercise says: a case whose
  iterations take 1 step, then 9, in one seed (4 in the other, fewer in all) names the cut by
  iteration index and the cut at 3/4 of all seeds' steps; the cuts at 1/4 and 1/2, named;
  every cut by steps (> or >=, of the last count or of the total) passes;
- the signed difference of the mean: the distance |Q - bound| and a sum over all seeds, named.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from checks.answers import (
    _double_dqn,
    bank_params,
    generic,
    n_step_answer,
    n_step_with_powers,
    passes,
    q_overshoot_by_index,
    q_overshoot_by_steps,
    q_overshoot_loop,
    rejects,
    right_params,
)

# --- check_n_step_target: n_step_target(reward, terminated, truncated, q_next, gamma) -


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


RIGHT_N_STEP = [
    n_step_answer,  # backward loop
    n_step_vectorised,  # masked sum
]
WRONG_N_STEP = [
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
]


RIGHT_N_STEP += [lambda *a: n_step_with_powers(*a, mode=None)]
WRONG_N_STEP += [
    (
        "terminations ignored",
        lambda r, te, tr, q, g: n_step_answer(r, jnp.zeros_like(te), tr, q, g),
        "does not stop at a termination",
    ),
    (
        "bootstraps after a termination",
        lambda r, te, tr, q, g: n_step_answer(r, te, tr, q, g, boot_at_end=True),
        "after a termination the target bootstraps",
    ),
    (
        "a truncation as a termination",
        lambda r, te, tr, q, g: n_step_answer(r, te | tr, jnp.zeros_like(tr), q, g),
        "a truncation is treated as a termination",
    ),
    (
        "truncations ignored",
        lambda r, te, tr, q, g: n_step_answer(r, te, jnp.zeros_like(tr), q, g),
        "runs through a truncation into the next episode",
    ),
    (
        "bootstrap from the last step",
        lambda r, te, tr, q, g: n_step_answer(r, te, tr, q, g, from_last=True),
        "always comes from the window's last step",
    ),
    (
        "gamma ** n always",
        lambda *a: n_step_with_powers(*a, mode="gamma_n"),
        r"gamma \*\* n even when",
    ),
    ("undiscounted", lambda *a: n_step_with_powers(*a, mode="undiscounted"), "not discounted"),
    (
        "the one-step target",
        lambda r, te, tr, q, g: r[:, 0] + g * (1.0 - te[:, 0]) * q[:, 0].max(-1),
        "this is the one-step target",
    ),
    (
        "one target per step",
        lambda r, te, tr, q, g: r + g * q.max(-1),
        r"of shape \(7,\).*; it (returned|is) an? \w+ array of shape \(7, 3\)",
    ),
    (
        "an offset",
        lambda r, te, tr, q, g: n_step_answer(r, te, tr, q, g) + 0.5,
        generic("expected"),
    ),
    ("two arguments", lambda r, te: r, "raised TypeError"),
    (
        "every episode end ignored",
        lambda r, te, tr, q, g: n_step_answer(r, jnp.zeros_like(te), jnp.zeros_like(tr), q, g),
        "runs through every episode end",
    ),
]


def _n_step_slip(reward, terminated, truncated, q, gamma, slip):
    """A vectorised n-step target with one ``slip``."""
    n = reward.shape[1]
    end = (terminated | truncated).at[:, -1].set(True)
    m = n - 1 - jnp.argmax(end[:, ::-1], axis=1) if slip == "last_end" else jnp.argmax(end, axis=1)
    k = jnp.arange(n)
    keep = jnp.ones_like(reward, bool) if slip == "rewards_after" else k[None] <= m[:, None]
    ret = jnp.sum(jnp.where(keep, reward * gamma**k, 0.0), axis=1)
    best = {"mean": q.mean(-1), "argmax": q.argmax(-1).astype(jnp.float32)}.get(slip, q.max(-1))
    at_m = jnp.zeros_like(m) if slip == "first_step" else m
    bm = jnp.take_along_axis(best, at_m[:, None], 1)[:, 0]
    tm = jnp.take_along_axis(terminated, m[:, None], 1)[:, 0]
    power = m if slip == "gamma_m" else m + 1
    return ret + gamma**power * (1 - tm) * bm


RIGHT_N_STEP += [lambda *a: _n_step_slip(*a, slip=None)]
WRONG_N_STEP += [
    (
        "the bootstrap discounted by gamma ** m",
        lambda *a: _n_step_slip(*a, slip="gamma_m"),
        r"one power short: after the rewards r_0..r_m",
    ),
    (
        "the mean over the actions",
        lambda *a: _n_step_slip(*a, slip="mean"),
        r"averages q_next_target over the actions",
    ),
    (
        "the last end of the window for m",
        lambda *a: _n_step_slip(*a, slip="last_end"),
        r"always runs to its last step, reading terminated there: m is the FIRST step",
    ),
    (
        "argmax for max over the actions",
        lambda *a: _n_step_slip(*a, slip="argmax"),
        r"the argmax of q_next_target, an action's index, not its value",
    ),
    (
        "the rewards after m summed",
        lambda *a: _n_step_slip(*a, slip="rewards_after"),
        r"the rewards after the step m where the episode ends are summed too",
    ),
    (
        "the bootstrap from the first step",
        lambda *a: _n_step_slip(*a, slip="first_step"),
        r"always comes from the window's first step",
    ),
]


# --- check_double_dqn_target: double_dqn_target(reward, terminated, q_online, q_target, gamma)


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


RIGHT_DOUBLE_DQN = [
    double_dqn_where,  # where and a mask
    double_dqn_loop,  # a loop over the batch
]
WRONG_DOUBLE_DQN = [
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
]


def _double_dqn_column(reward, terminated, q_online, q_target, gamma):
    chosen = jnp.take_along_axis(q_target, jnp.argmax(q_online, -1)[:, None], -1)  # (B, 1)
    return reward + gamma * (1.0 - terminated) * chosen


def _double_dqn_one_hot_max(reward, terminated, q_online, q_target, gamma):
    one_hot = jax.nn.one_hot(jnp.argmax(q_online, -1), q_online.shape[-1])
    return reward + gamma * (1.0 - terminated) * jnp.max(q_target * one_hot, -1)


def _double_dqn_finite_fill(r, d, qo, qt, g):
    chosen = jax.nn.one_hot(jnp.argmax(qo, -1), qo.shape[-1]).astype(bool)
    return r + g * (1 - d) * jnp.max(jnp.where(chosen, qt, -10.0), -1)


WRONG_DOUBLE_DQN += [
    (
        "the plain DQN target",
        lambda r, d, qo, qt, g: r + g * (1 - d) * qt.max(-1),
        "plain DQN target",
    ),
    (
        "the online network's max",
        lambda r, d, qo, qt, g: r + g * (1 - d) * qo.max(-1),
        "evaluated with the online",
    ),
    (
        "termination ignored",
        lambda r, d, qo, qt, g: _double_dqn(r, jnp.zeros_like(d), qo, qt, g),
        "termination is ignored",
    ),
    (
        "the networks swapped",
        lambda r, d, qo, qt, g: _double_dqn(r, d, qt, qo, g),
        "roles are swapped",
    ),
    (
        "a column from take_along_axis",
        _double_dqn_column,
        r"of shape \(3,\).*; it (returned|is) an? \w+ array of shape \(3, 3\)\. Two shapes were broadcast together",
    ),
    ("max of a one-hot product", _double_dqn_one_hot_max, "one-hot product"),
    ("a finite fill of -10", _double_dqn_finite_fill, generic("differs from the reference")),
]


# --- check_q_overshoot: q_overshoot(q_mean, env_steps, gamma), NumPy --------------------


def q_overshoot_jax(q_mean, env_steps, gamma):
    late = env_steps >= 0.75 * (env_steps[:, -1:] + env_steps[:, 1:2] - env_steps[:, :1])
    return jnp.sum(jnp.where(late, q_mean, 0.0), 1) / jnp.sum(late, 1) - 1 / (1 - gamma)


RIGHT_Q_OVERSHOOT = [
    q_overshoot_by_steps,  # by steps, vectorised
    q_overshoot_loop,  # by steps past 3/4 of the last, a loop
    q_overshoot_jax,  # by steps >= 3/4 of the total, jax.numpy
]
WRONG_Q_OVERSHOOT = [
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
]


def _late(env_steps, fraction=0.75, per_seed=True):
    top = env_steps.max(axis=1, keepdims=True) if per_seed else env_steps.max()
    return env_steps > fraction * top


WRONG_Q_OVERSHOOT += [
    (
        "the last quarter of the iterations",
        q_overshoot_by_index,
        r"cut by iteration index, not by environment steps",
    ),
    (
        "gamma / (1 - gamma) for the bound",
        lambda q, s, g: q_overshoot_by_steps(q, s, g) + 1 / (1 - g) - g / (1 - g),
        r"not gamma / \(1 - gamma\)",
    ),
    (
        "the median of the last quarter",
        lambda q, s, g: np.array([np.median(r[k]) for r, k in zip(q, _late(s))]) - 1 / (1 - g),
        r"the median of the last quarter, not its mean",
    ),
    (
        "the cut at 3/4 of all seeds' steps",
        lambda q, s, g: (
            np.array([r[k].mean() for r, k in zip(q, _late(s, per_seed=False))]) - 1 / (1 - g)
        ),
        r"cut at 3/4 of the largest env_steps of all seeds",
    ),
    (
        "the last three quarters (a cut at 1/4)",
        lambda q, s, g: np.array([r[k].mean() for r, k in zip(q, _late(s, 0.25))]) - 1 / (1 - g),
        r"env_steps pass 1/4 of the last: the last quarter starts at 3/4",
    ),
    (
        "the last half",
        lambda q, s, g: np.array([r[k].mean() for r, k in zip(q, _late(s, 0.5))]) - 1 / (1 - g),
        r"env_steps pass 1/2 of the last",
    ),
    (
        "the distance from the bound",
        lambda q, s, g: np.array([np.abs(r[k] - 1 / (1 - g)).mean() for r, k in zip(q, _late(s))]),
        r"averages \|Q - bound\|, the distance",
    ),
    (
        "a sum over all seeds",
        lambda q, s, g: (q * _late(s)).sum() / _late(s).sum(axis=1) - 1 / (1 - g),
        r"summed over all seeds together \(a sum without axis=1\)",
    ),
]


def _double_batch_axis(reward, terminated, qo, qt, gamma):
    """The online argmax taken over the batch axis, indices wrapped to fit."""
    b = reward.shape[0]
    a = jnp.argmax(qo, axis=0)
    a = a[:b] if a.shape[0] >= b else a[jnp.arange(b) % a.shape[0]]
    return reward + gamma * jnp.where(terminated, 0.0, qt[jnp.arange(b), a % qt.shape[1]])


def _double_with(pick):
    """r + gamma (1 - d) qt[a], the action ``a = pick(qo, qt)``."""

    def target(reward, terminated, qo, qt, gamma):
        a = pick(qo, qt)
        return reward + gamma * (1.0 - terminated) * jnp.take_along_axis(qt, a[:, None], -1)[:, 0]

    return target


WRONG_DOUBLE_DQN += [
    (
        "the argmax over the batch axis",
        _double_batch_axis,
        # right on the first case by chance: the action is not named from the other two alone
        generic("double_dqn_target differs from the reference on a batch of 4 with 3 actions"),
    ),
    (
        "the smaller of the two networks' values",
        lambda r, d, qo, qt, g: (
            r
            + g
            * (1 - d)
            * jnp.take_along_axis(jnp.minimum(qo, qt), qo.argmax(-1)[:, None], -1)[:, 0]
        ),
        r"clipped double Q-learning",
    ),
    (
        "the networks averaged, then maxed",
        lambda r, d, qo, qt, g: r + g * (1 - d) * jnp.max(0.5 * (qo + qt), -1),
        r"averaged, then maxed",
    ),
    (
        "argmin for argmax",
        _double_with(lambda qo, qt: jnp.argmin(qo, -1)),
        r"evaluates another action than the online network's argmax: on a batch of 3 with 2 "
        r"actions, gamma 0.5, row 0 takes q_next_target's value of action 0, where argmax "
        r"q_next_online is 1",
    ),
    (
        "the action of the two networks' sum",
        _double_with(lambda qo, qt: jnp.argmax(qo + qt, -1)),
        r"evaluates another action than the online network's argmax",
    ),
    (
        "no gamma",
        lambda r, d, qo, qt, g: _double_dqn(r, d, qo, qt, 1.0),
        r"gamma is missing",
    ),
]


#: Each check's right answers and its bank of wrong ones.
RIGHTS = {
    "check_n_step_target": RIGHT_N_STEP,
    "check_double_dqn_target": RIGHT_DOUBLE_DQN,
    "check_q_overshoot": RIGHT_Q_OVERSHOOT,
}
BANKS = {
    "check_n_step_target": WRONG_N_STEP,
    "check_double_dqn_target": WRONG_DOUBLE_DQN,
    "check_q_overshoot": WRONG_Q_OVERSHOOT,
}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)
