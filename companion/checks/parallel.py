"""Self-checks for the exercises of the chapter on many devices."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from companion.checks.core import (
    Case,
    check_shape,
    fail,
    passed,
    program_equations,
    require_function,
    run_answer,
    self_check,
    verdict,
)


@self_check
def check_allreduce_bytes(allreduce_bytes: Callable) -> None:
    """Check ``allreduce_bytes(num_params, num_devices) -> int``: the bytes each device
    sends in a ring all-reduce of ``num_params`` float32 gradients over ``num_devices``
    devices, ``2 (n - 1) / n * 4 * num_params`` (reduce-scatter, then all-gather;
    Patarasuk and Yuan, 2009).

    Raises:
        CheckFailed: naming the mistake (the factor 2, the (n - 1) / n, bytes per
            float32, a non-zero cost on one device).
    """
    cases, outputs = [], []
    for params, n in ((1_000, 4), (25_000, 8), (4_096, 2), (10, 1)):
        right = 2 * (n - 1) / n * 4 * params
        call = f"allreduce_bytes({params}, {n})"
        got = run_answer(allreduce_bytes, params, n, call=call, jit=False,
                         hint="num_params and num_devices are ints")  # fmt: skip
        try:
            outputs.append(float(got))
        except (TypeError, ValueError):
            fail(f"{call} should return a number of bytes, got {got!r:.60}")
        cases.append(Case(f"num_params {params} and num_devices {n}",
                          {"num_params": params, "num_devices": n}, right, {
            "counts half the traffic: a ring all-reduce is a reduce-scatter and then an "
            "all-gather, each sending (n - 1) / n of the gradients": right / 2,
            "counts parameters, not bytes: a float32 is 4 bytes": right / 4,
            "leaves out (n - 1) / n: each device sends n - 1 chunks of 1/n of the "
            "gradients per phase": [8.0 * params, right],
            "multiplies by n - 1 instead of (n - 1) / n: each device sends chunks of 1/n "
            "of the gradients, not whole copies": 8.0 * params * (n - 1),
        }))  # fmt: skip
    right = [abs(out - case.expected) <= 0.5 for case, out in zip(cases, outputs)]
    if right == [True, True, True, False]:
        fail(f"allreduce_bytes(10, 1) = {outputs[-1]!r}: one device has nothing to exchange; "
             "(n - 1) / n is 0")  # fmt: skip
    verdict("allreduce_bytes", cases, outputs, rtol=1e-6, atol=0.5)
    passed("allreduce_bytes gives a ring all-reduce's bytes per device")


def _mse_grad(w, x, y):
    return jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)


@self_check
def check_data_parallel_grad(mean_gradient: Callable) -> None:
    """Check ``mean_gradient(w, x, y, mesh)``: the gradient of ``mean((x @ w - y) ** 2)``.

    ``w`` float32 ``(F,)``, replicated; rows of ``x`` float32 ``(B, F)`` and ``y`` ``(B,)`` split
    over the 1-D ``mesh`` with ``shard_map``, gradients averaged by ``jax.lax.pmean``. Returns
    ``(F,)``, ``jax.grad`` of the whole batch, on meshes of 1, 2, 4, 8 devices (those available).

    Raises:
        CheckFailed: naming the mistake (no ``shard_map``, a sum instead of a mean, each device's
            own gradient with no all-reduce, a wrong shape).
    """
    from companion.parallel import make_mesh

    require_function(mean_gradient, "mean_gradient")
    kx, ky, kw = jax.random.split(jax.random.key(5), 3)
    x = jax.random.normal(kx, (16, 3))
    y = jax.random.normal(ky, (16,))
    w = jax.random.normal(kw, (3,))
    right = _mse_grad(w, x, y)
    sizes = [d for d in (1, 2, 4, 8) if d <= len(jax.devices())]
    try:
        program = jax.make_jaxpr(mean_gradient, static_argnums=3)(w, x, y, make_mesh(sizes[-1]))
    except Exception:  # run_answer below reports the error
        program = None
    if program is not None and not any(
        eqn.primitive.name == "shard_map" for eqn in program_equations(program)
    ):
        fail(
            "mean_gradient never splits the batch over the mesh (no shard_map in its "
            "program): the exercise asks for each device to differentiate its rows, with "
            "shard_map and jax.lax.pmean"
        )
    cases, outputs = [], []
    for d in sizes:
        call = f"mean_gradient(w, x, y, mesh of {d})"
        got = run_answer(
            mean_gradient, w, x, y, make_mesh(d), call=call,
            hint="w (3,), x (16, 3), y (16,); use shard_map over mesh with in_specs "
            "(P(), P(axis), P(axis))",
        )  # fmt: skip
        outputs.append(check_shape(got, (3,), f"{call}: the gradient", hint="Like w."))
        cases.append(Case(f"a mesh of {d} devices", {"w": w, "x": x, "y": y}, right, {
            "the parts' gradients are summed, not averaged: the result is (number of devices) "
            "times the gradient (psum instead of pmean; or shard_map's check_vma is on, under "
            "which jax.grad of a replicated w already sums over the devices: pass "
            "check_vma=False)": d * right,
            "the gradient of the first device's rows only: the devices' gradients never "
            "meet; average them with jax.lax.pmean(grads, axis)":
                _mse_grad(w, x[: 16 // d], y[: 16 // d]),
        }))  # fmt: skip
    verdict("mean_gradient", cases, outputs, rtol=1e-5, atol=1e-5)
    passed(f"mean_gradient equals the whole batch's gradient on meshes of {sizes} devices")
