"""The performance chapter's self-checks accept right answers and name wrong ones."""

import jax
import jax.numpy as jnp
import pytest

from companion.checks import CheckFailed, check_buffer_bytes, check_scan_rollout
from companion.envs import cartpole


def scan_rollout(state, actions, step_fn=cartpole.step_autoreset):
    def body(state, action):
        state, timestep = step_fn(state, action)
        return state, timestep.done

    return jax.lax.scan(body, state, actions)


def test_scan_rollout_passes(capsys):
    check_scan_rollout(scan_rollout)
    assert "check passed" in capsys.readouterr().out


def test_scan_rollout_without_reset_is_named():
    with pytest.raises(CheckFailed, match="never restart"):
        check_scan_rollout(lambda s, a: scan_rollout(s, a, cartpole.step))


def test_scan_rollout_wrong_done_flags_are_named():
    def shifted(state, actions):
        final, dones = scan_rollout(state, actions)
        return final, jnp.roll(dones, 1)

    with pytest.raises(CheckFailed, match="done_t is not"):
        check_scan_rollout(shifted)


def test_unrolled_python_loop_is_named():
    def unrolled(state, actions):
        dones = []
        for t in range(actions.shape[0]):
            state, timestep = cartpole.step_autoreset(state, actions[t])
            dones.append(timestep.done)
        return state, jnp.stack(dones)

    with pytest.raises(CheckFailed, match="unrolled"):
        check_scan_rollout(unrolled)


def test_scan_rollout_wrong_return_is_named():
    with pytest.raises(CheckFailed, match="pair"):
        check_scan_rollout(lambda s, a: s)


def test_buffer_bytes(capsys):
    check_buffer_bytes(lambda capacity: 41 * capacity)
    assert "41 bytes per transition" in capsys.readouterr().out


@pytest.mark.parametrize(
    "per, message",
    [(44, "1 byte, not 4"), (25, "next_obs"), (82, "float64"), (40, "terminated"),
     (50, "expected 41")],
)  # fmt: skip
def test_buffer_bytes_mistakes_are_named(per, message):
    with pytest.raises(CheckFailed, match=message):
        check_buffer_bytes(lambda capacity: per * capacity)
