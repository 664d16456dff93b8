"""Shared pieces of the exercise self-checks."""

from __future__ import annotations

from typing import Any

import numpy as np


class CheckFailed(AssertionError):
    """An exercise's answer disagrees with the reference; the message says how."""


def fail(message: str) -> None:
    """Raise :class:`CheckFailed` with ``message``."""
    raise CheckFailed(message)


def run_answer(fn: Any, *args: Any, call: str, hint: str = "") -> Any:
    """Return ``fn(*args)``; if it raises, fail saying which ``call`` raised what, and ``hint``."""
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
    """Whether two arrays agree to float32 tolerance."""
    return np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def name_mistake(got: Any, mistakes: dict, name: str) -> None:
    """Fail with ``"name: message."`` for the first known mistake whose result ``got`` matches.

    ``mistakes`` maps a message to what a function with that mistake returns on
    the check's inputs; nothing happens when none matches.
    """
    for message, wrong in mistakes.items():
        if close(got, wrong):
            fail(f"{name}: {message}.")
