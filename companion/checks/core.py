"""Shared pieces of the exercise self-checks: :func:`run_answer` runs an answer as the book does.

:func:`verdict` names a mistake only when it matches every :class:`Case`; :func:`self_check`
wraps public checks so that a failure does not show the check's source.
"""

from __future__ import annotations

import functools
import inspect
import os
import traceback
import unicodedata
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import numpy as np

from companion.checks._messages import _, finish


class CheckFailed(AssertionError):
    """An exercise's answer disagrees with the reference; the message says how."""


class _Raised(CheckFailed):
    """:func:`run_answer`'s failure when the answer raised an exception (a check may catch it
    to add a hint, whatever the language of its message)."""


class _Differs(CheckFailed):
    """:func:`verdict`'s failure when no named mistake fits: the first case that differs (a
    check may catch it to say more, whatever the language of its message)."""


def fail(message: str) -> None:
    """Raise :class:`CheckFailed` with ``message``."""
    raise CheckFailed(message)


def self_check(check: Callable) -> Callable:
    """Wrap a public check: a failure is raised again from here, without the chain.

    The traceback a student sees then ends in this wrapper (pytest hides it, by
    ``__tracebackhide__``), so it never prints the check's own lines (the expected
    answer's expressions, the catalogue of mistakes).

    The check runs at the highest matrix-product precision
    (``jax.default_matmul_precision("highest")``), the answer's calls included: on a TPU,
    float32 products otherwise run in bfloat16 passes and agree with a float32 reference to
    about three digits, so a right answer would miss the check's tolerance. On a CPU this
    changes nothing.

    Raises:
        TypeError: if ``check`` is not callable.
    """
    if not callable(check):
        raise TypeError(f"check: expected a function, got {type(check).__name__}")

    @functools.wraps(check)
    def wrapper(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 (read by pytest)
        try:
            with jax.default_matmul_precision("highest"):
                return check(*args, **kwargs)
        except CheckFailed as failure:
            message = finish(str(failure), sentence=True)
        raise CheckFailed(message) from None

    return wrapper


def require_function(fn: Any, name: str) -> None:
    """Fail, naming ``name``, unless ``fn`` is callable (a function was expected).

    Raises:
        CheckFailed: if ``fn`` is not callable.
    """
    if not callable(fn):
        fail(
            _(
                "{name}: expected your function, got {type} {value}; pass the function "
                "itself, without calling it"
            ).format(name=name, type=type(fn).__name__, value=f"{fn!r:.60}")
        )


_TRACER_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerArrayConversionError,
)
_LIBRARY_DIRS = tuple(
    os.path.dirname(os.path.dirname(module.__file__)) for module in (jax, np, eqx)
) + (os.path.dirname(os.path.dirname(__file__)),)


def _where_raised(exc: BaseException) -> str:
    """`` (at `line`)``: the innermost line of the student's own code in ``exc``'s traceback."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith(_LIBRARY_DIRS) and frame.line
    ]
    return _(" (at `{line}`)").format(line=frames[-1].line.strip()) if frames else ""


def run_answer(
    fn: Any, *args: Any, call: str, hint: str = "", jit: bool = True, reraise: tuple = ()
) -> Any:
    """Return ``fn(*args)``, run as the book runs it: under ``eqx.filter_jit`` when ``jit``
    (arrays traced, Python numbers and other non-arrays static). Exceptions of the types in
    ``reraise`` propagate unchanged, for the check to name.

    Raises:
        CheckFailed: if ``fn`` is not callable (naming what was passed instead) or raises:
            naming ``call``, the student's line and the error, the arguments (by the names of
            ``fn``'s parameters, an array by its dtype and shape) and ``hint``; an answer
            that turns a traced array into a Python value (``int(x)``, ``if x > 0:``) is
            told so.
    """
    require_function(fn, call.split("(")[0])
    try:
        return (eqx.filter_jit(fn) if jit else fn)(*args)
    except reraise:
        raise
    except _TRACER_ERRORS as exc:
        first = str(exc).strip().splitlines()[0]
        fail(
            _(
                "{call} turns a traced array into a Python value{where}: {error} The book "
                "runs this function under jax.jit, where arrays have no values yet: use "
                "jnp.where or jax.lax.cond instead of `if`, jax.numpy instead of NumPy, and "
                "keep arrays as arrays (no int(), float() or bool() of one)"
            ).format(call=call, where=_where_raised(exc), error=first)
        )
    except Exception as exc:
        said = _("{call} raised {error}{where}: {message}. Its arguments: {arguments}").format(
            call=call,
            error=type(exc).__name__,
            where=_where_raised(exc),
            message=error_text(exc),
            arguments=_arguments(fn, args),
        )
        raise _Raised(_then(said, hint)) from exc


def _then(message: str, note: str) -> str:
    """ "<message>. <note>": a note (a hint, what a shape means) after a message, or the
    message alone when ``note`` is empty."""
    return _("{said}. {note}").format(said=message, note=note) if note else message


def _arguments(fn: Callable, args: tuple) -> str:
    """``args`` in a few words each, named as ``fn`` names its parameters: "w float32 (3,),
    gamma 0.9, mdp MazeMDP"."""
    try:
        names = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        names = []
    # the arguments are data, named as Python names them: left in English, like dtypes
    names += [f"argument {i + 1}" for i in range(len(names), len(args))]

    def brief(value):
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            if jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key):
                return "a PRNG key"
            return f"{value.dtype} {tuple(value.shape)}"
        if value is None or isinstance(value, (bool, int, float, str)):
            return f"{value!r:.30}"
        if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
            return f"a {type(value).__name__} of {len(value)}"
        return type(value).__name__

    return ", ".join(f"{name} {brief(value)}" for name, value in zip(names, args))


#: Lines of JAX's errors that speak of JAX's own traceback, not of the answer.
_NOISE = (
    "----",
    "For simplicity, JAX has removed",
    "The stack trace below excludes",
    "The preceding stack trace",
)


def error_text(exc: BaseException, limit: int = 700) -> str:
    """The message of ``exc`` as a student needs it, on one line: every line that explains the
    error (a JAX error's "they differ:" is followed by what differs), without JAX's notes on
    its traceback, cut at ``limit`` characters.

    Raises:
        ValueError: if ``limit`` is not a positive int.
    """
    if not isinstance(limit, int) or limit <= 0:
        raise ValueError(f"limit: expected a positive int, got {limit!r}")
    lines = [line.rstrip() for line in str(exc).strip().splitlines()]
    kept = [line for line in lines if line.strip() and not line.lstrip().startswith(_NOISE)]
    text = " ".join(line.strip() for line in kept).rstrip(".:")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def require_pair(got: Any, name: str, parts: str, size: int = 2) -> None:
    """Fail unless an answer's result ``got`` is a pair (a tuple or a list of ``size`` items):
    "``name`` should return a pair (``parts``); it returned <what it is>"."""
    if not (isinstance(got, (tuple, list)) and len(got) == size):
        from companion.checks._contract import describe

        words = {2: _("a pair"), 3: _("a triple")}.get(size) or _("a tuple of {size}").format(
            size=size
        )
        fail(
            _("{name} should return {contract} ({parts}); it returned {got}").format(
                name=name, contract=words, parts=parts, got=describe(got)
            )
        )


def passed(what: str) -> None:
    """Report a passed check in one line."""
    print(finish(_("check passed: {what}").format(what=what)))


def _broadcast_note(expected: tuple) -> str:
    """What a shape that :func:`_broadcast` recognises means, for the student."""
    return _(
        "Two shapes were broadcast together: an array of shape {column} against one of "
        "{expected} (values against targets, say), or an array of shape {last} where a "
        "scalar belongs (a scan's initial carry, say)"
    ).format(column=expected + (1,), expected=expected, last=expected[-1:])


def _not_finite(what: str, arr: np.ndarray) -> str:
    """The message for an output ``what`` that holds NaN or inf."""
    if np.any(np.isneginf(arr)):
        return _(
            "{what} contains NaN or inf values (-inf: is something masked here? Mask only "
            "where an action is chosen)"
        ).format(what=what)
    return _("{what} contains NaN or inf values").format(what=what)


def _broadcast(shape: tuple, expected: tuple) -> bool:
    """Whether ``shape`` is what an array of ``expected + (1,)`` broadcast against one of
    ``expected`` gives (values of shape (B, 1) against targets (B,) give (B, B))."""
    return (
        len(shape) == len(expected) + 1 and len(expected) > 0 and all(d in expected for d in shape)
    )


def check_shape(got: Any, expected: tuple, what: str, hint: str = "") -> np.ndarray:
    """Return ``got`` as a NumPy array after checking its shape and that it is finite.

    Raises:
        CheckFailed: naming ``what``, for a non-array, a wrong shape (saying so when it is
            the shape a ``(..., 1)`` array broadcast against a ``(...)`` one gives), or a
            NaN or inf.
    """
    try:
        arr = np.asarray(got)
    except Exception as exc:  # a tracer, a list of mixed things...
        fail(
            _("{what} should be an array of shape {expected}, got {type} ({error})").format(
                what=what, expected=tuple(expected), type=type(got).__name__, error=exc
            )
        )
    expected = tuple(expected)
    if arr.shape != expected:
        if _broadcast(arr.shape, expected):
            hint = _then(_broadcast_note(expected), hint)
        if hint:
            message = _("{what} has shape {shape}, expected {expected}. {hint}")
        else:
            message = _("{what} has shape {shape}, expected {expected}.")
        fail(message.format(what=what, shape=arr.shape, expected=expected, hint=hint))
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        fail(_not_finite(what, arr))
    return arr


def close(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """Whether two arrays have the same shape and agree to float32 tolerance.

    No broadcasting: an answer of shape ``(1,)`` is not close to an expected ``(3,)``.

    Raises:
        ValueError: if ``rtol`` or ``atol`` is negative.
    """
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if not tol >= 0:
            raise ValueError(f"{name}: expected a number >= 0, got {tol!r}")
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


class Case(NamedTuple):
    """One input of a check: ``label`` names it in messages, ``inputs`` (name -> value) are
    printed when the answer differs on it, ``expected`` is the right result and
    ``mistakes`` maps a message to what an answer with that mistake returns (a list: any
    of its items; a mistake missing from a case is taken to give the right result there)."""

    label: str
    inputs: dict
    expected: Any
    mistakes: dict


def _show(value: Any, prefix: str, short: bool = False) -> str:
    """``prefix`` and ``value`` printed to 4 decimals, rows aligned under the first; ``short``
    summarises an array of more than 12 elements by its first and last three."""
    arr = np.asarray(value)
    if arr.dtype == bool:
        arr = arr.astype(int)
    elif arr.dtype.kind == "f":
        arr = np.round(arr.astype(np.float64), 4)
    threshold, edge = (12, 3) if short else (60, 3)
    # a wide (CJK) character of a translated prefix takes two columns of a terminal
    width = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in prefix)
    text = np.array2string(
        arr,
        separator=", ",
        max_line_width=88,
        threshold=threshold,
        edgeitems=edge,
        prefix=" " * width,
    )
    return prefix + text


def _first_shown(got: np.ndarray, expected: np.ndarray, indices: np.ndarray) -> tuple:
    """The first of ``indices`` whose two values differ as printed (4 decimals), and the two
    printed; where every difference hides at 4 decimals, the first index, printed to as many
    decimals (up to 10) as it takes to tell them apart."""
    firsts = [tuple(int(j) for j in index) for index in indices]
    for first in firsts:
        pair = _show(got[first], ""), _show(expected[first], "")
        if pair[0] != pair[1]:
            return first, pair
    first = firsts[0]
    a, b = (float(np.asarray(v, np.float64)) for v in (got[first], expected[first]))
    if np.asarray(got).dtype.kind != "f" or not (np.isfinite(a) and np.isfinite(b)):
        return first, (_show(got[first], ""), _show(expected[first], ""))
    digits = 5
    while digits < 10 and f"{a:.{digits}f}" == f"{b:.{digits}f}":
        digits += 1
    return first, (f"{a:.{digits}f}", f"{b:.{digits}f}")


def verdict(name: str, cases: list, outputs: list, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """Return True when every output is close to its case's expected result; otherwise fail.

    A mistake is named only when the answer matches that mistake's result on every case;
    when none matches, the message shows the first case that differs: its inputs, the
    answer's result and the expected one, so the student can work it by hand.

    Raises:
        CheckFailed: ``"name: <mistake>."``, or the first differing case.
        ValueError: if ``cases`` and ``outputs`` differ in length or are empty.
    """
    if len(cases) != len(outputs) or not cases:
        raise ValueError(
            f"outputs: expected one output per case ({len(cases)} cases), got {len(outputs)}"
        )
    right = [close(out, case.expected, rtol, atol) for case, out in zip(cases, outputs)]
    if all(right):
        return True

    def matches(out, case, message):
        wrong = case.mistakes.get(message, case.expected)
        alternatives = wrong if isinstance(wrong, list) else [wrong]
        return any(close(out, alt, rtol, atol) for alt in alternatives)

    for message in dict.fromkeys(m for case in cases for m in case.mistakes):
        if all(matches(out, case, message) for case, out in zip(cases, outputs)):
            fail(_("{name}: {mistake}.").format(name=name, mistake=message))
    i = right.index(False)
    case, got = cases[i], np.asarray(outputs[i])
    expected = np.asarray(case.expected)
    where = ""
    if got.shape == expected.shape and got.ndim > 0:
        wrong = ~np.isclose(got, expected, rtol=rtol, atol=atol)
        first, shown = _first_shown(got, expected, np.argwhere(wrong))
        index = first[0] if len(first) == 1 else first
        where = _(": first at index {index}, it gives {got}, expected {expected}").format(
            index=index, got=shown[0], expected=shown[1]
        )
    lines = [
        _("{name} differs from the reference on {case}{where}").format(
            name=name, case=case.label, where=where
        ),
        _("The inputs:"),
    ]
    lines += [_show(value, f"  {key} = ", short=True) for key, value in case.inputs.items()]
    lines += [
        _show(got, _("it gives "), short=True),
        _show(expected, _("expected "), short=True),
    ]
    raise _Differs("\n".join(lines))


def _sub_jaxprs(eqn) -> list:
    """The jaxprs inside one equation (a pjit's, a scan's or a cond's body, ...)."""
    found = []
    for value in eqn.params.values():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            inner = getattr(item, "jaxpr", item)
            if hasattr(inner, "eqns"):
                found.append(inner)
    return found


def program_equations(jaxpr) -> list:
    """Every equation of ``jaxpr`` (a ``jax.make_jaxpr`` result or a jaxpr), nested
    programs included: a Python loop under an inner ``jax.jit`` still counts.

    Raises:
        TypeError: if ``jaxpr`` is neither a jaxpr nor a closed jaxpr.
    """
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    if not hasattr(jaxpr, "eqns"):
        raise TypeError(f"jaxpr: expected jax.make_jaxpr's result, got {type(jaxpr).__name__}")
    out = []
    for eqn in jaxpr.eqns:
        out.append(eqn)
        for inner in _sub_jaxprs(eqn):
            out.extend(program_equations(inner))
    return out


def _program_lacks(fn: Callable, args: tuple, primitive: str, **make_jaxpr_kwargs) -> bool:
    """Whether ``fn``'s program on ``args`` has no ``primitive`` equation, nested ones
    included; False when it cannot be traced (``run_answer`` reports that error)."""
    try:
        program = jax.make_jaxpr(fn, **make_jaxpr_kwargs)(*args)
    except Exception:
        return False
    return not any(eqn.primitive.name == primitive for eqn in program_equations(program))


def unrolled(fn: Callable, *args_by_length: tuple) -> tuple | None:
    """``(n_short, n_long)`` equations of ``fn``'s program on two argument tuples of
    increasing length when the longer program is larger (a loop unrolled into it), else
    None; a ``scan`` with ``unroll`` counts as unrolled.

    Raises:
        TypeError: if ``fn`` is not callable.
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a function, got {type(fn).__name__}")
    sizes = []
    for args in args_by_length:
        try:
            eqns = program_equations(jax.make_jaxpr(fn)(*args))
        except Exception:  # run_answer reports the error when the answer runs
            return None
        if any(
            eqn.primitive.name == "scan" and eqn.params.get("unroll", 1) not in (1, False)
            for eqn in eqns
        ):
            return (len(eqns), -1)
        sizes.append(len(eqns))
    return tuple(sizes) if sizes[1] > sizes[0] else None
