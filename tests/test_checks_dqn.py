"""The DQN self-checks pass correct answers and name the mistake in wrong ones."""

import jax
import jax.numpy as jnp
import pytest

from companion.checks import (
    CheckFailed,
    check_n_step_target,
    check_sample_windows,
)


def _sample_with(index_fn):
    def sample(buffer, key, batch_size):
        idx = index_fn(buffer, key, batch_size)
        return jax.tree.map(lambda leaf: leaf[idx], buffer.data)

    return sample


# --- n-step TD target --------------------------------------------------------------------


def n_step_answer(
    reward, terminated, truncated, q_next_target, gamma, boot_at_end=False, from_last=False
):
    """The n-step target by a backward loop over the window; flags plant two mistakes."""
    best = jnp.max(q_next_target, axis=-1)
    not_term = 1.0 - terminated.astype(reward.dtype)
    if boot_at_end:  # a termination ends the sum but, wrongly, still bootstraps
        truncated, not_term = truncated | terminated, jnp.ones_like(not_term)
    y = reward[:, -1] + gamma * not_term[:, -1] * best[:, -1]
    for k in reversed(range(reward.shape[1] - 1)):
        boot = best[:, -1] if from_last else best[:, k]
        y = reward[:, k] + gamma * not_term[:, k] * jnp.where(truncated[:, k], boot, y)
    return y


def n_step_with_powers(reward, terminated, truncated, q_next_target, gamma, mode):
    """A forward loop: the sum stops at the first ending; `mode` plants a discount mistake."""
    best = jnp.max(q_next_target, axis=-1)
    n = reward.shape[1]
    total = jnp.zeros(reward.shape[0])
    alive = jnp.ones(reward.shape[0], bool)  # no ending before step k
    for k in range(n):
        weight = 1.0 if mode == "undiscounted" else gamma**k
        total = total + alive * weight * reward[:, k]
        stops = alive & (terminated[:, k] | truncated[:, k] | (k == n - 1))
        power = gamma**n if mode == "gamma_n" else gamma ** (k + 1)
        total = total + stops * (1.0 - terminated[:, k]) * power * best[:, k]
        alive = alive & ~stops
    return total


def test_n_step_target_reference_passes(capsys):
    check_n_step_target(n_step_answer)
    check_n_step_target(lambda *a: n_step_with_powers(*a, mode=None))
    assert capsys.readouterr().out.count("check passed") == 2


@pytest.mark.parametrize(
    "wrong, message",
    [
        (
            lambda r, te, tr, q, g: n_step_answer(r, jnp.zeros_like(te), tr, q, g),
            "does not stop at a termination",
        ),
        (
            lambda r, te, tr, q, g: n_step_answer(r, te, tr, q, g, boot_at_end=True),
            "after a termination the target bootstraps",
        ),
        (
            lambda r, te, tr, q, g: n_step_answer(r, te | tr, jnp.zeros_like(tr), q, g),
            "a truncation is treated as a termination",
        ),
        (
            lambda r, te, tr, q, g: n_step_answer(r, te, jnp.zeros_like(tr), q, g),
            "runs through a truncation into the next episode",
        ),
        (
            lambda r, te, tr, q, g: n_step_answer(r, te, tr, q, g, from_last=True),
            "always comes from the window's last step",
        ),
        (lambda *a: n_step_with_powers(*a, mode="gamma_n"), r"gamma \*\* n even when"),
        (lambda *a: n_step_with_powers(*a, mode="undiscounted"), "not discounted"),
        (
            lambda r, te, tr, q, g: r[:, 0] + g * (1.0 - te[:, 0]) * q[:, 0].max(-1),
            "this is the one-step target",
        ),
        (
            lambda r, te, tr, q, g: r + g * q.max(-1),
            r"of shape \(7,\).*; it (returned|is) an? \w+ array of shape \(7, 3\)",
        ),
        (lambda r, te, tr, q, g: n_step_answer(r, te, tr, q, g) + 0.5, "expected"),
        (lambda r, te: r, "raised TypeError"),
    ],
)
def test_n_step_target_mistakes_are_named(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_n_step_target(wrong)


# --- sampling n-step windows -------------------------------------------------------------


def windows_with(start_fn, offset=True, order=None):
    """Windows of n slots from a start drawn by `start_fn(buffer, key, batch_size, n)`."""

    def sample_windows(buffer, key, batch_size, n):
        oldest = (buffer.position - buffer.size) % buffer.capacity if offset else 0
        steps = jnp.arange(n) if order is None else order(n)
        start = start_fn(buffer, key, batch_size, n)
        idx = (oldest + start[:, None] + steps) % buffer.capacity
        return jax.tree.map(lambda leaf: leaf[idx], buffer.data)

    return sample_windows


def uniform_start(b, k, size, n):
    return jax.random.randint(k, (size,), 0, b.size - n + 1)


def test_sample_windows_reference_passes(capsys):
    check_sample_windows(windows_with(uniform_start))
    assert "check passed" in capsys.readouterr().out


def fields_from_different_windows(b, k, size, n):
    k1, k2 = jax.random.split(k)
    first, second = (
        windows_with(uniform_start)(b, k1, size, n),
        windows_with(uniform_start)(b, k2, size, n),
    )
    return {"t": first["t"], "obs": second["obs"]}


@pytest.mark.parametrize(
    "wrong, message",
    [
        (
            windows_with(
                lambda b, k, size, n: jax.random.randint(k, (size,), 0, b.capacity - n + 1)
            ),
            "empty slots",
        ),
        (windows_with(uniform_start, offset=False), "cross the write position"),
        (windows_with(uniform_start, order=lambda n: jnp.arange(n)[::-1]), "reverse time order"),
        (
            windows_with(lambda b, k, size, n: jax.random.randint(k, (size,), 0, b.size - n)),
            "never draws the last window",
        ),
        (
            windows_with(
                lambda b, k, size, n: jnp.minimum(
                    uniform_start(b, k, size, n),
                    uniform_start(b, jax.random.fold_in(k, 1), size, n),
                )
            ),
            "not uniform",
        ),
        (
            windows_with(lambda b, k, size, n: uniform_start(b, jax.random.key(0), size, n)),
            "ignores its key",
        ),
        (fields_from_different_windows, "different slots"),
        (
            lambda b, k, size, n: jax.tree.map(
                lambda x: jnp.swapaxes(x, 0, 1), windows_with(uniform_start)(b, k, size, n)
            ),
            r"\['obs'\] should be a float32 array of shape \(4000, 3, 2\).*; it is a float32 "
            r"array of shape \(3, 4000, 2\)",
        ),
        (lambda b, k, size, n: (b.data["t"], b.data["obs"]), "like the stored ones"),
        (lambda b, k, size: None, "raised TypeError"),
    ],
)
@pytest.mark.usefixtures("no_key_reuse_check")
def test_sample_windows_mistakes_are_named(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_sample_windows(wrong)
