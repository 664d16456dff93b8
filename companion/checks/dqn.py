"""Self-checks for the exercises of the DQN chapter."""

from __future__ import annotations

from typing import Any, Callable

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


def check_td_target(td_target: Callable) -> None:
    """Check ``td_target(reward, terminated, q_next_target, gamma)``.

    ``reward`` float (batch,), ``terminated`` bool (batch,), ``q_next_target``
    float (batch, num_actions); the answer is
    ``reward + gamma * (1 - terminated) * max(q_next_target, axis=-1)``.

    Raises:
        CheckFailed: naming the mistake (termination ignored or inverted, min
            instead of max, gamma missing, the whole target masked, wrong shape).
    """
    require_function(td_target, "td_target")
    reward = jnp.array([1.0, 1.0, 0.5, 2.0])
    terminated = jnp.array([True, False, False, True])
    q_next = jnp.array([[10.0, 20.0], [3.0, 7.0], [-1.0, -2.0], [4.0, 1.0]])
    gamma = 0.9
    got = run_answer(
        td_target,
        reward,
        terminated,
        q_next,
        gamma,
        call="td_target",
        hint="Shapes: reward (4,), terminated (4,) bool, q_next_target (4, 2)",
    )
    got = check_shape(
        got,
        (4,),
        "td_target(...) for a batch of 4",
        hint="Take the max over the action axis (axis=-1), one target per transition.",
    )
    best = q_next.max(axis=-1)
    expected = reward + gamma * (1 - terminated) * best
    if close(got, expected):
        passed("td_target bootstraps from max Q except after termination")
        return
    mistakes = {
        "the target ignores `terminated`: after termination it must be the reward alone": reward
        + gamma * best,
        "the termination mask is inverted: bootstrap when NOT terminated": reward
        + gamma * terminated * best,
        "the target uses the min over actions; use the max": reward
        + gamma * (1 - terminated) * q_next.min(axis=-1),
        "gamma is missing from the bootstrapped term": reward + (1 - terminated) * best,
        "the reward is masked too: only the bootstrapped term is multiplied by (1 - terminated)": (
            1 - terminated
        )
        * (reward + gamma * best),
        "the target averages the Q-values over actions; use the max": reward
        + gamma * (1 - terminated) * q_next.mean(axis=-1),
    }
    name_mistake(got, mistakes, "td_target")
    fail(
        f"td_target gives {np.asarray(got)}, expected {np.asarray(expected)}; check "
        "r + gamma * (1 - terminated) * max_a Q_target(s', a) one term at a time."
    )


def _filled_buffer(num_added: int, capacity: int):
    example = {"obs": jnp.zeros(2), "action": jnp.int32(0)}
    buffer = replay_init(example, capacity)
    for i in range(1, num_added + 1):
        buffer = replay_add(buffer, {"obs": jnp.full(2, float(i)), "action": jnp.int32(i)})
    return buffer


def check_sample(sample: Callable[[Any, jax.Array, int], Any]) -> None:
    """Check ``sample(buffer, key, batch_size)`` for a :class:`companion.replay.ReplayBuffer`.

    It must return a pytree like one transition with leaves ``(batch_size, ...)``,
    drawn uniformly with replacement from the ``buffer.size`` filled slots only,
    keeping each transition's fields together.

    Raises:
        CheckFailed: naming the mistake (unfilled slots sampled, not uniform,
            fields taken from different slots, wrong shape, same key same batch).
    """
    require_function(sample, "sample")
    buffer = _filled_buffer(6, 20)  # slots 0..5 hold actions 1..6; slots 6..19 are empty (0)
    batch = run_answer(sample, buffer, jax.random.key(0), 3000, call="sample(buffer, key, 3000)")
    if not isinstance(batch, dict) or set(batch) != {"obs", "action"}:
        fail(
            "sample should return a transition like the stored ones (here a dict with "
            "'obs' and 'action'), each leaf with a leading batch axis"
        )
    actions = check_shape(batch["action"], (3000,), "sample(...)['action'] for batch_size 3000")
    check_shape(batch["obs"], (3000, 2), "sample(...)['obs'] for batch_size 3000")
    if np.any(actions == 0):
        fail(
            "sample returns empty slots: draw indices from 0 to buffer.size - 1, not to "
            "the capacity"
        )
    if not np.array_equal(np.asarray(batch["obs"])[:, 0], actions):
        fail(
            "sample takes the fields of a transition from different slots: use the same "
            "indices for every leaf"
        )
    counts = np.bincount(actions, minlength=7)[1:]
    if counts.min() == 0:
        fail(
            f"sample never returns slot {int(np.argmin(counts))} of the filled ones: the upper "
            "bound of jax.random.randint is excluded, so use maxval=buffer.size"
        )
    expected = 3000 / 6
    if np.max(np.abs(counts - expected)) > 0.25 * expected:
        fail(f"sample is not uniform over the filled slots: counts {counts.tolist()}")
    again = sample(buffer, jax.random.key(0), 3000)
    if not np.array_equal(np.asarray(again["action"]), actions):
        fail("sample is not a pure function of its key: the same key must give the same batch")
    other = sample(buffer, jax.random.key(1), 3000)
    if np.array_equal(np.asarray(other["action"]), actions):
        fail("sample ignores its key: different keys should give different batches")
    passed("sample draws uniformly from the filled slots only")


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
