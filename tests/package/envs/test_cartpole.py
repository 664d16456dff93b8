"""The JAX CartPole against gymnasium's CartPole-v1, step for step."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from companion.debug import checked
from companion.envs import cartpole as cp

BALANCE = np.array([0.1, 0.5, 10.0, 2.0])  # a linear controller that survives 500 steps


def balance_action(obs):
    return int(np.dot(BALANCE, np.asarray(obs, np.float64)) > 0)


@pytest.fixture
def gym_env():
    env = gym.make("CartPole-v1")
    yield env
    env.close()


def _state(physics, step_count=0):
    return cp.CartPoleState(
        physics=jnp.asarray(physics, jnp.float32),
        step_count=jnp.asarray(step_count, jnp.int32),
        key=jax.random.key(0),
    )


def test_constants_match_gymnasium(gym_env):
    g = gym_env.unwrapped
    p = cp.DEFAULT_PARAMS
    for name in ("gravity", "masscart", "masspole", "length", "force_mag", "tau", "x_threshold"):
        assert getattr(p, name) == getattr(g, name), name
    assert p.total_mass == pytest.approx(g.total_mass)
    assert p.polemass_length == pytest.approx(g.polemass_length) == pytest.approx(0.05)
    assert p.theta_threshold == pytest.approx(g.theta_threshold_radians)
    assert p.theta_threshold == pytest.approx(0.20943951)
    assert p.max_steps == gym_env.spec.max_episode_steps == 500


def _gym_step_from(gym_env, physics, action):
    gym_env.unwrapped.state = np.asarray(physics, np.float64)
    gym_env.unwrapped.steps_beyond_terminated = None
    obs, reward, terminated, _, _ = gym_env.unwrapped.step(action)
    return obs, reward, terminated


def test_single_steps_from_random_states_match(gym_env):
    rng = np.random.default_rng(0)
    step = jax.jit(cp.step)
    scale = np.array([2.4, 2.0, 0.21, 3.0])
    for _ in range(300):
        physics = (rng.uniform(-1, 1, 4) * scale).astype(np.float32)
        action = int(rng.integers(2))
        _, ts = step(_state(physics), action)
        obs, reward, terminated = _gym_step_from(gym_env, physics, action)
        np.testing.assert_allclose(ts.obs, obs, rtol=1e-5, atol=1e-6)
        assert float(ts.reward) == reward == 1.0
        assert bool(ts.terminated) == terminated


@pytest.mark.parametrize(
    "physics, action",
    [
        ([2.39, 1.0, 0.0, 0.0], 1),  # leaves the track on the right
        ([-2.39, -1.0, 0.0, 0.0], 0),  # on the left
        ([0.0, 0.0, 0.205, 1.0], 1),  # the pole falls to the right
        ([0.0, 0.0, -0.205, -1.0], 0),  # to the left
    ],
)
def test_terminations_on_both_limits(gym_env, physics, action):
    _, ts = cp.step(_state(physics), action)
    obs, reward, terminated = _gym_step_from(gym_env, physics, action)
    assert terminated and bool(ts.terminated)
    assert float(ts.reward) == reward == 1.0  # reward 1 on the terminating step too
    assert not bool(ts.truncated)
    np.testing.assert_allclose(ts.obs, obs, rtol=1e-5, atol=1e-6)


def test_staying_inside_the_limits_does_not_terminate(gym_env):
    physics = [2.3, 0.0, 0.0, 0.0]
    _, ts = cp.step(_state(physics), 0)
    _, _, terminated = _gym_step_from(gym_env, physics, 0)
    assert not terminated and not bool(ts.terminated)


def test_whole_episodes_match_gym_make_step_for_step(gym_env):
    """Same initial state, same actions; each step starts from gymnasium's state."""
    step = jax.jit(cp.step)
    rng = np.random.default_rng(1)
    for seed, policy in [(0, "random"), (1, "random"), (2, "balance")]:
        obs, _ = gym_env.reset(seed=seed)
        state = _state(gym_env.unwrapped.state)
        for t in range(1, 501):
            action = int(rng.integers(2)) if policy == "random" else balance_action(obs)
            gym_physics = np.asarray(gym_env.unwrapped.state)
            state = state._replace(physics=jnp.asarray(gym_physics, jnp.float32))
            state, ts = step(state, action)
            obs, reward, terminated, truncated, _ = gym_env.step(action)
            np.testing.assert_allclose(ts.obs, obs, rtol=1e-5, atol=1e-5)
            assert float(ts.reward) == reward
            assert (bool(ts.terminated), bool(ts.truncated)) == (terminated, truncated), t
            assert int(state.step_count) == t
            if terminated or truncated:
                break
        if policy == "balance":
            assert t == 500 and truncated and not terminated


def test_truncation_at_500_steps_is_not_termination():
    state, obs = cp.reset(jax.random.key(3))
    step = jax.jit(cp.step)
    for t in range(1, 501):
        state, ts = step(state, balance_action(obs))
        obs = ts.obs
        if t < 500:
            assert not bool(ts.truncated) and not bool(ts.terminated), t
    assert bool(ts.truncated) and not bool(ts.terminated)


def test_reset_is_uniform_in_the_box():
    states, obs = jax.vmap(cp.reset)(jax.random.split(jax.random.key(0), 20000))
    obs = np.asarray(obs)
    assert obs.shape == (20000, 4) and obs.dtype == np.float32
    assert np.all(np.abs(obs) <= 0.05)
    for i in range(4):
        assert stats.kstest(obs[:, i], stats.uniform(loc=-0.05, scale=0.1).cdf).pvalue > 1e-3
    assert abs(np.corrcoef(obs.T)[0, 1]) < 0.05
    assert np.all(np.asarray(states.step_count) == 0)
    # Different keys give different starts; the same key the same start.
    a, b = cp.reset(jax.random.key(1))[1], cp.reset(jax.random.key(1))[1]
    np.testing.assert_array_equal(a, b)


def test_autoreset_starts_a_new_episode_and_keeps_the_final_observation():
    physics = [0.0, 0.0, 0.205, 1.0]  # terminates on the next step
    state, ts = cp.step_autoreset(_state(physics, step_count=17), 1)
    plain_state, plain_ts = cp.step(_state(physics, step_count=17), 1)
    assert bool(ts.terminated) and float(ts.reward) == 1.0
    np.testing.assert_array_equal(ts.next_obs, plain_ts.obs)  # the true terminal observation
    assert int(state.step_count) == 0
    assert np.all(np.abs(np.asarray(state.physics)) <= 0.05)
    np.testing.assert_array_equal(ts.obs, state.physics)  # obs belongs to the new episode

    # Mid-episode, step_autoreset is step.
    mid = _state([0.0, 0.1, 0.0, 0.0], step_count=5)
    s1, t1 = cp.step_autoreset(mid, 0)
    s2, t2 = cp.step(mid, 0)
    np.testing.assert_array_equal(t1.obs, t2.obs)
    assert int(s1.step_count) == 6


def test_autoreset_on_truncation():
    state = _state([0.0, 0.0, 0.0, 0.0], step_count=499)
    new_state, ts = cp.step_autoreset(state, 1)
    assert bool(ts.truncated) and not bool(ts.terminated)
    assert int(new_state.step_count) == 0
    assert float(np.abs(np.asarray(ts.next_obs[1]))) > 0.1  # pushed: velocity 0.195 m/s


def test_autoreset_runs_under_vmap_and_scan():
    def rollout(key):
        reset_key, key = jax.random.split(key)
        state, _ = cp.reset(reset_key)

        def body(carry, _):
            state, k = carry
            k, k_t = jax.random.split(k)
            action = jax.random.bernoulli(k_t).astype(jnp.int32)
            state, ts = cp.step_autoreset(state, action)
            return (state, k), ts.done

        return jax.lax.scan(body, (state, key), None, length=200)[1]

    done = jax.jit(jax.vmap(rollout))(jax.random.split(jax.random.key(0), 8))
    assert done.shape == (8, 200)
    assert int(done.sum()) > 8  # random actions end episodes after about 20 steps


def test_bad_actions_give_clear_errors():
    state, _ = cp.reset(jax.random.key(0))
    with pytest.raises(TypeError, match="action: expected an integer"):
        cp.step(state, 1.0)
    with pytest.raises(ValueError, match=r"action: expected a scalar.*shape \(2,\)"):
        cp.step(state, jnp.array([0, 1]))
    for bad in (2, -1):
        with pytest.raises(ValueError, match="action: expected 0 .push left. or 1"):
            jax.block_until_ready(cp.step(state, bad))
        with pytest.raises(ValueError, match="action: expected 0 .push left. or 1"):
            jax.block_until_ready(checked(cp.step)(state, bad))
    states, _ = jax.vmap(cp.reset)(jax.random.split(jax.random.key(0), 3))
    with pytest.raises(ValueError, match="action: expected 0 .push left. or 1"):
        jax.block_until_ready(checked(jax.vmap(cp.step))(states, jnp.array([0, 1, 3])))
    # A plain jit leaves the value check out of the program: no host callback in it.
    jaxpr = str(jax.make_jaxpr(jax.jit(cp.step))(state, 2))
    assert "callback" not in jaxpr
    # Booleans are accepted (True pushes right), as gymnasium accepts them.
    _, ts_true = cp.step(state, True)
    _, ts_one = cp.step(state, 1)
    np.testing.assert_array_equal(ts_true.obs, ts_one.obs)


@pytest.mark.parametrize("index, threshold", [(0, 2.4), (2, 12 * 2 * np.pi / 360)])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_thresholds_decide_as_gymnasium_next_to_them(gym_env, index, threshold, sign):
    """float32 values next to a threshold terminate exactly when gymnasium's float64 test does.

    With zero velocities the step leaves the position (or angle) unchanged, so both
    environments test the same value; float32(threshold) lies above the float64 threshold
    for both limits, so gymnasium terminates there (a float32 comparison would not).
    """
    t32 = np.float32(threshold)
    candidates = [np.nextafter(t32, np.float32(0)), t32, np.nextafter(t32, np.float32(9))]
    decisions = []
    for value in candidates:
        physics = np.zeros(4, np.float32)
        physics[index] = sign * value
        _, ts = cp.step(_state(physics), 0)
        assert float(ts.obs[index]) == float(physics[index])  # unchanged by the step
        _, _, terminated = _gym_step_from(gym_env, physics, 0)
        assert bool(ts.terminated) == terminated, (float(value), terminated)
        decisions.append(terminated)
    assert decisions == [False, True, True]
