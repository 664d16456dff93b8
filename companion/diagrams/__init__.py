"""Explanatory diagrams of the book's ideas, drawn with matplotlib from this source.

Each public function returns a :class:`matplotlib.figure.Figure` (shown as SVG in Jupyter,
Colab and the book): ``from companion.diagrams import dqn_data_flow`` then
``dqn_data_flow()``. Importing a name loads only the module that draws it (``_LAZY`` below,
PEP 562), so the book's execution cache, which records the files each chapter read
(``tools/book_cache.py``), executes again only the chapters whose diagrams changed.
"""

from __future__ import annotations

import importlib

#: Each public name and the module of ``companion.diagrams`` that defines it.
_LAZY = {
    "agent_environment_loop": "rl",
    "corridor_mdp": "rl",
    "episode_endings": "rl",
    "jit_compile": "jax_ideas",
    "vmap_batch": "jax_ideas",
    "scan_carry": "jax_ideas",
    "init_apply_and_module": "jax_ideas",
    "dqn_data_flow": "agents",
    "ppo_iteration": "agents",
    "value_backups": "planning",
    "data_parallel": "devices",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'companion.diagrams' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"companion.diagrams.{_LAZY[name]}"), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
