"""PPO pieces against independent references: plain-Python GAE, rlax, hand-computed values."""

import functools
import math
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from compilations import count_compiles
from tiny import TINY_CONV_NET, TINY_PPO, TINY_PROPAGATION_NET

from companion.agents import ppo
from companion.agents.ppo.train import episode_stats, shuffle_minibatches
from companion.envs import maze as maze_lib
from companion.envs.autoreset import make_reset_pool, reset_with_next_obs

with warnings.catch_warnings():
    # rlax imports distrax and tensorflow-probability, which touch deprecated jax.core names.
    warnings.simplefilter("ignore", DeprecationWarning)
    import rlax

# --------------------------------------------------------------------------------------
# Masked categorical policy
# --------------------------------------------------------------------------------------


def test_masked_actions_get_probability_zero_and_are_never_sampled():
    logits = jnp.array([2.0, -1.0, 0.5, 3.0])
    mask = jnp.array([True, False, True, False])
    masked = ppo.masked_logits(logits, mask)
    probs = jax.nn.softmax(masked)
    assert probs[1] == 0.0 and probs[3] == 0.0
    np.testing.assert_allclose(probs[0], math.exp(2) / (math.exp(2) + math.exp(0.5)), rtol=1e-6)
    samples = jax.random.categorical(jax.random.PRNGKey(0), masked, shape=(20_000,))
    assert set(np.unique(np.asarray(samples))) == {0, 2}


def test_entropy_of_two_legal_actions_is_ln2_with_finite_gradient():
    logits = jnp.array([0.0, 0.0, -jnp.inf, -jnp.inf])
    np.testing.assert_allclose(ppo.entropy(logits), math.log(2), rtol=1e-6)
    grad = jax.grad(ppo.entropy)(logits)
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, 0.0, atol=1e-7)  # uniform over legal: a maximum


def test_naive_entropy_would_be_nan_where_ours_is_finite():
    # The reason for entropy()'s care: -sum(p log p) with p = 0 gives 0 * -inf.
    logits = jnp.array([1.0, -0.5, -jnp.inf, 0.3])

    def naive(x):
        p = jax.nn.softmax(x)
        return -jnp.sum(p * jax.nn.log_softmax(x))

    assert np.isnan(naive(logits))
    value, grad = jax.value_and_grad(ppo.entropy)(logits)
    finite = jnp.array([1.0, -0.5, 0.3])
    p = jax.nn.softmax(finite)
    np.testing.assert_allclose(value, -np.sum(p * np.log(p)), rtol=1e-6)
    assert np.all(np.isfinite(grad)) and grad[2] == 0.0


def test_log_prob_and_gradients_through_masked_logits_are_finite():
    def f(raw):
        masked = ppo.masked_logits(raw, jnp.array([False, True, True, False]))
        return ppo.log_prob(masked, jnp.array(1)) + 0.1 * ppo.entropy(masked)

    raw = jnp.array([0.3, 1.0, -2.0, 0.7])
    value = f(raw)
    np.testing.assert_allclose(
        ppo.log_prob(ppo.masked_logits(raw, jnp.array([False, True, True, False])), jnp.array(1)),
        1.0 - np.log(np.exp(1.0) + np.exp(-2.0)),
        rtol=1e-6,
    )
    grad = jax.grad(f)(raw)
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    assert grad[0] == 0.0 and grad[3] == 0.0  # illegal logits get no gradient


def test_masked_logits_rejects_bad_mask():
    with pytest.raises(TypeError, match="action_mask: expected dtype bool"):
        ppo.masked_logits(jnp.zeros(4), jnp.ones(4))
    with pytest.raises(ValueError, match="action_mask: shape"):
        ppo.masked_logits(jnp.zeros(4), jnp.ones(3, bool))


# --------------------------------------------------------------------------------------
# GAE
# --------------------------------------------------------------------------------------


def gae_loop(reward, value, value_tp1, terminated, done, gamma, lam):
    """Plain-Python GAE, one environment, time on axis 0."""
    T = len(reward)
    adv = [0.0] * T
    next_adv = 0.0
    for t in reversed(range(T)):
        delta = reward[t] + gamma * (1.0 - terminated[t]) * value_tp1[t] - value[t]
        next_adv = delta + gamma * lam * (1.0 - done[t]) * next_adv
        adv[t] = next_adv
    return np.array(adv)


def test_gae_hand_computed_three_steps_with_a_boundary_in_the_middle():
    # Step 0: ordinary; step 1: the episode terminates (reward 1); step 2: first
    # step of the next episode, the rollout ends there (bootstrap from V = 0.5).
    gamma, lam = 0.9, 0.8
    reward = jnp.array([0.0, 1.0, 0.0])
    value = jnp.array([0.2, 0.4, 0.3])
    value_tp1 = jnp.array([0.4, 0.7, 0.5])  # 0.7: value of the terminal observation, unused
    terminated = jnp.array([False, True, False])
    done = terminated
    adv, ret = ppo.gae(reward, value, value_tp1, terminated, done, gamma, lam)
    a2 = 0.0 + 0.9 * 0.5 - 0.3  # 0.15
    a1 = 1.0 - 0.4  # 0.6: no bootstrap, and the sum stops at the boundary
    a0 = (0.0 + 0.9 * 0.4 - 0.2) + 0.9 * 0.8 * a1  # 0.16 + 0.432 = 0.592
    np.testing.assert_allclose(adv, [a0, a1, a2], rtol=1e-6)
    np.testing.assert_allclose(ret, np.array([a0, a1, a2]) + np.array(value), rtol=1e-6)


def test_gae_truncation_bootstraps_from_the_final_observation():
    # Same as above, but the episode is truncated at step 1: it bootstraps from 0.7.
    gamma, lam = 0.9, 0.8
    adv, _ = ppo.gae(
        jnp.array([0.0, 0.0, 0.0]),
        jnp.array([0.2, 0.4, 0.3]),
        jnp.array([0.4, 0.7, 0.5]),
        jnp.array([False, False, False]),
        jnp.array([False, True, False]),
        gamma,
        lam,
    )
    a1 = 0.9 * 0.7 - 0.4
    np.testing.assert_allclose(adv[1], a1, rtol=1e-6)
    np.testing.assert_allclose(adv[0], (0.9 * 0.4 - 0.2) + 0.72 * a1, rtol=1e-6)


def random_rollout_arrays(seed, T=50, N=3):
    rng = np.random.default_rng(seed)
    done = rng.random((T, N)) < 0.15
    terminated = done & (rng.random((T, N)) < 0.6)
    reward = rng.normal(size=(T, N)).astype(np.float32)
    value = rng.normal(size=(T, N)).astype(np.float32)
    value_tp1 = rng.normal(size=(T, N)).astype(np.float32)
    return reward, value, value_tp1, terminated, done


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gae_matches_plain_python_loop(seed):
    reward, value, value_tp1, terminated, done = random_rollout_arrays(seed)
    gamma, lam = 0.97, 0.9
    adv, _ = ppo.gae(*map(jnp.asarray, (reward, value, value_tp1, terminated, done)), gamma, lam)
    for n in range(reward.shape[1]):
        expected = gae_loop(
            reward[:, n], value[:, n], value_tp1[:, n], terminated[:, n], done[:, n], gamma, lam
        )
        np.testing.assert_allclose(adv[:, n], expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1])
def test_gae_matches_rlax_with_terminations(seed):
    # rlax takes V(s_0..s_T) and discount_t; with only terminations (no
    # truncation), discount_t = gamma * (1 - terminated_t) and lambda cuts the
    # sum at the same boundaries.
    T = 40
    rng = np.random.default_rng(seed)
    values = rng.normal(size=T + 1).astype(np.float32)
    reward = rng.normal(size=T).astype(np.float32)
    terminated = rng.random(T) < 0.1
    gamma, lam = 0.99, 0.95
    expected = rlax.truncated_generalized_advantage_estimation(
        jnp.asarray(reward),
        jnp.asarray(gamma * (1.0 - terminated), jnp.float32),
        lam,
        jnp.asarray(values),
    )
    adv, _ = ppo.gae(
        jnp.asarray(reward),
        jnp.asarray(values[:-1]),
        jnp.asarray(values[1:]),
        jnp.asarray(terminated),
        jnp.asarray(terminated),
        gamma,
        lam,
    )
    np.testing.assert_allclose(adv, expected, rtol=1e-4, atol=1e-5)


def test_gae_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="expected one shape"):
        z = jnp.zeros(5)
        ppo.gae(z, z, jnp.zeros(4), z, z, 0.99, 0.95)


# --------------------------------------------------------------------------------------
# Loss
# --------------------------------------------------------------------------------------


def test_clipped_surrogate_hand_values():
    ratio = jnp.array([1.5, 0.5, 0.5, 1.5, 1.1])
    adv = jnp.array([1.0, 1.0, -1.0, -1.0, 2.0])
    np.testing.assert_allclose(
        ppo.clipped_surrogate(ratio, adv, 0.2), [1.2, 0.5, -0.8, -1.5, 2.2], rtol=1e-6
    )


def test_normalise_constant_advantages_gives_zeros_not_nan():
    out = ppo.normalise(jnp.full((64,), 3.0))
    np.testing.assert_array_equal(out, 0.0)
    x = jnp.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(ppo.normalise(x), (x - 2.5) / np.std([1, 2, 3, 4]), rtol=1e-5)


def make_batch(model, key, size=32, constant_advantage=None):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    image = jax.random.bernoulli(k1, 0.3, (size, 3, 10, 10)).astype(jnp.float32)
    mask = jax.random.bernoulli(k2, 0.6, (size, 4)).at[:, 0].set(True)
    logits, value = jax.vmap(model)(image)
    logits = ppo.masked_logits(logits, mask)
    action = jax.random.categorical(k3, logits).astype(jnp.int32)
    adv = (
        jnp.full((size,), constant_advantage)
        if constant_advantage is not None
        else jax.random.normal(k4, (size,))
    )
    return ppo.Batch(
        image=image,
        action_mask=mask,
        action=action,
        log_prob=ppo.log_prob(logits, action),
        value=value,
        advantage=adv,
        target=value + adv,
    )


def test_ppo_loss_at_the_acting_policy_is_minus_entropy_bonus_plus_value_loss():
    model = ppo.ActorCritic(jax.random.PRNGKey(0))
    batch = make_batch(model, jax.random.PRNGKey(1))
    loss, metrics = ppo.ppo_loss(model, batch, 0.2, 0.5, 0.01)
    # ratio = 1 everywhere, so the surrogate is mean(normalised A) = 0.
    np.testing.assert_allclose(metrics["policy_loss"], 0.0, atol=1e-6)
    np.testing.assert_allclose(metrics["approx_kl"], 0.0, atol=1e-6)
    expected_value_loss = 0.5 * np.mean(np.asarray(batch.advantage) ** 2)
    np.testing.assert_allclose(metrics["value_loss"], expected_value_loss, rtol=1e-5)
    np.testing.assert_allclose(
        loss, 0.5 * expected_value_loss - 0.01 * metrics["entropy"], rtol=1e-5
    )


def test_ppo_loss_finite_for_constant_advantages_and_masked_actions():
    model = ppo.ActorCritic(jax.random.PRNGKey(0))
    batch = make_batch(model, jax.random.PRNGKey(2), constant_advantage=1.0)
    params, static = eqx.partition(model, eqx.is_inexact_array)
    loss, grads = jax.value_and_grad(lambda p: ppo.ppo_loss(eqx.combine(p, static), batch)[0])(
        params
    )
    assert np.isfinite(loss)
    assert all(np.all(np.isfinite(g)) for g in jax.tree.leaves(grads))


def test_ppo_loss_uses_the_stored_mask():
    model = ppo.ActorCritic(jax.random.PRNGKey(0))
    batch = make_batch(model, jax.random.PRNGKey(3))
    # With only the taken action legal, its probability is 1: log-ratio = -log_prob_old.
    only_taken = jax.nn.one_hot(batch.action, 4).astype(bool)
    _, metrics = ppo.ppo_loss(model, batch._replace(action_mask=only_taken))
    _, metrics_stored = ppo.ppo_loss(model, batch)
    assert metrics_stored["approx_kl"] < 1e-6 < metrics["approx_kl"]
    np.testing.assert_allclose(metrics["entropy"], 0.0, atol=1e-6)


# --------------------------------------------------------------------------------------
# Network
# --------------------------------------------------------------------------------------


def test_actor_critic_shapes_and_near_uniform_first_policy():
    model = ppo.ActorCritic(jax.random.PRNGKey(0), channels=(8,), hidden_sizes=(32,))
    images = jax.random.bernoulli(jax.random.PRNGKey(1), 0.3, (5, 3, 10, 10)).astype(jnp.float32)
    logits, value = jax.vmap(model)(images)
    assert logits.shape == (5, 4) and value.shape == (5,)
    assert logits.dtype == jnp.float32
    probs = jax.nn.softmax(logits)
    np.testing.assert_allclose(probs, 0.25, atol=0.02)  # small policy-head gain
    # orthogonal heads: rows of the policy head are orthogonal with norm 0.01
    w = np.asarray(model.policy_head.weight)
    np.testing.assert_allclose(w @ w.T, 1e-4 * np.eye(4), atol=1e-8)
    np.testing.assert_array_equal(np.asarray(model.policy_head.bias), 0.0)


def test_actor_critic_rejects_empty_hidden_sizes():
    with pytest.raises(ValueError, match="hidden_sizes"):
        ppo.ActorCritic(jax.random.PRNGKey(0), hidden_sizes=())


# --------------------------------------------------------------------------------------
# Rollout, training, evaluation
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("reset", ["pooled", "per_step"])
def test_rollout_takes_only_legal_actions_and_labels_episode_ends(reset):
    env = maze_lib.make_maze_task("random", time_limit=12)
    model = ppo.ActorCritic(jax.random.PRNGKey(0), channels=(4,), hidden_sizes=(16,))
    n, T = 8, 40

    @jax.jit  # one program, not one per operation
    def rollout(model):
        state, ts = jax.vmap(reset_with_next_obs, in_axes=(None, 0))(
            env, jax.random.split(jax.random.PRNGKey(1), n)
        )
        pool = make_reset_pool(env, jax.random.PRNGKey(2), n) if reset == "pooled" else None
        return ppo.rollout(model, env, pool, state, ts, jax.random.PRNGKey(3), T)[2]

    traj = jax.tree.map(np.asarray, rollout(model))
    assert traj.action.shape == (T, n) and traj.image.shape == (T, n, 3, 10, 10)
    legal = np.take_along_axis(np.asarray(traj.action_mask), np.asarray(traj.action)[..., None], -1)
    assert legal.all()
    done, term = np.asarray(traj.done), np.asarray(traj.terminated)
    assert done.any() and not np.any(term & ~done)
    np.testing.assert_array_equal(np.asarray(traj.reward) > 0, term)
    # truncations happen at the time limit, terminations at any length
    assert np.all(np.asarray(traj.step_count)[done & ~term] == 12)
    # the mask stored is the mask of the observation the action was taken in
    walls = np.asarray(traj.image[..., 0, :, :]) > 0
    agent = np.argwhere(np.asarray(traj.image[0, 0, 1]) > 0)[0]
    r, c = agent
    expected = [
        r > 0 and not walls[0, 0, r - 1, c],
        c < 9 and not walls[0, 0, r, c + 1],
        r < 9 and not walls[0, 0, r + 1, c],
        c > 0 and not walls[0, 0, r, c - 1],
    ]
    np.testing.assert_array_equal(np.asarray(traj.action_mask[0, 0]), expected)


@pytest.mark.parametrize("reset", ["pooled", "per_step"])
def test_next_value_is_the_value_of_the_true_next_observation(reset):
    # Reference: V of the next observation, built independently from what the rollout stored:
    # the next step's image within an episode, the image the rollout ends on after its last
    # step, and at a truncation this step's image with the agent moved by the action taken.
    # time_limit 3 and a first rollout of 2 steps put ceil(10 / 3) = 4 truncations into one
    # environment's 10 steps: the most that next_values makes room for.
    env = maze_lib.make_maze_task("random", time_limit=3)
    model = ppo.ActorCritic(jax.random.PRNGKey(0), channels=(4,), hidden_sizes=(16,))
    n, T = 6, 10

    @jax.jit  # one program, not one per operation
    def rollouts(model):
        state, ts = jax.vmap(reset_with_next_obs, in_axes=(None, 0))(
            env, jax.random.split(jax.random.PRNGKey(1), n)
        )
        pool = make_reset_pool(env, jax.random.PRNGKey(2), n) if reset == "pooled" else None
        state, ts, _ = ppo.rollout(model, env, pool, state, ts, jax.random.PRNGKey(3), 2)
        _, ts_end, traj = ppo.rollout(model, env, pool, state, ts, jax.random.PRNGKey(4), T)
        return ts_end, traj

    ts_end, traj = rollouts(model)
    done, term = np.asarray(traj.done), np.asarray(traj.terminated)
    truncated = done & ~term
    assert truncated.sum(0).max() == 4 and term.any()
    image = np.asarray(traj.image, np.float32)
    last = np.asarray(jax.vmap(maze_lib.observation_image)(ts_end.observation))
    next_image = np.concatenate([image[1:], last[None]])
    moves = np.array([(-1, 0), (0, 1), (1, 0), (0, -1)])  # up, right, down, left
    for t, i in zip(*np.nonzero(truncated)):
        ((r, c),) = np.argwhere(image[t, i, 1] > 0)
        dr, dc = moves[int(traj.action[t, i])]
        next_image[t, i] = image[t, i]
        next_image[t, i, 1] = 0.0
        next_image[t, i, 1, r + dr, c + dc] = 1.0
    _, value_tp1 = jax.jit(jax.vmap(jax.vmap(model)))(jnp.asarray(next_image))
    expected = np.where(term, 0.0, np.asarray(value_tp1))
    assert traj.next_value.dtype == jnp.float32 and traj.image.dtype == jnp.bool_
    np.testing.assert_allclose(np.asarray(traj.next_value), expected, rtol=1e-5, atol=1e-6)
    # at a truncation the next step belongs to a new episode, whose value is another one
    naive = np.concatenate([np.asarray(traj.value)[1:], np.asarray(value_tp1)[-1:]])
    assert not np.allclose(np.asarray(traj.next_value)[truncated], naive[truncated])


def test_per_step_and_pooled_resets_agree_until_an_episode_ends():
    # Both reset schemes step the same environments with the same keys; they may
    # differ only after an episode ends (where each starts a new one its own way).
    env = maze_lib.make_maze_task("random")
    model = ppo.ActorCritic(jax.random.PRNGKey(0), channels=(4,), hidden_sizes=(16,))
    n, T = 16, 30

    @jax.jit  # one program, not one per operation
    def rollouts(model):
        state, ts = jax.vmap(reset_with_next_obs, in_axes=(None, 0))(
            env, jax.random.split(jax.random.PRNGKey(1), n)
        )
        pool = make_reset_pool(env, jax.random.PRNGKey(2), n)
        _, _, pooled = ppo.rollout(model, env, pool, state, ts, jax.random.PRNGKey(3), T)
        _, _, per_step = ppo.rollout(model, env, None, state, ts, jax.random.PRNGKey(3), T)
        return pool, pooled, per_step

    pool, pooled, per_step = rollouts(model)
    done = np.asarray(pooled.done)
    first_end = np.where(done.any(0), done.argmax(0), T)  # per environment
    assert (first_end < T).any()
    for t in range(T):
        same = t <= first_end  # up to and including the step that ends the first episode
        for field in ("image", "action", "reward", "terminated", "done", "next_value"):
            a, b = np.asarray(getattr(pooled, field)[t]), np.asarray(getattr(per_step, field)[t])
            np.testing.assert_array_equal(a[same], b[same], err_msg=f"{field} at t={t}")
    # after an end, the per-step reset draws a new maze: the pooled one comes from the pool
    env_i = int(np.argmin(first_end))
    t_i = int(first_end[env_i]) + 1
    assert t_i < T
    walls_pooled = np.asarray(pooled.image[t_i, env_i, 0])
    walls_per_step = np.asarray(per_step.image[t_i, env_i, 0])
    assert any(
        np.array_equal(walls_pooled, w) for w in np.asarray(pool.states.walls, dtype=np.float32)
    )
    assert not np.array_equal(walls_pooled, walls_per_step)


EMPTY = maze_lib.make_maze_task("empty")


def test_train_is_pure_compiles_once_per_config_and_vmaps_over_seeds():
    trainer = ppo.make_trainer(TINY_PPO, TINY_CONV_NET, EMPTY)
    train = jax.jit(trainer.train)
    runner_a, metrics = train(jax.random.PRNGKey(0))
    with count_compiles() as compiles:
        runner_b, _ = train(jax.random.PRNGKey(1))
    assert compiles == []
    assert isinstance(runner_a, ppo.RunnerState)
    assert metrics["success_rate"].shape == (TINY_PPO.num_updates,) == (4,)
    np.testing.assert_array_equal(metrics["env_steps"], [64, 128, 192, 256])
    model_a = ppo.trained_model(TINY_CONV_NET, runner_a)
    model_b = ppo.trained_model(TINY_CONV_NET, runner_b)
    leaves_a, leaves_b = jax.tree.leaves(model_a), jax.tree.leaves(model_b)
    assert any(not np.allclose(a, b) for a, b in zip(leaves_a, leaves_b))
    runners, metrics = jax.jit(jax.vmap(trainer.train))(jax.random.split(jax.random.PRNGKey(2), 3))
    assert metrics["entropy"].shape == (3, 4)
    assert ppo.trained_model(TINY_CONV_NET, runners).policy_head.weight.shape == (3, 4, 16)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"num_minibatches": 3}, "num_minibatches"),
        ({"total_timesteps": 10}, "total_timesteps"),
        ({"reset": "every step"}, "config.reset: unknown value"),
    ],
)
def test_make_train_rejects_bad_configs(changes, message):
    with pytest.raises(ValueError, match=message):
        ppo.make_train(TINY_PPO._replace(**changes), TINY_CONV_NET, EMPTY)


def test_ppo_learns_the_empty_maze():
    config = ppo.FIXED_MAZE_CONFIG._replace(num_envs=32, total_timesteps=40_960, num_minibatches=2)
    env = maze_lib.make_maze_task("empty")
    trainer = ppo.make_trainer(config, ppo.FIXED_MAZE_NETWORK, env)
    runner, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0))
    model = ppo.trained_model(ppo.FIXED_MAZE_NETWORK, runner)
    result = ppo.evaluate(model, env, jax.random.PRNGKey(7), num_episodes=50, greedy=True)
    assert np.mean(result.success) == 1.0
    np.testing.assert_array_equal(result.length, 18)  # the shortest path, 9 + 9 moves
    assert metrics["success_rate"][-1] > 0.9


def test_evaluate_random_policy_against_bfs():
    env = maze_lib.make_maze_task("random")
    model = ppo.ActorCritic(jax.random.PRNGKey(0), channels=(4,), hidden_sizes=(16,))
    result = ppo.evaluate(model, env, jax.random.PRNGKey(1), num_episodes=20, record_states=True)
    first = result.start
    assert np.array_equal(first.walls, result.states.walls[0])
    shortest = ppo.shortest_path_lengths(first)
    success, length = np.asarray(result.success), np.asarray(result.length)
    assert np.all(shortest > 0)
    assert np.all(length[success] >= shortest[success])  # nobody beats BFS
    assert np.all(length[~success] == env.time_limit)
    # the last recorded state of a successful episode stands on the target
    last = jax.tree.map(lambda x: x[-1], result.states)
    np.testing.assert_array_equal(np.asarray(ppo.reached_target(last)), success)
    with pytest.raises(ValueError, match="num_episodes"):
        ppo.evaluate(model, env, jax.random.PRNGKey(1), num_episodes=0)


def test_evaluate_takes_greedy_as_an_input_and_it_may_be_traced():
    """Inside one's own jit, greedy may be a traced bool: the greedy and the sampling policy
    then run as one program, and each gives what the call with a Python bool gives."""
    env = maze_lib.make_maze_task("random")
    model = ppo.ActorCritic(jax.random.PRNGKey(0), channels=(4,), hidden_sizes=(16,))

    def walk(greedy):
        result = ppo.evaluate(
            model, env, jax.random.PRNGKey(2), 8, greedy=greedy, record_states=True
        )
        return result.length, result.states.agent_position.row

    traced = jax.jit(walk)
    runs = {}
    for greedy in (False, True):
        runs[greedy] = walk(greedy)
        for a, b in zip(traced(jnp.asarray(greedy)), runs[greedy]):
            np.testing.assert_array_equal(a, b)
    assert not np.array_equal(runs[False][1], runs[True][1])  # the two policies walk apart
    with pytest.raises(TypeError, match="greedy: expected True or False"):
        walk(jnp.array([True]))  # one bool, not an array of them


def test_make_maze_task_names():
    assert maze_lib.make_maze_task("empty").num_rows == 10
    with pytest.raises(ValueError, match="unknown Maze task 'maze'"):
        maze_lib.make_maze_task("maze")


# --------------------------------------------------------------------------------------
# The propagation network
# --------------------------------------------------------------------------------------


def image_of(walls, agent, target):
    walls = np.asarray(walls, np.float32)
    image = np.zeros((3,) + walls.shape, np.float32)
    image[0] = walls
    image[1][agent] = 1.0
    image[2][target] = 1.0
    return jnp.asarray(image)


def test_neighbour_shifts_with_zero_outside():
    h = jnp.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(ppo.neighbour(h, 0)[1:], h[:-1])  # up: the row above
    np.testing.assert_array_equal(ppo.neighbour(h, 0)[0], 0.0)
    np.testing.assert_array_equal(ppo.neighbour(h, 1)[:, :-1], h[:, 1:])  # right
    np.testing.assert_array_equal(ppo.neighbour(h, 2)[:-1], h[1:])  # down
    np.testing.assert_array_equal(ppo.neighbour(h, 3)[:, 1:], h[:, :-1])  # left
    assert ppo.neighbour(jnp.zeros((3, 4, 5)), 2).shape == (3, 4, 5)


def test_propagation_does_not_pass_through_walls():
    # A wall column splits the grid: nothing about the right half reaches the agent.
    walls = np.zeros((10, 10), bool)
    walls[:, 5] = True
    model = ppo.PropagationActorCritic(jax.random.PRNGKey(0), width=8, iterations=20)
    out_a = model(image_of(walls, (4, 1), (2, 8)))
    out_b = model(image_of(walls, (4, 1), (7, 9)))
    np.testing.assert_allclose(out_a[0], out_b[0], atol=1e-6)
    np.testing.assert_allclose(out_a[1], out_b[1], atol=1e-6)
    out_c = model(image_of(walls, (4, 1), (2, 3)))  # a target on the agent's side does
    assert not np.allclose(out_a[0], out_c[0], atol=1e-4)


def test_propagation_reaches_one_cell_per_iteration():
    walls = np.zeros((10, 10), bool)
    model = ppo.PropagationActorCritic(jax.random.PRNGKey(1), width=8, iterations=3)
    # The readout sees the agent's neighbours, so a target up to iterations + 1
    # moves away is visible and one further away is not.
    far_a = model(image_of(walls, (0, 0), (0, 6)))[0]
    far_b = model(image_of(walls, (0, 0), (0, 9)))[0]
    np.testing.assert_allclose(far_a, far_b, atol=1e-6)
    near = model(image_of(walls, (0, 0), (0, 4)))[0]
    assert not np.allclose(near, far_a, atol=1e-4)


@pytest.mark.parametrize(
    "shape, corner", [((7, 13), (1, 6)), ((20, 20), (12, 4)), ((13, 7), (6, 1)), ((6, 7), (0, 0))]
)
def test_propagation_network_runs_on_any_grid_and_sees_nothing_behind_walls(shape, corner):
    """The same weights run on grids that are larger than 10 x 10 or not square. A room
    walled in on every side gives the same logits and value wherever it lies in the grid and
    whatever lies outside its walls (random walls here): a network that flattened the grid,
    pooled over it or leaked through walls would not."""
    model = ppo.PropagationActorCritic(jax.random.key(3), width=8, iterations=12)
    room = np.array([[0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]], bool)  # 3 x 4, then a wall ring

    def placed(grid_shape, top_left, outside):
        walls = outside.copy()
        r, c = top_left
        walls[r : r + 5, c : c + 6] = True  # the ring (where it fits inside the grid)
        walls[r + 1 : r + 4, c + 1 : c + 5] = room
        return walls, (r + 1, c + 1), (r + 3, c + 3)

    reference = placed((5, 6), (0, 0), np.zeros((5, 6), bool))
    outside = np.asarray(jax.random.bernoulli(jax.random.key(4), 0.4, shape))
    walls, agent, target = placed(shape, corner, outside)
    logits, value = model(image_of(walls, agent, target))
    ref_logits, ref_value = model(image_of(*reference))
    assert logits.shape == (4,) and value.shape == ()
    np.testing.assert_allclose(logits, ref_logits, atol=1e-5)
    np.testing.assert_allclose(value, ref_value, atol=1e-5)


def test_propagation_network_shapes_and_sizes():
    network = functools.partial(
        ppo.PropagationActorCritic, width=6, hidden_sizes=(32,), iterations=4
    )
    model = network(jax.random.PRNGKey(0))
    assert isinstance(model, ppo.PropagationActorCritic) and model.iterations == 4
    images = jax.random.bernoulli(jax.random.PRNGKey(1), 0.3, (5, 3, 10, 10)).astype(jnp.float32)
    logits, value = jax.vmap(model)(images)
    assert logits.shape == (5, 4) and value.shape == (5,)
    np.testing.assert_allclose(jax.nn.softmax(logits), 0.25, atol=0.02)
    with pytest.raises(TypeError, match="network: expected a function key -> model, .* got str"):
        ppo.make_train(TINY_PPO, "resnet", EMPTY)
    # the sizes are checked once, by the model's constructor, also when make_train builds it
    with pytest.raises(ValueError, match="iterations: expected a positive int, got 0"):
        ppo.make_train(TINY_PPO, functools.partial(network, iterations=0), EMPTY)
    with pytest.raises(ValueError, match="iterations"):
        ppo.PropagationActorCritic(jax.random.PRNGKey(0), iterations=0)


BOOK_NETWORKS = {
    "fixed": ppo.FIXED_MAZE_NETWORK,
    "random": ppo.RANDOM_MAZE_NETWORK,
    "value_iteration": ppo.VALUE_ITERATION_NETWORK,
}


def test_the_book_networks_are_functions_of_a_key_to_a_model():
    """A network is the network before its weights: ``network(key)`` builds the model, and one
    key gives the same weights (as DQN's ``network.init(key, obs)``)."""
    classes = {
        "fixed": ppo.ActorCritic,
        "random": ppo.PropagationActorCritic,
        "value_iteration": ppo.ValueIterationActorCritic,
    }
    image = jnp.zeros((3, 10, 10), jnp.float32).at[1, 0, 0].set(1.0).at[2, 9, 9].set(1.0)
    for name, network in BOOK_NETWORKS.items():
        model = network(jax.random.key(0))
        assert type(model) is classes[name], name
        again = network(jax.random.key(0))
        for a, b in zip(jax.tree.leaves(model), jax.tree.leaves(again)):
            np.testing.assert_array_equal(a, b)
        logits, value = model(image)
        assert logits.shape == (4,) and value.shape == (), name
    assert ppo.FIXED_MAZE_NETWORK(jax.random.key(0)).grid_shape == (10, 10)
    assert ppo.RANDOM_MAZE_NETWORK(jax.random.key(0)).iterations == 32
    assert ppo.VALUE_ITERATION_NETWORK(jax.random.key(0)).iterations == 99


@pytest.mark.parametrize("name", list(BOOK_NETWORKS))
def test_networks_round_trip_through_json_as_class_and_keyword_arguments(name):
    """``network_from_dict(network_to_dict(network))``, through JSON, is the same class with the
    same keyword arguments (lists read back as tuples), and builds a model of the same tree
    structure and leaf shapes."""
    import json

    from companion.agents.ppo.networks import MODELS, network_from_dict, network_to_dict

    network = BOOK_NETWORKS[name]
    as_dict = network_to_dict(network)
    assert as_dict == {
        "class": network.func.__name__,
        "kwargs": {k: list(v) if isinstance(v, tuple) else v for k, v in network.keywords.items()},
    }
    back = network_from_dict(json.loads(json.dumps(as_dict)))
    assert isinstance(back, functools.partial) and back.func is network.func
    assert MODELS[as_dict["class"]] is network.func
    assert back.args == () and back.keywords == network.keywords
    assert all(type(back.keywords[k]) is type(v) for k, v in network.keywords.items())
    model, again = network(jax.random.key(1)), back(jax.random.key(1))
    assert jax.tree.structure(again) == jax.tree.structure(model)
    for a, b in zip(jax.tree.leaves(again), jax.tree.leaves(model)):
        assert (a.shape, a.dtype) == (b.shape, b.dtype)


def test_network_to_dict_keeps_iterations_none_and_refuses_what_it_cannot_name():
    from companion.agents.ppo.networks import network_from_dict, network_to_dict

    until_settled = functools.partial(ppo.VALUE_ITERATION_NETWORK, iterations=None)
    as_dict = network_to_dict(until_settled)
    assert as_dict["class"] == "ValueIterationActorCritic"
    assert as_dict["kwargs"]["iterations"] is None and as_dict["kwargs"]["width"] == 4
    assert network_from_dict(as_dict).keywords["iterations"] is None

    def my_network(key):  # a function of one's own has no sizes to save
        return ppo.ActorCritic(key, channels=(4,), hidden_sizes=(16,))

    refused = [
        my_network,
        functools.partial(ppo.ActorCritic, jax.random.key(0)),  # a positional argument
        functools.partial(ppo.ActorCritic, jax.random.key(0), channels=(4,)),
        functools.partial(ppo.ppo_loss, clip_eps=0.1),  # not a class of MODELS
        ppo.ActorCritic,  # the class itself, not a partial
        ppo.FIXED_MAZE_NETWORK(jax.random.key(0)),  # a built model
    ]
    for network in refused:
        with pytest.raises(TypeError, match=r"network: expected functools.partial\(<one of"):
            network_to_dict(network)
    with pytest.raises(ValueError, match="network: unknown class 'ConvNet'"):
        network_from_dict({"class": "ConvNet", "kwargs": {}})
    with pytest.raises(TypeError, match=r"network: unknown argument\(s\) \['depth'\]"):
        network_from_dict({"class": "ActorCritic", "kwargs": {"depth": 3}})


def test_the_config_names_no_network_and_no_environment():
    # the config is the algorithm's alone: no field says which network it trains
    assert not {"network", "channels", "hidden_sizes", "iterations"} & set(ppo.PPOConfig._fields)
    assert "task" not in ppo.PPOConfig._fields  # nor which environment: make_train takes it


def test_importing_companion_leaves_xla_flags_alone(monkeypatch):
    """XLA options belong to whoever runs JAX (tests, benchmarks), not to an import. (jaxlib
    0.10.2's concurrency-optimised scheduler deadlocked vmapped PPO programs now and then, and
    the import turned it off; on the pinned jaxlib the chapter's vmapped program ran 34
    processes x 10 executions, and benchmarks/scaling.py --quick 4 times, with it on.)"""
    import importlib
    import os

    import companion

    for flags in (None, "--xla_backend_optimization_level=2"):
        if flags is None:
            monkeypatch.delenv("XLA_FLAGS", raising=False)
        else:
            monkeypatch.setenv("XLA_FLAGS", flags)
        importlib.reload(companion)
        assert os.environ.get("XLA_FLAGS") == flags


def test_vmapped_training_runs_repeatedly():
    # Three seeds: the program test_train_is_pure_compiles_once_per_config... compiles, so a
    # worker that ran that test first loads it from the persistent compilation cache.
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    compiled = (
        jax.jit(jax.vmap(ppo.make_train(TINY_PPO, TINY_CONV_NET, EMPTY))).lower(keys).compile()
    )
    for seed in range(10):
        _, metrics = jax.block_until_ready(compiled(jax.random.split(jax.random.PRNGKey(seed), 3)))
        assert metrics["entropy"].shape == (3, TINY_PPO.num_updates)


def test_make_train_accepts_another_loss_and_uses_it():
    """The loss_fn hook: a loss of zero leaves the weights as initialised; its metrics are kept."""

    def no_learning(model, batch):
        logits, value = jax.vmap(model)(batch.image)
        return 0.0 * (jnp.sum(logits) + jnp.sum(value)), {"mean_value": jnp.mean(value)}

    trainer = ppo.make_trainer(TINY_PPO, TINY_CONV_NET, EMPTY, loss_fn=no_learning)
    train = ppo.make_train(TINY_PPO, TINY_CONV_NET, EMPTY, loss_fn=no_learning)
    runner, metrics = jax.jit(train)(jax.random.PRNGKey(0))
    model = ppo.trained_model(TINY_CONV_NET, runner)
    initial = ppo.trained_model(TINY_CONV_NET, trainer.init(jax.random.PRNGKey(0)))
    for a, b in zip(
        jax.tree.leaves(eqx.filter(model, eqx.is_inexact_array)),
        jax.tree.leaves(eqx.filter(initial, eqx.is_inexact_array)),
    ):
        np.testing.assert_array_equal(a, b)
    assert set(metrics) >= {"mean_value", "success_rate", "success_by_start", "env_steps"}
    assert "policy_loss" not in metrics


def test_the_default_loss_is_ppo_loss_with_the_configs_coefficients():
    """loss_fn(model, batch): make_train's default binds the config's hyperparameters."""
    config = TINY_PPO._replace(
        clip_eps=0.1, vf_coef=0.25, ent_coef=0.05, normalise_advantages=False
    )
    model = ppo.ActorCritic(jax.random.key(0), channels=(4,), hidden_sizes=(16,))
    k = jax.random.split(jax.random.key(1), 4)
    batch = ppo.Batch(
        image=jax.random.uniform(k[0], (6, 3, 10, 10)),
        action_mask=jnp.ones((6, 4), bool),
        action=jax.random.randint(k[1], (6,), 0, 4),
        log_prob=jnp.full(6, -1.2),
        value=jnp.zeros(6),
        advantage=jax.random.normal(k[2], (6,)),
        target=jax.random.normal(k[3], (6,)),
    )
    loss, metrics = ppo.default_loss(config)(model, batch)
    by_hand = functools.partial(
        ppo.ppo_loss, clip_eps=0.1, vf_coef=0.25, ent_coef=0.05, normalise_advantages=False
    )
    expected, _ = by_hand(model, batch)
    np.testing.assert_allclose(loss, expected, rtol=1e-6)
    other, _ = ppo.ppo_loss(model, batch)  # the function's own defaults differ
    assert not np.isclose(loss, other)


def test_success_by_start_counts_every_episode_once_under_its_start():
    config = TINY_PPO._replace(total_timesteps=8 * 8 * 24)  # 24 updates
    trainer = ppo.make_trainer(config, TINY_CONV_NET, maze_lib.make_maze_task("medium"))
    runner, metrics = trainer.run(trainer.init(jax.random.PRNGKey(3)), config.num_updates)
    episodes = np.asarray(metrics["episodes"])
    successes = np.round(np.nan_to_num(np.asarray(metrics["success_rate"])) * episodes)
    started, ended = np.asarray(runner.started), np.asarray(runner.ended)
    assert started.sum() == config.num_envs + episodes.sum()  # the first episodes, then restarts
    assert ended.sum() == episodes.sum() and np.asarray(runner.succeeded).sum() == successes.sum()
    assert np.all(ended <= started)
    rate = np.asarray(ppo.success_by_start(runner))
    complete = ended == started
    np.testing.assert_array_equal(np.isnan(rate), ~complete | (started == 0))
    # the medium maze's time limit (100 steps) outlasts the last rollouts: they are incomplete
    assert np.isnan(rate[-1])


@pytest.mark.parametrize(
    "network",
    [
        functools.partial(ppo.ActorCritic, grid_shape=(6, 9), channels=(5,), hidden_sizes=(7,)),
        functools.partial(ppo.PropagationActorCritic, width=5, hidden_sizes=(7,), iterations=32),
        functools.partial(ppo.ValueIterationActorCritic, width=5, hidden_sizes=(7,), iterations=32),
    ],
    ids=["ActorCritic", "PropagationActorCritic", "ValueIterationActorCritic"],
)
def test_model_skeleton_has_the_models_structure_and_compiles_nothing(network):
    """The skeleton stands in for the model wherever only its structure counts (the static
    part in make_trainer, ``like`` when loading weights), so it must match ``network(key)`` leaf
    for leaf, and it must cost no computation: eager initialisation compiles dozens of programs."""
    from jax import monitoring

    compiles = []

    def count(event, duration, **kwargs):
        if event.endswith("backend_compile_duration"):
            compiles.append(duration)

    monitoring.register_event_duration_secs_listener(count)
    try:
        skeleton = ppo.model_skeleton(network, (6, 9))
        assert jax.tree.structure(ppo.model_skeleton(network)) == jax.tree.structure(skeleton)
    finally:
        monitoring.unregister_event_duration_listener(count)
    assert compiles == []
    model = network(jax.random.key(3))
    assert jax.tree.structure(skeleton) == jax.tree.structure(model)
    for shape, leaf in zip(jax.tree.leaves(skeleton), jax.tree.leaves(model)):
        assert isinstance(shape, jax.ShapeDtypeStruct)
        assert (shape.shape, shape.dtype) == (leaf.shape, leaf.dtype) and eqx.is_inexact_array(leaf)


def test_model_skeleton_names_a_network_that_is_not_one_or_does_not_fit_the_maze():
    built = ppo.FIXED_MAZE_NETWORK(jax.random.key(0))
    for not_a_network, kind in ((3, "int"), (None, "NoneType"), (built, "ActorCritic")):
        with pytest.raises(
            TypeError, match=f"network: expected a function key -> model, .* got {kind}"
        ):
            ppo.model_skeleton(not_a_network)
    # a model for 10 x 10 images on a 6 x 9 maze: the error names both shapes
    with pytest.raises(
        ValueError, match=r"network: its model cannot map this maze's image"
    ) as error:
        ppo.model_skeleton(ppo.FIXED_MAZE_NETWORK, (6, 9))
    assert "(3, 6, 9)" in str(error.value) and "(10, 10)" in str(error.value)
    # and through make_train: a 6 x 9 network on the 10 x 10 maze
    with pytest.raises(ValueError, match=r"image float32 \(3, 10, 10\) .*grid_shape \(6, 9\)"):
        ppo.make_train(TINY_PPO, functools.partial(TINY_CONV_NET, grid_shape=(6, 9)), EMPTY)
    # a model that maps the image, but not to one logit per move and one value
    five_moves = functools.partial(ppo.ActorCritic, num_actions=5, channels=(), hidden_sizes=(4,))
    with pytest.raises(
        ValueError, match=r"to logits float32\(5,\) and value float32\(\); expected"
    ):
        ppo.model_skeleton(five_moves, (10, 10))
    with pytest.raises(ValueError, match=r"logits float32\(5,\)"):
        ppo.make_train(TINY_PPO, five_moves, EMPTY)

    def values_per_cell(key):
        return lambda image: (jnp.zeros(4), jnp.zeros(image.shape[1:]))

    def int_logits(key):
        return lambda image: (jnp.zeros(4, jnp.int32), jnp.zeros(()))

    with pytest.raises(ValueError, match=r"value float32\(10, 10\); expected float logits \(4,\)"):
        ppo.model_skeleton(values_per_cell, (10, 10))
    with pytest.raises(ValueError, match=r"to logits int32\(4,\) and value float32\(\)"):
        ppo.model_skeleton(int_logits, (10, 10))
    # without a grid, only the structure: nothing is called on an image
    assert ppo.model_skeleton(five_moves).policy_head.weight.shape == (5, 4)


def test_trained_model_is_the_model_training_used():
    """``trained_model(network, runner)``: the runner's parameters in the model ``network``
    builds, the model whose logits training computed; over seeds, every leaf leads with S."""
    trainer = ppo.make_trainer(TINY_PPO, TINY_CONV_NET, EMPTY)
    runner, _ = jax.jit(trainer.train)(jax.random.PRNGKey(0))  # the program of the test above
    model = ppo.trained_model(TINY_CONV_NET, runner)
    assert isinstance(model, ppo.ActorCritic) and model.grid_shape == (10, 10)
    rest = eqx.filter(TINY_CONV_NET(jax.random.key(9)), eqx.is_inexact_array, inverse=True)
    by_hand = eqx.combine(runner.params, rest)
    assert jax.tree.structure(model) == jax.tree.structure(by_hand)
    image = jax.random.uniform(jax.random.key(1), (3, 10, 10))
    for a, b in zip(model(image), by_hand(image)):
        np.testing.assert_array_equal(a, b)
    initial = ppo.trained_model(TINY_CONV_NET, trainer.init(jax.random.PRNGKey(0)))
    assert not np.allclose(model(image)[0], initial(image)[0])  # the weights trained
    # the static fields come from the network, as trained: the propagation network's iterations
    propagation = ppo.make_trainer(TINY_PPO, TINY_PROPAGATION_NET, EMPTY)
    started = ppo.trained_model(TINY_PROPAGATION_NET, propagation.init(jax.random.PRNGKey(0)))
    assert isinstance(started, ppo.PropagationActorCritic) and started.iterations == 3
    assert started(image)[0].shape == (4,)
    # seeds: leading axis S on every leaf, and the vmapped model maps S images
    runners = jax.jit(jax.vmap(trainer.init))(jax.random.split(jax.random.PRNGKey(2), 3))
    models = ppo.trained_model(TINY_CONV_NET, runners)
    assert all(leaf.shape[0] == 3 for leaf in jax.tree.leaves(models))
    logits, value = eqx.filter_vmap(lambda m, x: m(x))(models, jnp.stack([image] * 3))
    assert logits.shape == (3, 4) and value.shape == (3,)
    one = ppo.trained_model(TINY_CONV_NET, jax.tree.map(lambda x: x[1], runners))
    np.testing.assert_array_equal(logits[1], one(image)[0])
    with pytest.raises(TypeError, match="runner: expected a ppo.RunnerState, got dict"):
        ppo.trained_model(TINY_CONV_NET, {"params": None})


@pytest.mark.parametrize(
    "agent, network",
    [("propagation", ppo.RANDOM_MAZE_NETWORK), ("value_iteration", ppo.VALUE_ITERATION_NETWORK)],
)
def test_the_saved_json_names_the_network_that_builds_the_saved_weights(agent, network):
    """A saved agent's JSON holds its network as class and keyword arguments (the book's
    network), and that network builds the structure of the saved weights: loading them into
    ``network(key)`` fills every leaf, with the trained number of iterations or another."""
    from companion.agents.ppo.networks import network_to_dict
    from companion.agents.ppo.saved import (
        load_saved_agent,
        saved_agent_files,
        saved_network,
        saved_summary,
    )

    assert saved_summary(agent)["network"] == network_to_dict(network)
    saved = saved_network(agent)
    assert saved.func is network.func and saved.keywords == network.keywords and not saved.args
    built = saved(jax.random.key(0))
    loaded = eqx.tree_deserialise_leaves(saved_agent_files(agent)[0], built)
    model = load_saved_agent(agent)
    assert type(model) is network.func and model.iterations == network.keywords["iterations"]
    assert jax.tree.structure(model) == jax.tree.structure(built)
    for a, b, c in zip(jax.tree.leaves(model), jax.tree.leaves(loaded), jax.tree.leaves(built)):
        assert a.shape == c.shape and a.dtype == c.dtype
        np.testing.assert_array_equal(a, b)
    assert any(
        not np.array_equal(a, c) for a, c in zip(jax.tree.leaves(model), jax.tree.leaves(built))
    )
    fewer = load_saved_agent(agent, iterations=16)
    assert fewer.iterations == 16
    for a, b in zip(jax.tree.leaves(fewer), jax.tree.leaves(model)):
        np.testing.assert_array_equal(a, b)
    image = jnp.zeros((3, 10, 10), jnp.float32).at[1, 0, 0].set(1.0).at[2, 9, 9].set(1.0)
    logits, value = fewer(image)
    assert logits.shape == (4,) and value.shape == () and np.isfinite(np.asarray(logits)).all()
    if agent == "value_iteration":  # backups until the values settle: for acting
        assert load_saved_agent(agent, iterations=None).iterations is None
    else:  # the propagation network has no such end
        with pytest.raises(TypeError, match="iterations: expected a positive int, got None"):
            load_saved_agent(agent, iterations=None)


def test_episode_stats_counts_each_end_under_the_update_it_started_in():
    """``episode_stats`` against a plain-Python loop over environments and steps."""
    rng = np.random.default_rng(0)
    num_updates, steps, envs, update = 6, 5, 4, 3
    done = rng.random((steps, envs)) < 0.4
    success = rng.random((steps, envs)) < 0.5
    episode_start = np.array([0, 2, 3, 1], np.int32)
    started = np.full(num_updates, 2.0, np.float32)
    ended, succeeded = np.zeros(num_updates, np.float32), np.zeros(num_updates, np.float32)
    runner = ppo.RunnerState(
        params=None,
        opt_state=None,
        env_state=None,
        timestep=None,
        key=None,
        update=jnp.int32(update),
        episode_start=jnp.asarray(episode_start),
        started=jnp.asarray(started),
        ended=jnp.asarray(ended),
        succeeded=jnp.asarray(succeeded),
    )
    out = jax.jit(episode_stats)(runner, jnp.asarray(done), jnp.asarray(success))
    start = episode_start.copy()
    for e in range(envs):
        for t in range(steps):
            if done[t, e]:
                ended[start[e]] += 1
                succeeded[start[e]] += success[t, e]
                started[update] += 1
                start[e] = update
    assert done.sum() > envs // 2 and (done.sum(axis=0) > 1).any()  # some envs end twice
    np.testing.assert_array_equal(out.ended, ended)
    np.testing.assert_array_equal(out.succeeded, succeeded)
    np.testing.assert_array_equal(out.started, started)
    np.testing.assert_array_equal(out.episode_start, start)


def test_shuffle_minibatches_is_one_permutation_split_evenly():
    images = jnp.arange(12 * 3 * 2 * 5).reshape(12, 3, 2, 5)  # gathered as flat rows
    batch = {"x": jnp.arange(12), "y": jnp.arange(12.0)[:, None] * 10.0, "image": images}
    out = jax.jit(shuffle_minibatches, static_argnums=2)(jax.random.key(0), batch, 3)
    assert out["x"].shape == (3, 4) and out["y"].shape == (3, 4, 1)
    assert out["image"].shape == (3, 4, 3, 2, 5)
    assert sorted(np.asarray(out["x"]).ravel().tolist()) == list(range(12))  # each row once
    np.testing.assert_array_equal(out["y"][..., 0], out["x"] * 10.0)  # the leaves alike
    np.testing.assert_array_equal(out["image"], np.asarray(images)[np.asarray(out["x"])])
    assert not np.array_equal(np.asarray(out["x"]).ravel(), np.arange(12))  # in a new order
