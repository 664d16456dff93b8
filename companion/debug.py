"""Turning on the run-time value checks that the default compiled programs leave out.

The package validates shapes, dtypes, configurations and names in Python, at its entry points.
Checks on values that exist only at run time (an action outside the action space, a row of
the action mask with no legal action, sampling an empty replay buffer) raise at once in an
eager call and are ``checkify`` checks inside a compiled program: :func:`checked` turns them
on; a plain ``jax.jit`` drops them, so that program has no host callback.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.experimental import checkify


def checked(fn: Any, static_argnums: int | tuple = ()) -> Any:
    """``fn``, jitted, with its run-time value checks turned on.

    ``checked(train)(key)`` runs ``jax.jit(checkify.checkify(train))`` and raises the first
    failed check after the call; ``static_argnums`` as in ``jax.jit``. Use it to debug a program (an illegal action, an empty
    buffer, a row of the action mask with no legal action); the default programs skip these
    checks.

    Raises:
        TypeError: if ``fn`` is not callable.
        ValueError (``checkify.JaxRuntimeError``): when called, for a failed check.
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a function, got {type(fn).__name__}")
    program = jax.jit(checkify.checkify(fn, errors=checkify.user_checks), static_argnums=static_argnums)

    def run(*args, **kwargs):
        error, out = program(*args, **kwargs)
        error.throw()
        return out

    return run
