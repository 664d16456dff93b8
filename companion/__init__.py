"""Tested helpers for the book *Deep reinforcement learning in JAX*.

Modules include :mod:`companion.budget` (training budgets), :mod:`companion.trees` (pytrees),
:mod:`companion.envs` (environments) and :mod:`companion.viz` (figures and animations). The self-checks' messages are English unless
:func:`set_language` (or ``COMPANION_LANGUAGE``) chooses Japanese (:mod:`companion.language`).
"""

from companion.language import current_language, set_language

__version__ = "0.1.0"

__all__ = ["__version__", "current_language", "set_language"]
