"""Self-checks for the exercises of the chapter on neural networks."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import _is_array, describe, require_array, require_number
from companion.checks._messages import N_, _
from companion.checks.core import (
    Case,
    CheckFailed,
    _Differs,
    _Raised,
    _then,
    close,
    fail,
    passed,
    require_function,
    run_answer,
    self_check,
    verdict,
)


def _example_mlp(key, sizes=(3, 8, 2)):
    """Parameters ``[(W, b), ...]`` for layer sizes ``sizes`` and an input batch of 5."""
    keys = jax.random.split(key, 2 * len(sizes) - 1)
    params = [
        (
            jax.random.normal(keys[2 * i], (fan_in, fan_out)) / fan_in**0.5,
            0.1 * jax.random.normal(keys[2 * i + 1], (fan_out,)),
        )
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:]))
    ]
    x = jax.random.normal(keys[-1], (5, sizes[0]))
    return params, x


def _mlp_variant(
    params,
    x,
    hidden=jnp.tanh,
    output=None,
    bias=True,
    skip_middle=False,
    order=1,
    transpose=False,
    first=None,
    place="",
):
    """The MLP forward pass; the keyword arguments plant one mistake each (``place``: tanh
    "before" each layer, the bias "after" tanh, or "inside" the product, (x + b) @ W)."""
    layers = [params[0], params[-1]] if skip_middle and len(params) > 2 else params
    layers = layers[::order][:first]
    for i, (w, b) in enumerate(layers):
        last = i == len(layers) - 1
        if place == "before":
            x = hidden(x) @ w + b
        elif place == "after" and not last:
            x = hidden(x @ w) + b
        elif place == "inside" and not last and w.shape[0] == w.shape[1]:
            x = hidden((x + b) @ w)
        else:
            x = x @ (w.T if transpose else w) + (b if bias else 0.0)
            x = x if last or place == "after" else hidden(x)
    return x if output is None else output(x)


#: The cases of check_mlp_apply: layer sizes and a label. The first has square layers, so
#: that an answer applying them in another order or transposed runs and can be named.
_MLP_SIZES = (
    ((4, 4, 4, 4), N_("three square layers")),
    ((3, 8, 8, 2), N_("three layers")),
    ((3, 8, 2), N_("two layers")),
    ((3, 2), N_("one layer")),
    ((3, 8, 8, 8, 2), N_("four layers")),
)


def _mlp_case(params, x, label) -> Case:
    expected = _mlp_variant(params, x)
    mistakes = {
        _("tanh is applied to the output layer too; the last layer should stay linear"): (
            _mlp_variant(params, x, output=jnp.tanh)
        ),
        _("the hidden layers have no tanh activation"): _mlp_variant(params, x, hidden=lambda h: h),
        _("the biases are missing"): _mlp_variant(params, x, bias=False),
        _("the output has the wrong sign"): -expected,
        _("a hidden layer is skipped: apply every (W, b) pair, in order"): _mlp_variant(
            params, x, skip_middle=True
        ),
        _("the activation is ReLU; the network asked for uses tanh"): _mlp_variant(
            params, x, hidden=jax.nn.relu
        ),
    }
    mistakes[
        _(
            "tanh is applied to each layer's input, tanh(x) @ W + b, instead of its output: "
            "a hidden layer is tanh(x @ W + b), and the output layer stays linear"
        )
    ] = _mlp_variant(params, x, place="before")
    mistakes[
        _("the bias is added after tanh, tanh(x @ W) + b; it goes inside: tanh(x @ W + b)")
    ] = _mlp_variant(params, x, place="after")
    # (x + b) @ W runs where W is square only: on those layers
    inside = [_mlp_variant(params, x, place="inside")]
    if all(w.shape[0] == w.shape[1] for w, _ in params):
        inside.append(_mlp_inside_everywhere(params, x))
    mistakes[_("the bias is added before the product, (x + b) @ W; a layer is x @ W + b")] = inside
    if all(w.shape == (x.shape[1], x.shape[1]) for w, _ in params):  # they run on squares only
        mistakes[_(_REVERSED)] = _mlp_variant(params, x, order=-1)
        mistakes[_(_TRANSPOSED)] = _mlp_variant(params, x, transpose=True)

    if len(params) > 2:
        mistakes[_(_FIRST_TWO)] = _mlp_variant(params, x, first=2)
    inputs = {"x": x, **{f"W{i + 1}": w for i, (w, _) in enumerate(params)}}
    return Case(label, inputs, expected, mistakes)


def _mlp_inside_everywhere(params, x):
    """(x + b) @ W in every layer, the output layer's too."""
    for i, (w, b) in enumerate(params):
        x = (x + b) @ w
        x = jnp.tanh(x) if i < len(params) - 1 else x
    return x


_REVERSED = N_(
    "the layers are applied in reverse order, the last (W, b) first: params[0] is "
    "the first layer, applied to x"
)
_TRANSPOSED = N_("each W is (in, out): a layer is x @ W + b, not x @ W.T + b")
_FIRST_TWO = N_("only the first two (W, b) pairs are applied: loop over every pair of params")


@self_check
def check_mlp_apply(mlp_apply: Callable) -> None:
    """Check ``mlp_apply(params, x)`` for a tanh MLP of any depth.

    ``params``: ``[(W1, b1), ..., (WL, bL)]``, L >= 1, ``W`` float32 ``(in, out)``, ``b`` float32
    ``(out,)``; ``x`` float32 ``(batch, in)``. Returns float32 ``(batch, out)``: ``x @ W + b`` for
    each layer in order, tanh after every layer but the last. Runs the answer under ``jax.jit``
    on 1 to 4 layers, the first case with square layers (4 -> 4 -> 4 -> 4), where an answer
    that takes the layers in another order or transposed still runs.

    Raises:
        CheckFailed: naming the mistake (a fixed number of layers, the layers reversed or
            transposed, tanh on the output, no tanh, ReLU for tanh, biases missing, a hidden
            layer skipped, the sign flipped), a result that is not float32 ``(batch, out)``;
            an answer that raises is told what its outputs on the earlier cases show.
    """
    cases, outputs = [], []
    for sizes, label in _MLP_SIZES:
        params, x = _example_mlp(jax.random.key(len(sizes) + 10 * (sizes[0] == 4)), sizes)
        shapes = ", ".join(f"W{i + 1} {tuple(w.shape)}" for i, (w, _) in enumerate(params))
        label = _(label)
        call = _("mlp_apply(params, x) with {layers} and x of shape {shape}").format(
            layers=label, shape=tuple(x.shape)
        )
        case = _mlp_case(params, x, label)
        try:
            got = run_answer(mlp_apply, params, x, call=call)
            got = require_array(
                got,
                call,
                x.shape[:1] + params[-1][0].shape[1:],
                np.float32,
                why=_("one row per example, one column per output unit"),
            )
        except CheckFailed as failure:
            text = str(failure)
            earlier = [
                m
                for m in (_(_REVERSED), _(_TRANSPOSED), _(_FIRST_TWO))
                if outputs
                and all(
                    close(out, c.mistakes.get(m, c.expected), 1e-5, 1e-5)
                    for c, out in zip(cases, outputs)
                )
            ]
            if earlier and not all(
                close(o, c.expected, 1e-5, 1e-5) for c, o in zip(cases, outputs)
            ):
                fail(
                    _(
                        "mlp_apply: {mistake} (so its result on {case} shows). Then {failure}"
                    ).format(mistake=earlier[0], case=cases[0].label, failure=text)
                )
            if not isinstance(failure, _Raised):
                raise
            if "unpack" in text or "IndexError" in text:
                hint = _(
                    "params here holds {count} (W, b) pairs, and may hold any number of (W, b) "
                    "pairs: loop over them"
                ).format(count=len(params))
            else:
                hint = _(
                    "Shapes: x {shape}, {shapes}: each layer is x @ W + b, with x (batch, in) "
                    "and W (in, out), the layers in the order of params"
                ).format(shape=tuple(x.shape), shapes=shapes)
            fail(_then(text, hint))
        outputs.append(got)
        cases.append(case)
    try:
        verdict("mlp_apply", cases, outputs, rtol=1e-5, atol=1e-5)
    except _Differs:
        _mlp_diagnosis(cases, outputs)
        raise
    passed(_("mlp_apply applies every layer in order, tanh between them, for 1 to 4 layers"))


def _mlp_diagnosis(cases: list, outputs: list) -> None:
    """Name an unlisted mistake by the depths where it differs: already on one layer (x @ W +
    b, nothing else), or only between layers."""
    one = next(i for i, case in enumerate(cases) if "W2" not in case.inputs)
    right = [close(out, case.expected, 1e-5, 1e-5) for case, out in zip(cases, outputs)]
    if sum(not ok for ok in right) < 2:  # one case alone may bring out anything
        return
    case, got = cases[one], np.asarray(outputs[one])
    if not right[one]:
        fail(
            _(
                "mlp_apply differs already on {case}, where it is x @ W + b and nothing else "
                "(the output layer has no tanh): with x[0] = {x} it gives {got}, expected {expected}"
            ).format(
                case=case.label,
                x=np.round(np.asarray(case.inputs["x"][0], np.float64), 4).tolist(),
                got=np.round(got[0].astype(np.float64), 4).tolist(),
                expected=np.round(np.asarray(case.expected[0], np.float64), 4).tolist(),
            )
        )
    wrong = next(case.label for case, ok in zip(cases, right) if not ok)
    fail(
        _(
            "mlp_apply is right on one layer (x @ W + b) but differs on {case}: what happens "
            "between layers is wrong. Each hidden layer is h = tanh(h @ W + b), h the previous "
            "layer's output (x for the first); the last layer is h @ W + b"
        ).format(case=wrong)
    )


def _frozen_by_unit_inputs(module, weight) -> None:
    """Name a wrong call by its value at 0, where it should be 0, and on each unit vector
    e_j, where it should be scale * weight[j]: a term added, a constant factor other than
    the scale, or one value for every j."""
    try:
        units = np.asarray(
            [float(np.asarray(module(jnp.eye(4)[j])).reshape(())) for j in range(4)], np.float64
        )
        at_zero = float(np.asarray(module(jnp.zeros(4))).reshape(()))
    except Exception:  # the call's own error is reported by the value check
        return
    if abs(at_zero) > 1e-6:
        fail(
            _(
                "module(x) at x = 0 is {value}, not 0: scale * sum(weight * x) has no constant "
                "term, so something is added (the scale, where it should multiply?)"
            ).format(value=f"{at_zero:.4g}")
        )
    weight = np.asarray(weight, np.float64)
    factors = units / np.where(weight == 0, np.nan, weight)
    if np.all(np.isfinite(factors)) and np.allclose(factors, factors[0], rtol=1e-4):
        fail(
            _(
                "module(e_j), e_j the j-th unit vector, is {factor} * weight[j]; it should be "
                "scale * weight[j] = 2.0 * weight[j]: the call multiplies by {factor}, not by "
                "self.scale"
            ).format(factor=f"{factors[0]:.4g}")
        )
    if np.allclose(units, units[0], rtol=1e-4):
        fail(
            _(
                "module(e_j), e_j the j-th unit vector, is {value} for every j; it should be "
                "scale * weight[j] ({expected}): each weight multiplies its own input, "
                "scale * sum(weight * x), not the sum of the weights times the sum of x"
            ).format(value=f"{units[0]:.4g}", expected=np.round(2.0 * weight, 4).tolist())
        )


@self_check
def check_frozen_constant(make_module: Callable[[jax.Array], Any]) -> None:
    """Check ``make_module(key)``: an equinox module, trainable ``weight``, constant ``scale``.

    ``weight`` a float JAX array ``(4,)``, ``scale`` 2.0; ``module(x)``, ``x`` float32 ``(4,)``,
    returns ``scale * sum(weight * x)``, shape ``()``. ``eqx.filter_grad`` must give a gradient
    for ``weight`` and ``None`` for ``scale`` (or ``scale`` a static field).

    Raises:
        CheckFailed: when ``scale`` gets a gradient (a JAX array field is trainable; a zero one
            behind ``stop_gradient`` too), ``weight`` gets none (integer, static, not an array)
            or is not float32, a field is missing, or a value or shape is wrong.
    """
    module = run_answer(make_module, jax.random.key(2), call=_("make_module(key)"), jit=False)
    if not isinstance(module, eqx.Module):
        fail(
            _(
                "make_module(key) should return an eqx.Module with the fields weight and "
                "scale; it returned {got}"
            ).format(got=describe(module))
        )
    for field in ("weight", "scale"):
        if not hasattr(module, field):
            fail(_("the module has no field {field}").format(field=repr(field)))
    weight = require_array(
        module.weight,
        _("module.weight"),
        (4,),
        np.float32,
        why=_("trainable"),
        hint=lambda w: (
            ""
            if _is_array(w) and w.dtype == np.float32
            else _(
                "eqx.filter_grad trains only floating-point arrays (it gives None for an "
                "integer array, a tuple or a list): make it a float32 JAX array "
                "(jax.random.normal, say)"
            )
        ),
        returns=False,
    )
    scale = require_number(
        module.scale, "module.scale", "number", why=_("the constant 2.0"), returns=False
    )
    if scale != 2.0:
        fail(_("module.scale is {value}, expected 2.0").format(value=repr(module.scale)))
    x = jnp.array([1.0, -2.0, 3.0, 0.5])
    out = run_answer(lambda m, x: m(x), module, x, call="module(x)")
    out = require_array(
        out, _("module(x) with x of shape (4,)"), (), np.float32, why=_("scale * sum(weight * x)")
    )
    if not close(out, 2.0 * np.sum(weight * np.asarray(x))):
        _frozen_by_unit_inputs(module, weight)
        fail(
            _("module(x) = {got}, expected scale * sum(weight * x) = {expected}").format(
                got=f"{float(out):.4f}",
                expected=f"{float(2.0 * np.sum(weight * np.asarray(x))):.4f}",
            )
        )
    static = {f.name for f in dataclasses.fields(module) if f.metadata.get("static", False)}
    if "weight" in static:
        fail(
            _(
                "weight is a static field (eqx.field(static=True)): static fields are not "
                "trained; only the constant may be static"
            )
        )
    grads = run_answer(
        eqx.filter_grad(lambda m: m(x)), module, call=_("eqx.filter_grad(module(x))"), jit=False
    )
    if grads.weight is None:
        fail(
            _(
                "eqx.filter_grad gives None for weight ({type}): the weight must be an array "
                "of floats (jnp), not a tuple, a list or a static field"
            ).format(type=type(module.weight).__name__)
        )
    scale_grad = getattr(grads, "scale", None) if "scale" not in static else None
    if scale_grad is not None and not np.any(np.asarray(scale_grad)):
        fail(
            _(
                "the constant `scale` gets a gradient of 0 (jax.lax.stop_gradient in the call?), "
                "not None: eqx.filter_grad still treats it as a trainable array, and an optimiser "
                "(weight decay, say) would still change it. Store the constant as a Python float, "
                "or mark the field eqx.field(static=True)"
            )
        )
    if scale_grad is not None:
        fail(
            _(
                "the constant `scale` gets a gradient; it should be None. A JAX array field is "
                "trainable: store the constant as a Python float, or mark the field "
                "eqx.field(static=True)."
            )
        )
    if not close(grads.weight, 2.0 * np.asarray(x)):
        fail(_("the gradient of module(x) with respect to weight should be scale * x"))
    passed(_("weight is trainable and the constant scale gets no gradient (None)"))


def _grad_norms_reference(model, x, y, mistake=None):
    """Per-example gradient norms by a Python loop over the examples."""

    def loss(m, x_i, y_i):
        error = (m(x_i) - y_i) ** 2
        scale = {"mean": 1 / error.size, "half": 0.5, "batch": 1 / len(x)}.get(mistake, 1.0)
        return scale * jnp.sum(error)

    rows = []
    for x_i, y_i in zip(x, y):
        if mistake == "input":
            leaves = [jax.grad(loss, argnums=1)(model, x_i, y_i)]
        else:
            leaves = jax.tree.leaves(eqx.filter_grad(loss)(model, x_i, y_i))
        if mistake == "weights_only":
            leaves = [g for g in leaves if g.ndim == 2]
        squares = [float(jnp.sum(g**2)) for g in leaves]
        if mistake == "per_leaf":
            rows.append(sum(s**0.5 for s in squares))
        else:
            rows.append(sum(squares) if mistake == "squared" else sum(squares) ** 0.5)
    return np.array(rows)


def _per_example_gradients(model, x, y) -> np.ndarray:
    """Each example's gradient of its summed squared error, flattened: ``(batch, params)``."""
    rows = []
    for x_i, y_i in zip(x, y):
        grads = eqx.filter_grad(lambda m, x_i=x_i, y_i=y_i: jnp.sum((m(x_i) - y_i) ** 2))(model)
        rows.append(np.concatenate([np.ravel(g) for g in jax.tree.leaves(grads)]))
    return np.asarray(rows, np.float64)


def _grad_norms_probes(answer: Callable, model, x, y, got, expected) -> None:
    """Name a shift of every norm, or a loss that is not the squared error by two probes:
    targets equal to the predictions (every gradient 0) and every error doubled (every norm
    doubled)."""
    shift = np.asarray(got, np.float64) - expected
    if np.allclose(shift, shift[0], rtol=1e-4, atol=1e-5):
        fail(
            _(
                "per_example_grad_norms: every norm is off by the same {shift}: something is "
                "added to the norm of each example's gradient"
            ).format(shift=f"{shift[0]:.4g}")
        )
    predictions = jax.vmap(model)(x)
    probes = {}
    for name, targets in (("zero", predictions), ("double", 2 * y - predictions)):
        try:
            probes[name] = np.asarray(
                run_answer(answer, model, x, targets, call="per_example_grad_norms"), np.float64
            )
        except CheckFailed:
            return
    if np.shape(probes["zero"]) == (6,) and np.abs(probes["zero"]).max() > 1e-4:
        fail(
            _(
                "per_example_grad_norms gives {got} where every target equals its prediction, "
                "y_i = model(x_i): the squared error's gradient is 0 there. The loss is not "
                "sum((model(x_i) - y_i) ** 2): no square, or something other than the error?"
            ).format(got=np.round(probes["zero"][:3], 4).tolist())
        )
    ratio = probes["double"] / np.asarray(got, np.float64)
    if np.shape(ratio) == (6,) and not np.allclose(ratio, 2.0, rtol=1e-3):
        fail(
            _(
                "per_example_grad_norms does not double when every error doubles (y_i moved to "
                "2 * y_i - model(x_i)): it changes by {ratio}. The squared error's gradient, 2 * "
                "(model(x_i) - y_i) through the model, is linear in the error: the loss is not "
                "sum((model(x_i) - y_i) ** 2) (an absolute error, a square root?)"
            ).format(ratio=np.round(ratio[:3], 3).tolist())
        )


@self_check
def check_per_example_grad_norms(per_example_grad_norms: Callable) -> None:
    """Check ``per_example_grad_norms(model, x, y)``: one gradient norm per example.

    ``model`` an equinox module ``(in,)`` -> ``(out,)`` with a non-array field (``eqx.nn.MLP``);
    ``x``, ``y`` float32 ``(batch, in)``, ``(batch, out)``. Returns float32 ``(batch,)``: the
    norm over all trainable arrays of the gradient of ``sum((model(x_i) - y_i) ** 2)``.

    Raises:
        CheckFailed: naming the mistake (``jax.grad`` on the module, the whole batch's gradient,
            squared norms, weights only, per-leaf norms added, error averaged or halved, loss
            divided by the batch size, the gradient by the input), or a result that is not
            float32 ``(batch,)``.
    """
    require_function(per_example_grad_norms, "per_example_grad_norms")
    key_model, key_x, key_y = jax.random.split(jax.random.key(4), 3)
    model = eqx.nn.MLP(3, 3, 8, 1, activation=jnp.tanh, key=key_model)
    x = jax.random.normal(key_x, (6, 3))
    y = jax.random.normal(key_y, (6, 3))
    call = "per_example_grad_norms(model, x, y)"
    try:
        got = run_answer(
            per_example_grad_norms,
            model,
            x,
            y,
            call=call,
            hint=_("The model takes one example (3,)"),
        )
    except CheckFailed as failure:
        if "not a valid JAX type" in str(failure):
            fail(
                _(
                    "{call}: jax.grad cannot differentiate the model: it holds a non-array "
                    "field (its activation function). Use eqx.filter_grad, which "
                    "differentiates the floating-point arrays only"
                ).format(call=call)
            )
        raise
    expected = _grad_norms_reference(model, x, y)
    batch_loss = lambda m: jnp.sum((jax.vmap(m)(x) - y) ** 2)  # noqa: E731
    batch_norm = float(
        sum(jnp.sum(g**2) for g in jax.tree.leaves(eqx.filter_grad(batch_loss)(model))) ** 0.5
    )

    def whole_batch(got) -> str:
        try:
            norm = float(np.asarray(got)) if np.shape(got) == () else None
        except (TypeError, ValueError):
            norm = None
        if norm is None or not np.isclose(norm, batch_norm, rtol=1e-4):
            return ""
        return _(
            "It is the norm of the whole batch's gradient; compute one gradient per example "
            "(jax.vmap over the examples) and take each one's norm"
        )

    got = require_array(
        got,
        _("{call} for a batch of 6").format(call=call),
        (6,),
        np.float32,
        why=_("one norm per example"),
        hint=whole_batch,
    )
    messages = {
        "squared": _("these are squared norms: take the square root of the sum of squares"),
        "weights_only": _(
            "only the weights count; the norm runs over every trainable array, the biases too"
        ),
        "per_leaf": _(
            "the norms of the arrays are added; add their squares, then take the square root"
        ),
        "mean": _("the error is averaged over the outputs; the example's loss is its sum"),
        "half": _(
            "the loss is half the squared error; the example's loss is the sum of its squared errors, without the 1/2"
        ),
        "batch": _(
            "each example's loss is divided by the batch size (a batch mean): the example's own loss is the sum of its squared errors"
        ),
        "input": _(
            "these are the norms of the gradients with respect to the input x_i; the gradient asked for is with respect to the model's arrays (eqx.filter_grad of the model)"
        ),
    }
    mistakes = {m: _grad_norms_reference(model, x, y, k) for k, m in messages.items()}
    mistakes[_("every example gets the norm of the whole batch's gradient: vmap the gradient")] = (
        np.full(6, batch_norm)
    )
    vectors = _per_example_gradients(model, x, y)
    mistakes[
        _(
            "this is each gradient's L1 norm, the sum of |entries|; the norm asked for is the "
            "Euclidean one, the square root of the sum of squares"
        )
    ] = np.abs(vectors).sum(axis=1)
    mistakes[
        _(
            "this is each gradient's largest |entry| (the max norm); the norm asked for is the "
            "Euclidean one, the square root of the sum of squares"
        )
    ] = np.abs(vectors).max(axis=1)
    mistakes[
        _(
            "these are the norms of the gradients with respect to the model's output, 2 * "
            "(model(x_i) - y_i); the gradient asked for is with respect to the model's arrays"
        )
    ] = np.linalg.norm(2 * (np.asarray(jax.vmap(model)(x)) - np.asarray(y)), axis=1)
    mistakes[_("x and y are swapped: the model takes x_i, and y_i is its target")] = (
        _grad_norms_reference(model, y, x)
    )
    case = Case(_("a batch of 6"), {"x": x, "y": y}, expected, mistakes)
    try:
        verdict("per_example_grad_norms", [case], [got], rtol=1e-4, atol=1e-5)
    except _Differs:
        _grad_norms_probes(per_example_grad_norms, model, x, y, got, expected)
        raise
    passed(_("per_example_grad_norms: one gradient per example, its norm over every array"))
