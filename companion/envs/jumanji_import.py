"""Import jumanji without letting it change matplotlib's backend.

On import, ``jumanji.environments`` runs ``%matplotlib ipympl`` whenever it
finds itself inside an IPython kernel that is not Colab (jumanji 1.x). Where
ipympl is missing this raises ``RuntimeError: 'ipympl' is not a recognised GUI
loop or backend name`` and the import fails; where it is installed, figures
become interactive widgets, which show as empty boxes in the static HTML book.

jumanji decides by reading ``builtins.__IPYTHON__``. :func:`import_jumanji`
hides that flag for the duration of the first import only, so jumanji keeps
the kernel's backend (``inline`` in Jupyter, the book build and Colab).
Python caches modules, so every later ``import jumanji`` is harmless.
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
