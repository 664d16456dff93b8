"""One setting that scales every training budget in the book.

The book build runs the real budgets. The test suite sets the environment
variable ``DRLJAX_BUDGET=tiny`` so that the *same visible code* in every
notebook runs in seconds::

    from companion.budget import budget
    num_steps = budget(full=200_000, tiny=500)
"""

from __future__ import annotations

import os
from typing import TypeVar

T = TypeVar("T")

#: Name of the environment variable read by :func:`budget_mode`.
BUDGET_ENV = "DRLJAX_BUDGET"
#: The values it may take.
BUDGET_MODES = ("full", "tiny")


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


def budget(full: T, tiny: T) -> T:
    """Pick the value for the current budget mode.

    Args:
        full: value used by the book build and by readers (the real budget).
        tiny: value used by the tests; must have the same type as ``full``.

    Returns:
        ``full`` or ``tiny``, according to :func:`budget_mode`.

    Raises:
        TypeError: if ``full`` and ``tiny`` have different types, a sign that
            one of them is a typo (``500`` against ``"500"``).
    """
    if type(full) is not type(tiny):
        raise TypeError(
            f"budget(full={full!r}, tiny={tiny!r}): both values must have the same type, "
            f"got {type(full).__name__} and {type(tiny).__name__}"
        )
    return tiny if budget_mode() == "tiny" else full
