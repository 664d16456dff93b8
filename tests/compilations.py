"""Counting XLA compilations: a test that a second call compiles nothing counts them."""

from __future__ import annotations

import contextlib

import jax

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"  # recorded when a program is loaded


@contextlib.contextmanager
def count_compiles():
    """Yield a list that counts XLA compilations made inside the block. JAX records the
    backend-compile event around compiling or loading a program, so a program found in the
    persistent compilation cache (which the test session turns on, see conftest.py) counts
    too."""
    count = []

    def listener(event, duration, **kwargs):
        if event == COMPILE_EVENT:
            count.append(kwargs.get("fun_name", "?"))

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield count
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
