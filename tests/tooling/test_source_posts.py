"""The reimplementations of the two source posts follow the posts' facts (issue 13)."""

import math
import sys
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from notebook_runner import ROOT
from tiny import TINY_DQN

from companion.envs import cartpole
from companion.envs import maze as maze_lib

sys.path.insert(0, str(ROOT / "benchmarks"))

import post_dqn  # noqa: E402
import post_ppo  # noqa: E402

# ------------------------------------------------------------------------------ PPO post


def test_post_network_has_the_posts_layers_and_parameter_count():
    net = post_ppo.PostNetwork(jax.random.key(0))
    assert net.conv.weight.shape == (1, 3, 3, 3) and net.conv.bias.shape == (1, 1, 1)
    assert net.conv.padding == ((0, 0), (0, 0))
    assert net.hidden.weight.shape == (64, 64) and net.value_head.weight.shape == (1, 64)
    assert net.policy_head.weight.shape == (4, 64) and net.policy_head.bias.shape == (4,)
    # conv 3*1*3*3 + 1 = 28; hidden 64*64 + 64 = 4,160; value head 64*1 + 1 = 65;
    # policy head 64*4 + 4 = 260; in all 4,513.
    params = eqx.filter(net, eqx.is_array)
    assert sum(x.size for x in jax.tree.leaves(params)) == 28 + 4_160 + 65 + 260 == 4_513
    logits, value = net(jnp.zeros((3, 10, 10)))
    assert logits.shape == (4,) and value.shape == (1,)
    with pytest.raises(ValueError, match=r"image: expected shape \(3, 10, 10\)"):
        net(jnp.zeros((300,)))


def test_policy_head_is_orthogonal_times_001_and_the_rest_equinox_default():
    key = jax.random.key(3)
    net = post_ppo.PostNetwork(key)
    w = np.asarray(net.policy_head.weight)
    # orthogonal rows of norm 0.01: W W^T = 1e-4 I
    np.testing.assert_allclose(w @ w.T, 1e-4 * np.eye(4), atol=1e-9)
    # the same keys, made anew (the key-reuse checker tracks each key array once)
    k_conv, k_hidden, k_value, k_policy, _ = jax.random.split(jax.random.key(3), 5)
    default = eqx.nn.Linear(64, 4, key=k_policy)
    np.testing.assert_array_equal(net.policy_head.bias, default.bias)  # bias untouched
    assert not np.allclose(w, default.weight)  # the weight was replaced
    np.testing.assert_array_equal(net.hidden.weight, eqx.nn.Linear(64, 64, key=k_hidden).weight)
    np.testing.assert_array_equal(net.conv.weight, eqx.nn.Conv2d(3, 1, 3, key=k_conv).weight)
    np.testing.assert_array_equal(net.value_head.bias, eqx.nn.Linear(64, 1, key=k_value).bias)


def test_post_maze_layout_and_candidates():
    walls, starts, targets = maze_lib.parse_maze(post_ppo.POST_MAZE)
    # walls per row, counted by hand from the layout: 4 2 4 5 2 3 7 2 6 1
    assert walls.sum(axis=1).tolist() == [4, 2, 4, 5, 2, 3, 7, 2, 6, 1]
    assert post_ppo.POST_STARTS == ((0, 0), (9, 0), (0, 9))
    assert post_ppo.POST_TARGETS == ((3, 9), (7, 8), (7, 0))
    assert sorted(starts) == sorted(post_ppo.POST_STARTS)
    assert sorted(targets) == sorted(post_ppo.POST_TARGETS)
    assert walls.tolist() != maze_lib.parse_maze(maze_lib.MEDIUM_MAZE)[0].tolist()
    for s in starts:
        for t in targets:
            assert maze_lib.shortest_path_length(walls, s, t) > 0


@pytest.mark.parametrize("draw_bug, pairs", [(True, 4), (False, 9)])
def test_post_generator_draws_only_the_first_two_starts_and_targets(draw_bug, pairs):
    generator = post_ppo.PostMazeGenerator(draw_bug=draw_bug)
    states = jax.vmap(generator)(jax.random.split(jax.random.key(0), 512))
    drawn = {
        ((int(a), int(b)), (int(c), int(d)))
        for a, b, c, d in zip(
            states.agent_position.row,
            states.agent_position.col,
            states.target_position.row,
            states.target_position.col,
        )
    }
    n = 2 if draw_bug else 3
    expected = {(s, t) for s in post_ppo.POST_STARTS[:n] for t in post_ppo.POST_TARGETS[:n]}
    assert drawn == expected and len(drawn) == pairs


def test_value_loss_broadcasts_to_b_by_b_and_the_fix_does_not():
    value = jnp.array([[0.0], [2.0]])  # (B, 1), as the value head gives it
    target = jnp.array([1.0, 3.0])  # (B,)
    assert (value - target).shape == (2, 2)
    # (v_i - t_j) = [[-1, -3], [1, -1]]: 0.5 * mean(1, 9, 1, 1) = 1.5
    assert float(post_ppo.value_loss(value, target, broadcast_bug=True)) == pytest.approx(1.5)
    # (v_i - t_i) = [-1, -1]: 0.5 * 1 = 0.5
    assert float(post_ppo.value_loss(value, target, broadcast_bug=False)) == pytest.approx(0.5)


def _one_transition_batch():
    return post_ppo.Batch(
        image=jnp.zeros((1, 3, 10, 10)),
        action_mask=jnp.array([[True, True, False, False]]),
        action=jnp.array([0]),
        log_prob=jnp.log(jnp.array([0.5])),  # the acting policy: -inf mask, uniform over 2
        advantage=jnp.array([1.0]),
        target=jnp.array([0.0]),
    )


def test_loss_gives_illegal_actions_logit_one_and_the_fix_minus_inf():
    logits = jnp.array([[2.0, 3.0, -1.0, 0.0]])
    mask = jnp.array([[True, False, True, False]])
    np.testing.assert_array_equal(post_ppo.loss_logits(logits, mask, True), [[2, 1, -1, 1]])
    np.testing.assert_array_equal(
        post_ppo.loss_logits(logits, mask, False), [[2, -jnp.inf, -1, -jnp.inf]]
    )

    config, batch = post_ppo.PostPPOConfig(), _one_transition_batch()
    zeros, value = jnp.zeros((1, 4)), jnp.zeros((1, 1))
    # With the bug the loss sees logits (0, 0, 1, 1): p = (a, a, b, b), a = 1 / (2 + 2e).
    a, b = 1 / (2 + 2 * math.e), math.e / (2 + 2 * math.e)
    ratio = a / 0.5  # below 1 - 0.2, so fmin keeps the unclipped term (advantage 1)
    entropy = (-2 * a * math.log(a) - 2 * b * math.log(b)) / 4  # mean over the 4 actions
    loss, aux = post_ppo.loss_from_outputs(zeros, value, batch, config)
    assert float(aux["policy"]) == pytest.approx(-ratio, rel=1e-5)
    assert float(aux["entropy"]) == pytest.approx(entropy, rel=1e-5)
    assert float(loss) == pytest.approx(-ratio - 0.01 * entropy, rel=1e-5)
    # Fixed: p = (0.5, 0.5, 0, 0), ratio 1, entropy (2 * 0.5 log 2) / 4.
    fixed = config._replace(mask_bug=False)
    loss, aux = post_ppo.loss_from_outputs(zeros, value, batch, fixed)
    assert float(loss) == pytest.approx(-1.0 - 0.01 * math.log(2) / 4, rel=1e-5)
    grads = jax.grad(lambda lg: post_ppo.loss_from_outputs(lg, value, batch, fixed)[0])(zeros)
    assert np.all(np.isfinite(grads))


def test_ratio_is_clipped_with_fmin():
    config, a = post_ppo.PostPPOConfig(), 1 / (2 + 2 * math.e)  # p(action 0), as above
    batch = _one_transition_batch()._replace(log_prob=jnp.log(jnp.array([0.1])))
    zeros, value = jnp.zeros((1, 4)), jnp.zeros((1, 1))
    # ratio a / 0.1 = 1.34 > 1.2: with advantage 1 fmin takes the clipped 1.2 ...
    _, aux = post_ppo.loss_from_outputs(zeros, value, batch, config)
    assert float(aux["policy"]) == pytest.approx(-1.2, rel=1e-5)
    # ... with advantage -1 the unclipped -1.34
    _, aux = post_ppo.loss_from_outputs(
        zeros, value, batch._replace(advantage=-batch.advantage), config
    )
    assert float(aux["policy"]) == pytest.approx(a / 0.1, rel=1e-5)


def test_gae_matches_rlax():
    with warnings.catch_warnings():
        # rlax imports distrax and tensorflow-probability, which touch deprecated jax.core names.
        warnings.simplefilter("ignore", DeprecationWarning)
        import rlax

    rng = np.random.default_rng(0)
    T, N = 12, 3
    reward = rng.normal(size=(T, N)).astype(np.float32)
    value = rng.normal(size=(T, N)).astype(np.float32)
    term = (rng.random((T, N)) < 0.2).astype(np.float32)
    last = rng.normal(size=(N,)).astype(np.float32)
    adv = post_ppo.gae(
        jnp.asarray(reward), jnp.asarray(value), jnp.asarray(term), jnp.asarray(last), 0.99, 0.95
    )
    for n in range(N):
        ref = rlax.truncated_generalized_advantage_estimation(
            reward[:, n], 0.99 * (1 - term[:, n]), 0.95, np.append(value[:, n], last[n])
        )
        np.testing.assert_allclose(adv[:, n], ref, rtol=1e-5, atol=1e-5)


def test_post_ppo_hyperparameters_are_the_posts():
    c = post_ppo.PostPPOConfig()
    assert (c.num_envs, c.num_steps, c.batch_size) == (16, 512, 8_192)
    assert (c.num_epochs, c.minibatch_size, c.num_minibatches) == (10, 1_024, 8)
    assert (c.gamma, c.gae_lambda, c.clip_eps, c.vf_coef, c.ent_coef) == (0.99, 0.95, 0.2, 1, 0.01)
    assert (c.learning_rate, c.adam_eps, c.policy_scale) == (3e-4, 1e-7, 0.01)
    assert c.mask_bug and c.value_broadcast_bug and c.draw_bug
    assert c.total_timesteps == post_ppo.BUDGETS["post-medium"] == 819_200 == 100 * 8_192
    assert post_ppo.BUDGETS["empty"] == 81_920 == 10 * 8_192
    assert c._replace(draw_bug=False).env_task == "post-medium-9"
    # Adam's first step is lr * g / (|g| + eps): with g = 1e-6, eps 1e-7 gives 3e-4 / 1.1
    opt = post_ppo.make_post_ppo(c._replace(total_timesteps=8_192)).optimizer
    g = {"w": jnp.array([1e-6])}
    step, _ = opt.update(g, opt.init(g))
    assert float(step["w"][0]) == pytest.approx(-3e-4 / 1.1, rel=1e-4)
    with pytest.raises(ValueError, match="config.minibatch_size"):
        post_ppo.make_post_ppo(c._replace(minibatch_size=1_000))
    with pytest.raises(ValueError, match="config.task"):
        post_ppo.make_post_ppo(c._replace(task="nowhere"))
    with pytest.raises(ValueError, match="task: unknown task 'nowhere'"):
        post_ppo.make_env("nowhere")


def test_rollout_masks_with_minus_inf_and_counts_time_outs_as_terminations():
    from jumanji.wrappers import AutoResetWrapper

    config = post_ppo.PostPPOConfig(num_envs=4, num_steps=160, minibatch_size=640)
    parts = post_ppo.make_post_ppo(config)
    assert isinstance(parts.env, AutoResetWrapper)
    params, _, env_state, timestep = parts.init(jax.random.key(1))
    _, _, traj, last_value = jax.jit(parts.rollout)(params, env_state, timestep, jax.random.key(2))
    assert traj.image.shape == (160, 4, 3, 10, 10) and last_value.shape == (4,)
    mask, action = np.asarray(traj.action_mask), np.asarray(traj.action)
    assert np.take_along_axis(mask, action[..., None], -1).all()  # never an illegal action
    reward, term = np.asarray(traj.reward), np.asarray(traj.termination)
    time_outs = 0
    for n in range(4):
        count = 0
        for t in range(160):
            count += 1
            ends = reward[t, n] == 1 or count == 100  # jumanji's time limit
            assert term[t, n] == float(ends)
            time_outs += count == 100 and reward[t, n] == 0
            count = 0 if ends else count
    assert time_outs > 0  # an untrained policy times out: termination 1 there too


# ------------------------------------------------------------------------------ DQN post


def test_post_dqn_network_and_different_initial_keys():
    init, _, _ = post_dqn.make_post_dqn()
    runner = init(jax.random.key(0))
    shapes = [x.shape for x in jax.tree.leaves(runner.params)]
    assert sorted(shapes) == sorted(
        [(64,), (4, 64), (64,), (64, 64), (64,), (64, 64), (2,), (64, 2)]
    )
    # 4*64 + 64 + 2 * (64*64 + 64) + 64*2 + 2 = 8,770
    assert sum(x.size for x in jax.tree.leaves(runner.params)) == 8_770
    assert not np.allclose(
        runner.params["mlp/~/linear_0"]["w"], runner.target_params["mlp/~/linear_0"]["w"]
    )


def test_post_dqn_hyperparameters_and_epsilon_schedule():
    c = post_dqn.PostDQNConfig()
    assert (c.total_steps, c.buffer_size, c.prefill_steps, c.batch_size) == (20_000, 512, 512, 32)
    assert (c.gamma, c.learning_rate, c.target_period, c.hidden_sizes) == (
        0.9,
        1e-3,
        10,
        (64, 64, 64),
    )
    assert c.solved_length == 200 and not c.env_fixed
    # 0.3 / (1 + 0.001 t): t = 0 -> 0.3, 1,000 -> 0.15, 9,000 -> 0.03, 19,999 -> 0.3 / 20.999
    eps = post_dqn.epsilon(jnp.array([0, 1_000, 9_000, 19_999]))
    np.testing.assert_allclose(eps, [0.3, 0.15, 0.03, 0.3 / 20.999], rtol=1e-6)


def _state(physics, step_count=0):
    return cartpole.CartPoleState(
        jnp.asarray(physics, jnp.float32), jnp.int32(step_count), jax.random.key(0)
    )


def test_post_cartpole_gives_zero_on_the_terminal_step_and_has_no_step_limit():
    falling = lambda: _state([2.39, 1.0, 0.0, 0.0])  # noqa: E731  x moves to 2.41 > 2.4
    expected = cartpole.dynamics(falling().physics, 1)
    for fixed, reward in ((False, 0), (True, 1)):
        state, ts = post_dqn.post_cartpole_step(falling(), jnp.int32(1), fixed)
        assert bool(ts.terminated) and int(ts.reward) == reward and ts.reward.dtype == jnp.int32
        np.testing.assert_array_equal(ts.next_obs, expected)
        assert int(state.step_count) == 0 and np.abs(np.asarray(ts.obs)).max() <= 0.05
    upright = lambda: _state([0.0, 0.0, 0.0, 0.0], step_count=499)  # noqa: E731
    state, ts = post_dqn.post_cartpole_step(upright(), jnp.int32(0), False)
    assert int(ts.reward) == 1 and not bool(ts.truncated) and int(state.step_count) == 500
    state, ts = post_dqn.post_cartpole_step(state, jnp.int32(1), False)
    assert int(state.step_count) == 501  # no 500-step limit
    state, ts = post_dqn.post_cartpole_step(upright(), jnp.int32(0), True)
    assert int(ts.reward) == 1 and bool(ts.truncated) and not bool(ts.terminated)
    assert int(state.step_count) == 0  # CartPole-v1 truncates at 500 and restarts


def test_td_loss_is_the_mean_squared_td_error():
    class Linear:  # Q(s) = params * s[:2]
        @staticmethod
        def apply(params, obs):
            return params * obs[:, :2]

    batch = post_dqn.Transition(
        obs=jnp.array([[1.0, 2.0, 0, 0], [4.0, 0.0, 0, 0]]),
        action=jnp.array([1, 0]),
        reward=jnp.array([1, 0], jnp.int32),
        next_obs=jnp.array([[3.0, 5.0, 0, 0], [9.0, 9.0, 0, 0]]),
        terminated=jnp.array([False, True]),
    )
    # targets 1 + 0.9 * 5 = 5.5 and 0; errors 2 - 5.5 and 4 - 0: (12.25 + 16) / 2
    loss = post_dqn.td_loss(jnp.float32(1.0), jnp.float32(1.0), batch, Linear, 0.9)
    assert float(loss) == pytest.approx(14.125)


def test_prefill_fills_the_buffer_with_random_steps_and_training_follows_the_schedule():
    init, prefill, run = post_dqn.make_post_dqn()
    runner = jax.jit(prefill)(init(jax.random.key(4)))
    buffer = runner.buffer
    assert int(buffer.size) == 512 and int(buffer.position) == 0
    data = jax.tree.map(np.asarray, buffer.data)
    assert data.reward.dtype == np.int32
    np.testing.assert_array_equal(data.reward, 1 - data.terminated)  # 0 only when terminated
    assert 0.4 < data.action.mean() < 0.6 and data.terminated.sum() > 5  # random actions
    # consecutive transitions chain unless the episode ended
    alive = ~data.terminated[:-1]
    np.testing.assert_array_equal(data.next_obs[:-1][alive], data.obs[1:][alive])
    assert int(runner.t) == 0
    runner, metrics = jax.jit(run, static_argnums=1)(runner, 10)
    np.testing.assert_allclose(metrics["epsilon"], 0.3 / (1 + 0.001 * np.arange(10)), rtol=1e-6)
    assert int(runner.t) == 10
    for p, q in zip(jax.tree.leaves(runner.params), jax.tree.leaves(runner.target_params)):
        np.testing.assert_array_equal(p, q)  # copied at step 10


def test_periodic_evaluation_does_not_change_training():
    config = post_dqn.PostDQNConfig(total_steps=200, buffer_size=64, prefill_steps=64)
    results = [
        post_dqn.train(config, jax.random.key(0), jax.random.key(k), every, 2, 3)
        for k, every in ((1, 100), (2, 200))
    ]
    for a, b in zip(jax.tree.leaves(results[0][0]), jax.tree.leaves(results[1][0])):
        np.testing.assert_array_equal(a, b)
    assert [e["env_steps"] for e in results[0][2]["evals"]] == [100, 200]
    with pytest.raises(ValueError, match="eval_every"):
        post_dqn.train(config, jax.random.key(0), jax.random.key(1), eval_every=300)


# ------------------------------------------------------------------------------ the script


def test_source_posts_quick_mode_writes_json(run_quick):
    result = run_quick("source_posts.py")
    assert result["quick"] is True and result["hardware"]["jax"]
    variants = {(r["variant"], r["task"]) for r in result["ppo_runs"]}
    assert variants == {
        ("post", "post-medium"),
        ("mask fixed (-inf in the loss)", "post-medium"),
        ("value broadcast fixed", "post-medium"),
        ("all 9 pairs drawn", "post-medium-9"),
        ("post on the book's medium maze", "book-medium"),
    }
    for r in result["ppo_runs"]:
        assert r["compile_s"] > 0 and r["run_s"] > 0 and r["steps_per_s"] > 0
        assert set(r["final_success"]) == {"post-medium", "post-medium-9", "book-medium"}
        for rates in r["final_success"].values():
            assert 0 <= rates["sampled"] <= 1 and 0 <= rates["greedy"] <= 1
        assert len(r["evals"]) == r["env_steps"] // 1_024  # one per update in quick mode
    dqn = result["dqn_runs"]
    assert {(r["variant"], r["seed"]) for r in dqn} == {
        (v, k) for v in ("post", "CartPole-v1 reward and truncation") for k in (0, 1)
    }
    for r in dqn:
        assert 0 < r["final_return"] <= 500 and 0 < r["best_return"] <= 500
        assert [e["env_steps"] for e in r["evals"]] == [100, 200]
    # the book's agents, measured the same way in the same run
    (book_ppo,) = result["book_ppo_runs"]
    assert book_ppo["task"] == "book-medium" and len(book_ppo["evals"]) == 2
    assert [e["env_steps"] for e in book_ppo["evals"]] == [16_384, 32_768]
    assert all(0 <= e["success"] <= 1 for e in book_ppo["evals"])
    # the chapter's DQN and its earlier configuration, key by key in the same run
    book, earlier = result["book_dqn_runs"], result["earlier_dqn_runs"]
    assert [r["seed"] for r in book] == [r["seed"] for r in earlier] == [0, 1]
    assert {r["variant"] for r in book} == {"book"} and {r["variant"] for r in earlier} == {
        "earlier"
    }
    assert result["book_dqn_network"] == {"hidden_sizes": [64, 64], "layer_norm": True}
    assert result["earlier_dqn_config"]["target_tau"] == 0.005
    assert result["earlier_dqn_config"]["lr_schedule"] == "cosine"
    for r in book + earlier:
        assert 0 < r["final_return"] <= 500 and 0 < r["best_return"] <= 500
        assert r["evals"][-1]["env_steps"] == r["env_steps"]
        assert r["evaluated_run_s"] > 0  # the untimed run with the evaluations
        for e in r["evals"]:  # the clock of the run without evaluations, as for the posts
            share = e["env_steps"] / r["env_steps"]
            assert e["train_s"] == pytest.approx(r["compile_s"] + r["run_s"] * share)
        quarter = [e["return"] for e in r["evals"]][-max(1, len(r["evals"]) // 4) :]
        assert r["last_quarter_eval_mean"] == pytest.approx(np.mean(quarter))
    compared = result["comparisons"]
    assert set(compared["ppo"]) == {"post-medium", "book-medium"}
    for agent, runs in (
        ("post", [r for r in dqn if r["variant"] == "post"]),
        ("book", book),
        ("earlier", earlier),
    ):
        c = compared["dqn"][agent]
        assert c["seeds"] == 2
        assert c["final_solved"] == sum(r["final_return"] >= 475 for r in runs)
        one_run = np.median([r["compile_s"] + r["run_s"] for r in runs])
        assert c["median_run_time_s"] == pytest.approx(one_run)
        # retrying keys: one compile, then 2 / final_solved runs on average
        compile_s, run_s = (
            np.median([r["compile_s"] for r in runs]),
            np.median([r["run_s"] for r in runs]),
        )
        expected = None if not c["final_solved"] else compile_s + run_s * 2 / c["final_solved"]
        assert c["expected_time_to_solving_final_s"] == (
            expected if expected is None else pytest.approx(expected)
        )
    assert {"book_over_earlier_time", "book_over_post_time", "book_over_post_expected_time"} <= set(
        compared["dqn"]
    )
    assert len(result["summary"]) >= len(result["ppo_runs"]) + len(result["book_ppo_runs"]) + 5


def test_source_posts_dqn_only_keeps_the_ppo_part_and_says_so(tmp_path, monkeypatch):
    import json

    import source_posts

    previous = {
        "benchmark": "source_posts",
        "date": "2026-01-01T00:00:00+00:00",
        "ppo_target": 0.99,
        "ppo_runs": [{"x": 1}],
        "book_ppo_runs": [{"y": 2}],
        "ppo_config": {"a": 1},
        "book_ppo_config": {"b": 2},
        "dqn_runs": ["old"],
        "comparisons": {"ppo": {"t": 1}, "dqn": {"old": 1}},
        "summary": ["PPO line", "DQN old line"],
    }
    out = tmp_path / "source_posts.json"
    out.write_text(json.dumps(previous))
    monkeypatch.setattr(
        source_posts,
        "run_dqn",
        lambda quick: {
            "dqn_runs": ["new"],
            "comparisons_dqn": {"new": 1},
            "summary_dqn": ["DQN new line"],
        },
    )
    result = source_posts.main(["--dqn-only", "--out", str(out)])
    assert json.loads(out.read_text()) == result
    assert result["ppo_runs"] == [{"x": 1}] and result["book_ppo_runs"] == [{"y": 2}]
    assert result["ppo_config"] == {"a": 1} and result["book_ppo_config"] == {"b": 2}
    assert result["dqn_runs"] == ["new"]
    assert result["comparisons"] == {"ppo": {"t": 1}, "dqn": {"new": 1}}
    assert result["summary"] == ["PPO line", "DQN new line"]
    assert result["ppo_date"] == "2026-01-01T00:00:00+00:00" != result["date"]
    assert "DQN part was re-measured" in result["note"] and "2026-01-01" in result["note"]


def test_the_books_dqn_is_timed_without_its_evaluations(monkeypatch):
    """book_agents.measure_dqn times a program built with eval_episodes = 0 and takes the
    evaluations from a second, untimed program with the same key."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import book_agents

    from companion.agents import dqn

    built = []
    real = dqn.make_train

    def spy(config, network, env, *args, **kwargs):
        built.append(config.eval_episodes)
        return real(config, network, env, *args, **kwargs)

    monkeypatch.setattr(book_agents.dqn, "make_train", spy)
    run = book_agents.measure_dqn(91, jax.random.key(0), episodes=3, config=TINY_DQN)
    assert built == [0, 3]  # timed without evaluations, then evaluated on 3 episodes
    assert len(run["evals"]) == TINY_DQN.num_blocks and run["evaluated_run_s"] > 0


def test_committed_summaries_follow_from_the_committed_runs():
    """The comparisons and summary lines in source_posts.json are what ``--resummarise``
    computes from its runs: medians over all keys (a key that never reached the target is
    later than any), the expected time with one compile."""
    import json

    import source_posts

    committed = json.loads((ROOT / "benchmarks/results/source_posts.json").read_text())
    again = source_posts.resummarise(committed)
    assert again["comparisons"] == committed["comparisons"]
    assert again["summary"] == committed["summary"]
    # a median over all keys, not over those that got there: 1, 3, never -> 3 (not 2)
    assert source_posts._median([1.0, None, 3.0]) == 3.0
    assert source_posts._median([1.0, None, None]) is None
    assert source_posts._median([]) is None  # a variant with no runs (quick mode)
