"""Environments written in JAX, and safe access to jumanji's.

Import jumanji through :func:`import_jumanji` (or through this package) in a
notebook: ``import jumanji`` inside a Jupyter kernel switches matplotlib to the
``ipympl`` backend, which fails when ipympl is not installed and turns figures
into widgets that a static book cannot show.
"""

from companion.envs.jumanji_import import import_jumanji

__all__ = ["import_jumanji"]
