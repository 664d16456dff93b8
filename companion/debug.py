"""Turning on the run-time value checks that the default compiled programs leave out.

Value checks (an illegal action, an empty replay buffer, a mask row with no legal action) raise
at once in an eager call; under ``jit`` they are ``checkify`` checks kept only by :func:`checked`.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.experimental import checkify

from companion._validate import tracing_checks


def checked(fn: Any, static_argnums: int | tuple = ()) -> Any:
    """``fn``, jitted, with its run-time value checks turned on.

    ``checked(train)(key)`` runs ``jax.jit(checkify.checkify(train))`` (``static_argnums`` as in
    ``jax.jit``) with the package's value checks traced into it, and raises the first failed
    check after the call. A function that another ``jax.jit`` already traced and cached keeps
    the program it traced then, without checks.

    Raises:
        TypeError: if ``fn`` is not callable.
        ValueError (``checkify.JaxRuntimeError``): when called, for a failed check.
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a function, got {type(fn).__name__}")

    def with_checks(*args, **kwargs):
        with tracing_checks():
            return fn(*args, **kwargs)

    checked_fn = checkify.checkify(with_checks, errors=checkify.user_checks)
    program = jax.jit(checked_fn, static_argnums=static_argnums)

    def run(*args, **kwargs):
        error, out = program(*args, **kwargs)
        error.throw()
        return out

    return run
