"""Every exercise's self-check against the kinds of weakness a student finds first.

For each check (``companion.checks.__all__``, every exercise of every chapter):
- two equivalent right answers pass;
- an answer that turns a traced array into a Python value (``if x > 0:``, ``int(x)``) fails
  with a message that says the book runs it under ``jit`` (the checks run answers as the
  book does);
- a failure shows the check's message, not its source: the traceback ends in the
  ``self_check`` wrapper, with no chained exception, and IPython prints none of the
  catalogue of mistakes;
- an answer with a known mistake on one case only is not named after that mistake: the
  message reports the first differing case with its inputs.

The named mistakes of each check, and their combinations, are in the chapter test files
(``test_checks_*.py``); this file adds those this pass introduced (combinations, broadcasts,
one-hot products, ``jnp.roll``, a cut policy gradient, an argmax rollout, ``done`` for
``terminated``).
"""

from __future__ import annotations

import traceback

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_check_bank_agents import (
    late_success_loop,
    late_success_vectorised,
    q_overshoot_by_index,
    q_overshoot_by_steps,
)
from test_check_bank_basics import (
    RIGHT_BEND,
    RIGHT_CHECKPOINT,
    RIGHT_PAYS,
    RIGHT_REACH,
    RIGHT_SETTLE,
    checkpointed_class,
    reach_answer,
    settle_answer,
)
from test_check_bank_silent_bugs import (
    Compilations,
    compilations_once,
    cross_talk_hessian,
    cross_talk_jacobian,
)
from test_checks_bugs import (
    DQN,
    FOUNDATIONS,
    NETWORKS,
    PPO,
    _cell,
    _definitions,
    _one_line_fix,
    ppo_namespace,
)
from test_checks_chapters import _reverse_scan_returns, _semi_implicit
from test_checks_dqn import n_step_answer, n_step_with_powers, uniform_start, windows_with
from test_checks_networks import FloatScale, StaticScale, any_depth_mlp, grad_norms
from test_checks_parallel import mean_gradient, ring
from test_checks_performance import batched_scan, scan_rollout
from test_checks_ppo import dual_clip, eps_probs, fill_loss, gae_from_values_answer

import companion.checks as checks
from companion.agents import ppo
from companion.checks import CheckFailed, core
from companion.envs import cartpole


def _fixed(notebook, name, old, new, namespace):
    return _definitions(_one_line_fix(_cell(notebook, name), old, new), namespace)[name]


def _collect():
    return _fixed(
        "07_dqn", "collect", "terminated=terminated_t,", "terminated=timestep.terminated,", DQN
    )


def _rollout():
    return _fixed(
        "08_ppo_maze",
        "rollout_with_a_bug",
        "return (env_state, timestep, key), transition",
        "return (env_state, timestep, next_key), transition",
        PPO,
    )


def _q_learning():
    return _fixed(
        "05_rl_foundations",
        "q_learning_buggy",
        "td_target = r + gamma * best_next",
        "td_target = r + gamma * (1.0 - d) * best_next",
        FOUNDATIONS,
    )


def _decayed():
    return _fixed(
        "02_neural_networks",
        "train_decayed",
        "learning_rate = 0.1 * 0.97**step",
        "learning_rate = jnp.asarray(0.1 * 0.97**step)",
        NETWORKS,
    )


def _returns_loop(rewards, gamma):
    out, g = [], jnp.zeros_like(rewards[0])
    for t in reversed(range(rewards.shape[0])):  # a static length: unrolled, but right
        g = rewards[t] + gamma * g
        out.append(g)
    return jnp.stack(out[::-1])


def _returns_flipped(rewards, gamma):
    def body(g, r):
        g = r + gamma * g
        return g, g

    return jnp.flip(jax.lax.scan(body, jnp.zeros_like(rewards[0]), jnp.flip(rewards, 0))[1], 0)


def _noisy_a(key, n):
    key, sub = jax.random.split(key)
    return jax.random.normal(sub, (n,)), key


def _noisy_b(key, n):
    keys = jax.random.split(key, 3)
    return jax.random.normal(keys[2], (n,)), keys[0]


def _mlp_recursive(params, x):
    (w, b), rest = params[0], params[1:]
    return x @ w + b if not rest else _mlp_recursive(rest, jnp.tanh(x @ w + b))


def _grad_norms_ravel(model, x, y):
    def one(x_i, y_i):
        grads = eqx.filter_grad(lambda m: jnp.sum((m(x_i) - y_i) ** 2))(model)
        flat, _ = jax.flatten_util.ravel_pytree(eqx.filter(grads, eqx.is_array))
        return jnp.linalg.norm(flat)

    return jax.vmap(one)(x, y)


def _classify(reward, last, next_mask):
    terminated = last & ((reward > 0) | ~jnp.any(next_mask, axis=-1))
    return terminated, last & ~terminated


def _classify_where(reward, last, next_mask):
    stuck = jnp.sum(next_mask, axis=-1) == 0
    terminated = jnp.where(last, (reward == 1.0) | stuck, False)
    return terminated, jnp.where(last, ~terminated, False)


def _count_endings(timesteps):
    flags = _classify(timesteps.reward, timesteps.last(), timesteps.extras["next_obs"].action_mask)
    return tuple(jnp.sum(flag) for flag in flags)


def _count_endings_by_position(timesteps):
    end, last = timesteps.extras["next_obs"], timesteps.last()
    on_target = (end.agent_position.row == end.target_position.row) & (
        end.agent_position.col == end.target_position.col
    )
    terminated = last & (on_target | ~end.action_mask.any(-1))
    return terminated.sum(), (last & ~terminated).sum()


def _euler_by_hand(physics, action):
    p = cartpole.DEFAULT_PARAMS
    x, x_dot, theta, theta_dot = physics
    force = jnp.where(action == 1, p.force_mag, -p.force_mag)
    cos, sin = jnp.cos(theta), jnp.sin(theta)
    temp = (force + p.polemass_length * theta_dot**2 * sin) / p.total_mass
    theta_acc = (p.gravity * sin - cos * temp) / (
        p.length * (4.0 / 3.0 - p.masspole * cos**2 / p.total_mass)
    )
    x_acc = temp - p.polemass_length * theta_acc * cos / p.total_mass
    x_dot, theta_dot = x_dot + p.tau * x_acc, theta_dot + p.tau * theta_acc
    return jnp.stack([x + p.tau * x_dot, x_dot, theta + p.tau * theta_dot, theta_dot])


def _action_values(mdp, v, gamma):
    return mdp.reward + gamma * (1.0 - mdp.terminal) * v[mdp.next_state]


def _action_values_where(mdp, v, gamma):
    return jnp.where(mdp.terminal, mdp.reward, mdp.reward + gamma * v[mdp.next_state])


def _reinforce(rewards, baselines, gamma):
    g = _reverse_scan_returns(rewards, gamma)
    return gamma ** jnp.arange(rewards.shape[0]) * (g - baselines)


def _reinforce_loop(rewards, baselines, gamma):
    g, out = 0.0, []
    for t in reversed(range(rewards.shape[0])):
        g = rewards[t] + gamma * g
        out.append(gamma**t * (g - baselines[t]))
    return jnp.stack(out[::-1])


def _double_dqn(reward, terminated, q_online, q_target, gamma):
    a = jnp.argmax(q_online, axis=-1)
    chosen = jnp.take_along_axis(q_target, a[:, None], axis=-1)[:, 0]
    return reward + gamma * (1.0 - terminated) * chosen


def _double_dqn_one_hot(reward, terminated, q_online, q_target, gamma):
    one_hot = jax.nn.one_hot(jnp.argmax(q_online, -1), q_online.shape[-1])
    return reward + gamma * jnp.where(terminated, 0.0, jnp.sum(q_target * one_hot, -1))


def _dual_clip_where(ratio, adv, eps, c):
    standard = jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - eps, 1 + eps) * adv)
    return jnp.where(adv < 0, jnp.maximum(standard, c * adv), standard)


def _eps_probs_log(logits, mask, eps):
    log_p = jax.nn.log_softmax(jnp.where(mask, logits, -jnp.inf), axis=-1)
    uniform = mask / jnp.sum(mask, axis=-1, keepdims=True)
    return jnp.where(mask, (1 - eps) * jnp.exp(log_p) + eps * uniform, 0.0)


def _gae_loop(reward, value, value_last, value_final, terminated, truncated, gamma, lam):
    advantages, carried = [], jnp.zeros_like(value_last)
    for t in reversed(range(reward.shape[0])):
        v_next = value_last if t == reward.shape[0] - 1 else value[t + 1]
        v_next = jnp.where(truncated[t], value_final[t], v_next)
        delta = reward[t] + gamma * (1.0 - terminated[t]) * v_next - value[t]
        carried = delta + gamma * lam * (1.0 - (terminated[t] | truncated[t])) * carried
        advantages.append(carried)
    return jnp.stack(advantages[::-1])


def _fill_loss_masked_entropy(model, batch, **args):
    loss, metrics = fill_loss(model, batch, **args)
    logits, _ = jax.vmap(model)(batch.image)
    filled = jnp.where(batch.action_mask, logits, 1.0)
    delta = jnp.mean(ppo.entropy(filled)) - jnp.mean(
        ppo.entropy(ppo.masked_logits(logits, batch.action_mask))
    )
    return loss + args["ent_coef"] * delta, metrics


def _whole_batch_gradient(w, x, y, mesh):
    return jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)


def _summed_parts_gradient(w, x, y, mesh):
    from jax.sharding import PartitionSpec as P

    from companion import parallel

    def on_each_device(w, x, y):
        part = jax.grad(lambda w: jnp.sum((x @ w - y) ** 2))(w)
        return jax.lax.psum(part, "devices") / (x.shape[0] * jax.lax.psum(1, "devices"))

    specs = (P(), P("devices"), P("devices"))
    return parallel.shard_map(on_each_device, mesh, specs, P())(w, x, y)


def _bytes_by_fields(num_steps, num_envs):
    image = 3 * 10 * 10  # bool
    per = image + 4 + 2 * 4 + 4 * 4 + 2
    return per * num_steps * num_envs


#: Two right answers per check.
RIGHT = {
    "check_softplus_grad": [
        lambda w, x: x * jax.nn.sigmoid(w * x),
        jax.grad(lambda w, x: jnp.sum(jnp.log1p(jnp.exp(w * x)))),
    ],
    "check_discounted_returns": [_reverse_scan_returns, _returns_flipped],
    "check_noisy_batch": [_noisy_a, _noisy_b],
    "check_mlp_apply": [any_depth_mlp, _mlp_recursive],
    "check_frozen_constant": [
        lambda key: StaticScale(jax.random.normal(key, (4,)), 2.0),
        lambda key: FloatScale(jax.random.normal(key, (4,)), 2.0),
    ],
    "check_per_example_grad_norms": [grad_norms, _grad_norms_ravel],
    "check_decayed_training": [_decayed(), _decayed()],
    "check_legal_fraction": [
        lambda m: jnp.mean(m, axis=0),
        lambda m: jnp.sum(m.astype(jnp.float32), axis=0) / m.shape[0],
    ],
    "check_up_first_policy": [
        lambda k, m: jnp.where(m[0], 0, jax.random.categorical(k, jnp.where(m, 0.0, -jnp.inf))),
        lambda k, m: jnp.where(m[0], 0, jax.random.choice(k, 4, p=m / m.sum())),
    ],
    "check_termination_and_truncation": [_classify, _classify_where],
    "check_count_endings": [_count_endings, _count_endings_by_position],
    "check_semi_implicit_step": [_semi_implicit, _euler_by_hand],
    "check_balancing_policy": [
        lambda obs: (obs[2] + obs[3] > 0).astype(jnp.int32),
        lambda obs: jnp.where(obs[2] + 0.5 * obs[3] > 0, 1, 0),
    ],
    "check_action_values": [_action_values, _action_values_where],
    "check_reinforce_weights": [_reinforce, _reinforce_loop],
    "check_q_learning": [_q_learning(), _q_learning()],
    "check_double_dqn_target": [_double_dqn, _double_dqn_one_hot],
    "check_n_step_target": [n_step_answer, lambda *a: n_step_with_powers(*a, mode=None)],
    "check_sample_windows": [
        windows_with(uniform_start),
        windows_with(
            lambda b, k, size, n: jnp.floor(
                jax.random.uniform(k, (size,)) * (b.size - n + 1)
            ).astype(jnp.int32)
        ),
    ],
    "check_collector": [_collect(), _collect()],
    "check_epsilon_masked_probs": [eps_probs, _eps_probs_log],
    "check_dual_clip_objective": [dual_clip, _dual_clip_where],
    "check_gae_from_values": [gae_from_values_answer, _gae_loop],
    "check_fill_one_loss": [fill_loss, _fill_loss_masked_entropy],
    "check_rollout_keys": [_rollout(), _rollout()],
    "check_q_overshoot": [q_overshoot_by_steps, q_overshoot_by_index],
    "check_late_success": [late_success_loop, late_success_vectorised],
    "check_batched_rollout": [
        batched_scan,
        jax.vmap(scan_rollout, in_axes=(0, 1), out_axes=(0, 1)),
    ],
    "check_rollout_bytes": [lambda t, n: 330 * t * n, _bytes_by_fields],
    "check_allreduce_bytes": [ring, lambda p, n: int(8 * p * (n - 1) // n)],
    "check_data_parallel_grad": [mean_gradient, _summed_parts_gradient],
    "check_settle": RIGHT_SETTLE[:2],
    "check_success_by_reach": RIGHT_REACH[:2],
    "check_bend": RIGHT_BEND[:2],
    "check_checkpointed_propagation": RIGHT_CHECKPOINT[:2],
    "check_pays_from": RIGHT_PAYS[:2],
    "check_cross_talk": [cross_talk_jacobian, cross_talk_hessian],
    "check_compilations": [compilations_once, Compilations],
}


def test_every_check_is_listed():
    public = {name for name in checks.__all__ if name.startswith("check_")}
    assert public == set(RIGHT)


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_two_right_answers_pass(name, capsys):
    for answer in RIGHT[name]:
        getattr(checks, name)(answer)
    assert capsys.readouterr().out.count("check passed") == 2


def _if_on(value):
    """Python control flow on a traced array: an error under jit."""
    if value > -1e9:
        return value
    return value


#: For each check the book runs under jit: a right answer with one `if` on a traced value.
TRAPS = {
    "check_softplus_grad": lambda w, x: _if_on(w.sum()) * 0 + x * jax.nn.sigmoid(w * x),
    "check_discounted_returns": lambda r, g: _if_on(r.sum()) * 0 + _reverse_scan_returns(r, g),
    "check_noisy_batch": lambda k, n: (_if_on(jax.random.normal(k)), _noisy_a(k, n))[1],
    "check_mlp_apply": lambda p, x: _if_on(x.sum()) * 0 + any_depth_mlp(p, x),
    "check_per_example_grad_norms": lambda m, x, y: _if_on(x.sum()) * 0 + grad_norms(m, x, y),
    "check_legal_fraction": lambda m: jnp.mean(m, axis=0) if m.any() else 0.0,
    "check_up_first_policy": lambda k, m: 0 if m[0] else jax.random.choice(k, 4, p=m / m.sum()),
    "check_termination_and_truncation": lambda r, l, m: _classify(r, _if_on(l.sum()) * 0 + l, m),
    "check_count_endings": lambda ts: _count_endings(ts) if ts.reward.sum() > -1 else (0, 0),
    "check_semi_implicit_step": lambda p, a: _euler_by_hand(p, 1 if a == 1 else 0),
    "check_balancing_policy": lambda obs: 1 if obs[2] + obs[3] > 0 else 0,
    "check_action_values": lambda mdp, v, g: _action_values(mdp, _if_on(v.max()) * 0 + v, g),
    "check_reinforce_weights": lambda r, b, g: _reinforce(r, b, g) if r[0] >= -1e9 else r,
    "check_q_learning": lambda mdp, key, n: jnp.zeros((int(mdp.legal.sum()), 4)),
    "check_double_dqn_target": lambda r, t, q1, q2, g: (
        _double_dqn(r, t, q1, q2, g) if not t.all() else r
    ),
    "check_n_step_target": lambda r, te, tr, q, g: (
        n_step_answer(r, te, tr, q, g) * int(q.max() > 0)
    ),
    "check_sample_windows": lambda b, k, size, n: windows_with(
        lambda b, k, size, n: jax.random.randint(k, (size,), 0, int(b.size) - n + 1)
    )(b, k, size, n),
    "check_collector": lambda key, n: _collect()(key, n) if jax.random.uniform(key) >= 0 else 0,
    "check_epsilon_masked_probs": lambda x, m, e: eps_probs(x, m, e) if m.any() else x,
    "check_dual_clip_objective": lambda r, a, e, c: dual_clip(r, a, e, c) if a.min() < 0 else a,
    "check_gae_from_values": lambda *a: gae_from_values_answer(*a) * float(a[1].max() > -9),
    "check_fill_one_loss": lambda m, b, **k: (
        fill_loss(m, b, **k) if float(b.advantage.std()) > 0 else 0
    ),
    "check_rollout_keys": lambda model, env, pool, s, ts, key, n: (
        _rollout()(model, env, pool, s, ts, key, n) if jax.random.uniform(key) >= 0 else 0
    ),
    "check_batched_rollout": lambda s, a: batched_scan(s, a) if a[0, 0] >= 0 else s,
    "check_data_parallel_grad": lambda w, x, y, mesh: (
        mean_gradient(w, x, y, mesh) if x.sum() > -1e9 else w
    ),
    "check_settle": lambda v, m, c: settle_answer(v, m, c) if c > 0 else v,
    "check_success_by_reach": lambda s, d, k: reach_answer(s, d, k) if s.any() else d,
    "check_checkpointed_propagation": type(
        "Trap",
        (checkpointed_class(),),
        {
            "__call__": lambda self, image: (
                checkpointed_class().__call__(self, image) if image.sum() > 0 else image
            )
        },
    ),
}

#: Checks whose answers are not compiled functions of arrays: a module's constructor, a
#: training loop (it compiles its own step), byte counts (Python arithmetic), a detector of
#: cross-talk (NumPy is allowed) and a context manager that counts compilations.
NOT_TRACED = {
    "check_frozen_constant",
    "check_decayed_training",
    "check_rollout_bytes",
    "check_allreduce_bytes",
    "check_cross_talk",
    "check_compilations",
    "check_bend",
    "check_pays_from",  # the projects' measures, Python on dicts
    "check_q_overshoot",
    "check_late_success",  # the projects' measures, on NumPy arrays
}


def test_every_traced_check_has_a_trap():
    assert set(TRAPS) | NOT_TRACED == set(RIGHT)


@pytest.mark.parametrize("name", sorted(TRAPS))
def test_answers_run_under_jit(name):
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed) as failure:
        getattr(checks, name)(TRAPS[name])
    message = str(failure.value)
    assert "turns a traced array into a Python value" in message, message
    assert "under jax.jit" in message


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_a_failure_shows_the_message_not_the_check(name):
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed) as failure:
        getattr(checks, name)(lambda *args, **kwargs: 0)
    exc = failure.value
    assert exc.__cause__ is None and exc.__suppress_context__
    files = [frame.filename for frame in traceback.extract_tb(exc.__traceback__)]
    inside = [f for f in files if "companion" in f]
    assert inside and all(f.endswith("checks/core.py") for f in inside), files


def test_a_check_runs_the_answer_at_the_highest_matmul_precision():
    """On a TPU a float32 product runs in bfloat16 passes by default, and a right answer then
    misses a float32 reference by about 1e-3; every check (each is wrapped by ``self_check``,
    test above) runs the answer at the highest precision, and leaves the setting as it was."""
    seen = []

    def answer(a, b):
        seen.append(jax.config.jax_default_matmul_precision)
        return a @ b

    @core.self_check
    def check_product(fn):
        a = jnp.arange(6.0).reshape(2, 3)
        np.testing.assert_allclose(fn(a, a.T), np.asarray(a) @ np.asarray(a).T)

    before = jax.config.jax_default_matmul_precision
    check_product(answer)
    assert seen == ["highest"]
    assert jax.config.jax_default_matmul_precision == before


def test_ipython_prints_no_catalogue_of_mistakes(capsys):
    """The traceback a notebook shows: the student's call and the message, none of the
    check's source (its expected answer, its named mistakes)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.user_ns.update(jnp=jnp, checks=checks)
    shell.run_cell(
        "checks.check_double_dqn_target(lambda r, t, q1, q2, g: r + g * (1 - t) * q2.max(-1))"
    )
    out = capsys.readouterr()
    text = out.out + out.err
    assert "this is the plain DQN target" in text
    for source in ("take_along_axis", "_double_dqn_case", "one_hot", "mistakes"):
        assert source not in text, source


#: A known mistake on one case only (a right answer elsewhere): not named after it.
HALF = {
    "check_softplus_grad": lambda w, x: jax.nn.sigmoid(w * x) * (x if w.ndim == 1 else 1.0),
    "check_discounted_returns": lambda r, g: (
        _reverse_scan_returns(r, g) * (1.0 if r.ndim == 1 else g)
    ),
    "check_mlp_apply": lambda p, x: any_depth_mlp(p, x, bias=len(p) != 2),
    "check_legal_fraction": lambda m: jnp.mean(m, axis=0) * (1 if m.shape[0] == 5 else 7),
    "check_semi_implicit_step": lambda p, a: jnp.where(
        a == 0, cartpole.dynamics(p, a), _semi_implicit(p, a)
    ),
    "check_action_values": lambda mdp, v, g: (
        mdp.reward + g * v[mdp.next_state] * (1.0 if g == 0.8 else 1.0 - mdp.terminal)
    ),
    "check_reinforce_weights": lambda r, b, g: (
        _reinforce(r, b, g) / (g ** jnp.arange(r.shape[0]) if r.shape[0] == 7 else 1.0)
    ),
    "check_double_dqn_target": lambda r, t, q1, q2, g: (
        r
        + g
        * (1.0 - t)
        * (
            q2.max(-1)
            if q1.shape[-1] == 2
            else jnp.take_along_axis(q2, jnp.argmax(q1, -1)[:, None], -1)[:, 0]
        )
    ),
    "check_n_step_target": lambda r, te, tr, q, g: n_step_answer(
        r, te if r.shape[1] == 3 else jnp.zeros_like(te), tr, q, g
    ),
    "check_epsilon_masked_probs": lambda x, m, e: eps_probs(x, m, e if x.ndim == 3 else 0.0),
    "check_dual_clip_objective": lambda r, a, e, c: dual_clip(r, a, e, c if r.ndim == 2 else 1e9),
    "check_gae_from_values": lambda *a: gae_from_values_answer(
        *a[:6], a[6], a[7] if a[0].shape[0] == 7 else 1.0
    ),
    "check_allreduce_bytes": lambda p, n: ring(p, n) / (2 if n == 8 else 1),
    "check_fill_one_loss": lambda m, b, **k: fill_loss(
        m, b, **k, fill=1.0 if k["ent_coef"] < 0.02 else 0.0
    ),
}


@pytest.mark.parametrize("name", sorted(HALF))
def test_a_mistake_on_one_case_is_not_named(name):
    with pytest.raises(CheckFailed, match="differs from the reference on") as failure:
        getattr(checks, name)(HALF[name])
    message = str(failure.value)
    assert "it gives" in message and "expected" in message, message


# --- mistakes added in this pass, each named ----------------------------------------------


def _gae_roll(reward, value, value_last, value_final, terminated, truncated, gamma, lam):
    """V(s_{t+1}) from jnp.roll: wraps round at the last step."""
    wrapped = value[0]
    return gae_from_values_answer(
        reward, value, wrapped, value_final, terminated, truncated, gamma, lam
    )


def _gae_ignoring_truncations(
    reward, value, value_last, value_final, terminated, truncated, gamma, lam
):
    return gae_from_values_answer(
        reward, value, value_last, value_final, terminated, jnp.zeros_like(truncated), gamma, lam
    )


def _double_dqn_column(reward, terminated, q_online, q_target, gamma):
    chosen = jnp.take_along_axis(q_target, jnp.argmax(q_online, -1)[:, None], -1)  # (B, 1)
    return reward + gamma * (1.0 - terminated) * chosen


def _double_dqn_one_hot_max(reward, terminated, q_online, q_target, gamma):
    one_hot = jax.nn.one_hot(jnp.argmax(q_online, -1), q_online.shape[-1])
    return reward + gamma * (1.0 - terminated) * jnp.max(q_target * one_hot, -1)


def _fill_loss_cut(model, batch, clip_eps, vf_coef, ent_coef, normalise_advantages):
    logits, value = jax.vmap(model)(batch.image)
    logits = jnp.where(batch.action_mask, logits, 1.0)
    log_prob = jax.lax.stop_gradient(ppo.log_prob(logits, batch.action))
    ratio = jnp.exp(log_prob - batch.log_prob)
    adv = ppo.normalise(batch.advantage) if normalise_advantages else batch.advantage
    policy_loss = -jnp.mean(ppo.clipped_surrogate(ratio, adv, clip_eps))
    value_loss = 0.5 * jnp.mean((value - batch.target) ** 2)
    return policy_loss + vf_coef * value_loss - ent_coef * jnp.mean(ppo.entropy(logits)), {}


def _rollout_argmax():
    source = _one_line_fix(
        _cell("08_ppo_maze", "rollout_with_a_bug"),
        "return (env_state, timestep, key), transition",
        "return (env_state, timestep, next_key), transition",
    )
    argmax = ppo_namespace(
        (
            "action_t = jax.random.categorical(key_t, logits_t).astype(jnp.int32)",
            "action_t = jnp.argmax(logits_t, axis=-1).astype(jnp.int32)",
        )
    )
    return _definitions(source, argmax)["rollout_with_a_bug"]


@pytest.mark.parametrize(
    "name, wrong, message",
    [
        ("check_gae_from_values", _gae_roll, "jnp.roll.*wraps round"),
        ("check_gae_from_values", _gae_ignoring_truncations, "truncations are ignored"),
        (
            "check_double_dqn_target",
            _double_dqn_column,
            r"of shape \(3,\).*; it (returned|is) an? \w+ array of shape \(3, 3\)\. Two shapes were broadcast together",
        ),
        (
            "check_n_step_target",
            lambda r, te, tr, q, g: n_step_answer(r, jnp.zeros_like(te), jnp.zeros_like(tr), q, g),
            "runs through every episode end",
        ),
        ("check_double_dqn_target", _double_dqn_one_hot_max, "one-hot product"),
        ("check_fill_one_loss", _fill_loss_cut, "no policy gradient flows through the ratio"),
        (
            "check_epsilon_masked_probs",
            lambda x, m, e: eps_probs(jax.lax.stop_gradient(x), m, e),
            "the wrong gradient",
        ),
        ("check_rollout_keys", _rollout_argmax(), "most probable one \\(an argmax\\)"),
        (
            "check_collector",
            _fixed(
                "07_dqn", "collect", "terminated=terminated_t,", "terminated=timestep.done,", DQN
            ),
            "also True at the .* truncations",
        ),
        ("check_semi_implicit_step", lambda p, a: _semi_implicit(p, 1 - a), "wrong way"),
        (
            "check_reinforce_weights",
            lambda r, b, g: g ** jnp.arange(r.shape[0]) * _reverse_scan_returns(r, g) - b,
            "multiplies only the return",
        ),
        (
            "check_up_first_policy",
            lambda k, m: jnp.where(m[0], 0, jax.random.choice(jax.random.key(0), 4, p=m / m.sum())),
            "a key of its own",
        ),
    ],
)
def test_new_mistakes_are_named(name, wrong, message):
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed, match=message):
        getattr(checks, name)(wrong)


def test_a_differing_case_shows_its_inputs():
    with pytest.raises(CheckFailed) as failure:
        checks.check_reinforce_weights(lambda r, b, g: _reinforce(r, b, g) + 0.01)
    message = str(failure.value)
    assert (
        "on T = 5, gamma 0.9: first at index 0, it gives 2.2867, expected 2.2767\nThe inputs:"
        in message
    )
    assert "rewards = [0. , 1. , 0. , 0.5, 2. ]" in message
    assert "baselines = [0.3, 0.7, 0.2, 0.4, 1.5]" in message


def test_a_differing_case_summarises_long_inputs():
    """The generic message stays short: an input of 40 elements shows its ends, not all 40."""
    from companion.checks.core import Case, verdict

    long = np.arange(40.0)
    case = Case("forty steps", {"reward": long}, long, {})
    with pytest.raises(CheckFailed) as failure:
        verdict("returns", [case], [long + (long == 17)])
    message = str(failure.value)
    assert "first at index 17, it gives 18., expected 17." in message
    assert "..." in message and len(message.splitlines()) <= 7, message


def test_an_answer_that_raises_is_quoted_past_the_first_line():
    """JAX's carry-type error says what differs after "they differ:"; the check quotes it."""
    from companion.checks.core import run_answer

    def answer(xs):
        return jax.lax.scan(lambda c, x: (c + x, c), 0.0, xs)[0]

    with pytest.raises(CheckFailed) as failure:
        run_answer(answer, jnp.ones((3, 2)), call="answer(xs)")
    message = str(failure.value)
    assert "they differ" in message and "float32[2]" in message, message
    assert "JAX has removed" not in message and "\n" not in message


def test_an_error_names_the_students_line():
    def answer(w, x):
        scale = x.reshape(4)  # the student's line
        return scale

    with pytest.raises(CheckFailed, match=r"raised TypeError \(at `scale = x.reshape\(4\)"):
        checks.check_softplus_grad(answer)


# --- wrong answers a fresh student tried first: each fails, named -------------------------


def _classify_with(term_of):
    def classify(reward, last, next_mask):
        terminated = term_of(reward, last, next_mask)
        return terminated, last & ~terminated

    return classify


def _noisy_returns_subkey(key, n):
    key, sub = jax.random.split(key)
    return jax.random.normal(sub, (n,)), sub


def _eps_finite_fill(logits, mask, epsilon):
    p = jax.nn.softmax(jnp.where(mask, logits, -30.0), -1)
    return (1 - epsilon) * p + epsilon * mask / mask.sum(-1, keepdims=True)


def _double_dqn_finite_fill(r, d, qo, qt, g):
    chosen = jax.nn.one_hot(jnp.argmax(qo, -1), qo.shape[-1]).astype(bool)
    return r + g * (1 - d) * jnp.max(jnp.where(chosen, qt, -10.0), -1)


def _dual_clip_ratio_bound(r, a, e, c):
    return jnp.minimum(jnp.minimum(r, c) * a, jnp.clip(r, 1 - e, 1 + e) * a)


def _returns_wrong_carry(r, g):
    def body(c, x):
        return x + g * c, x + g * c

    return jax.lax.scan(body, jnp.zeros(r.shape[-1]), r, reverse=True)[1]


def _windows_without_wrap(buffer, key, batch_size, n):
    oldest = (buffer.position - buffer.size) % buffer.capacity
    start = jax.random.randint(key, (batch_size,), 0, buffer.size - n + 1)
    slots = oldest + start[:, None] + jnp.arange(n)  # no % capacity
    return jax.tree.map(lambda leaf: leaf[slots], buffer.data)


def _reinforce_forward_scan(rewards, baselines, gamma):
    g = _reverse_scan_returns(rewards, gamma, reverse=False)
    return gamma ** jnp.arange(rewards.shape[0]) * (g - baselines)


@pytest.mark.parametrize(
    "name, wrong, message",
    [
        (
            "check_termination_and_truncation",
            _classify_with(lambda r, l, m: l & ((r > 0) | ~jnp.all(m, -1))),
            "walls next to",
        ),
        (
            "check_termination_and_truncation",
            _classify_with(lambda r, l, m: (r > 0) | ~jnp.any(m, -1)),
            "not LAST is flagged",
        ),
        (
            "check_termination_and_truncation",
            lambda r, l, m: tuple(x.astype(jnp.float32) for x in _classify(r, l, m)),
            r"(it returned|it is) an? float32 array",
        ),
        ("check_noisy_batch", _noisy_returns_subkey, "returns the key it drew the samples with"),
        (
            "check_noisy_batch",
            lambda k, n: (
                jax.random.uniform(jax.random.split(k)[1], (n,), minval=-(3**0.5), maxval=3**0.5),
                jax.random.split(k)[0],
            ),
            "kurtosis",
        ),
        ("check_epsilon_masked_probs", _eps_finite_fill, "not exactly 0"),
        ("check_double_dqn_target", _double_dqn_finite_fill, "differs from the reference"),
        ("check_dual_clip_objective", _dual_clip_ratio_bound, "bounds the ratio, not the"),
        (
            "check_dual_clip_objective",
            lambda r, a, e, c: jnp.where(a < 0, jnp.maximum(r * a, c * a), dual_clip(r, a, e, c)),
            "differs from the reference",
        ),
        ("check_discounted_returns", _returns_wrong_carry, r"jnp.zeros_like\(rewards\[0\]\)"),
        ("check_sample_windows", _windows_without_wrap, "% capacity"),
        ("check_reinforce_weights", _reinforce_forward_scan, "accumulates forwards"),
        ("check_data_parallel_grad", _whole_batch_gradient, "never splits the batch"),
    ],
)
def test_a_fresh_students_wrong_answers_are_named(name, wrong, message):
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed, match=message) as failure:
        getattr(checks, name)(wrong)
    assert "the ratio is clipped to [eps" not in str(failure.value)


# --- and a second fresh student's, on the find-the-bug and performance checks ---------------

_FIXED_ROLLOUT = (
    "return (env_state, timestep, key), transition",
    "return (env_state, timestep, next_key), transition",
)
_SAMPLE = "action_t = jax.random.categorical(key_t, logits_t).astype(jnp.int32)"


def _rollout_variant(old, new, step=False):
    """The fixed rollout_with_a_bug with ``old`` made ``new`` in it or, with ``step``, in the
    section-3 rollout_step it calls (where the action is sampled)."""
    source = _one_line_fix(_cell("08_ppo_maze", "rollout_with_a_bug"), *_FIXED_ROLLOUT)
    if step:
        return _definitions(source, ppo_namespace((old, new)))["rollout_with_a_bug"]
    return _definitions(_one_line_fix(source, old, new), PPO)["rollout_with_a_bug"]


def _collect_variant(old, new):
    source = _one_line_fix(
        _cell("07_dqn", "collect"), "terminated=terminated_t,", "terminated=timestep.terminated,"
    )
    return _definitions(_one_line_fix(source, old, new), DQN)["collect"]


@jax.jit
def _jitted_python_loop(states, actions):
    dones = []
    for t in range(actions.shape[0]):
        states, timestep = jax.vmap(cartpole.step_autoreset)(states, actions[t])
        dones.append(timestep.done)
    return states, jnp.stack(dones)


def _scan_unrolled(states, actions):
    def body(states, actions_t):
        states, timestep = jax.vmap(cartpole.step_autoreset)(states, actions_t)
        return states, timestep.done

    return jax.lax.scan(body, states, actions, unroll=True)


def _scan_terminated(states, actions):
    def body(states, actions_t):
        states, timestep = jax.vmap(cartpole.step_autoreset)(states, actions_t)
        return states, timestep.terminated

    return jax.lax.scan(body, states, actions)


class _StaticWeight(eqx.Module):
    weight: jax.Array = eqx.field(static=True)
    scale: float = 2.0

    def __call__(self, x):
        return self.scale * jnp.sum(self.weight * x)


@pytest.mark.parametrize(
    "name, wrong, message",
    [
        (
            "check_collector",
            _collect_variant("jax.random.bernoulli(action_key)", "jax.random.bernoulli(reset_key)"),
            "at every step: the steps share one key",
        ),
        (
            "check_rollout_keys",
            _rollout_variant(_FIXED_ROLLOUT[1], "return (env_state, timestep, key_t), transition"),
            "carries that same key",
        ),
        (
            "check_rollout_keys",
            _rollout_variant(
                _SAMPLE,
                "action_t = jax.vmap(lambda l: jax.random.categorical("
                "key_t, l))(logits_t).astype(jnp.int32)",
                step=True,
            ),
            "share their random noise",
        ),
        (
            "check_rollout_keys",
            _rollout_variant(_SAMPLE, _SAMPLE.replace("logits_t)", "logits_t / 1.5)"), step=True),
            "not samples of the policy",
        ),
        (
            "check_rollout_keys",
            _rollout_variant(
                _SAMPLE,
                _SAMPLE.replace("logits_t)", "jnp.where(obs_t.action_mask, 0.0, -jnp.inf))"),
                step=True,
            ),
            "not samples of the policy",
        ),
        ("check_batched_rollout", _jitted_python_loop, "unrolls its loop"),
        ("check_batched_rollout", _scan_unrolled, "unroll"),
        ("check_batched_rollout", _scan_terminated, "misses the truncations"),
        (
            "check_per_example_grad_norms",
            lambda m, x, y: grad_norms(m, x, y, loss_of=lambda e: 0.5 * jnp.sum(e)),
            "half the squared error",
        ),
        (
            "check_frozen_constant",
            lambda key: _StaticWeight(jax.random.normal(key, (4,))),
            "static fields are not trained",
        ),
        ("check_rollout_bytes", lambda t, n: 330 * t * n / 1e6, "a whole number of bytes"),
    ],
)
@pytest.mark.filterwarnings("ignore:A JAX array is being set as static")
def test_a_second_students_wrong_answers_are_named(name, wrong, message):
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed, match=message):
        getattr(checks, name)(wrong)


def test_a_collector_that_passes_cartpoles_parameters_passes(capsys):
    checks.check_collector(
        _collect_variant(
            "cartpole.step_autoreset(env_state, action_t)",
            "cartpole.step_autoreset(env_state, action_t, cartpole.DEFAULT_PARAMS)",
        )
    )
    assert "check passed" in capsys.readouterr().out


def test_a_step_recompiled_at_every_call_fails_every_time():
    buggy = _definitions(_cell("02_neural_networks", "train_decayed"), NETWORKS)["train_decayed"]
    for _ in range(2):  # the second check finds no program cached by the first
        with pytest.raises(CheckFailed, match="ran 8 times in 8 steps"):
            checks.check_decayed_training(buggy)
