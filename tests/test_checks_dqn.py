"""The DQN self-checks pass correct answers and name the mistake in wrong ones."""

import jax
import jax.numpy as jnp
import pytest

from companion.agents.dqn import td_target
from companion.checks import CheckFailed, check_sample, check_td_target
from companion.replay import replay_sample


def test_td_target_reference_passes(capsys):
    check_td_target(td_target)
    assert "check passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda r, d, q, g: r + g * q.max(-1), "ignores `terminated`"),
        (lambda r, d, q, g: r + g * d * q.max(-1), "inverted"),
        (lambda r, d, q, g: r + g * (1 - d) * q.min(-1), "min over actions"),
        (lambda r, d, q, g: r + (1 - d) * q.max(-1), "gamma is missing"),
        (lambda r, d, q, g: (1 - d) * (r + g * q.max(-1)), "the reward is masked too"),
        (lambda r, d, q, g: r + g * (1 - d) * q.mean(-1), "averages the Q-values"),
        (lambda r, d, q, g: jnp.sum(r + g * (1 - d) * q.max(-1)), r"shape \(\), expected \(4,\)"),
        (lambda r, d, q, g: r + g * (1 - d) * q, "raised"),
        (lambda r, d, q, g: r + g * (1 - d) * q.max(-1) + 1, "expected"),
    ],
)
def test_td_target_mistakes_are_named(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_td_target(wrong)


def test_sample_reference_passes(capsys):
    check_sample(replay_sample)
    assert "check passed" in capsys.readouterr().out


def _sample_with(index_fn):
    def sample(buffer, key, batch_size):
        idx = index_fn(buffer, key, batch_size)
        return jax.tree.map(lambda leaf: leaf[idx], buffer.data)

    return sample


@pytest.mark.parametrize(
    "wrong, message",
    [
        (_sample_with(lambda b, k, n: jax.random.randint(k, (n,), 0, b.capacity)), "empty slots"),
        (_sample_with(lambda b, k, n: jax.random.randint(k, (n,), 0, b.size - 1)), "never returns"),
        (_sample_with(lambda b, k, n: jnp.minimum(
            jax.random.randint(k, (n,), 0, b.size), jax.random.randint(jax.random.fold_in(k, 1), (n,), 0, b.size))),
         "not uniform"),
        (_sample_with(lambda b, k, n: jax.random.randint(jax.random.key(0), (n,), 0, b.size)), "ignores its key"),
        (lambda b, k, n: {"obs": b.data["obs"][jax.random.randint(k, (n,), 0, b.size)],
                          "action": b.data["action"][jax.random.randint(jax.random.fold_in(k, 1), (n,), 0, b.size)]},
         "different slots"),
        (lambda b, k, n: jax.tree.map(lambda leaf: leaf[jax.random.randint(k, (n,), 0, b.size)][:10], b.data),
         r"shape \(10,\), expected \(3000,\)"),
        (lambda b, k, n: (b.data["obs"], b.data["action"]), "like the stored ones"),
    ],
)
@pytest.mark.usefixtures("no_key_reuse_check")
def test_sample_mistakes_are_named(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_sample(wrong)
