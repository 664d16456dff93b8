"""Shared pieces of the exercise self-checks."""

from __future__ import annotations

from typing import Any

import numpy as np


class CheckFailed(AssertionError):
    """An exercise's answer disagrees with the reference; the message says how."""


def fail(message: str) -> None:
    """Raise :class:`CheckFailed` with ``message``."""
    raise CheckFailed(message)


def require_function(fn: Any, name: str) -> None:
    """Fail, naming ``name``, unless ``fn`` is callable (a function was expected).

    Raises:
        CheckFailed: if ``fn`` is not callable.
    """
    if not callable(fn):
        fail(
            f"{name}: expected your function, got {type(fn).__name__} {fn!r:.60}; "
            "pass the function itself, without calling it"
        )


def run_answer(fn: Any, *args: Any, call: str, hint: str = "") -> Any:
    """Return ``fn(*args)``; if it raises, fail saying which ``call`` raised what, and ``hint``.

    Raises:
        CheckFailed: if ``fn`` is not callable (naming what was passed instead) or raises.
    """
    require_function(fn, call.split("(")[0])
    try:
        return fn(*args)
    except Exception as exc:
        fail(f"{call} raised {type(exc).__name__}: {exc}" + (f". {hint}" if hint else ""))


def passed(what: str) -> None:
    """Report a passed check in one line."""
    print(f"check passed: {what}")


def check_shape(got: Any, expected: tuple, what: str, hint: str = "") -> np.ndarray:
    """Return ``got`` as a NumPy array after checking its shape."""
    try:
        arr = np.asarray(got)
    except Exception as exc:  # a tracer, a list of mixed things...
        fail(f"{what} should be an array of shape {expected}, got {type(got).__name__} ({exc})")
    if arr.shape != tuple(expected):
        fail(
            f"{what} has shape {arr.shape}, expected {tuple(expected)}."
            + (f" {hint}" if hint else "")
        )
    if not np.all(np.isfinite(arr)):
        fail(f"{what} contains NaN or inf values")
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


def name_mistake(got: Any, mistakes: dict, name: str) -> None:
    """Fail with ``"name: message."`` for the first known mistake whose result ``got`` matches.

    ``mistakes`` maps a message to what a function with that mistake returns on
    the check's inputs; nothing happens when none matches.

    Raises:
        CheckFailed: for the first matching mistake.
        TypeError: if ``mistakes`` is not a dict.
    """
    if not isinstance(mistakes, dict):
        raise TypeError(
            f"mistakes: expected a dict of message -> result, got {type(mistakes).__name__}"
        )
    for message, wrong in mistakes.items():
        if close(got, wrong):
            fail(f"{name}: {message}.")
