"""Import jumanji without letting it change matplotlib's backend.

jumanji 1.x runs ``%matplotlib ipympl`` on import in a non-Colab IPython kernel (an error without
ipympl); :func:`import_jumanji` hides ``builtins.__IPYTHON__`` during the first import.
"""

from __future__ import annotations

import builtins
import sys
from types import ModuleType

_MISSING = object()


def import_jumanji() -> ModuleType:
    """Return the ``jumanji`` module, importing it without a backend switch.

    Returns:
        The imported ``jumanji`` module.

    Raises:
        ImportError: if jumanji is not installed.
    """
    if sys.modules.get("jumanji") is not None:
        return sys.modules["jumanji"]
    flag = getattr(builtins, "__IPYTHON__", _MISSING)
    if flag is not _MISSING:
        del builtins.__IPYTHON__
    try:
        import jumanji
    finally:
        if flag is not _MISSING:
            builtins.__IPYTHON__ = flag
    return jumanji
