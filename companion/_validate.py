"""Argument checks shared by the package: each error names the argument, its value, the expected.

Value checks (:func:`runtime_check`) raise at once on concrete arrays; on traced ones they are
``checkify`` checks when :func:`companion.debug.checked` traces them, and absent otherwise.
"""

from __future__ import annotations

import contextlib
import contextvars
import numbers
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify


def positive_int(value: Any, name: str) -> int:
    """``value`` as an int if it is a positive integer (not a bool).

    Raises:
        TypeError: if ``value`` is not an integer (a float, a bool, a string, an array).
        ValueError: if it is 0 or negative.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected a positive int, got {value!r} ({type(value).__name__})")
    if value <= 0:
        raise ValueError(f"{name}: expected a positive int, got {value!r}")
    return int(value)


def positive_ints(values: Any, name: str) -> tuple:
    """``values`` as a non-empty tuple of positive ints.

    Raises:
        TypeError: if ``values`` is not a sequence of integers.
        ValueError: if it is empty or holds a size <= 0.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name}: expected a tuple of positive ints, got {values!r}")
    if len(values) == 0:
        raise ValueError(
            f"{name}: expected at least one size, got an empty {type(values).__name__}"
        )
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name}: expected a tuple of positive ints, got {values!r}")
        if v <= 0:
            raise ValueError(f"{name}: expected positive sizes, got {values!r}")
    return tuple(int(v) for v in values)


def number_in(value: Any, name: str, low: float, high: float, *, low_open: bool = False) -> float:
    """``value`` as a float if ``low <= value <= high`` (``low < value`` when ``low_open``).

    Traced values (inside ``jit``) are passed through unchecked.

    Raises:
        TypeError: if ``value`` is not a real number.
        ValueError: if it is outside the range, or nan.
    """
    if isinstance(value, jax.core.Tracer):
        return value
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.ndarray, jax.Array)):
        raise TypeError(f"{name}: expected a number, got {value!r} ({type(value).__name__})")
    if np.ndim(value) != 0:
        raise ValueError(f"{name}: expected a scalar, got shape {np.shape(value)}")
    v = float(value)
    above = v > low if low_open else v >= low
    if not (above and v <= high):
        bracket = "(" if low_open else "["
        raise ValueError(f"{name}: expected a number in {bracket}{low}, {high}], got {value!r}")
    return v


def positive_number(value: Any, name: str) -> float:
    """``value`` as a float if it is a finite number > 0.

    Raises:
        TypeError: if ``value`` is not a real number.
        ValueError: if it is 0, negative, infinite or nan.
    """
    return number_in(value, name, 0.0, float(np.finfo(np.float64).max), low_open=True)


def one_of(value: Any, choices: Sequence, name: str) -> Any:
    """``value`` if it is one of ``choices``.

    Raises:
        ValueError: naming the choices otherwise.
    """
    if value not in choices:
        raise ValueError(f"{name}: unknown value {value!r}; expected one of {tuple(choices)}")
    return value


def prng_key(key: Any, name: str = "key") -> Any:
    """``key`` if it is a PRNG key: a typed key (``jax.random.key``) of shape ``()`` or a raw
    uint32 key (``jax.random.PRNGKey``) of shape ``(2,)``.

    Raises:
        TypeError: for an int seed, a float array or anything else that is not a key.
        ValueError: for a batch of keys where one key was expected.
    """
    if isinstance(key, (numbers.Number, bool)):
        raise TypeError(
            f"{name}: expected a PRNG key, got the number {key!r}; "
            f"make one with jax.random.key({key!r})"
        )
    dtype = getattr(key, "dtype", None)
    if dtype is None:
        raise TypeError(f"{name}: expected a PRNG key, got {type(key).__name__}")
    if jnp.issubdtype(dtype, jax.dtypes.prng_key):
        if key.shape != ():
            raise ValueError(
                f"{name}: expected one PRNG key of shape (), got a batch of shape {key.shape}"
            )
        return key
    if jnp.issubdtype(dtype, jnp.integer) and key.shape == ():
        raise TypeError(
            f"{name}: expected a PRNG key, got an integer scalar (a seed?); "
            "make a key with jax.random.key(seed)"
        )
    if dtype != jnp.uint32 or key.shape != (2,):
        raise TypeError(
            f"{name}: expected a PRNG key (jax.random.key(seed), or a uint32 array of shape (2,) "
            f"from jax.random.PRNGKey), got dtype {dtype} and shape {tuple(key.shape)}"
        )
    return key


def maze_env(env: Any, name: str = "env") -> Any:
    """``env`` if it is a jumanji ``Maze`` (or a subclass), as ``make_maze_task`` returns it.

    Any jumanji ``Wrapper`` is refused, ``AutoResetWrapper`` and ``VmapAutoResetWrapper``
    included: the functions that take a Maze reset it and detect episode ends themselves, and a
    wrapper that resets on its own hides every end (the target reached would not count).

    Raises:
        TypeError: naming ``name``, for a wrapper (how to unwrap it) or anything not a Maze.
    """
    from companion.envs.jumanji_import import import_jumanji

    import_jumanji()  # before any jumanji submodule: keeps matplotlib's backend
    from jumanji.environments.routing.maze.env import Maze
    from jumanji.wrappers import Wrapper

    tasks = "companion.envs.maze.make_maze_task('empty' | 'medium' | 'random')"
    if isinstance(env, Wrapper):
        layers, inner = [], env
        while isinstance(inner, Wrapper):
            layers.append(type(inner).__name__)
            inner = getattr(inner, "_env", None)
        chain = "(".join(layers + [type(inner).__name__]) + ")" * len(layers)
        raise TypeError(
            f"{name}: expected a jumanji Maze without wrappers, got {chain}; this function "
            "resets the environments and detects episode ends itself, and a wrapper that "
            "resets or batches them hides those ends (reaching the target would not count as "
            f"a termination). Pass the unwrapped Maze: {name}.unwrapped, or {tasks}"
        )
    if not isinstance(env, Maze):
        raise TypeError(
            f"{name}: expected a jumanji Maze, got {type(env).__name__}; the book's tasks are "
            f"{tasks}"
        )
    return env


def folder_and_parents(start: Any, name: str = "start") -> tuple[Path, ...]:
    """``start`` (default: the working directory), resolved, followed by its parents: the
    folders to search, in order, for a file of the book's repository.

    Raises:
        TypeError: if ``start`` is neither None nor a path.
    """
    if start is not None and not isinstance(start, (str, os.PathLike)):
        raise TypeError(f"{name}: expected a path or None, got {type(start).__name__}")
    here = Path(start or os.getcwd()).resolve()
    return (here, *here.parents)


#: True while :func:`companion.debug.checked` traces its function: only then does a traced
#: value check become a ``checkify`` check. Elsewhere it leaves nothing in the program: a
#: ``checkify`` check under a plain ``jax.jit`` is dropped from the compiled code, but its
#: effect stays on the function and makes every call of it wait for the result (about 0.1 ms a
#: call on a CPU: a Python loop over a jitted CartPole step ran 15 times slower).
_TRACING_CHECKS = contextvars.ContextVar("companion_tracing_checks", default=False)


@contextlib.contextmanager
def tracing_checks():
    """Within this block, traced value checks (:func:`runtime_check`) become checkify checks."""
    token = _TRACING_CHECKS.set(True)
    try:
        yield
    finally:
        _TRACING_CHECKS.reset(token)


def runtime_check(bad: Any, message: str) -> None:
    """Raise ``ValueError(message)`` if any element of ``bad`` is True.

    A concrete ``bad`` is checked now; a traced one becomes a ``checkify.debug_check`` when
    traced by :func:`companion.debug.checked` (raised after the call), and is left out of the
    program otherwise (a plain ``jax.jit`` has neither a host callback nor an effect).

    Raises:
        ValueError: with ``message``, if ``bad`` is concrete and any element is True.
    """
    if isinstance(bad, jax.core.Tracer):
        if _TRACING_CHECKS.get():
            checkify.debug_check(~jnp.any(bad), message.replace("{", "{{").replace("}", "}}"))
    elif bool(np.any(np.asarray(bad))):
        raise ValueError(message)
