"""Turning on the run-time value checks that the default compiled programs leave out.

Value checks (an illegal action, an empty replay buffer, a mask row with no legal action) raise
at once in an eager call; under ``jit`` they are ``checkify`` checks kept only by :func:`checked`.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.experimental import checkify


def checked(fn: Any, static_argnums: int | tuple = ()) -> Any:
    """``fn``, jitted, with its run-time value checks turned on.

    ``checked(train)(key)`` runs ``jax.jit(checkify.checkify(train))`` (``static_argnums`` as in
    ``jax.jit``) and raises the first failed check after the call.

    Raises:
        TypeError: if ``fn`` is not callable.
        ValueError (``checkify.JaxRuntimeError``): when called, for a failed check.
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a function, got {type(fn).__name__}")
    checked_fn = checkify.checkify(fn, errors=checkify.user_checks)
    program = jax.jit(checked_fn, static_argnums=static_argnums)

    def run(*args, **kwargs):
        error, out = program(*args, **kwargs)
        error.throw()
        return out

    return run
