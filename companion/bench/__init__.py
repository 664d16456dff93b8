"""Timings for the notebooks, and the committed benchmark results they show.

Compile time is measured apart from run time, results are waited for (``block_until_ready``),
each figure is the median of several runs with its min and max, and the hardware is named.
The benchmark scripts' own helpers (compiling ahead of time, program memory, the head of a
result's JSON) are in ``benchmarks/measure.py``.
"""

from __future__ import annotations

import numbers
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax

from companion._validate import folder_and_parents, positive_int


def hardware() -> dict:
    """Describe the machine: CPU model and cores, JAX version, backend and devices (the head of
    every benchmark result, and the machine the book's chapter cards name)."""
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
    """Run ``fn()`` (no arguments) once to compile, then ``repeats`` more times, each waited for.

    Returns:
        dict: ``first_s`` (compile plus one run), ``compile_s`` (``first_s - median_s``, >= 0),
        ``median_s``, ``min_s``, ``max_s`` (seconds, of the timed runs) and ``repeats``.

    Raises:
        TypeError: if ``fn`` is not callable or ``repeats`` is not an int.
        ValueError: if ``repeats`` < 1.
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a function, got {type(fn).__name__}")
    positive_int(repeats, "repeats")
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
    """:func:`timed`, plus steps per second: median and spread (from max and min times).

    Raises:
        TypeError, ValueError: if ``fn`` is not callable, or ``steps_per_call`` or ``repeats`` is
            not a positive int.
    """
    positive_int(steps_per_call, "steps_per_call")
    result = timed(fn, repeats)
    result.update(steps_per_call=steps_per_call, **step_rates(result, steps_per_call))
    return result


def step_rates(timing: dict, steps: int) -> dict:
    """Steps per second of a timing (from :func:`timed`, or ``compile_and_time`` in
    ``benchmarks/measure.py``) of ``steps``.

    Returns:
        dict of floats: ``steps_per_s`` (``steps / median_s``), ``steps_per_s_low`` (from
        ``max_s``) and ``steps_per_s_high`` (from ``min_s``).

    Raises:
        TypeError, ValueError: if ``steps`` is not a positive int.
        ValueError: if ``timing`` is not a dict with positive ``median_s``, ``min_s``, ``max_s``.
    """
    positive_int(steps, "steps")
    for name in ("median_s", "min_s", "max_s"):
        value = timing.get(name) if isinstance(timing, dict) else None
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
            raise ValueError(
                f"timing: expected a dict with median_s, min_s and max_s > 0 (bench.timed), "
                f"got {name}={value!r}"
            )
    return {
        "steps_per_s": steps / timing["median_s"],
        "steps_per_s_low": steps / timing["max_s"],
        "steps_per_s_high": steps / timing["min_s"],
    }


#: Where :func:`load_result` downloads results from when no local copy exists (Colab).
RESULTS_URL = "https://raw.githubusercontent.com/deep-rl-in-jax/book/main/benchmarks/results"


def find_results_dir(start: str | os.PathLike | None = None):
    """The ``benchmarks/results`` folder of the book's repository, searched for from
    ``start`` (default: the working directory) and its parents; ``None`` if absent.

    Raises:
        TypeError: if ``start`` is not a path.
    """
    for folder in folder_and_parents(start):
        candidate = folder / "benchmarks" / "results"
        if candidate.is_dir():
            return candidate
    return None


def load_result(name: str, results_dir: str | os.PathLike | None = None) -> dict:
    """The JSON dict that ``benchmarks/<name>.py`` wrote (``benchmarks/results/<name>.json``).

    Read from ``results_dir``, else :func:`find_results_dir`; outside a checkout (Colab),
    downloaded from :data:`RESULTS_URL`.

    Raises:
        ValueError: if ``name`` is not a plain name (letters, digits, ``_``).
        FileNotFoundError: if the file is missing where it was looked for, or cannot be
            downloaded; the message says why (HTTP error, or no network).
    """
    import json
    import re
    import urllib.error
    import urllib.parse
    import urllib.request
    from pathlib import Path

    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_]+", name):
        raise ValueError(f"name: expected a benchmark name such as 'scaling', got {name!r}")
    folder = Path(results_dir) if results_dir is not None else find_results_dir()
    if folder is not None:
        path = folder / f"{name}.json"
        if path.exists():
            return json.loads(path.read_text())
        if results_dir is not None or any(folder.glob("*.json")):
            raise FileNotFoundError(
                f"name: no result {name!r} in {folder} (run benchmarks/{name}.py to make it)"
            )
    url = f"{RESULTS_URL}/{name}.json"
    here = f"this is not a checkout of the book's repository (no benchmarks/results/{name}.json)"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return json.loads(response.read().decode())
    except urllib.error.HTTPError as exc:
        raise FileNotFoundError(
            f"name: {here}, and the repository has no such file ({url} answered HTTP {exc.code})"
        ) from exc
    except OSError as exc:  # URLError and timeouts: no network, no DNS, refused
        host = urllib.parse.urlsplit(url).netloc
        reason = getattr(exc, "reason", exc)
        raise FileNotFoundError(
            f"name: {here}, and {host} could not be reached (no network? {reason})"
        ) from exc


def load_result_or_note(name: str) -> tuple[dict | None, str]:
    """:func:`load_result` for a notebook: ``(result, "")``, or ``(None, note)`` when the
    result cannot be read, where ``note`` is a short Markdown paragraph that says why (no
    such file in the repository, or no network) and where the result can be seen instead.

    Raises:
        ValueError: if ``name`` is not a plain benchmark name.
    """
    try:
        return load_result(name), ""
    except FileNotFoundError as exc:
        reason = str(exc).removeprefix("name: ")
        return None, (
            f"The committed result of `benchmarks/{name}.py` cannot be shown: {reason}. "
            "The book's web page shows it."
        )


# The readings the chapters state from the DQN grid, checked (companion.bench.readings).
from companion.bench.readings import dqn_expected_times, dqn_grid_readings  # noqa: E402

# The tables of committed results (companion.bench.tables), where the chapters look for them.
from companion.bench.tables import (  # noqa: E402
    benchmarks_against_others,
    dqn_cartpole_table,
    dqn_grid_table,
    dqn_levers_table,
    lever_verdicts,
    measured_on,
    post_dqn_table,
    post_ppo_ablation_table,
    post_ppo_table,
)

__all__ = [
    "benchmarks_against_others",
    "dqn_cartpole_table",
    "dqn_expected_times",
    "dqn_grid_readings",
    "dqn_grid_table",
    "dqn_levers_table",
    "find_results_dir",
    "hardware",
    "lever_verdicts",
    "load_result",
    "load_result_or_note",
    "measured_on",
    "post_dqn_table",
    "post_ppo_ablation_table",
    "post_ppo_table",
    "step_rates",
    "throughput",
    "timed",
]
