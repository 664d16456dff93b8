"""Timing helpers shared by the notebooks and ``benchmarks/``.

Rules they follow: compile time is measured apart from run time; results are
waited for with ``jax.block_until_ready``; each figure is the median of
several runs, reported with its spread (min and max); the hardware is named.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import time
from typing import Any, Callable

import jax


def hardware() -> dict:
    """Describe the machine: CPU model and cores, JAX version, backend and devices."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    devices = jax.devices()
    return {
        "cpu": cpu,
        "cpu_cores": os.cpu_count(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [d.device_kind for d in devices],
        "python": platform.python_version(),
    }


def timed(fn: Callable[[], Any], repeats: int = 5) -> dict:
    """Run ``fn()`` once to warm up (compile), then ``repeats`` more times.

    Args:
        fn: a function of no arguments; its result is waited for with
            ``jax.block_until_ready``.
        repeats: number of timed runs after the first, at least 1.

    Returns:
        dict with ``first_s`` (the first call: compile plus one run),
        ``compile_s`` (``first_s - median_s``, at least 0),
        ``median_s``, ``min_s``, ``max_s`` (of the timed runs) and ``repeats``.

    Raises:
        ValueError: if ``repeats < 1``.
    """
    if repeats < 1:
        raise ValueError(f"repeats: expected at least 1, got {repeats}")
    start = time.perf_counter()
    jax.block_until_ready(fn())
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    return {
        "first_s": first,
        "compile_s": max(first - median, 0.0),
        "median_s": median,
        "min_s": min(times),
        "max_s": max(times),
        "repeats": repeats,
    }


def throughput(fn: Callable[[], Any], steps_per_call: int, repeats: int = 5) -> dict:
    """:func:`timed`, plus steps per second: median and spread (from max and min times)."""
    result = timed(fn, repeats)
    result.update(
        steps_per_call=steps_per_call,
        steps_per_s=steps_per_call / result["median_s"],
        steps_per_s_low=steps_per_call / result["max_s"],
        steps_per_s_high=steps_per_call / result["min_s"],
    )
    return result


def result_header(name: str, quick: bool) -> dict:
    """The common head of a benchmark's JSON: its name, the UTC date, the mode and the hardware."""
    return {
        "benchmark": name,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "quick": quick,
        "hardware": hardware(),
    }
