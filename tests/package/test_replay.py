"""Uniform replay buffer: ring order, batch adds, sampling only filled slots, uniformity, errors."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from companion.debug import checked
from companion.replay import (
    replay_add,
    replay_add_batch,
    replay_init,
    replay_sample,
)


class T(NamedTuple):
    obs: jax.Array
    action: jax.Array
    done: jax.Array


EXAMPLE = T(obs=jnp.zeros(3), action=jnp.int32(0), done=jnp.bool_(False))


def _t(i):
    return T(obs=jnp.full(3, float(i)), action=jnp.int32(i), done=jnp.bool_(i % 2 == 0))


def test_init_allocates_zeros_of_the_right_shapes_and_dtypes():
    buffer = replay_init(EXAMPLE, 5)
    assert buffer.capacity == 5
    assert buffer.data.obs.shape == (5, 3) and buffer.data.obs.dtype == jnp.float32
    assert buffer.data.action.shape == (5,) and buffer.data.action.dtype == jnp.int32
    assert buffer.data.done.dtype == jnp.bool_
    assert int(buffer.size) == 0 and int(buffer.position) == 0


def test_ring_order_after_wrap_around():
    buffer = replay_init(EXAMPLE, 5)
    for i in range(7):
        buffer = replay_add(buffer, _t(i))
    np.testing.assert_array_equal(buffer.data.action, [5, 6, 2, 3, 4])
    np.testing.assert_array_equal(buffer.data.obs[:, 0], [5, 6, 2, 3, 4])
    assert int(buffer.position) == 2 and int(buffer.size) == 5


def test_batch_add_crossing_the_end():
    buffer = replay_init(EXAMPLE, 5)
    buffer = replay_add_batch(
        buffer, jax.tree.map(lambda *x: jnp.stack(x), *[_t(i) for i in range(3)])
    )
    assert int(buffer.position) == 3 and int(buffer.size) == 3
    batch = jax.tree.map(lambda *x: jnp.stack(x), *[_t(i) for i in range(10, 14)])
    buffer = replay_add_batch(buffer, batch)  # slots 3, 4, 0, 1
    np.testing.assert_array_equal(buffer.data.action, [12, 13, 2, 10, 11])
    assert int(buffer.position) == 2 and int(buffer.size) == 5


def test_never_samples_an_unfilled_slot():
    buffer = replay_init(EXAMPLE, 100)
    for i in range(1, 11):  # values 1..10; unfilled slots hold 0
        buffer = replay_add(buffer, _t(i))
    batch = replay_sample(buffer, jax.random.key(0), 5000)
    actions = np.asarray(batch.action)
    assert actions.min() >= 1 and actions.max() <= 10
    # transitions stay whole: obs and done belong to the same stored step
    np.testing.assert_array_equal(np.asarray(batch.obs)[:, 0], actions)
    np.testing.assert_array_equal(np.asarray(batch.done), actions % 2 == 0)


@pytest.mark.parametrize("num_added", [10, 23])  # filled once, and after wrapping around
def test_sampling_is_uniform_over_filled_slots(num_added):
    buffer = replay_init(EXAMPLE, 10)
    for i in range(num_added):
        buffer = replay_add(buffer, _t(i))
    batch = jax.jit(replay_sample, static_argnums=2)(buffer, jax.random.key(1), 20_000)
    counts = np.bincount(np.asarray(batch.action), minlength=num_added)[num_added - 10 :]
    assert counts.sum() == 20_000
    assert stats.chisquare(counts).pvalue > 1e-3
    # a sampler biased to one slot fails the same test
    biased = counts.copy()
    biased[0] += 400
    biased[1:] -= 400 // 9
    assert stats.chisquare(biased).pvalue < 1e-3


def test_works_under_jit_scan_and_vmap():
    def fill(key):
        buffer = replay_init(EXAMPLE, 8)

        def body(buffer, i):
            return replay_add(buffer, T(jnp.full(3, i, jnp.float32), i, i % 2 == 0)), None

        buffer, _ = jax.lax.scan(body, buffer, jnp.arange(12))
        return replay_sample(buffer, key, 4).action

    actions = jax.jit(jax.vmap(fill))(jax.random.split(jax.random.key(0), 3))
    assert actions.shape == (3, 4)
    assert np.all((np.asarray(actions) >= 4) & (np.asarray(actions) < 12))


def test_clear_errors():
    for bad in (0, -5, 2.5, True):
        with pytest.raises((TypeError, ValueError), match="capacity: expected a positive int"):
            replay_init(EXAMPLE, bad)
    buffer = replay_init(EXAMPLE, 4)
    with pytest.raises(ValueError, match="transition: structure"):
        replay_add(buffer, {"obs": jnp.zeros(3)})
    with pytest.raises(ValueError, match=r"transition.obs: shape \(4,\), expected \(3,\)"):
        replay_add(buffer, T(jnp.zeros(4), jnp.int32(0), jnp.bool_(False)))
    with pytest.raises(ValueError, match=r"transition.action: dtype float32, expected int32"):
        replay_add(buffer, T(jnp.zeros(3), jnp.float32(0.5), jnp.bool_(False)))
    too_many = jax.tree.map(lambda *x: jnp.stack(x), *[_t(i) for i in range(5)])
    with pytest.raises(ValueError, match="a batch of 5 does not fit a buffer of capacity 4"):
        replay_add_batch(buffer, too_many)
    with pytest.raises(ValueError, match="batch_size: expected a positive int"):
        replay_sample(buffer, jax.random.key(0), 0)
    with pytest.raises(ValueError, match="the buffer is empty"):
        jax.block_until_ready(replay_sample(buffer, jax.random.key(0), 2))
    with pytest.raises(ValueError, match="the buffer is empty"):
        checked(replay_sample, static_argnums=2)(buffer, jax.random.key(0), 2)


def test_unchecked_cores_match_the_public_functions_which_check_once(monkeypatch):
    from companion import replay

    batch = jax.tree.map(lambda *x: jnp.stack(x), *[_t(i) for i in range(3)])
    public = replay_add_batch(replay_init(EXAMPLE, 4), batch)
    core = replay._replay_add_batch(replay._replay_init(EXAMPLE, 4), batch)
    for a, b in zip(jax.tree.leaves(public), jax.tree.leaves(core)):
        np.testing.assert_array_equal(a, b)
    assert (int(core.position), int(core.size)) == (3, 3)
    np.testing.assert_array_equal(core.data.action, [0, 1, 2, 0])
    drawn = replay._replay_sample(core, jax.random.key(1), 6)
    np.testing.assert_array_equal(replay_sample(public, jax.random.key(1), 6).obs, drawn.obs)
    np.testing.assert_array_equal(drawn.obs[:, 0], drawn.action)  # rows stay whole

    calls = []
    check_like = replay._check_like
    counted = lambda *a, **k: calls.append(1) or check_like(*a, **k)  # noqa: E731
    monkeypatch.setattr(replay, "_check_like", counted)
    added = replay_add(public, _t(7))  # one transition: checked once, not again as a batch
    assert len(calls) == 1
    np.testing.assert_array_equal(added.data.action, [0, 1, 2, 7])
