"""The numerical claims of the chapter on neural networks, as tests."""

import math

import equinox as eqx
import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest


class SelfAttention(eqx.Module):
    w_q: jax.Array
    w_k: jax.Array
    w_v: jax.Array
    scale: float

    def __init__(self, d, key):
        kq, kk, kv = jax.random.split(key, 3)
        self.w_q, self.w_k, self.w_v = (jax.random.normal(k, (d, d)) for k in (kq, kk, kv))
        self.scale = math.sqrt(d)

    def __call__(self, x):
        q, k, v = x @ self.w_q, x @ self.w_k, x @ self.w_v
        return jax.nn.softmax(q @ k.T / self.scale, axis=-1) @ v


def test_plain_grad_trains_the_constant_and_filter_grad_does_not():
    model = SelfAttention(4, jax.random.key(0))
    x = jax.random.normal(jax.random.key(1), (5, 4))
    loss = lambda m: jnp.sum(m(x) ** 2)  # noqa: E731
    plain = jax.grad(loss)(model)
    assert isinstance(plain.scale, jax.Array) and float(plain.scale) != 0.0
    filtered = eqx.filter_grad(loss)(model)
    assert filtered.scale is None
    np.testing.assert_allclose(filtered.w_q, plain.w_q, rtol=1e-6)


def _haiku_and_equinox_mlps():
    hk_model = hk.without_apply_rng(
        hk.transform(lambda x: hk.nets.MLP([32, 32, 1], activation=jnp.tanh)(x))
    )
    x = jax.random.uniform(jax.random.key(2), (64, 1), minval=-1, maxval=1)
    hk_params = hk_model.init(jax.random.key(3), x[:1])
    eq_model = eqx.nn.MLP(1, 1, 32, 2, activation=jnp.tanh, key=jax.random.key(4))
    for i in range(3):
        eq_model = eqx.tree_at(
            lambda m, i=i: m.layers[i].weight, eq_model, hk_params[f"mlp/~/linear_{i}"]["w"].T
        )
        eq_model = eqx.tree_at(
            lambda m, i=i: m.layers[i].bias, eq_model, hk_params[f"mlp/~/linear_{i}"]["b"]
        )
    return hk_model, hk_params, eq_model, x


def test_haiku_and_equinox_mlps_with_copied_weights_agree():
    hk_model, hk_params, eq_model, x = _haiku_and_equinox_mlps()
    out_hk = hk_model.apply(hk_params, x)
    out_eq = jax.vmap(eq_model)(x)
    assert out_hk.shape == out_eq.shape == (64, 1)
    assert float(jnp.max(jnp.abs(out_hk - out_eq))) < 1e-6
    # The copy really is needed: fresh equinox weights give other outputs.
    fresh = eqx.nn.MLP(1, 1, 32, 2, activation=jnp.tanh, key=jax.random.key(4))
    assert float(jnp.max(jnp.abs(out_hk - jax.vmap(fresh)(x)))) > 1e-2


def test_early_training_losses_agree_to_float32_tolerance():
    hk_model, hk_params, eq_model, x = _haiku_and_equinox_mlps()
    y = jnp.sin(3 * x)
    opt = optax.adam(1e-2)
    hk_loss = lambda p: jnp.mean((hk_model.apply(p, x) - y) ** 2)  # noqa: E731
    eq_loss = lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2)  # noqa: E731
    p, po = hk_params, opt.init(hk_params)
    m, mo = eq_model, opt.init(eqx.filter(eq_model, eqx.is_array))
    for _ in range(30):
        l1, g1 = jax.value_and_grad(hk_loss)(p)
        u1, po = opt.update(g1, po, p)
        p = optax.apply_updates(p, u1)
        l2, g2 = eqx.filter_value_and_grad(eq_loss)(m)
        u2, mo = opt.update(g2, mo, eqx.filter(m, eqx.is_array))
        m = eqx.apply_updates(m, u2)
        assert abs(float(l1) - float(l2)) <= 1e-5 * float(l1)


class Policy(eqx.Module):
    weight: jax.Array
    temperature: float


def test_trace_counter_sees_recompilation_before_the_fix_and_one_trace_after():
    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=None)
    def act(policy, obs):
        return policy.weight @ obs / policy.temperature

    obs = jnp.ones(3)
    for t in range(4):
        act(Policy(jnp.ones((2, 3)), 1.0 - 0.1 * t), obs)
    assert eqx.debug.get_num_traces(act) == 4

    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def act_fixed(policy, obs):
        return policy.weight @ obs / policy.temperature

    for t in range(4):
        act_fixed(Policy(jnp.ones((2, 3)), jnp.asarray(1.0 - 0.1 * t)), obs)
    assert eqx.debug.get_num_traces(act_fixed) == 1


def test_module_in_scan_carry_fails_and_partition_fixes_it():
    model = eqx.nn.MLP(2, 2, 4, 1, activation=jnp.tanh, key=jax.random.key(0))
    with pytest.raises(TypeError, match="not a valid JAX type"):
        jax.lax.scan(lambda c, _: (c, None), model, length=2)
    params, static = eqx.partition(model, eqx.is_array)
    out, _ = jax.lax.scan(
        lambda p, _: (eqx.filter(eqx.combine(p, static), eqx.is_array), None), params, length=2
    )
    back = eqx.combine(out, static)
    np.testing.assert_array_equal(back(jnp.ones(2)), model(jnp.ones(2)))


def test_layers_in_a_static_field_are_not_trained():
    class StaticLayers(eqx.Module):
        layers: tuple = eqx.field(static=True)

        def __call__(self, x):
            return self.layers[0](x)

    with pytest.warns(UserWarning, match="JAX array is being set as static"):
        model = StaticLayers((eqx.nn.Linear(1, 4, key=jax.random.key(0)),))
    grads = eqx.filter_grad(lambda m: jnp.sum(m(jnp.ones(1))))(model)
    assert jax.tree.leaves(grads) == []
