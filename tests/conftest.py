import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("DRLJAX_BUDGET", "tiny")

import jax  # noqa: E402

# The package practises what chapter 1 teaches: every test runs with JAX's key-reuse checker
# on, so a PRNG key used twice anywhere in a tested path is an error (typed keys only).
jax.config.update("jax_debug_key_reuse", True)


import pytest  # noqa: E402


@pytest.fixture
def no_key_reuse_check():
    """Turn the key-reuse checker off for one test: for planted wrong answers that reuse keys
    on purpose (a student's mistake), which the self-checks must name rather than crash on."""
    with jax.debug_key_reuse(False):
        yield
