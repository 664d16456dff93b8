"""Pooled auto-reset has the semantics of jumanji's AutoResetWrapper(next_obs_in_extras=True)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats
from tiny import TINY_CONV_NET, TINY_PPO

from companion.envs.autoreset import (
    _pool_entry,
    make_reset_pool,
    pooled_autoreset_step,
    reset_with_next_obs,
)
from companion.envs.maze import EmptyMazeGenerator, make_maze, medium_maze_generator

from jumanji.wrappers import AutoResetWrapper

DOWN, RIGHT = 2, 1


def _positions(obs):
    return np.stack([np.asarray(obs.agent_position.row), np.asarray(obs.agent_position.col)], -1)


def _run(step_fn, state, actions):
    def body(state, action):
        state, ts = step_fn(state, action)
        return state, ts

    return jax.lax.scan(body, state, actions)[1]


def test_same_trajectory_as_jumanji_autoreset_on_a_deterministic_maze():
    """With one start and one target every reset is the same, so both schemes must agree."""
    env = make_maze(generator=EmptyMazeGenerator(), time_limit=30)
    wrapped = AutoResetWrapper(env, next_obs_in_extras=True)
    pool = make_reset_pool(env, jax.random.key(1), 4)
    # 18 moves reach the target; then a second episode that runs into the time limit.
    actions = jnp.array(([DOWN, RIGHT] * 9) + [DOWN] * 40, jnp.int32)

    state_a, _ = wrapped.reset(jax.random.key(0))
    state_b, _ = reset_with_next_obs(env, jax.random.key(0))
    ts_a = _run(jax.jit(wrapped.step), state_a, actions)
    ts_b = _run(jax.jit(lambda s, a: pooled_autoreset_step(env, pool, s, a)), state_b, actions)

    for field in ("step_type", "reward", "discount"):
        np.testing.assert_array_equal(getattr(ts_a, field), getattr(ts_b, field), err_msg=field)
    np.testing.assert_array_equal(_positions(ts_a.observation), _positions(ts_b.observation))
    np.testing.assert_array_equal(
        _positions(ts_a.extras["next_obs"]), _positions(ts_b.extras["next_obs"])
    )
    np.testing.assert_array_equal(ts_a.observation.action_mask, ts_b.observation.action_mask)
    last = np.flatnonzero(np.asarray(ts_b.step_type) == 2)
    assert list(last[:2]) == [17, 47]  # the target after 18 steps, then the time limit of 30


def test_last_step_observation_belongs_to_the_next_episode():
    env = make_maze(generator=EmptyMazeGenerator())
    pool = make_reset_pool(env, jax.random.key(1), 4)
    state, _ = reset_with_next_obs(env, jax.random.key(0))
    actions = jnp.array([DOWN, RIGHT] * 9, jnp.int32)
    ts = _run(lambda s, a: pooled_autoreset_step(env, pool, s, a), state, actions)
    assert int(ts.step_type[-1]) == 2 and float(ts.reward[-1]) == 1.0
    assert float(ts.discount[-1]) == 0.0  # reaching the target: discount 0
    np.testing.assert_array_equal(_positions(ts.extras["next_obs"])[-1], [9, 9])  # terminal
    np.testing.assert_array_equal(_positions(ts.observation)[-1], [0, 0])  # the new episode
    # Before the end, next_obs and observation are the same thing.
    np.testing.assert_array_equal(
        _positions(ts.extras["next_obs"])[:-1], _positions(ts.observation)[:-1]
    )


def test_time_limit_also_gives_discount_zero():
    env = make_maze(generator=EmptyMazeGenerator(), time_limit=5)
    pool = make_reset_pool(env, jax.random.key(1), 2)
    state, _ = reset_with_next_obs(env, jax.random.key(0))
    ts = _run(lambda s, a: pooled_autoreset_step(env, pool, s, a), state, jnp.full(5, DOWN))
    assert int(ts.step_type[-1]) == 2 and float(ts.reward[-1]) == 0.0
    assert float(ts.discount[-1]) == 0.0


def test_pool_entries_are_drawn_uniformly():
    env = make_maze(generator=medium_maze_generator())
    pool = make_reset_pool(env, jax.random.key(0), 8)
    keys = jax.random.split(jax.random.key(1), 8000)
    states, _ = jax.vmap(_pool_entry, in_axes=(None, 0))(pool, keys)
    pool_rows = np.asarray(pool.states.agent_position.row) * 10 + np.asarray(
        pool.states.target_position.row
    )
    drawn = np.asarray(states.agent_position.row) * 10 + np.asarray(states.target_position.row)
    # Count draws per pool entry (entries with equal positions share their counts).
    counts = np.array([np.sum(drawn == v) for v in np.unique(pool_rows)])
    expected = np.array([np.sum(pool_rows == v) for v in np.unique(pool_rows)]) * 1000
    assert stats.chisquare(counts, expected).pvalue > 1e-3


def test_vmapped_pooled_step_runs_many_environments():
    env = make_maze()
    pool = make_reset_pool(env, jax.random.key(0), 16)
    states, ts = jax.vmap(reset_with_next_obs, in_axes=(None, 0))(
        env, jax.random.split(jax.random.key(1), 32)
    )
    step = jax.jit(jax.vmap(pooled_autoreset_step, in_axes=(None, None, 0, 0)), static_argnums=0)
    for _ in range(120):  # longer than the time limit: every environment resets at least once
        mask = ts.observation.action_mask
        actions = jnp.argmax(mask, axis=-1)
        states, ts = step(env, pool, states, actions)
        assert np.all(np.asarray(states.step_count) <= env.time_limit)
    assert np.all(np.asarray(states.step_count) < 120)


def test_pool_size_must_be_positive():
    env = make_maze()
    for bad in (0, -3, 2.5, True):
        with pytest.raises((TypeError, ValueError), match="pool_size: expected a positive int"):
            make_reset_pool(env, jax.random.key(0), bad)


def _to_the_target(image):
    """On the empty 10 x 10 maze only right and down have weight: every episode reaches the
    target (9, 9) in 18 steps, greedy (right along the top row, then down) or sampled."""
    del image
    return jnp.array([0.0, 50.0, 50.0, 0.0]), jnp.zeros(())


def test_an_auto_reset_wrapper_is_refused_where_it_would_hide_reaching_the_target():
    from companion.agents import ppo
    from companion.agents.ppo.evaluate import _evaluate
    from companion.envs.maze import make_maze_task

    from jumanji.wrappers import AutoResetWrapper, VmapAutoResetWrapper

    env = make_maze_task("empty")
    evaluation = ppo.evaluate(_to_the_target, env, jax.random.key(0), num_episodes=3, greedy=True)
    np.testing.assert_array_equal(evaluation.success, [True] * 3)
    np.testing.assert_array_equal(evaluation.length, [18] * 3)
    starts = jax.random.split(jax.random.key(3), 2)
    state, ts = jax.vmap(reset_with_next_obs, in_axes=(None, 0))(env, starts)
    pool = make_reset_pool(env, jax.random.key(1), 2)
    _, _, traj = ppo.rollout(_to_the_target, env, pool, state, ts, jax.random.key(2), 20)
    ends = np.zeros((20, 2), bool)
    ends[17] = True  # the 18th step reaches the target: a termination, no bootstrap
    np.testing.assert_array_equal(traj.terminated, ends)
    np.testing.assert_array_equal(traj.next_value[17], [0.0, 0.0])

    # What the checks prevent: past them, a wrapper restarts each episode as it reaches the
    # target, so the same agent would be reported as never succeeding in 0 steps.
    wrapped = AutoResetWrapper(env)
    hidden = _evaluate(_to_the_target, wrapped, jax.random.key(0), 3, jnp.asarray(True), False)
    np.testing.assert_array_equal(hidden.success, [False] * 3)
    np.testing.assert_array_equal(hidden.length, [0] * 3)

    message = r"env: expected a jumanji Maze without wrappers, got AutoResetWrapper\(Maze\)"
    with pytest.raises(TypeError, match=message + r".*env\.unwrapped"):
        ppo.evaluate(_to_the_target, wrapped, jax.random.key(4), num_episodes=3, greedy=True)
    with pytest.raises(TypeError, match=message):
        ppo.rollout(_to_the_target, wrapped, pool, state, ts, jax.random.key(2), 20)
    with pytest.raises(TypeError, match=message):
        ppo.rollout(_to_the_target, wrapped, None, state, ts, jax.random.key(8), 20)
    with pytest.raises(TypeError, match=message):
        make_reset_pool(wrapped, jax.random.key(1), 2)
    with pytest.raises(TypeError, match=message):
        reset_with_next_obs(wrapped, jax.random.key(5))
    with pytest.raises(TypeError, match=message):
        pooled_autoreset_step(wrapped, pool, jax.tree.map(lambda x: x[0], state), 1)
    with pytest.raises(
        TypeError,
        match=r"env: expected a jumanji Maze without wrappers, got "
        r"VmapAutoResetWrapper\(",
    ):
        ppo.make_trainer(
            TINY_PPO,
            TINY_CONV_NET,
            VmapAutoResetWrapper(env),
        )
    # The advice of the message: the unwrapped Maze (the same object) gives the true numbers.
    unwrapped = ppo.evaluate(_to_the_target, wrapped.unwrapped, jax.random.key(7), 3, True)
    np.testing.assert_array_equal(unwrapped.length, [18] * 3)
