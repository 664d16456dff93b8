"""The generalising chapter's agents trained on random mazes, saved as package data.

``tools/train_random_maze.py`` writes ``companion/data/<name>.eqx`` (the model's arrays,
``eqx.tree_serialise_leaves``) and ``<name>.json`` (config, network, curves, evaluations).
"""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path
from typing import Any

import equinox as eqx

from companion._validate import one_of
from companion.agents.ppo.networks import model_skeleton, network_from_dict
from companion.agents.ppo.train import PPOConfig

#: The saved agents by network: the file name (without suffix) of each.
SAVED_AGENTS = {
    "propagation": "ppo_random_maze",
    "value_iteration": "ppo_value_iteration_maze",
}


def saved_agent_files(network: str = "propagation") -> tuple[Path, Path]:
    """Paths of a saved random-maze agent: ``(weights .eqx, summary .json)``.

    Args:
        network: ``"propagation"`` or ``"value_iteration"`` (a key of :data:`SAVED_AGENTS`).

    Raises:
        ValueError: for another ``network``.
    """
    one_of(network, tuple(SAVED_AGENTS), "network")
    data = Path(str(importlib.resources.files("companion") / "data"))
    name = SAVED_AGENTS[network]
    return data / f"{name}.eqx", data / f"{name}.json"


def saved_summary(network: str = "propagation") -> dict[str, Any]:
    """The JSON summary written next to the saved agent's weights."""
    return json.loads(saved_agent_files(network)[1].read_text())


def saved_config(network: str = "propagation") -> PPOConfig:
    """The :class:`PPOConfig` the saved agent was trained with (lists read back as tuples)."""
    fields = saved_summary(network)["config"]
    return PPOConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


def saved_network(network: str = "propagation"):
    """The network description the saved agent was trained with
    (:class:`~companion.agents.ppo.PropagationNet` or
    :class:`~companion.agents.ppo.ValueIterationNet`)."""
    return network_from_dict(saved_summary(network)["network"])


#: Default of :func:`load_saved_agent`'s ``iterations``: the number the agent trained with.
AS_TRAINED = "as trained"


def load_saved_agent(network: str = "propagation", iterations=AS_TRAINED):
    """The saved agent's equinox model: float32 ``(3, rows, cols)`` -> ``(logits (4,), value ())``.

    Args:
        network: ``"propagation"`` or ``"value_iteration"``.
        iterations: steps or backups per call; default as trained (``None``: value iteration
            until the values settle).

    Raises:
        ValueError: for an unknown ``network``.
        TypeError, ValueError: for a bad ``iterations`` (as :func:`check_network`).
    """
    described = saved_network(network)
    if iterations != AS_TRAINED:
        described = described._replace(iterations=iterations)
    like = model_skeleton(described)  # the structure only: no weights to compute
    return eqx.tree_deserialise_leaves(saved_agent_files(network)[0], like)
