"""The performance chapter's self-checks accept right answers and name wrong ones."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from companion.checks import (
    CheckFailed,
    check_batched_rollout,
    check_rollout_bytes,
)
from companion.envs import cartpole


def scan_rollout(state, actions, step_fn=cartpole.step_autoreset):
    def body(state, action):
        state, timestep = step_fn(state, action)
        return state, timestep.done

    return jax.lax.scan(body, state, actions)


# --- many CartPoles in one scan ----------------------------------------------------------------


def batched_scan(states, actions, step_fn=cartpole.step_autoreset):
    def body(states, actions_t):
        states, timestep = jax.vmap(step_fn)(states, actions_t)
        return states, timestep.done

    return jax.lax.scan(body, states, actions)


def test_batched_rollout_passes(capsys):
    check_batched_rollout(batched_scan)
    # a vmap of one-environment scans is the same program, if done comes back time first
    per_env = jax.vmap(scan_rollout, in_axes=(0, 1), out_axes=(0, 1))
    check_batched_rollout(per_env)
    assert capsys.readouterr().out.count("check passed") == 2


def looked_up_scan(states, actions):
    """A right answer that finds ``cartpole.step_autoreset`` when it is traced, as a student's."""

    def body(states, actions_t):
        states, timestep = jax.vmap(cartpole.step_autoreset)(states, actions_t)
        return states, timestep.done

    return jax.lax.scan(body, states, actions)


def test_batched_rollout_check_runs_again_and_leaves_the_real_time_limit(capsys):
    """A check cell run twice, and an answer under its own jax.jit, still pass (the short time
    limit the check sets is traced each time); afterwards the answer runs with the real limit."""
    jitted = jax.jit(looked_up_scan)
    for answer in (looked_up_scan, looked_up_scan, jitted, jitted):
        check_batched_rollout(answer)
    assert capsys.readouterr().out.count("check passed") == 4

    def states():  # the same three starts each time, from keys not yet used
        return jax.vmap(cartpole.reset)(jax.random.split(jax.random.key(3), 3))[0]

    # pushing left and right in turn keeps some poles up past the check's 30-step limit
    actions = jnp.tile(jnp.array([[0], [1]], jnp.int32), (60, 3))
    _, dones = jitted(states(), actions)
    _, expected = batched_scan(states(), actions)  # cartpole's own step, its real limit
    short = cartpole.DEFAULT_PARAMS._replace(max_steps=30)
    _, truncated_early = batched_scan(
        states(), actions, step_fn=lambda s, a: cartpole.step_autoreset(s, a, short)
    )
    assert not np.array_equal(np.asarray(truncated_early), np.asarray(expected))
    assert np.array_equal(np.asarray(dones), np.asarray(expected))


def unrolled_batched(states, actions):
    dones = []
    for t in range(actions.shape[0]):
        states, timestep = jax.vmap(cartpole.step_autoreset)(states, actions[t])
        dones.append(timestep.done)
    return states, jnp.stack(dones)


#: (wrong answer, the message it gets): also run in Japanese by test_checks_language.py.
WRONG_BATCHED_ROLLOUT = [
    (lambda s, a: batched_scan(s, a, cartpole.step), "never restart"),
    (lambda s, a: (batched_scan(s, a)[0], batched_scan(s, a)[1].T), "environment first"),
    (
        lambda s, a: (batched_scan(s, a)[0], jnp.roll(batched_scan(s, a)[1], 1, 0)),
        "done_t is not",
    ),
    (lambda s, a: batched_scan(s, a[:, ::-1]), "actions\\[t, e\\] is the action"),
    (unrolled_batched, "unrolls its loop"),
    (lambda s, a: s, "pair"),
    (
        lambda s, a: (s.physics, batched_scan(s, a)[1]),
        "should be the final states, a cartpole.CartPoleState",
    ),
    (lambda s: s, "raised TypeError"),
]


@pytest.mark.parametrize("wrong, message", WRONG_BATCHED_ROLLOUT)
@pytest.mark.usefixtures("no_key_reuse_check")
def test_batched_rollout_mistakes_are_named(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_batched_rollout(wrong)


# --- bytes of a PPO rollout -----------------------------------------------------------------


def right_rollout_bytes(num_steps, num_envs):
    return 330 * num_steps * num_envs


def test_rollout_bytes(capsys):
    check_rollout_bytes(right_rollout_bytes)
    assert "330 bytes per step and environment" in capsys.readouterr().out


#: (wrong answer, the message it gets): also run in Japanese by test_checks_language.py.
WRONG_ROLLOUT_BYTES = [
    (lambda t, n: 1230 * t * n, "stored as bool"),
    (lambda t, n: 348 * t * n, "1 byte, not 4 \\(action_mask"),
    (lambda t, n: 1248 * t * n, "1 byte, not 4 \\(the image"),
    (lambda t, n: 626 * t * n, "no next image"),
    (lambda t, n: 1526 * t * n, "no next image"),
    (lambda t, n: 326 * t * n, "next_value"),
    (lambda t, n: 346 * t * n, "float64"),
    (lambda t, n: 130 * t * n, "3 channels"),
    (lambda t, n: 330 * n, "num_steps \\* num_envs"),
    (lambda t, n: 330 * t * n + 8, "expected 330"),
    (lambda t, n: "many", "should return an int .*; it returned the str 'many'"),
]


@pytest.mark.parametrize("bytes_fn, message", WRONG_ROLLOUT_BYTES)
def test_rollout_bytes_mistakes_are_named(bytes_fn, message):
    with pytest.raises(CheckFailed, match=message):
        check_rollout_bytes(bytes_fn)
