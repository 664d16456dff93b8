"""Self-checks for the exercises of the chapter on many devices."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import require_array, require_number
from companion.checks._messages import N_, _
from companion.checks.core import (
    Case,
    _program_lacks,
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
    """Check ``allreduce_bytes(num_params, num_devices)``, a number (an int or a float): the
    bytes each device sends in a ring all-reduce of ``num_params`` float32 gradients over
    ``num_devices`` devices, ``2 (n - 1) / n * 4 * num_params`` (reduce-scatter, then
    all-gather; Patarasuk and Yuan, 2009).

    Raises:
        CheckFailed: for a result that is not one number, or naming the mistake (the factor
            2 or 2 bytes a parameter, the (n - 1) / n left out, n for it or an integer division
            in it, bytes per float32, all devices' traffic together, bits, megabytes, a chunk
            for the whole, a non-zero cost on one device).
    """
    cases, outputs = [], []
    for params, n in ((1_000, 4), (25_000, 8), (4_096, 2), (10, 1)):
        right = 2 * (n - 1) / n * 4 * params
        call = f"allreduce_bytes({params}, {n})"
        got = run_answer(
            allreduce_bytes,
            params,
            n,
            call=call,
            jit=False,
            hint=_("num_params and num_devices are ints"),
        )
        outputs.append(
            float(require_number(got, call, "number", why=_("the bytes each device sends")))
        )
        cases.append(
            Case(
                _("num_params {params} and num_devices {devices}").format(params=params, devices=n),
                {"num_params": params, "num_devices": n},
                right,
                {
                    _(
                        "gives half the bytes: either it counts one phase only (a ring all-reduce "
                        "is a reduce-scatter and then an all-gather, each sending (n - 1) / n of "
                        "the gradients) or 2 bytes a parameter (a bfloat16's size; the gradients "
                        "are float32, 4 bytes each)"
                    ): right / 2,
                    _("counts parameters, not bytes: a float32 is 4 bytes"): right / 4,
                    _(
                        "leaves out (n - 1) / n: each device sends n - 1 chunks of 1/n of the "
                        "gradients per phase"
                    ): [8.0 * params, right],
                    _(
                        "multiplies by n - 1 instead of (n - 1) / n, which is also what all n devices "
                        "send together: each device sends chunks of 1/n of the gradients, not whole "
                        "copies, and the question is what each device sends"
                    ): 8.0 * params * (n - 1),
                    _("counts bits: a float32 is 4 bytes (32 bits)"): 8 * right,
                    _("gives megabytes or gigabytes (or mebibytes, gibibytes): return bytes"): [
                        right / 1e6,
                        right / 2**20,
                        right / 1e9,
                        right / 2**30,
                    ],
                    _(
                        "2 * (n - 1) // n is an integer division, 1 for every n above 1: use / "
                        "for (n - 1) / n"
                    ): 2 * (n - 1) // n * 4 * params,
                    _(
                        "divides by n once more: each device sends its chunks of 1/n of the "
                        "gradients n - 1 times in each phase, 2 (n - 1) / n of the gradients in "
                        "all, not 2 (n - 1) / n of one chunk"
                    ): right / n,
                    _(
                        "multiplies by n instead of (n - 1) / n: each device sends n - 1 chunks "
                        "of 1/n of the gradients per phase"
                    ): [8.0 * params * n, right],
                },
            )
        )
    right = [abs(out - case.expected) <= 0.5 for case, out in zip(cases, outputs)]
    if right == [True, True, True, False]:
        fail(
            _(
                "allreduce_bytes(10, 1) = {value}: one device has nothing to exchange; "
                "(n - 1) / n is 0"
            ).format(value=repr(outputs[-1]))
        )
    verdict("allreduce_bytes", cases, outputs, rtol=1e-6, atol=0.5)
    passed(_("allreduce_bytes gives a ring all-reduce's bytes per device"))


def _batch_reaches_devices_whole(fn: Callable, args: tuple, shape: tuple) -> bool:
    """Whether every ``shard_map`` of ``fn``'s program on ``args`` (the mesh last, static)
    receives an array of ``shape``, the batch's shape outside: its rows are not split. False
    when the program cannot be traced or holds no ``shard_map`` body to read."""
    try:
        program = jax.make_jaxpr(fn, static_argnums=len(args) - 1)(*args)
    except Exception:  # run_answer reports the error when the answer runs
        return False
    bodies = [
        getattr(eqn.params["jaxpr"], "jaxpr", eqn.params["jaxpr"])
        for eqn in program_equations(program)
        if eqn.primitive.name == "shard_map" and "jaxpr" in eqn.params
    ]
    return bool(bodies) and all(
        any(tuple(var.aval.shape) == tuple(shape) for var in body.invars) for body in bodies
    )


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
            own gradient with no all-reduce, a loss summed over each device's rows, the devices'
            gradients stacked, half the gradient, its sign flipped, divided by the rows again),
            or a result that is not float32 ``(F,)``.
    """
    from companion.parallel import make_mesh

    require_function(mean_gradient, "mean_gradient")
    kx, ky, kw = jax.random.split(jax.random.key(5), 3)
    x = jax.random.normal(kx, (16, 3))
    y = jax.random.normal(ky, (16,))
    w = jax.random.normal(kw, (3,))
    right = _mse_grad(w, x, y)
    sizes = [d for d in (1, 2, 4, 8) if d <= len(jax.devices())]
    args = (w, x, y, make_mesh(sizes[-1]))
    if _program_lacks(mean_gradient, args, "shard_map", static_argnums=3):
        fail(
            _(
                "mean_gradient never splits the batch over the mesh (no shard_map in its "
                "program): the exercise asks for each device to differentiate its rows, with "
                "shard_map and jax.lax.pmean"
            )
        )
    if sizes[-1] > 1 and _batch_reaches_devices_whole(mean_gradient, args, x.shape):
        fail(
            _(
                "mean_gradient gives every device the whole batch: inside its shard_map x is "
                "{shape}, the shape it has outside, so each of the {devices} devices "
                "differentiates all {rows} rows and nothing is split. Split the rows: in_specs "
                "(P(), P(axis), P(axis)) for w, x and y"
            ).format(shape=tuple(x.shape), devices=sizes[-1], rows=x.shape[0])
        )
    stacked = _(
        "The devices' gradients are stacked (out_specs P(axis)); after pmean every device "
        "holds the same gradient, so out_specs is P(), replicated"
    )
    cases, outputs = [], []
    for d in sizes:
        call = _("mean_gradient(w, x, y, mesh of {devices})").format(devices=d)
        got = run_answer(
            mean_gradient,
            w,
            x,
            y,
            make_mesh(d),
            call=call,
            hint=_(
                "w (3,), x (16, 3), y (16,); use shard_map over mesh with in_specs "
                "(P(), P(axis), P(axis))"
            ),
        )
        outputs.append(
            require_array(
                got,
                call,
                (3,),
                np.float32,
                why=_("the gradient, like w"),
                hint=lambda got, d=d: stacked if d > 1 and np.shape(got) == (3 * d,) else "",
            )
        )
        cases.append(
            Case(
                _("a mesh of {devices} devices").format(devices=d),
                {"w": w, "x": x, "y": y},
                right,
                {
                    _(
                        "the parts' gradients are summed, not averaged: the result is (number of devices) "
                        "times the gradient (psum instead of pmean; or shard_map's check_vma is on, under "
                        "which jax.grad of a replicated w already sums over the devices: pass "
                        "check_vma=False)"
                    ): d * right,
                    _(
                        "the gradient of the first device's rows only: the devices' gradients never "
                        "meet; average them with jax.lax.pmean(grads, axis)"
                    ): _mse_grad(w, x[: 16 // d], y[: 16 // d]),
                    _(
                        "each device's loss is a sum over its rows, not a mean: the result is the rows "
                        "per device times the gradient"
                    ): (16 // d) * right,
                    _(
                        "the gradient is half what it should be: the derivative of (x w - y) ** 2 "
                        "is 2 x (x w - y); let jax.grad differentiate the loss"
                    ): right / 2,
                    _(
                        "the gradient's sign is flipped: return the gradient itself, not the "
                        "direction of a descent step"
                    ): -right,
                    _(
                        "the gradient is divided by the number of rows once more: the loss's mean "
                        "already divides by them"
                    ): right / 16,
                },
            )
        )
    verdict("mean_gradient", cases, outputs, rtol=1e-5, atol=1e-5)
    passed(
        _("mean_gradient equals the whole batch's gradient on meshes of {sizes} devices").format(
            sizes=sizes
        )
    )


# --- exercise 3: from how many environments data parallelism pays ---------------------------


def _pays_reference(ratios: dict, above: float, mode: str = "") -> int | None:
    """The smallest ``num_envs`` from which every ratio exceeds ``above``; ``mode`` plants a
    mistake: "first" (the first that exceeds, whatever follows), "unsorted" (dict order),
    "at_least" (>=), "last" (the largest that exceeds), "by_ratio" (sizes sorted by their
    ratio), "paired" (sizes sorted, the ratios left in the dict's order), "below" (the size
    just below the answer), "best" (the paying size of the largest ratio)."""
    sizes = sorted(ratios, key=ratios.get) if mode == "by_ratio" else sorted(ratios)
    sizes = list(ratios) if mode == "unsorted" else sizes
    values = list(ratios.values()) if mode == "paired" else [ratios[n] for n in sizes]
    pays = [(r >= above) if mode == "at_least" else (r > above) for r in values]
    if mode == "first":
        return next((n for n, p in zip(sizes, pays) if p), None)
    if mode == "last":
        return next((n for n, p in zip(sizes[::-1], pays[::-1]) if p), None)
    if mode == "best":
        return max((n for n, p in zip(sizes, pays) if p), key=ratios.get, default=None)
    start = None
    for n, p in zip(sizes, pays):
        start = (start if start is not None else n) if p else None
    if mode == "below" and start is not None and start != sizes[0]:
        return sizes[sizes.index(start) - 1]
    return start


#: The check's measurements: ratios of data-parallel steps per second over one device's,
#: by number of environments, given out of order; ``above``.
_PAYS_CASES = (
    (
        N_("ratios that rise past 1"),
        {64: 0.39, 256: 0.71, 1024: 1.08, 4096: 1.9, 16384: 3.1},
        [1024, 64, 16384, 256, 4096],
        1.0,
    ),
    (
        N_("ratios that pass 1 for two sizes, fall back, then stay above it"),
        {64: 0.8, 128: 1.05, 256: 1.1, 512: 0.97, 1024: 1.3, 2048: 1.6},
        [512, 64, 2048, 128, 1024, 256],
        1.0,
    ),
    (
        N_("ratios with one exactly 1.0"),
        {32: 0.6, 64: 1.0, 128: 1.2, 256: 1.5},
        [256, 32, 128, 64],
        1.0,
    ),
    (
        N_("the first ratios with above = 1.2"),
        {64: 0.39, 256: 0.71, 1024: 1.08, 4096: 1.9, 16384: 3.1},
        [64, 256, 1024, 4096, 16384],
        1.2,
    ),
    (
        N_("ratios above 1 from the second size on, not rising with it"),
        {64: 0.5, 128: 1.4, 256: 1.2, 512: 1.6},
        [256, 512, 64, 128],
        1.0,
    ),
    (N_("ratios that never pass 1"), {64: 0.4, 256: 0.6, 1024: 0.9}, [256, 1024, 64], 1.0),
    (N_("ratios that all pass 1"), {64: 1.3, 256: 2.2, 1024: 1.9}, [1024, 64, 256], 1.0),
)


def _pays_named(call: str, ratios: dict, above: float, expected: Any, got: Any) -> str:
    """What ``got`` breaks of what any answer must meet on one set of ratios (None where some
    size pays, a size where none does, an int that is not a size measured), or ""."""
    if isinstance(got, (bool, np.bool_)) or not (got is None or isinstance(got, (int, np.integer))):
        return ""  # the contract's message
    sizes = sorted(ratios)
    if expected is None and got in (0, -1):
        return _("{call} = {value}, where no num_envs pays: return None").format(
            call=call, value=repr(got)
        )
    if expected is None and got in ratios:
        return _(
            "{call} = {value}, where no num_envs pays (the largest, {largest}, has ratio "
            "{ratio}, not above {above}): return None"
        ).format(
            call=call,
            value=repr(int(got)),
            largest=sizes[-1],
            ratio=ratios[sizes[-1]],
            above=above,
        )
    if got is None and expected is not None:
        every = expected == sizes[0]
        return (
            _(
                "{call} = None, but every num_envs pays here, the smallest included: "
                "return the smallest, {expected}"
            )
            if every
            else _(
                "{call} = None, but every num_envs from {expected} on has a ratio above "
                "{above}: return {expected}"
            )
        ).format(call=call, expected=expected, above=above)
    if got is not None and got not in ratios:
        position = None if expected is None else sizes.index(expected)
        return _(
            "{call} = {value}, which is not one of the sizes measured ({sizes}){why}; "
            "return a num_envs, a key of ratios"
        ).format(
            call=call,
            value=repr(int(got)),
            sizes=", ".join(map(str, sizes)),
            why=(
                _(": it is the answer's position among the sorted sizes")
                if got == position
                else _(": it is how many sizes pay")
                if got == sum(r > above for r in ratios.values())
                else ""
            ),
        )
    return ""


@self_check
def check_pays_from(pays_from: Callable) -> None:
    """Check ``pays_from(ratios, above=1.0) -> int | None``: from how many environments data
    parallelism pays.

    ``ratios`` maps ``num_envs`` (ints, in any order) to the steps per second of the
    data-parallel run over one device's at that ``num_envs``. Returns the smallest
    ``num_envs`` from which every ratio exceeds ``above`` (that one and every larger one
    measured); None if the largest does not. Runs the answer as Python (no jit) on seven
    sets of ratios, given out of order (one where every size pays, one whose ratios do not
    rise with the size).

    Raises:
        CheckFailed: for a result that is neither an int nor None (a ratio, a float, a str),
            or naming the mistake (the first size that pays though a larger one falls back,
            the largest that pays, sizes not sorted, sorted by ratio or with the ratios left
            in the dict's order, the size just below the answer, the paying size of the
            largest ratio, >= for >, ``above`` ignored, 0 or -1 for None), or what no answer
            may do on one set (None where a size pays, a size where none pays, an int that is
            no size: a position, a count), else the first set that differs.
    """
    require_function(pays_from, "pays_from")
    cases, outputs, broken = [], [], []
    for label, ratios, order, above in _PAYS_CASES:
        ratios, label = {n: ratios[n] for n in order}, _(label)
        call = _("pays_from(ratios, above={above}) on {case}").format(above=above, case=label)
        got = run_answer(pays_from, dict(ratios), above, call=call, jit=False)
        expected = _pays_reference(ratios, above)
        broken.append(_pays_named(call, ratios, above, expected, got))
        got = require_number(
            got,
            call,
            "int",
            why=_("a num_envs, one of the keys of ratios"),
            none=True,
            hint=lambda got, ratios=ratios: (
                _("That is a ratio, not the number of environments it belongs to")
                if got in ratios.values()
                else ""
            ),
        )

        def code(value):  # None as -1 for the comparisons (sizes are positive)
            return -1.0 if value is None else float(value)

        mistakes = {
            _(
                "it returns the first num_envs whose ratio exceeds above, though a larger one "
                "falls back: data parallelism pays from a size on only if every larger one pays "
                "too"
            ): _pays_reference(ratios, above, "first"),
            _(
                "it returns the largest num_envs that pays: the question is the smallest from "
                "which every larger one pays"
            ): _pays_reference(ratios, above, "last"),
            _(
                "the sizes are taken in the dict's order, not sorted: sorted(ratios)"
            ): _pays_reference(ratios, above, "unsorted"),
            _(
                "a ratio equal to above counts as paying: it pays only when faster, ratio > above"
            ): _pays_reference(ratios, above, "at_least"),
            _(
                "above is ignored (1.0 throughout): compare with the above passed in"
            ): _pays_reference(ratios, 1.0),
            _(
                "the sizes are sorted by their ratio, not by num_envs: a smaller ratio at a "
                "larger size comes first then. Sort the sizes themselves, sorted(ratios)"
            ): _pays_reference(ratios, above, "by_ratio"),
            _(
                "the sizes are sorted but the ratios are not: each size is compared with "
                "another size's ratio. Read each size's own ratio, ratios[n]"
            ): _pays_reference(ratios, above, "paired"),
            _(
                "it returns the size just below the answer, the last one that does not pay: "
                "the answer is the first size of the paying run, the one after it"
            ): _pays_reference(ratios, above, "below"),
            _(
                "it returns the size with the largest ratio: the question is the smallest size "
                "from which every larger one pays"
            ): _pays_reference(ratios, above, "best"),
        }
        inputs = {
            "num_envs": sorted(ratios),
            "ratios": [ratios[n] for n in sorted(ratios)],
            "above": above,
            "None is shown as": -1,
        }
        cases.append(Case(label, inputs, code(expected), {m: code(v) for m, v in mistakes.items()}))
        outputs.append(code(got))
    named = any(
        all(case.mistakes.get(message, case.expected) == out for case, out in zip(cases, outputs))
        for message in cases[0].mistakes
    )
    if not named and any(broken):
        fail(next(b for b in broken if b))
    verdict("pays_from", cases, outputs, rtol=0, atol=1e-9)
    passed(_("pays_from finds the smallest num_envs from which data parallelism pays"))
