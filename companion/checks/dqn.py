"""Self-checks for the exercises of the DQN chapter."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.core import (
    check_shape,
    close,
    fail,
    name_mistake,
    passed,
    require_function,
    run_answer,
)
from companion.replay import replay_add, replay_init


def _filled_buffer(num_added: int, capacity: int):
    example = {"obs": jnp.zeros(2), "action": jnp.int32(0)}
    buffer = replay_init(example, capacity)
    for i in range(1, num_added + 1):
        buffer = replay_add(buffer, {"obs": jnp.full(2, float(i)), "action": jnp.int32(i)})
    return buffer


def check_double_dqn_target(double_dqn_target: Callable) -> None:
    """Check ``double_dqn_target(reward, terminated, q_next_online, q_next_target, gamma)``.

    Double DQN (van Hasselt et al., 2016): the online network chooses the next
    action, the target network evaluates it:
    ``reward + gamma * (1 - terminated) * q_next_target[argmax(q_next_online)]``.

    Raises:
        CheckFailed: for the plain DQN target (max of the target network), the
            online network's values, or termination ignored.
    """
    require_function(double_dqn_target, "double_dqn_target")
    reward = jnp.array([1.0, 1.0, 1.0])
    terminated = jnp.array([False, False, True])
    q_online = jnp.array([[1.0, 2.0], [5.0, 3.0], [0.0, 9.0]])
    q_target = jnp.array([[4.0, 3.0], [2.0, 6.0], [7.0, 8.0]])
    gamma = 0.5
    got = run_answer(
        double_dqn_target, reward, terminated, q_online, q_target, gamma, call="double_dqn_target"
    )
    got = check_shape(got, (3,), "double_dqn_target(...) for a batch of 3")
    chosen = jnp.take_along_axis(q_target, jnp.argmax(q_online, -1)[:, None], -1)[:, 0]
    expected = reward + gamma * (1 - terminated) * chosen
    if close(got, expected):
        passed("double_dqn_target: the online network chooses, the target network evaluates")
        return
    name_mistake(
        got,
        {
            "this is the plain DQN target: choose the action with the ONLINE network's argmax": reward
            + gamma * (1 - terminated) * q_target.max(-1),
            "the chosen action is evaluated with the online network; evaluate it with the target network": reward
            + gamma * (1 - terminated) * q_online.max(-1),
            "the roles are swapped: the target network chooses and the online network evaluates": reward
            + gamma
            * (1 - terminated)
            * jnp.take_along_axis(q_online, jnp.argmax(q_target, -1)[:, None], -1)[:, 0],
            "termination is ignored: after it the target is the reward alone": reward
            + gamma * chosen,
        },
        "double_dqn_target",
    )
    fail(f"double_dqn_target gives {np.asarray(got)}, expected {np.asarray(expected)}")


def _n_step_reference(reward, terminated, truncated, q_next, gamma, mistake=None):
    """The n-step target by a plain loop; ``mistake`` plants one known error."""
    reward, terminated, truncated = (np.asarray(a) for a in (reward, terminated, truncated))
    best = np.asarray(q_next).max(axis=-1)
    batch, n = reward.shape
    out = np.zeros(batch)
    for b in range(batch):
        total, discount = 0.0, 1.0
        for k in range(n):
            total += (1.0 if mistake == "undiscounted" else discount) * reward[b, k]
            discount *= gamma
            term = terminated[b, k] and mistake != "through_termination"
            trunc = truncated[b, k] and mistake != "through_truncation"
            if term or trunc or k == n - 1:
                boot = best[b, n - 1] if mistake == "last_step" else best[b, k]
                power = gamma**n if mistake == "gamma_n" else discount
                bootstraps = not term or mistake == "boot_termination"
                if trunc and mistake == "truncation_as_termination":
                    bootstraps = False
                total += power * boot * bootstraps
                break
        out[b] = total
    return out


def check_n_step_target(n_step_target: Callable) -> None:
    """Check ``n_step_target(reward, terminated, truncated, q_next_target, gamma)``.

    One row per window of ``n`` consecutive steps of one environment:
    ``reward`` float32 (batch, n), ``terminated`` and ``truncated`` bool
    (batch, n) (never both at one step), ``q_next_target`` float32
    (batch, n, num_actions), the target network's Q-values of each step's true
    next observation. With ``m`` the first step of the window that ends the
    episode (``n - 1`` if none does), the answer, float32 (batch,), is
    ``sum_{k<=m} gamma^k r_k + gamma^(m+1) (1 - terminated_m) max_a q_next_target[m, a]``
    (the n-step return of Sutton and Barto, 2018, section 7.1, cut at the
    episode's end).

    Raises:
        CheckFailed: naming the mistake (the sum runs through a termination or a
            truncation, a termination bootstraps, a truncation does not, the
            bootstrap comes from the wrong step or with the wrong power of
            gamma, the rewards are not discounted, the one-step target, a max
            over the wrong axis).
    """
    require_function(n_step_target, "n_step_target")
    rng = np.random.default_rng(6)
    reward = rng.uniform(0.5, 1.5, (7, 3)).astype(np.float32)
    q_next = rng.uniform(5.0, 15.0, (7, 3, 2)).astype(np.float32)
    # rows: no ending; termination at step 0, 1, 2; truncation at step 0 (and a termination
    # in the next episode), at step 1, at step 2
    terminated = np.zeros((7, 3), bool)
    truncated = np.zeros((7, 3), bool)
    terminated[[1, 2, 3, 4], [0, 1, 2, 2]] = True
    truncated[[4, 5, 6], [0, 1, 2]] = True
    gamma = 0.9
    args = (reward, terminated, truncated, q_next)
    got = run_answer(
        n_step_target,
        *map(jnp.asarray, args),
        gamma,
        call="n_step_target",
        hint="Shapes: reward, terminated, truncated (7, 3); q_next_target (7, 3, 2)",
    )
    got = check_shape(
        got,
        (7,),
        "n_step_target(...) for 7 windows of 3 steps",
        hint="One target per window: take the max over the action axis (the last one), "
        "not over the window's steps.",
    )
    expected = _n_step_reference(*args, gamma)
    if close(got, expected, rtol=1e-4, atol=1e-5):
        passed("n_step_target stops at terminations and truncations and bootstraps correctly")
        return
    messages = {
        "through_termination": "the n-step target does not stop at a termination: the rewards "
        "after it belong to the next episode, and nothing is bootstrapped",
        "boot_termination": "after a termination the target bootstraps: it must be the "
        "discounted rewards up to the termination alone",
        "truncation_as_termination": "a truncation is treated as a termination: a truncated "
        "episode still has a future, bootstrap from q_next_target of the truncated step",
        "through_truncation": "the sum runs through a truncation into the next episode: stop "
        "at the truncated step and bootstrap from its true next observation",
        "last_step": "the bootstrap always comes from the window's last step; take it from "
        "the step where the episode ended (q_next_target[:, m])",
        "gamma_n": "the bootstrap is discounted by gamma ** n even when the window stops "
        "early; a stop at step m gives gamma ** (m + 1)",
        "undiscounted": "the rewards are not discounted: r_0 + gamma * r_1 + gamma**2 * r_2 ...",
    }
    mistakes = {
        message: _n_step_reference(*args, gamma, mistake=name) for name, message in messages.items()
    }
    best = q_next.max(-1)
    mistakes["this is the one-step target: sum the rewards of all n steps of the window"] = (
        reward[:, 0] + gamma * (1 - terminated[:, 0]) * best[:, 0]
    )
    name_mistake(got, mistakes, "n_step_target")
    fail(f"n_step_target gives {np.round(got, 4)}, expected {np.round(expected, 4)}")


def _time_buffer(num_added: int, capacity: int):
    """A buffer filled by one environment: slot of step t (1, 2, ...) holds t in every field."""
    example = {"t": jnp.int32(0), "obs": jnp.zeros(2)}
    buffer = replay_init(example, capacity)
    for t in range(1, num_added + 1):
        buffer = replay_add(buffer, {"t": jnp.int32(t), "obs": jnp.full(2, float(t))})
    return buffer


def check_sample_windows(sample_windows: Callable) -> None:
    """Check ``sample_windows(buffer, key, batch_size, n)`` for n-step windows.

    ``buffer`` is a :class:`companion.replay.ReplayBuffer` filled by one
    environment, one transition per slot in time order (a ring: when it is
    full, the oldest transition is at ``position``). The answer is a pytree
    like one transition whose leaves have shape ``(batch_size, n, ...)``: each
    row ``n`` consecutive transitions in time order, its first one drawn
    uniformly (with replacement) from all windows that lie in filled slots and
    do not cross the write position, where the newest transition is followed
    by the oldest.

    Raises:
        CheckFailed: naming the mistake (empty slots, windows across the write
            position, steps out of order, fields from different slots, the
            last window never drawn, not uniform, wrong shape, the key ignored).
    """
    require_function(sample_windows, "sample_windows")
    batch_size, n = 4000, 3
    # 7 steps in 10 slots: windows start at steps 1..5. 23 steps in 10 slots: the ring holds
    # steps 14..23, position 3, and windows start at steps 14..21.
    for added, first, last in ((7, 1, 5), (23, 14, 21)):
        buffer = _time_buffer(added, 10)
        call = f"sample_windows(buffer, key, {batch_size}, {n})"
        got = run_answer(sample_windows, buffer, jax.random.key(added), batch_size, n, call=call)
        if not isinstance(got, dict) or set(got) != {"t", "obs"}:
            fail(
                "sample_windows should return a transition like the stored ones (here a dict "
                "with 't' and 'obs'), each leaf with leading axes (batch_size, n)"
            )
        where = f"{call} on a buffer holding steps {max(1, added - 9)}..{added}"
        steps = check_shape(
            got["t"],
            (batch_size, n),
            f"{where}: ['t']",
            hint="Leaves are (batch_size, n, ...): one row per window, its steps along axis 1.",
        )
        check_shape(got["obs"], (batch_size, n, 2), f"{where}: ['obs']")
        if np.any(steps == 0):
            fail(
                f"sample_windows: {where}, some windows reach into empty slots; a window must "
                "lie in the buffer.size filled slots"
            )
        if not np.array_equal(np.asarray(got["obs"])[..., 0], steps):
            fail(
                "sample_windows takes the fields of a transition from different slots: index "
                "every leaf with the same (batch_size, n) indices"
            )
        diffs = np.diff(steps, axis=1)
        if np.all(diffs == -1):
            fail("sample_windows returns the steps of each window in reverse time order")
        if not np.all(diffs == 1):
            fail(
                f"sample_windows: {where}, some windows are not consecutive steps "
                f"(for example {steps[np.argmax(np.any(diffs != 1, axis=1))].tolist()}): a "
                "window must not cross the write position, where the newest transition is "
                "followed by the oldest. Count starts from the oldest slot, "
                "(position - size) % capacity"
            )
        counts = np.bincount(steps[:, 0] - first, minlength=last - first + 1)
        if counts.size > last - first + 1:
            fail(f"sample_windows: {where}, a window starts after step {last}")
        if counts[-1] == 0:
            fail(
                f"sample_windows never draws the last window (steps {last}..{last + n - 1}): "
                "there are size - n + 1 windows, and randint's maxval is excluded"
            )
        if counts.min() == 0:
            missing = first + int(np.argmin(counts))
            fail(f"sample_windows never draws the window that starts at step {missing}")
        expected = batch_size / counts.size
        if np.max(np.abs(counts - expected)) > 0.25 * expected:
            fail(f"sample_windows is not uniform over the windows: counts {counts.tolist()}")
    again = sample_windows(buffer, jax.random.key(added), batch_size, n)
    if not np.array_equal(np.asarray(again["t"]), steps):
        fail(
            "sample_windows is not a pure function of its key: the same key must give the "
            "same batch"
        )
    other = sample_windows(buffer, jax.random.key(1), batch_size, n)
    if np.array_equal(np.asarray(other["t"]), steps):
        fail("sample_windows ignores its key: different keys should give different batches")
    passed("sample_windows draws n consecutive steps uniformly, never across the write position")
