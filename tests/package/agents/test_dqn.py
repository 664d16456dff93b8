"""DQN pieces against hand-computed values, and the training function on a tiny budget."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats
from tiny import TINY_DQN, TINY_Q_NETWORK

from companion.agents import dqn
from companion.agents.dqn import (
    DQNConfig,
    Transition,
    dqn_loss,
    epsilon_greedy,
    greedy_returns,
    make_q_network,
    make_train,
    td_target,
    update_target,
)
from companion.envs import cartpole


def test_td_target_terminal_equals_reward_and_truncation_bootstraps():
    reward = jnp.array([1.0, 1.0, 0.5])
    terminated = jnp.array([True, False, False])  # the 2nd is a truncation: not terminated
    q_next = jnp.array([[10.0, 20.0], [3.0, 7.0], [-1.0, -2.0]])
    target = td_target(reward, terminated, q_next, gamma=0.9)
    np.testing.assert_allclose(target, [1.0, 1.0 + 0.9 * 7.0, 0.5 + 0.9 * -1.0])


def _batch():
    return Transition(
        obs=jnp.array([[0.1, 0.0, 0.02, 0.0], [0.0, 0.1, -0.01, 0.2]]),
        action=jnp.array([0, 1], jnp.int32),
        reward=jnp.array([1.0, 1.0]),
        next_obs=jnp.array([[0.1, 0.1, 0.02, 0.1], [0.0, 0.2, -0.01, 0.3]]),
        terminated=jnp.array([True, False]),
    )


def test_loss_by_hand_and_huber_agrees_for_small_errors():
    network = TINY_Q_NETWORK
    params = network.init(jax.random.key(0), jnp.zeros((1, 4)))
    target_params = network.init(jax.random.key(1), jnp.zeros((1, 4)))
    batch = _batch()
    q = network.apply(params, batch.obs)
    q_next = network.apply(target_params, batch.next_obs)
    target = np.array([1.0, 1.0 + 0.99 * float(q_next[1].max())])
    err = np.array([float(q[0, 0]), float(q[1, 1])]) - target
    loss, aux = dqn_loss(params, target_params, batch, network.apply, 0.99)
    assert float(loss) == pytest.approx(np.mean(0.5 * err**2), rel=1e-5)
    huber, _ = dqn_loss(params, target_params, batch, network.apply, 0.99, "huber", 100.0)
    assert float(huber) == pytest.approx(float(loss), rel=1e-5)
    huber_small, _ = dqn_loss(params, target_params, batch, network.apply, 0.99, "huber", 0.01)
    assert float(huber_small) < float(loss)
    with pytest.raises(ValueError, match="loss: unknown value 'l1'"):
        dqn_loss(params, target_params, batch, network.apply, 0.99, "l1")


def test_no_gradient_flows_through_the_target():
    network = TINY_Q_NETWORK
    params = network.init(jax.random.key(0), jnp.zeros((1, 4)))
    # Same parameters for both: without stop_gradient the target would contribute.
    grad_target = jax.grad(lambda t: dqn_loss(params, t, _batch(), network.apply, 0.99)[0])(params)
    assert all(float(jnp.abs(g).max()) == 0.0 for g in jax.tree.leaves(grad_target))
    grad_online = jax.grad(lambda p: dqn_loss(p, params, _batch(), network.apply, 0.99)[0])(params)
    assert any(float(jnp.abs(g).max()) > 0.0 for g in jax.tree.leaves(grad_online))


def test_target_changes_only_on_sync_steps():
    online, target = {"w": jnp.ones(3)}, {"w": jnp.zeros(3)}
    for step in range(1, 13):
        new = update_target(online, target, jnp.int32(step), period=4, tau=1.0)
        expected = 1.0 if step % 4 == 0 else 0.0
        np.testing.assert_array_equal(new["w"], expected)
    polyak = update_target(online, target, jnp.int32(3), period=1, tau=0.1)
    np.testing.assert_allclose(polyak["w"], 0.1)


def test_greedy_action_is_argmax_and_epsilon_one_is_uniform():
    q = jax.random.normal(jax.random.key(0), (500, 2))
    keys = jax.random.split(jax.random.key(1), 500)
    greedy = jax.vmap(epsilon_greedy, in_axes=(0, 0, None))(keys, q, 0.0)
    np.testing.assert_array_equal(greedy, jnp.argmax(q, axis=-1))
    q_fixed = jnp.tile(jnp.array([[0.0, 5.0]]), (4000, 1))
    keys = jax.random.split(jax.random.key(2), 4000)
    random_actions = jax.vmap(epsilon_greedy, in_axes=(0, 0, None))(keys, q_fixed, 1.0)
    assert stats.chisquare(np.bincount(np.asarray(random_actions), minlength=2)).pvalue > 1e-3
    keys = jax.random.split(jax.random.key(3), 4000)
    some = jax.vmap(epsilon_greedy, in_axes=(0, 0, None))(keys, q_fixed, 0.2)
    assert float(jnp.mean(some == 0)) == pytest.approx(0.1, abs=0.02)  # half the random ones


ENV = cartpole.CartPole()


def test_make_train_runs_and_stores_true_next_observations():
    runner, metrics = jax.jit(make_train(TINY_DQN, TINY_Q_NETWORK, ENV))(jax.random.key(0))
    iterations = TINY_DQN.warmup_iterations + TINY_DQN.num_blocks * TINY_DQN.block_iterations
    assert metrics["loss"].shape == (iterations,)
    assert metrics["eval_return"].shape == (TINY_DQN.num_blocks,)
    assert int(runner.env_steps) == iterations * TINY_DQN.num_envs == TINY_DQN.env_steps_run
    assert int(runner.updates) == TINY_DQN.num_blocks * TINY_DQN.block_iterations * 2
    data, size = runner.buffer.data, int(runner.buffer.size)
    predicted = jax.vmap(cartpole.dynamics)(data.obs[:size], data.action[:size])
    # next_obs is what the action led to, also on the steps that ended an episode
    np.testing.assert_allclose(predicted, data.next_obs[:size], atol=1e-6)
    assert bool(jnp.any(data.terminated[:size]))
    # best_params are the parameters of the best evaluation
    assert float(runner.best_score) == float(metrics["eval_return"].max())
    best_block = int(np.flatnonzero(metrics["eval_return"] == metrics["eval_return"].max())[-1])
    if best_block < TINY_DQN.num_blocks - 1:  # an earlier block won: best and final params differ
        assert not jax.tree.all(jax.tree.map(jnp.array_equal, runner.params, runner.best_params))


def test_evaluations_off_train_the_same_parameters_and_report_none():
    """eval_episodes = 0: no evaluation runs, yet the same key trains bit-identical parameters
    (the evaluations draw keys of their own), so a run can be timed without them."""
    with_evals, metrics = jax.jit(make_train(TINY_DQN, TINY_Q_NETWORK, ENV))(jax.random.key(3))
    without, metrics_off = jax.jit(
        make_train(TINY_DQN._replace(eval_episodes=0), TINY_Q_NETWORK, ENV)
    )(jax.random.key(3))
    assert jax.tree.all(jax.tree.map(jnp.array_equal, with_evals.params, without.params))
    np.testing.assert_array_equal(metrics["loss"], metrics_off["loss"])
    assert "eval_return" in metrics and "eval_return" not in metrics_off
    assert jax.tree.all(jax.tree.map(jnp.array_equal, without.params, without.best_params))
    assert float(without.best_score) == -np.inf


def test_train_vmaps_over_seeds_with_different_results():
    runner, metrics = jax.jit(jax.vmap(make_train(TINY_DQN, TINY_Q_NETWORK, ENV)))(
        jax.random.split(jax.random.key(0), 2)
    )
    assert metrics["loss"].shape[0] == 2
    assert not np.allclose(metrics["loss"][0], metrics["loss"][1])


def test_greedy_returns_are_episode_lengths():
    network = TINY_Q_NETWORK
    params = network.init(jax.random.key(0), jnp.zeros((1, 4)))
    returns = greedy_returns(params, jax.random.key(1), 5, network)
    assert returns.shape == (5,)
    assert np.all((np.asarray(returns) >= 1) & (np.asarray(returns) <= 500))


@pytest.mark.parametrize("schedule", ["cosine", "linear"])
def test_learning_rate_decays_to_its_final_fraction_by_hand(schedule):
    # With a constant gradient, Adam's bias-corrected step is the learning rate itself
    # (m_hat / sqrt(v_hat) = 1), so the parameter's steps trace the schedule.
    config = TINY_DQN._replace(learning_rate=0.01, lr_schedule=schedule, lr_final_fraction=0.1)
    n = config.num_blocks * config.block_iterations * config.updates_per_iteration
    optimizer = dqn.make_optimizer(config)
    params = jnp.zeros(())

    def step(state, _):
        updates, state = optimizer.update(jnp.ones(()), state, params)
        return state, -updates

    _, steps = jax.jit(lambda: jax.lax.scan(step, optimizer.init(params), length=n + 2))()
    steps = np.asarray(steps)
    k = np.minimum(np.arange(n + 2), n)
    if schedule == "cosine":  # Loshchilov and Hutter (2017), without restarts
        expected = 0.01 * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * k / n)))
    else:
        expected = 0.01 * (1 - 0.9 * k / n)
    np.testing.assert_allclose(steps, expected, rtol=1e-4)
    assert steps[-1] == pytest.approx(0.001, rel=1e-4)  # held at the final fraction


def test_config_errors():
    with pytest.raises(ValueError, match="learning_starts"):
        make_train(TINY_DQN._replace(learning_starts=10), TINY_Q_NETWORK, ENV)
    with pytest.raises(ValueError, match="total_steps"):
        make_train(TINY_DQN._replace(total_steps=200), TINY_Q_NETWORK, ENV)


def test_make_train_accepts_another_target_and_uses_it():
    """The target_fn hook: double DQN trains to other weights; a zero target pulls Q to 0."""
    config = TINY_DQN  # the plain run is then test_make_train_runs_...'s program, from the cache

    def double_dqn(reward, terminated, q_next_online, q_next_target, gamma):
        action = jnp.argmax(q_next_online, axis=-1)
        chosen = jnp.take_along_axis(q_next_target, action[:, None], axis=-1)[:, 0]
        return reward + gamma * (1.0 - terminated.astype(chosen.dtype)) * chosen

    def zeros(reward, terminated, q_next_online, q_next_target, gamma):
        return jnp.zeros_like(reward)

    plain, plain_metrics = jax.jit(make_train(config, TINY_Q_NETWORK, ENV))(jax.random.key(0))
    double, _ = jax.jit(make_train(config, TINY_Q_NETWORK, ENV, target_fn=double_dqn))(
        jax.random.key(0)
    )
    _, zero_metrics = jax.jit(make_train(config, TINY_Q_NETWORK, ENV, target_fn=zeros))(
        jax.random.key(0)
    )
    leaves = lambda r: jax.tree.leaves(r.params)  # noqa: E731
    assert any(not np.allclose(a, b) for a, b in zip(leaves(plain), leaves(double)))
    # rewards of 1 push DQN's Q-values up; a target of 0 pulls them towards 0
    assert float(plain_metrics["q_mean"][-1]) > 1.0
    assert abs(float(zero_metrics["q_mean"][-1])) < 0.2


def test_make_train_steps_the_environment_it_is_given():
    """A CartPole with a 20-step limit truncates every training and evaluation episode at 20;
    CartPole-v1 (500 steps) lets some random early episodes run longer on the same key."""
    short = cartpole.CartPole(cartpole.DEFAULT_PARAMS._replace(max_steps=20))
    _, metrics = jax.jit(make_train(TINY_DQN, TINY_Q_NETWORK, short))(jax.random.key(0))
    _, long_metrics = jax.jit(make_train(TINY_DQN, TINY_Q_NETWORK, ENV))(jax.random.key(0))
    assert float(metrics["returns_max"].max()) == 20.0
    assert float(metrics["eval_return"].max()) <= 20.0
    assert float(long_metrics["returns_max"].max()) > 20.0


def test_layer_norm_network_normalises_each_hidden_layer_by_hand():
    """Linear -> LayerNorm -> ReLU per hidden layer: at initialisation (scale 1, offset 0)
    each sample's pre-activations of each hidden layer have mean 0 and variance 1."""
    network = make_q_network(2, (16, 8), layer_norm=True)
    assert network is make_q_network(2, (16, 8), layer_norm=True)  # one object: compiled once
    assert network is not make_q_network(2, (16, 8))
    obs = jax.random.normal(jax.random.key(3), (5, 4)) * jnp.array([1.0, 2.0, 0.1, 3.0])
    params = network.init(jax.random.key(0), obs)
    assert network.apply(params, obs).shape == (5, 2)
    shapes = {name: {k: v.shape for k, v in p.items()} for name, p in params.items()}
    assert shapes == {
        "linear": {"w": (4, 16), "b": (16,)},
        "layer_norm": {"scale": (16,), "offset": (16,)},
        "linear_1": {"w": (16, 8), "b": (8,)},
        "layer_norm_1": {"scale": (8,), "offset": (8,)},
        "linear_2": {"w": (8, 2), "b": (2,)},
    }
    x = np.asarray(obs, np.float64)
    for layer in ("linear", "linear_1"):  # the forward pass in numpy, layer by layer
        pre = x @ np.asarray(params[layer]["w"]) + np.asarray(params[layer]["b"])
        normed = (pre - pre.mean(-1, keepdims=True)) / np.sqrt(pre.var(-1, keepdims=True) + 1e-5)
        np.testing.assert_allclose(normed.mean(-1), 0.0, atol=1e-6)
        np.testing.assert_allclose(normed.var(-1), 1.0, rtol=1e-3)
        x = np.maximum(normed, 0.0)
    q = x @ np.asarray(params["linear_2"]["w"]) + np.asarray(params["linear_2"]["b"])
    np.testing.assert_allclose(network.apply(params, obs), q, rtol=1e-4, atol=1e-5)
    # scaling an observation by 10 scales the plain network's first pre-activations by 10;
    # after LayerNorm they are the same (up to the bias), so Q stays bounded
    plain = make_q_network(2, (16, 8))
    plain_params = plain.init(jax.random.key(0), obs)
    big = obs * 100.0
    assert float(jnp.abs(plain.apply(plain_params, big)).max()) > 10 * float(
        jnp.abs(plain.apply(plain_params, obs)).max()
    )
    assert float(jnp.abs(network.apply(params, big)).max()) < 10.0
    with pytest.raises(TypeError, match="layer_norm: expected a bool"):
        make_q_network(2, (8,), layer_norm=1)


def test_default_config_is_the_chapters_lean_dqn():
    config = DQNConfig()
    assert config.buffer_capacity >= config.env_steps_run  # the buffer holds the whole run
    assert config.updates_per_iteration / config.num_envs == 0.5  # updates per env step
    assert (config.target_tau, config.target_update_period) == (1.0, 10)  # a hard copy
    assert (config.lr_schedule, config.lr_final_fraction) == ("linear", 0.0)
    assert config.epsilon_decay_steps < config.total_steps
    assert config.eval_every * config.num_envs == 1_000  # an evaluation every 1,000 steps
    assert config.env_steps_run == config.total_steps == 40_000
    dqn.check_config(config)


def test_make_train_reports_the_td_error_of_its_batches():
    runner, metrics = jax.jit(make_train(TINY_DQN, make_q_network(2, (8,), layer_norm=True), ENV))(
        jax.random.key(0)
    )
    td, loss = np.asarray(metrics["td_abs"]), np.asarray(metrics["loss"])
    warm = TINY_DQN.warmup_iterations
    assert np.all(td[:warm] == 0) and np.all(td[warm:] > 0)
    # squared loss 0.5 mean(e^2) >= 0.5 mean(|e|)^2 (Jensen), batch by batch
    assert np.all(loss[warm:] >= 0.5 * td[warm:] ** 2 - 1e-5)
