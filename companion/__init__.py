"""Tested helpers for the book *Deep reinforcement learning in JAX*.

Modules include :mod:`companion.budget` (training budgets), :mod:`companion.trees` (pytrees),
:mod:`companion.envs` (environments) and :mod:`companion.viz` (figures and animations).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
