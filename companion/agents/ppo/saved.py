"""The generalising chapter's agents trained on random mazes, saved as package data.

``tools/train_random_maze.py`` writes ``companion/data/<file>.eqx`` (the model's arrays,
``eqx.tree_serialise_leaves``) and ``<file>.json`` (config, network as class and keyword
arguments, curves, evaluations): equinox's serialisation example, hyperparameters beside weights.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from pathlib import Path
from typing import Any

import equinox as eqx

from companion._validate import one_of
from companion.agents.ppo.config import PPOConfig
from companion.agents.ppo.networks import model_skeleton, network_from_dict

#: The saved agents by name: the file name (without suffix) of each.
SAVED_AGENTS = {
    "propagation": "ppo_random_maze",
    "value_iteration": "ppo_value_iteration_maze",
}


def saved_agent_files(agent: str = "propagation") -> tuple[Path, Path]:
    """Paths of a saved random-maze agent: ``(weights .eqx, summary .json)``.

    Args:
        agent: ``"propagation"`` or ``"value_iteration"`` (a key of :data:`SAVED_AGENTS`).

    Raises:
        ValueError: for another ``agent``.
    """
    one_of(agent, tuple(SAVED_AGENTS), "agent")
    data = Path(str(importlib.resources.files("companion") / "data"))
    name = SAVED_AGENTS[agent]
    return data / f"{name}.eqx", data / f"{name}.json"


def saved_summary(agent: str = "propagation") -> dict[str, Any]:
    """The JSON summary written next to the saved agent's weights."""
    return json.loads(saved_agent_files(agent)[1].read_text())


def saved_config(agent: str = "propagation") -> PPOConfig:
    """The :class:`PPOConfig` the saved agent was trained with (lists read back as tuples)."""
    fields = saved_summary(agent)["config"]
    return PPOConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


def saved_network(agent: str = "propagation") -> functools.partial:
    """The network the saved agent was trained with, ``network(key) -> model``: a
    ``functools.partial`` of :class:`~companion.agents.ppo.PropagationActorCritic` or
    :class:`~companion.agents.ppo.ValueIterationActorCritic` and its sizes."""
    return network_from_dict(saved_summary(agent)["network"])


#: Default of :func:`load_saved_agent`'s ``iterations``: the number the agent trained with.
AS_TRAINED = "as trained"


def load_saved_agent(agent: str = "propagation", iterations=AS_TRAINED):
    """The saved agent's equinox model: float32 ``(3, rows, cols)`` -> ``(logits (4,), value ())``.

    Args:
        agent: ``"propagation"`` or ``"value_iteration"``.
        iterations: steps or backups per call; default as trained (``None``: value iteration
            until the values settle).

    Raises:
        ValueError: for an unknown ``agent``.
        TypeError, ValueError: for a bad ``iterations`` (the model's constructor says which).
    """
    network = saved_network(agent)
    if iterations != AS_TRAINED:
        network = functools.partial(network, iterations=iterations)
    like = model_skeleton(network)  # the structure only: no weights to compute
    return eqx.tree_deserialise_leaves(saved_agent_files(agent)[0], like)
