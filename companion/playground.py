"""The maze playground: the PPO chapter's saved random-maze agents on a maze you draw.

Used by the book's page (``book/_static/playground/agent.js`` runs :func:`weights_js`'s weights)
and by :mod:`companion.playground_widget`. Rules: jumanji 1.1's ``Maze-v0`` (``Maze.step``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from companion._validate import one_of, positive_int
from companion.agents import ppo
from companion.agents.ppo import saved
from companion.envs import maze as maze_lib
from companion.envs.maze import MOVES

#: Version tag of the exported weights; agent.js refuses any other.
EXPORT_FORMAT = "drljax-maze-playground-2"

#: The playground's agents, by name: the saved network each loads
#: (:data:`companion.agents.ppo.saved.SAVED_AGENTS`).
AGENTS = {"planning": "value_iteration", "propagation": "propagation"}


def saved_agent_files() -> tuple[Path, Path]:
    """Paths of the saved propagation agent: ``(weights .eqx, summary .json)``."""
    return saved.saved_agent_files("propagation")


def load_agent(name: str = "planning"):
    """The PPO chapter's saved random-maze agent ``name``, for a maze of any size.

    ``"planning"``: ``ValueIterationActorCritic`` (backups until its values settle), or
    ``"propagation"``: ``PropagationActorCritic`` (32 steps); either maps one float32 image
    ``(3, rows, cols)`` to ``(logits (4,), value ())``.

    Raises:
        ValueError: for another ``name``.
    """
    one_of(name, tuple(AGENTS), "agent")
    if AGENTS[name] == "value_iteration":
        return saved.load_saved_agent("value_iteration", iterations=None)
    return saved.load_saved_agent(AGENTS[name])


def load_random_maze_agent() -> ppo.PropagationActorCritic:
    """The propagation agent trained on random 10 x 10 mazes (``load_agent("propagation")``).

    Built from ``companion/data/ppo_random_maze.json`` and its weights
    (:func:`companion.agents.ppo.saved.load_saved_agent`).
    """
    return load_agent("propagation")


def _named_arrays(model) -> tuple[str, dict]:
    """``(network name, {array name: array})`` of a model the playground can run."""
    named = {}
    if isinstance(model, ppo.PropagationActorCritic):
        network = "propagation"
        for name in ("embed", "w_self", "w_nbr", "w_in", "bias"):
            named[name] = getattr(model, name)
    elif isinstance(model, ppo.ValueIterationActorCritic):
        network = "value_iteration"
        named["embed"], named["log_cost"] = model.embed, model.log_cost
        for name in ("policy_hidden", "policy_out"):
            layer = getattr(model, name)
            named[f"{name}.weight"], named[f"{name}.bias"] = layer.weight, layer.bias
    else:
        raise TypeError(
            f"model: expected a PropagationActorCritic or a ValueIterationActorCritic (the "
            f"playground computes their forward passes), got {type(model).__name__}"
        )
    for i, layer in enumerate(model.dense):
        named[f"dense.{i}.weight"], named[f"dense.{i}.bias"] = layer.weight, layer.bias
    if network == "propagation":
        named["policy.weight"] = model.policy_head.weight
        named["policy.bias"] = model.policy_head.bias
    named["value.weight"] = model.value_head.weight
    named["value.bias"] = jnp.reshape(model.value_head.bias, (1,))
    return network, named


def export_weights(model) -> dict:
    """A playground agent's arrays as plain lists, for the playground page.

    Returns:
        ``{"network": "value_iteration" | "propagation", "iterations": int | None, "arrays"}``
        (``None``: until settled); ``arrays``: name (``embed``, ``dense.{i}.weight``, ...) ->
        ``{"shape", "data"}``: float32, row-major, as Python floats; Linear weights ``(out, in)``.

    Raises:
        TypeError: for a model not a ``ValueIterationActorCritic`` or ``PropagationActorCritic``.
    """
    network, named = _named_arrays(model)
    arrays = {}
    for name, value in named.items():
        value = np.asarray(value, dtype=np.float32)
        arrays[name] = {"shape": list(value.shape), "data": [float(v) for v in value.ravel()]}
    return {"network": network, "iterations": model.iterations, "arrays": arrays}


def weights_js(models: dict | None = None) -> str:
    """The text of ``weights.js``: ``var MAZE_PLAYGROUND_WEIGHTS = {format, agents}``.

    Args:
        models: agent name (a key of :data:`AGENTS`) to model, exported into ``agents`` with
            :func:`export_weights`; ``None`` loads both saved agents.

    Raises:
        ValueError: for a name that is not in :data:`AGENTS`.
        TypeError: ``models`` not a dict, or a model :func:`export_weights` cannot export.
    """
    if models is None:
        models = {name: load_agent(name) for name in AGENTS}
    if not isinstance(models, dict):
        raise TypeError(f"models: expected a dict of agent name to model, got {models!r}")
    for name in models:
        one_of(name, tuple(AGENTS), "models")
    exported = {name: export_weights(model) for name, model in models.items()}
    body = json.dumps({"format": EXPORT_FORMAT, "agents": exported}, separators=(",", ":"))
    return (
        "// The PPO chapter's saved random-maze agents (companion/data/ppo_*.eqx),\n"
        "// written by tools/export_playground.py: do not edit by hand.\n"
        f"var MAZE_PLAYGROUND_WEIGHTS = {body};\n"
    )


def action_mask(walls: Any, agent: Any) -> np.ndarray:
    """Legal moves of jumanji's Maze from ``agent`` ``(row, col)``, bool ``walls`` ``(rows, cols)``.

    Returns:
        bool ``(4,)`` by action (0 up, 1 right, 2 down, 3 left): True into a free cell of the grid.

    Raises:
        ValueError: for ``walls`` not a 2-D boolean grid, or ``agent`` outside it or on a wall.
    """
    walls = maze_lib.check_walls(walls)
    r, c = maze_lib.check_cell(agent, "agent", walls)
    rows, cols = walls.shape
    return np.array(
        [
            0 <= r + dr < rows and 0 <= c + dc < cols and not walls[r + dr, c + dc]
            for dr, dc in MOVES
        ]
    )


class StepResult(NamedTuple):
    """What one environment step returns.

    Attributes:
        agent: ``(row, col)`` after the step.
        step_count: steps taken so far in the episode (int).
        done: whether the episode ended with this step.
        reason: first that holds of ``"target"``, ``"no legal move"``, ``"time limit"``; else ``""``
            (the episode runs on).
    """

    agent: tuple
    step_count: int
    done: bool
    reason: str


def step(
    walls: Any,
    agent: Any,
    target: Any,
    action: int,
    step_count: int = 0,
    time_limit: int | None = None,
) -> StepResult:
    """One step of jumanji's Maze (``Maze.step``) in plain Python; an illegal action is a no-op.

    Args:
        walls: bool array-like ``(rows, cols)``; agent, target: ``(row, col)`` free cells.
        action: 0 up, 1 right, 2 down or 3 left.
        step_count: steps taken before this one (int >= 0), illegal actions included.
        time_limit: the episode ends when the step count reaches it; ``None``: ``rows * cols``.

    Raises:
        ValueError: bad grid or cell, ``action`` not 0..3, ``step_count`` < 0 or ``time_limit`` < 1.
        TypeError: a ``time_limit`` that is not an int.
    """
    walls = maze_lib.check_walls(walls)
    mask = action_mask(walls, agent)
    maze_lib.check_cell(target, "target", walls)
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or not 0 <= action < 4:
        raise ValueError(
            f"action: expected 0 (up), 1 (right), 2 (down) or 3 (left), got {action!r}"
        )
    if (
        isinstance(step_count, bool)
        or not isinstance(step_count, (int, np.integer))
        or step_count < 0
    ):
        raise ValueError(f"step_count: expected an int >= 0, got {step_count!r}")
    limit = walls.size if time_limit is None else positive_int(time_limit, "time_limit")
    r, c = int(agent[0]), int(agent[1])
    if mask[action]:
        r, c = r + MOVES[action][0], c + MOVES[action][1]
    count = int(step_count) + 1
    if (r, c) == (int(target[0]), int(target[1])):
        reason = "target"
    elif not action_mask(walls, (r, c)).any():
        reason = "no legal move"
    elif count >= limit:
        reason = "time limit"
    else:
        reason = ""
    return StepResult((r, c), count, reason != "", reason)


@eqx.filter_jit
def _policy(model, walls, agent, target):
    zeros = jnp.zeros(walls.shape, jnp.float32)
    image = jnp.stack(
        [
            walls.astype(jnp.float32),
            zeros.at[agent[0], agent[1]].set(1.0),
            zeros.at[target[0], target[1]].set(1.0),
        ]
    )
    logits, value = model(image)
    logits = ppo.masked_logits(logits, _mask_of(walls, agent))
    return logits, jax.nn.softmax(logits), value


def _mask_of(walls: jax.Array, agent: jax.Array) -> jax.Array:
    """:func:`action_mask` in JAX (traceable): bool ``(4,)`` for bool walls ``(rows, cols)``
    and int ``agent`` ``(2,)``."""
    rows, cols = walls.shape
    moves = jnp.asarray(MOVES)
    cells = agent[None, :] + moves
    inside = (cells[:, 0] >= 0) & (cells[:, 0] < rows) & (cells[:, 1] >= 0) & (cells[:, 1] < cols)
    clipped = jnp.clip(cells, 0, jnp.asarray([rows - 1, cols - 1]))
    return inside & ~walls[clipped[:, 0], clipped[:, 1]]


def agent_policy(model, walls: Any, agent: Any, target: Any) -> tuple[np.ndarray, int, float]:
    """The masked policy of ``model`` (e.g. :func:`load_agent`) in one state, by the JAX model.

    Returns:
        ``(probs, greedy, value)`` for bool ``walls`` ``(rows, cols)`` and free cells ``agent``,
        ``target`` ``(row, col)``: float32 ``(4,)`` probabilities (0 for illegal moves), the greedy
        action (int, ``argmax`` of the masked logits) and the value estimate (float).

    Raises:
        ValueError: for a bad grid or cell, or an agent with no legal move.
    """
    walls = maze_lib.check_walls(walls)
    a = maze_lib.check_cell(agent, "agent", walls)
    t = maze_lib.check_cell(target, "target", walls)
    if not action_mask(walls, a).any():
        raise ValueError(f"agent: cell {a} has no legal move; the policy has nothing to choose")
    logits, probs, value = _policy(model, jnp.asarray(walls), jnp.asarray(a), jnp.asarray(t))
    return np.asarray(probs), int(jnp.argmax(logits)), float(value)
