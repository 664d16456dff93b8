"""check_mlp_apply, check_frozen_constant, check_per_example_grad_norms (chapter 2): right
answers, each check's bank of wrong answers (``WRONG_*``: slip, answer, verdict) and its
hardest cases.

What each check guards, and the case that breaks each plausible wrong answer:

check_mlp_apply (tanh MLP of any depth, ``x @ W + b``)
- any depth: cases of 1 to 4 layers break two layers hard-coded or the first two pairs;
- the order and layout of the layers: three square 4 x 4 layers, where reversed or
  transposed (PyTorch's ``(out, in)``) layers still run and give other values, named;
- tanh between layers only: tanh on the output, none at all, a skipped hidden layer;
- the biases and the sign; ``W @ x`` raises and is told the shapes, not to loop;
- inside a layer: tanh of its input, the bias after tanh or before the product (where W
  is square: the 8 x 8 layer of a non-square net too), named;
- by depth: a slip that shows already on one layer (an offset, no output bias, a softmax
  on the output) is told a layer is x @ W + b alone; one right on one layer but not deeper
  (sigmoid, tanh twice, no hidden biases) is told what goes between layers;
- the contract: a transposed or cut result, NaN.

check_frozen_constant (``scale`` constant, ``weight`` trained by ``eqx.filter_grad``)
- no gradient for scale: an array field (``jnp.array(2.0)``), even behind
  ``stop_gradient`` (a zero gradient, not None), is named;
- a gradient for weight: an integer or a static weight gets none, named;
- the values: a scale of 3.0 (generic); a dict is not a module; a call is probed at 0 (the
  scale added) and on each unit vector e_j, where it is scale * weight[j]: another factor
  (no scale, the scale squared, a mean) or one value for every j (sum(weight) * sum(x)),
  named; a NumPy scalar constant gets a gradient, named.

check_per_example_grad_norms (one norm of the whole gradient per example)
- per example: the batch's gradient, or its norm repeated, named;
- over every trainable array: weights only, per-leaf norms added, squared norms;
- the loss of one example: a mean over outputs, half the error, the batch size dividing;
- by the parameters, not the input; ``jax.grad`` on a module is told to use filter_grad;
- the norm: L1 or the max norm of each gradient, named; by the output, x and y swapped;
- the loss, probed: targets equal to the predictions give 0 (no square, an absolute
  error are told they do not), every error doubled doubles each norm (a square root or a
  cube of the error are told they do not); an offset is told every norm is shifted;
- the contract: three rows only.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest

import companion.checks as checks
from checks.answers import (
    FloatScale,
    StaticScale,
    _grad_norms_ravel,
    _mlp_recursive,
    any_depth_mlp,
    bank_params,
    generic,
    grad_norms,
    passes,
    rejects,
    right_params,
)
from companion.checks import (
    CheckFailed,
    check_frozen_constant,
)

# --- check_mlp_apply: mlp_apply(params, x) --------------------------------------------------


def _mlp_reduce(params, x):
    *hidden, (w, b) = params
    return functools.reduce(lambda h, layer: jnp.tanh(h @ layer[0] + layer[1]), hidden, x) @ w + b


def _mlp_index(params, x):
    for i in range(len(params)):
        x = x @ params[i][0] + params[i][1]
        x = jnp.tanh(x) if i < len(params) - 1 else x
    return x


RIGHT_MLP = [any_depth_mlp, _mlp_reduce, _mlp_index]


WRONG_MLP = [
    (
        "the layers reversed",
        lambda p, x: any_depth_mlp(p[::-1], x),
        r"the layers are applied in reverse order.*three square layers",
    ),
    (
        "each W transposed (PyTorch's convention)",
        lambda p, x: any_depth_mlp([(w.T, b) for w, b in p], x),
        r"each W is \(in, out\)",
    ),
    (
        "the first two pairs only",
        lambda p, x: any_depth_mlp(p[:2], x),
        r"only the first two \(W, b\) pairs are applied",
    ),
    (
        "W @ x: raises, told the shapes, not to loop",
        lambda p, x: any_depth_mlp([(w, b) for w, b in p], x.T),
        r"(?s)raised TypeError.*each layer is x @ W \+ b",
    ),
]


def two_layers_only(params, x):
    (w1, b1), (w2, b2) = params
    return jnp.tanh(x @ w1 + b1) @ w2 + b2


RIGHT_MLP += [_mlp_recursive]
WRONG_MLP += [
    (
        "two layers only",
        two_layers_only,
        "raised ValueError.*any number of \\(W, b\\) pairs",
    ),
    (
        "tanh on the output",
        lambda p, x: any_depth_mlp(p, x, output=jnp.tanh),
        "tanh is applied to the output",
    ),
    ("no activation", lambda p, x: any_depth_mlp(p, x, hidden=lambda h: h), "no tanh activation"),
    ("no biases", lambda p, x: any_depth_mlp(p, x, bias=False), "biases are missing"),
    (
        "a hidden layer skipped",
        lambda p, x: any_depth_mlp(p, x, skip=True),
        "a hidden layer is skipped",
    ),
    ("the sign flipped", lambda p, x: -any_depth_mlp(p, x), "wrong sign"),
    (
        "transposed output",
        lambda p, x: any_depth_mlp(p, x).T,
        r"of shape \(5, 4\).*; it (returned|is) an? \w+ array of shape \(4, 5\)",
    ),
    (
        "the first row only",
        lambda p, x: any_depth_mlp(p, x)[0],
        r"of shape \(5, 4\).*; it (returned|is) an? \w+ array of shape \(4,\)",
    ),
    ("W.T @ x", lambda p, x: p[0][0].T @ x, "raised TypeError"),
    (
        "an offset",
        lambda p, x: any_depth_mlp(p, x) + 0.5,
        r"differs already on one layer, where it is x @ W \+ b and nothing else",
    ),
    ("NaN", lambda p, x: any_depth_mlp(p, x) * jnp.nan, "NaN"),
]


def _mlp_slip(params, x, slip=""):
    """Written as a student writes it; ``slip`` plants one mistake."""
    *hidden, (w_out, b_out) = params
    for w, b in hidden:
        if slip == "tanh_before":
            x = jnp.tanh(x) @ w + b
        elif slip == "bias_after_tanh":
            x = jnp.tanh(x @ w) + b
        elif slip == "bias_before_matmul" and w.shape[0] == w.shape[1]:
            x = jnp.tanh((x + b) @ w)
        elif slip == "sigmoid":
            x = jax.nn.sigmoid(x @ w + b)
        elif slip == "tanh_twice":
            x = jnp.tanh(jnp.tanh(x @ w + b))
        elif slip == "hidden_biases_missing":
            x = jnp.tanh(x @ w)
        else:
            x = jnp.tanh(x @ w + b)
    if slip == "tanh_before":
        x = jnp.tanh(x)
    out = x @ w_out + (0.0 if slip == "output_bias_missing" else b_out)
    return jax.nn.softmax(out, axis=-1) if slip == "softmax_output" else out


def _mlp_with(slip):
    return lambda p, x: _mlp_slip(p, x, slip)


WRONG_MLP += [
    ("tanh before each layer", _mlp_with("tanh_before"), r"tanh is applied to each layer's input"),
    ("the bias after tanh", _mlp_with("bias_after_tanh"), r"the bias is added after tanh"),
    (
        "the bias before the product on square layers",
        _mlp_with("bias_before_matmul"),
        r"the bias is added before the product, \(x \+ b\) @ W",
    ),
    # new slips
    (
        "sigmoid for tanh",
        _mlp_with("sigmoid"),
        r"right on one layer \(x @ W \+ b\) but differs on three square layers: what happens "
        r"between layers",
    ),
    ("tanh twice", _mlp_with("tanh_twice"), r"right on one layer .* between layers is wrong"),
    (
        "the hidden layers' biases missing",
        _mlp_with("hidden_biases_missing"),
        r"right on one layer .* between layers is wrong",
    ),
    (
        "the output layer's bias missing",
        _mlp_with("output_bias_missing"),
        r"differs already on one layer, where it is x @ W \+ b and nothing else",
    ),
    (
        "a softmax on the output",
        _mlp_with("softmax_output"),
        r"differs already on one layer, where it is x @ W \+ b and nothing else",
    ),
]


def test_reversed_layers_are_not_told_to_loop():
    with pytest.raises(CheckFailed) as failure:
        checks.check_mlp_apply(lambda p, x: any_depth_mlp(p[::-1], x))
    assert "loop over them" not in str(failure.value)


# --- check_frozen_constant: make_module(key) --------------------------------------------------


class _Stopped(eqx.Module):
    weight: jax.Array
    scale: jax.Array

    def __call__(self, x):
        return jax.lax.stop_gradient(self.scale) * jnp.sum(self.weight * x)


class _DefaultStatic(eqx.Module):
    weight: jax.Array
    scale: float = eqx.field(static=True, default=2.0)

    def __call__(self, x):
        return self.scale * jnp.sum(self.weight * x)


RIGHT_FROZEN = [
    lambda key: StaticScale(jax.random.normal(key, (4,)), 2.0),
    lambda key: FloatScale(jnp.ones(4), 2.0),
    lambda key: _DefaultStatic(jax.random.uniform(key, (4,))),
]


WRONG_FROZEN = [
    (
        "stop_gradient on an array constant",
        lambda key: _Stopped(jnp.ones(4), jnp.array(2.0)),
        r"gradient of 0 \(jax.lax.stop_gradient",
    ),
    (
        "an integer weight",
        lambda key: FloatScale(jnp.arange(4), 2.0),
        r"module.weight should be a float32 array .*; it is an int32 array.*eqx.filter_grad "
        r"trains only floating-point arrays",
    ),
]


class ArrayScale(eqx.Module):
    weight: jax.Array
    scale: jax.Array

    def __call__(self, x):
        return self.scale * jnp.sum(self.weight * x)


class _StaticWeight(eqx.Module):
    weight: jax.Array = eqx.field(static=True)
    scale: float = 2.0

    def __call__(self, x):
        return self.scale * jnp.sum(self.weight * x)


class _NoScaleInCall(FloatScale):
    def __call__(self, x):
        return jnp.sum(self.weight * x)


WRONG_FROZEN += [
    (
        "a trainable array constant",
        lambda key: ArrayScale(jax.random.normal(key, (4,)), jnp.array(2.0)),
        "should be None",
    ),
    (
        "the constant 3.0",
        lambda key: FloatScale(jax.random.normal(key, (4,)), 3.0),
        generic("expected 2.0"),
    ),
    (
        "a dict, not a module",
        lambda key: {"weight": jnp.ones(4), "scale": 2.0},
        "should return an eqx.Module",
    ),
    (
        "the scale left out of the call",
        lambda key: _NoScaleInCall(jax.random.normal(key, (4,)), 2.0),
        r"is 1 \* weight\[j\].*multiplies by 1, not by self.scale",
    ),
    pytest.param(
        "the weight static",
        lambda key: _StaticWeight(jax.random.normal(key, (4,))),
        "static fields are not trained",
        marks=pytest.mark.filterwarnings("ignore:A JAX array is being set as static"),
    ),
]


class _SummedApart(FloatScale):
    def __call__(self, x):
        return self.scale * jnp.sum(self.weight) * jnp.sum(x)


class _ScaleSquared(FloatScale):
    def __call__(self, x):
        return self.scale**2 * jnp.sum(self.weight * x)


class _ScaleAdded(FloatScale):
    def __call__(self, x):
        return jnp.sum(self.weight * x) + self.scale


class _Averaged(FloatScale):
    def __call__(self, x):
        return self.scale * jnp.mean(self.weight * x)


class _NumpyScale(eqx.Module):
    weight: jax.Array
    scale: float = np.float32(2.0)

    def __call__(self, x):
        return self.scale * jnp.sum(self.weight * x)


WRONG_FROZEN += [
    # a student trial's
    (
        "sum(weight) * sum(x)",
        lambda key: _SummedApart(jax.random.normal(key, (4,)), 2.0),
        r"module\(e_j\), e_j the j-th unit vector, is .* for every j",
    ),
    # new slips
    (
        "the scale squared",
        lambda key: _ScaleSquared(jax.random.normal(key, (4,)), 2.0),
        r"is 4 \* weight\[j\].*multiplies by 4, not by self.scale",
    ),
    (
        "the scale added",
        lambda key: _ScaleAdded(jax.random.normal(key, (4,)), 2.0),
        r"module\(x\) at x = 0 is 2, not 0",
    ),
    (
        "a mean for the sum",
        lambda key: _Averaged(jax.random.normal(key, (4,)), 2.0),
        r"is 0.5 \* weight\[j\]",
    ),
    (
        "a NumPy scalar constant",
        lambda key: _NumpyScale(jax.random.normal(key, (4,))),
        r"the constant `scale` gets a gradient; it should be None",
    ),
]


@pytest.mark.parametrize("cls", [StaticScale, FloatScale])
def test_frozen_constant_passes_static_or_float(cls, capsys):
    check_frozen_constant(lambda key: cls(jax.random.normal(key, (4,)), 2.0))
    assert "check passed" in capsys.readouterr().out


# --- check_per_example_grad_norms: per_example_grad_norms(model, x, y) --------------------


def _norms_loop(model, x, y):
    rows = []
    for x_i, y_i in zip(x, y):  # a loop over the 6 examples, unrolled: allowed here
        grads = eqx.filter_grad(lambda m, x_i=x_i, y_i=y_i: jnp.sum((m(x_i) - y_i) ** 2))(model)
        rows.append(jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree.leaves(grads))))
    return jnp.stack(rows)


def _input_gradient_norms(model, x, y):
    return jax.vmap(
        lambda x_i, y_i: jnp.linalg.norm(
            jax.grad(lambda x_i: jnp.sum((model(x_i) - y_i) ** 2))(x_i)
        )
    )(x, y)


RIGHT_NORMS = [grad_norms, _norms_loop]


WRONG_NORMS = [
    (
        "the loss divided by the batch size",
        lambda m, x, y: grad_norms(m, x, y, loss_of=lambda e: jnp.sum(e) / x.shape[0]),
        r"divided by the batch size",
    ),
    ("the gradient by the input", _input_gradient_norms, r"with respect to the input x_i"),
]


def batch_gradient_norm(model, x, y):
    grads = eqx.filter_grad(lambda m: jnp.sum((jax.vmap(m)(x) - y) ** 2))(model)
    return jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree.leaves(grads)))


RIGHT_NORMS += [_grad_norms_ravel]
WRONG_NORMS += [
    (
        "jax.grad of a module",
        lambda m, x, y: grad_norms(m, x, y, grad=jax.grad),
        "Use eqx.filter_grad",
    ),
    (
        "the batch's gradient",
        batch_gradient_norm,
        "norm of the whole batch's gradient; compute one",
    ),
    (
        "the batch's norm for every example",
        lambda m, x, y: jnp.full(6, batch_gradient_norm(m, x, y)),
        "every example gets the norm",
    ),
    ("squared norms", lambda m, x, y: grad_norms(m, x, y, combine=sum), "squared norms"),
    (
        "the weights only",
        lambda m, x, y: grad_norms(m, x, y, leaf_filter=lambda g: g.ndim == 2),
        "the biases too",
    ),
    (
        "norms of the arrays added",
        lambda m, x, y: grad_norms(m, x, y, combine=lambda s: sum(jnp.sqrt(v) for v in s)),
        "norms of the arrays are added",
    ),
    (
        "a mean over the outputs",
        lambda m, x, y: grad_norms(m, x, y, loss_of=jnp.mean),
        "averaged over the outputs",
    ),
    (
        "three examples only",
        lambda m, x, y: grad_norms(m, x, y)[:3],
        r"of shape \(6,\).*; it (returned|is) an? \w+ array of shape \(3,\)",
    ),
    ("an offset", lambda m, x, y: grad_norms(m, x, y) + 1.0, r"every norm is off by the same 1"),
    ("the model on the batch", lambda m, x, y: m(x), "raised"),
    (
        "half the squared error",
        lambda m, x, y: grad_norms(m, x, y, loss_of=lambda e: 0.5 * jnp.sum(e)),
        "half the squared error",
    ),
]


#: Each check's right answers and its bank of wrong ones.


def _norms_of(loss, reduce=jnp.linalg.norm):
    """Per-example norms of ``loss(prediction, target)``'s gradient, reduced by ``reduce``."""

    def norms(model, x, y):
        params, static = eqx.partition(model, eqx.is_inexact_array)

        def one(x_i, y_i):
            grads = jax.grad(lambda p: loss(eqx.combine(p, static)(x_i), y_i))(params)
            return reduce(jax.flatten_util.ravel_pytree(grads)[0])

        return jax.vmap(one)(x, y)

    return norms


def _squared(p, t):
    return jnp.sum((p - t) ** 2)


WRONG_NORMS += [
    # slips of a student trial
    (
        "the max norm",
        _norms_of(_squared, lambda v: jnp.max(jnp.abs(v))),
        r"largest \|entry\| \(the max norm\)",
    ),
    (
        "no square: sum(p - t)",
        _norms_of(lambda p, t: jnp.sum(p - t)),
        r"where every target equals its prediction.*gradient is 0 there",
    ),
    (
        "the gradient by the output",
        lambda m, x, y: jax.vmap(lambda a, b: jnp.linalg.norm(2 * (m(a) - b)))(x, y),
        r"with respect to the model's output",
    ),
    (
        "an absolute error",
        _norms_of(lambda p, t: jnp.sum(jnp.abs(p - t))),
        r"where every target equals its prediction",
    ),
    # new slips
    ("the L1 norm", _norms_of(_squared, lambda v: jnp.sum(jnp.abs(v))), r"L1 norm, the sum"),
    (
        "the error's norm as the loss",
        _norms_of(lambda p, t: jnp.sqrt(jnp.sum((p - t) ** 2))),
        r"does not double when every error doubles",
    ),
    ("x and y swapped", lambda m, x, y: grad_norms(m, y, x), r"x and y are swapped"),
    (
        "the error cubed",
        _norms_of(lambda p, t: jnp.sum(jnp.abs(p - t) ** 3)),
        r"does not double when every error doubles",
    ),
]

RIGHTS = {
    "check_mlp_apply": RIGHT_MLP,
    "check_frozen_constant": RIGHT_FROZEN,
    "check_per_example_grad_norms": RIGHT_NORMS,
}
BANKS = {
    "check_mlp_apply": WRONG_MLP,
    "check_frozen_constant": WRONG_FROZEN,
    "check_per_example_grad_norms": WRONG_NORMS,
}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)
