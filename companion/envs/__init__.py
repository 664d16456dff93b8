"""Environments written in JAX, and safe access to jumanji's.

Import jumanji through :func:`import_jumanji` in a notebook: a plain ``import jumanji`` in a
Jupyter kernel switches matplotlib to the ``ipympl`` backend.
"""

from companion.envs.jumanji_import import import_jumanji

__all__ = ["import_jumanji"]
