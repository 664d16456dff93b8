"""One setting that scales every training budget in the book.

``budget(full=200_000, tiny=500)`` gives ``full`` in the book build and ``tiny`` when the
environment variable ``DRLJAX_BUDGET=tiny`` (the tests), so the same notebook code runs fast.
"""

from __future__ import annotations

import os
from typing import TypeVar

#: Name of the environment variable read by :func:`budget_mode`.
BUDGET_ENV = "DRLJAX_BUDGET"
#: The values it may take.
BUDGET_MODES = ("full", "tiny")

T = TypeVar("T")  # not ``def budget[T]``: the package also imports on Python 3.11


def budget_mode() -> str:
    """Return the budget mode, ``"full"`` (the default) or ``"tiny"``.

    Raises:
        ValueError: if ``DRLJAX_BUDGET`` is set to anything else.
    """
    mode = os.environ.get(BUDGET_ENV, "full").strip().lower() or "full"
    if mode not in BUDGET_MODES:
        raise ValueError(
            f"environment variable {BUDGET_ENV}={mode!r}: expected one of {BUDGET_MODES}"
        )
    return mode


def budget(full: T, tiny: T) -> T:  # noqa: UP047 (no PEP 695: Python 3.11 imports it)
    """``full`` or ``tiny``, according to :func:`budget_mode`.

    Args:
        full: the real budget, used by the book build and by readers.
        tiny: the tests' budget; must have the same type as ``full``.

    Raises:
        TypeError: if ``full`` and ``tiny`` have different types (a typo: ``500`` vs ``"500"``).
    """
    if type(full) is not type(tiny):
        raise TypeError(
            f"budget(full={full!r}, tiny={tiny!r}): both values must have the same type, "
            f"got {type(full).__name__} and {type(tiny).__name__}"
        )
    return tiny if budget_mode() == "tiny" else full
