"""Self-checks for the exercises of the chapter on neural networks."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.core import (
    check_shape,
    close,
    fail,
    name_mistake,
    passed,
    require_function,
    run_answer,
)


def _example_mlp(key):
    k1, k2, k3, k4, kx = jax.random.split(key, 5)
    params = [
        (jax.random.normal(k1, (3, 8)) / 3**0.5, 0.1 * jax.random.normal(k2, (8,))),
        (jax.random.normal(k3, (8, 2)) / 8**0.5, 0.1 * jax.random.normal(k4, (2,))),
    ]
    x = jax.random.normal(kx, (5, 3))
    return params, x


def _reference_mlp_apply(params, x):
    (w1, b1), (w2, b2) = params
    return jnp.tanh(x @ w1 + b1) @ w2 + b2


def check_mlp_apply(mlp_apply: Callable) -> None:
    """Check ``mlp_apply(params, x)`` for a two-layer tanh MLP.

    ``params = [(W1, b1), (W2, b2)]`` with ``W1: (in, hidden)``, ``W2: (hidden, out)``;
    ``x: (batch, in)`` float32; the answer is ``tanh(x @ W1 + b1) @ W2 + b2`` of shape
    ``(batch, out)``, with no activation after the last layer.

    Raises:
        CheckFailed: naming the mistake (wrong shape, activation on the output,
            missing activation, missing bias, transposed weights).
    """
    require_function(mlp_apply, "mlp_apply")
    params, x = _example_mlp(jax.random.key(0))
    got = run_answer(
        mlp_apply,
        params,
        x,
        call="mlp_apply(params, x)",
        hint="Shapes: x (5, 3), W1 (3, 8), b1 (8,), W2 (8, 2), b2 (2,)",
    )
    got = check_shape(
        got,
        (5, 2),
        "mlp_apply(params, x) with x of shape (5, 3)",
        hint="The output has one row per example and one column per output unit.",
    )
    expected = _reference_mlp_apply(params, x)
    if close(got, expected):
        passed("mlp_apply matches tanh(x @ W1 + b1) @ W2 + b2")
        return
    (w1, b1), (w2, b2) = params
    mistakes = {
        "tanh is applied to the output layer too; the last layer should stay linear": jnp.tanh(
            expected
        ),
        "the hidden layer has no tanh activation": (x @ w1 + b1) @ w2 + b2,
        "a bias is missing": jnp.tanh(x @ w1) @ w2 + b2,
        "the output bias is missing": jnp.tanh(x @ w1 + b1) @ w2,
        "the output has the wrong sign": -expected,
    }
    name_mistake(got, mistakes, "mlp_apply")
    fail(
        "mlp_apply returns the right shape but wrong values; compare with "
        "tanh(x @ W1 + b1) @ W2 + b2 on a single example."
    )


def check_mse_loss(mse_loss: Callable) -> None:
    """Check ``mse_loss(model, x, y)``: mean squared error of a single-example model under vmap.

    ``model`` maps one input of shape ``(in,)`` to ``(out,)``; ``x: (batch, in)``,
    ``y: (batch, out)``; the loss is a float32 scalar ``mean((vmap(model)(x) - y) ** 2)``.

    Raises:
        CheckFailed: when the loss is not a scalar, has the wrong sign or scale
            (a sum instead of a mean, a missing square), or gives wrong gradients.
    """
    require_function(mse_loss, "mse_loss")
    key_model, key_x, key_y = jax.random.split(jax.random.key(1), 3)
    model = eqx.nn.MLP(3, 2, 8, 1, activation=jnp.tanh, key=key_model)
    x = jax.random.normal(key_x, (6, 3))
    y = jax.random.normal(key_y, (6, 2))
    got = run_answer(
        mse_loss,
        model,
        x,
        y,
        call="mse_loss(model, x, y)",
        hint="The model takes ONE input of shape (3,): use jax.vmap(model)(x) for a batch.",
    )
    got = check_shape(
        got,
        (),
        "mse_loss(model, x, y)",
        hint="The loss must be a scalar: take the mean over the batch and outputs.",
    )
    pred = jax.vmap(model)(x)
    expected = jnp.mean((pred - y) ** 2)
    if float(got) < 0:
        fail(f"mse_loss is negative ({float(got):.4f}); a squared error cannot be.")
    if not close(got, expected):
        if close(got, jnp.sum((pred - y) ** 2)):
            fail("mse_loss sums the squared errors; take the mean instead.")
        if close(got, jnp.mean(jnp.abs(pred - y))):
            fail("mse_loss takes the absolute error; square it instead.")
        if close(got, jnp.mean(jnp.sum((pred - y) ** 2, axis=-1))):
            fail("mse_loss sums over the outputs and averages over the batch; average over both.")
        fail(f"mse_loss = {float(got):.6f}, expected {float(expected):.6f}.")
    grads = eqx.filter_grad(mse_loss)(model, x, y)
    ref = eqx.filter_grad(lambda m, x, y: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model, x, y)
    for g, r in zip(jax.tree.leaves(grads), jax.tree.leaves(ref)):
        if not close(g, r, rtol=1e-4, atol=1e-6):
            fail(
                "mse_loss has the right value but wrong gradients: is part of it wrapped in "
                "jax.lax.stop_gradient or computed with NumPy?"
            )
    passed("mse_loss gives the mean squared error and its gradient")


def check_frozen_constant(make_module: Callable[[jax.Array], Any]) -> None:
    """Check an equinox module that holds a trainable ``weight`` and a constant ``scale``.

    ``make_module(key)`` returns a module with a trainable array ``weight`` of shape
    ``(4,)`` and a constant ``scale`` equal to 2.0; calling it on ``x: (4,)`` returns
    ``scale * sum(weight * x)``. ``eqx.filter_grad`` must return a gradient for
    ``weight`` and ``None`` for ``scale`` (or ``scale`` must be a static field,
    which is not a leaf of the pytree at all).

    Raises:
        CheckFailed: when ``scale`` gets a gradient (it is stored as a JAX array
            that equinox treats as trainable), or the call gives the wrong value.
    """
    require_function(make_module, "make_module")
    module = make_module(jax.random.key(2))
    if not isinstance(module, eqx.Module):
        fail(f"make_module(key) should return an eqx.Module, got {type(module).__name__}")
    for field in ("weight", "scale"):
        if not hasattr(module, field):
            fail(f"the module has no field {field!r}")
    weight = check_shape(module.weight, (4,), "module.weight")
    if float(np.asarray(module.scale)) != 2.0:
        fail(f"module.scale is {module.scale!r}, expected 2.0")
    x = jnp.array([1.0, -2.0, 3.0, 0.5])
    out = check_shape(module(x), (), "module(x) with x of shape (4,)")
    if not close(out, 2.0 * np.sum(weight * np.asarray(x))):
        fail(
            f"module(x) = {float(out):.4f}, expected scale * sum(weight * x) = "
            f"{float(2.0 * np.sum(weight * np.asarray(x))):.4f}"
        )
    grads = eqx.filter_grad(lambda m: m(x))(module)
    if grads.weight is None:
        fail(
            "eqx.filter_grad gives None for weight: the weight must be a JAX array "
            "of floats, not a NumPy array, a list or a static field"
        )
    static = {f.name for f in dataclasses.fields(module) if f.metadata.get("static", False)}
    if "scale" not in static and getattr(grads, "scale", None) is not None:
        fail(
            "the constant `scale` gets a gradient; it should be None. A JAX array field is "
            "trainable: store the constant as a Python float, or mark the field "
            "eqx.field(static=True)."
        )
    if not close(grads.weight, 2.0 * np.asarray(x)):
        fail("the gradient of module(x) with respect to weight should be scale * x")
    passed("weight is trainable and the constant scale gets no gradient (None)")
