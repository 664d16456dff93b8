"""The chapter-2 self-checks pass correct answers and name the mistake in wrong ones."""

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

from companion.checks import CheckFailed, check_frozen_constant, check_mlp_apply, check_mse_loss


# --- check_mlp_apply -------------------------------------------------------------------------

def good_mlp_apply(params, x):
    (w1, b1), (w2, b2) = params
    return jnp.tanh(x @ w1 + b1) @ w2 + b2


def test_mlp_apply_passes_the_reference(capsys):
    check_mlp_apply(good_mlp_apply)
    assert "check passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda p, x: jnp.tanh(good_mlp_apply(p, x)), "tanh is applied to the output layer"),
        (lambda p, x: (x @ p[0][0] + p[0][1]) @ p[1][0] + p[1][1], "no tanh activation"),
        (lambda p, x: jnp.tanh(x @ p[0][0]) @ p[1][0] + p[1][1], "a bias is missing"),
        (lambda p, x: jnp.tanh(x @ p[0][0] + p[0][1]) @ p[1][0], "output bias is missing"),
        (lambda p, x: -good_mlp_apply(p, x), "wrong sign"),
        (lambda p, x: good_mlp_apply(p, x).T, r"shape \(2, 5\), expected \(5, 2\)"),
        (lambda p, x: good_mlp_apply(p, x)[0], r"shape \(2,\), expected \(5, 2\)"),
        (lambda p, x: p[0][0].T @ x, "raised TypeError"),
        (lambda p, x: good_mlp_apply(p, x) + 0.5, "right shape but wrong values"),
        (lambda p, x: good_mlp_apply(p, x) * jnp.nan, "NaN"),
    ],
)
def test_mlp_apply_names_the_mistake(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_mlp_apply(wrong)


# --- check_mse_loss --------------------------------------------------------------------------

def good_mse(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


def test_mse_loss_passes_the_reference(capsys):
    check_mse_loss(good_mse)
    assert "check passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda m, x, y: jnp.sum((jax.vmap(m)(x) - y) ** 2), "sums the squared errors"),
        (lambda m, x, y: jnp.mean(jnp.abs(jax.vmap(m)(x) - y)), "absolute error"),
        (lambda m, x, y: jnp.mean(jnp.sum((jax.vmap(m)(x) - y) ** 2, -1)), "average over both"),
        (lambda m, x, y: (jax.vmap(m)(x) - y) ** 2, "must be a scalar"),
        (lambda m, x, y: -good_mse(m, x, y), "negative"),
        (lambda m, x, y: jnp.mean((m(x) - y) ** 2), "use jax.vmap"),
        (lambda m, x, y: jax.lax.stop_gradient(good_mse(m, x, y)), "wrong gradients"),
        (lambda m, x, y: good_mse(m, x, y) + 1.0, "expected"),
    ],
)
def test_mse_loss_names_the_mistake(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_mse_loss(wrong)


# --- check_frozen_constant -------------------------------------------------------------------

class StaticScale(eqx.Module):
    weight: jax.Array
    scale: float = eqx.field(static=True)

    def __call__(self, x):
        return self.scale * jnp.sum(self.weight * x)


class FloatScale(eqx.Module):
    weight: jax.Array
    scale: float

    def __call__(self, x):
        return self.scale * jnp.sum(self.weight * x)


class ArrayScale(eqx.Module):
    weight: jax.Array
    scale: jax.Array

    def __call__(self, x):
        return self.scale * jnp.sum(self.weight * x)


@pytest.mark.parametrize("cls", [StaticScale, FloatScale])
def test_frozen_constant_passes_static_or_float(cls, capsys):
    check_frozen_constant(lambda key: cls(jax.random.normal(key, (4,)), 2.0))
    assert "check passed" in capsys.readouterr().out


def test_frozen_constant_flags_a_trainable_constant():
    with pytest.raises(CheckFailed, match="should be None"):
        check_frozen_constant(lambda key: ArrayScale(jax.random.normal(key, (4,)), jnp.array(2.0)))


def test_frozen_constant_flags_wrong_values_and_types():
    with pytest.raises(CheckFailed, match="expected 2.0"):
        check_frozen_constant(lambda key: FloatScale(jax.random.normal(key, (4,)), 3.0))
    with pytest.raises(CheckFailed, match="should return an eqx.Module"):
        check_frozen_constant(lambda key: {"weight": jnp.ones(4), "scale": 2.0})

    class NoScaleInCall(FloatScale):
        def __call__(self, x):
            return jnp.sum(self.weight * x)

    with pytest.raises(CheckFailed, match="expected scale \\* sum"):
        check_frozen_constant(lambda key: NoScaleInCall(jax.random.normal(key, (4,)), 2.0))
