"""The chapter-2 self-checks pass correct answers and name the mistake in wrong ones."""

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

from companion.checks import (
    CheckFailed,
    check_frozen_constant,
    check_mlp_apply,
    check_per_example_grad_norms,
)

# --- check_mlp_apply -------------------------------------------------------------------------


def any_depth_mlp(params, x, output=lambda h: h, hidden=jnp.tanh, bias=True, skip=False):
    """The forward pass for any number of layers; keyword arguments plant mistakes."""
    layers = [params[0], params[-1]] if skip and len(params) > 2 else params
    for w, b in layers[:-1]:
        x = hidden(x @ w + (b if bias else 0.0))
    w, b = layers[-1]
    return output(x @ w + (b if bias else 0.0))


def two_layers_only(params, x):
    (w1, b1), (w2, b2) = params
    return jnp.tanh(x @ w1 + b1) @ w2 + b2


def test_mlp_apply_passes_the_reference(capsys):
    check_mlp_apply(any_depth_mlp)

    def recursive(params, x):  # another correct way: recursion on the list of layers
        (w, b), rest = params[0], params[1:]
        return x @ w + b if not rest else recursive(rest, jnp.tanh(x @ w + b))

    check_mlp_apply(recursive)
    assert capsys.readouterr().out.count("check passed") == 2


@pytest.mark.parametrize(
    "wrong, message",
    [
        (two_layers_only, "raised ValueError.*any number of \\(W, b\\) pairs"),
        (lambda p, x: any_depth_mlp(p, x, output=jnp.tanh), "tanh is applied to the output"),
        (lambda p, x: any_depth_mlp(p, x, hidden=lambda h: h), "no tanh activation"),
        (lambda p, x: any_depth_mlp(p, x, bias=False), "biases are missing"),
        (lambda p, x: any_depth_mlp(p, x, skip=True), "a hidden layer is skipped"),
        (lambda p, x: -any_depth_mlp(p, x), "wrong sign"),
        (
            lambda p, x: any_depth_mlp(p, x).T,
            r"of shape \(5, 4\).*; it (returned|is) an? \w+ array of shape \(4, 5\)",
        ),
        (
            lambda p, x: any_depth_mlp(p, x)[0],
            r"of shape \(5, 4\).*; it (returned|is) an? \w+ array of shape \(4,\)",
        ),
        (lambda p, x: p[0][0].T @ x, "raised TypeError"),
        (
            lambda p, x: any_depth_mlp(p, x) + 0.5,
            "differs from the reference on three square layers",
        ),
        (lambda p, x: any_depth_mlp(p, x) * jnp.nan, "NaN"),
    ],
)
def test_mlp_apply_names_the_mistake(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_mlp_apply(wrong)


# --- check_mse_loss --------------------------------------------------------------------------


def good_mse(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


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


# --- check_per_example_grad_norms --------------------------------------------------------------


def grad_norms(
    model,
    x,
    y,
    loss_of=lambda e: jnp.sum(e),
    leaf_filter=lambda g: True,
    combine=lambda squares: jnp.sqrt(sum(squares)),
    grad=eqx.filter_grad,
):
    """Per-example gradient norms; keyword arguments plant mistakes."""

    def norm(x_i, y_i):
        grads = grad(lambda m: loss_of((m(x_i) - y_i) ** 2))(model)
        return combine([jnp.sum(g**2) for g in jax.tree.leaves(grads) if leaf_filter(g)])

    return jax.vmap(norm)(x, y)


def batch_gradient_norm(model, x, y):
    grads = eqx.filter_grad(lambda m: jnp.sum((jax.vmap(m)(x) - y) ** 2))(model)
    return jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree.leaves(grads)))


def test_per_example_grad_norms_passes_the_reference(capsys):
    check_per_example_grad_norms(grad_norms)
    assert "check passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda m, x, y: grad_norms(m, x, y, grad=jax.grad), "Use eqx.filter_grad"),
        (batch_gradient_norm, "norm of the whole batch's gradient; compute one"),
        (lambda m, x, y: jnp.full(6, batch_gradient_norm(m, x, y)), "every example gets the norm"),
        (lambda m, x, y: grad_norms(m, x, y, combine=sum), "squared norms"),
        (lambda m, x, y: grad_norms(m, x, y, leaf_filter=lambda g: g.ndim == 2), "the biases too"),
        (
            lambda m, x, y: grad_norms(m, x, y, combine=lambda s: sum(jnp.sqrt(v) for v in s)),
            "norms of the arrays are added",
        ),
        (lambda m, x, y: grad_norms(m, x, y, loss_of=jnp.mean), "averaged over the outputs"),
        (
            lambda m, x, y: grad_norms(m, x, y)[:3],
            r"of shape \(6,\).*; it (returned|is) an? \w+ array of shape \(3,\)",
        ),
        (lambda m, x, y: grad_norms(m, x, y) + 1.0, "expected"),
        (lambda m, x, y: m(x), "raised"),
    ],
)
def test_per_example_grad_norms_names_the_mistake(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_per_example_grad_norms(wrong)
