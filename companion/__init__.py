"""Tested helpers for the book *Deep reinforcement learning in JAX*.

The notebooks build every idea in plain view first, then import the helper from
this package so that later chapters can reuse it. Modules:

- :mod:`companion.budget` -- one setting that scales every training budget.
- :mod:`companion.trees` -- stacking and unstacking pytrees of arrays.
- :mod:`companion.envs` -- environments (jumanji's Maze, safely imported).
- :mod:`companion.viz` -- static figures and inline HTML animations.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
