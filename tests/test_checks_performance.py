"""The performance chapter's self-checks accept right answers and name wrong ones."""

import jax
import jax.numpy as jnp
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
