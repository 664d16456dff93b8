"""What the benchmark scripts share: compile apart from run, program memory, the JSON's head.

A module, not a benchmark: the scripts import it from their own folder (``python
benchmarks/<name>.py`` puts that folder first on ``sys.path``). The timings the chapters
use too (:func:`~companion.bench.timed`, :func:`~companion.bench.throughput`,
:func:`~companion.bench.step_rates`) and :func:`~companion.bench.hardware` stay in
``companion.bench``; :func:`step_rates` is imported from here as well, beside
:func:`compile_and_time`, whose timings it reads.
"""

from __future__ import annotations

import datetime
import numbers
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax

from companion.bench import hardware, step_rates

__all__ = ["compile_and_time", "memory_bytes", "result_header", "step_rates"]


def memory_bytes(compiled: Any) -> dict:
    """Bytes a compiled program needs on its device, from XLA's memory analysis.

    Returns:
        dict of ints: ``argument_bytes``, ``output_bytes``, ``temp_bytes``, ``alias_bytes``
        (outputs reusing argument buffers), ``total_bytes`` (arguments + outputs + temp - aliases).

    Raises:
        TypeError: if ``compiled`` is not a compiled program (``jax.jit(f).lower(*a).compile()``).
    """
    if not hasattr(compiled, "memory_analysis"):
        raise TypeError(
            "compiled: expected a compiled JAX program (jax.jit(f).lower(*args).compile()), "
            f"got {type(compiled).__name__}"
        )
    m = compiled.memory_analysis()
    out = {
        "argument_bytes": int(m.argument_size_in_bytes),
        "output_bytes": int(m.output_size_in_bytes),
        "temp_bytes": int(m.temp_size_in_bytes),
        "alias_bytes": int(m.alias_size_in_bytes),
    }
    out["total_bytes"] = (
        out["argument_bytes"] + out["output_bytes"] + out["temp_bytes"] - out["alias_bytes"]
    )
    return out


def compile_and_time(
    fn: Callable, args: tuple, repeats: int = 3, max_total_s: float | None = None
) -> tuple[dict, Any]:
    """Compile ``jax.jit(fn)`` for the tuple ``args`` ahead of time, then time ``repeats`` runs.

    Returns:
        ``(timing, out)``: ``timing`` has ``compile_s``, ``median_s``, ``min_s``, ``max_s`` (s),
        ``repeats`` (runs done; after two, they stop once past ``max_total_s`` s in all) and
        ``memory`` (:func:`memory_bytes`); ``out`` is the last run's result.

    Raises:
        TypeError: ``fn`` not callable, ``args`` not a tuple, ``repeats`` not an int.
        ValueError: ``repeats`` < 1.
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a function, got {type(fn).__name__}")
    if not isinstance(args, tuple):
        raise TypeError(f"args: expected a tuple of arguments, got {type(args).__name__}")
    if isinstance(repeats, bool) or not isinstance(repeats, numbers.Integral):
        raise TypeError(f"repeats: expected a positive int, got {repeats!r}")
    if repeats < 1:
        raise ValueError(f"repeats: expected a positive int, got {repeats!r}")
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - start
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - start)
        if max_total_s is not None and len(times) >= 2 and sum(times) > max_total_s:
            break
    return {
        "compile_s": compile_s,
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "repeats": len(times),
        "memory": memory_bytes(compiled),
    }, out


def result_header(name: str, quick: bool) -> dict:
    """The common head of a benchmark's JSON: its name, the UTC date, the mode and the hardware
    (:func:`companion.bench.hardware`).

    Raises:
        ValueError: if ``name`` is not a plain name (letters, digits, ``_``).
    """
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_]+", name):
        raise ValueError(f"name: expected a benchmark name such as 'scaling', got {name!r}")
    return {
        "benchmark": name,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "hardware": hardware(),
    }
