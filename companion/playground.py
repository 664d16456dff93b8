"""The maze playground: the PPO chapter's saved random-maze agent on a maze you draw.

Two front ends share the rules written here:

- the book's playground page (``book/playground.md``) runs in the browser with no
  Python: ``book/_static/playground/agent.js`` computes the same forward pass from
  the weights that :func:`weights_js` exports (``tools/export_playground.py``
  writes them to ``book/_static/playground/weights.js``);
- :func:`maze_playground` is an ipywidgets version for Jupyter and Colab that calls
  the JAX model itself.

The environment rules are those of jumanji's ``Maze-v0`` (``Maze.step``, jumanji
1.1): actions 0 up, 1 right, 2 down, 3 left; a move into a wall or off the grid is
a no-op that still counts as a step; after each step the episode ends when the
agent stands on the target, has no legal move, or the step count reaches the
time limit (``rows * cols`` by default).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from companion._validate import positive_int
from companion.agents import ppo
from companion.agents.ppo import saved
from companion.envs import maze as maze_lib
from companion.envs.autoreset import env_reset
from companion.envs.maze import MOVES, shortest_path

#: Version tag of the exported weights; agent.js refuses any other.
EXPORT_FORMAT = "drljax-maze-playground-1"


def saved_agent_files() -> tuple[Path, Path]:
    """Paths of the saved random-maze agent: ``(weights .eqx, summary .json)``."""
    return saved.saved_agent_files("propagation")


def load_random_maze_agent() -> ppo.PropagationActorCritic:
    """The PPO chapter's agent trained on random 10 x 10 mazes (``tools/train_random_maze.py``).

    Built from the configuration saved next to the weights
    (``companion/data/ppo_random_maze.json``) and filled with
    ``eqx.tree_deserialise_leaves``, as chapter 8 does
    (:func:`companion.agents.ppo.saved.load_saved_agent`).

    Returns:
        :class:`~companion.agents.ppo.PropagationActorCritic`: one float32 image
        ``(3, rows, cols)`` to ``(logits (4,), value ())``.
    """
    return saved.load_saved_agent("propagation")


def export_weights(model: ppo.PropagationActorCritic) -> dict:
    """The arrays of a propagation network as plain lists, for the playground page.

    Args:
        model: a :class:`~companion.agents.ppo.PropagationActorCritic` with one
            hidden layer or more.

    Returns:
        dict with ``format`` (:data:`EXPORT_FORMAT`), ``iterations`` (int) and
        ``arrays``: name to ``{"shape": [...], "data": [...]}``, ``data`` the
        float32 values in row-major order written as exact Python floats. Names:
        ``embed`` (3, W), ``w_self`` (W, W), ``w_nbr`` (W, W), ``w_in`` (3, W),
        ``bias`` (W,), ``dense.{i}.weight`` (out, in), ``dense.{i}.bias`` (out,),
        ``policy.weight`` (4, H), ``policy.bias`` (4,), ``value.weight`` (1, H),
        ``value.bias`` (1,). Linear weights are ``(out, in)`` as in ``eqx.nn.Linear``.

    Raises:
        TypeError: if ``model`` is not a propagation network.
    """
    if not isinstance(model, ppo.PropagationActorCritic):
        raise TypeError(
            f"model: expected a PropagationActorCritic (the playground computes its forward "
            f"pass), got {type(model).__name__}"
        )
    named = {
        "embed": model.embed,
        "w_self": model.w_self,
        "w_nbr": model.w_nbr,
        "w_in": model.w_in,
        "bias": model.bias,
    }
    for i, layer in enumerate(model.dense):
        named[f"dense.{i}.weight"], named[f"dense.{i}.bias"] = layer.weight, layer.bias
    named["policy.weight"], named["policy.bias"] = model.policy_head.weight, model.policy_head.bias
    named["value.weight"] = model.value_head.weight
    named["value.bias"] = jnp.reshape(model.value_head.bias, (1,))
    arrays = {}
    for name, value in named.items():
        value = np.asarray(value, dtype=np.float32)
        arrays[name] = {"shape": list(value.shape), "data": [float(v) for v in value.ravel()]}
    return {"format": EXPORT_FORMAT, "iterations": int(model.iterations), "arrays": arrays}


def weights_js(model: ppo.PropagationActorCritic) -> str:
    """The text of ``weights.js``: a global ``MAZE_PLAYGROUND_WEIGHTS`` (:func:`export_weights`).

    A script rather than a JSON file, so that the page also works when opened from
    disk (browsers refuse ``fetch`` of ``file://`` addresses).
    """
    body = json.dumps(export_weights(model), separators=(",", ":"))
    return (
        "// The PPO chapter's saved random-maze agent (companion/data/ppo_random_maze.eqx),\n"
        "// written by tools/export_playground.py: do not edit by hand.\n"
        f"var MAZE_PLAYGROUND_WEIGHTS = {body};\n"
    )


def action_mask(walls: Any, agent: Any) -> np.ndarray:
    """Legal moves of jumanji's Maze from ``agent``: into a free cell inside the grid.

    Args:
        walls: bool array-like ``(rows, cols)``, True for a wall.
        agent: ``(row, col)`` of a free cell.

    Returns:
        bool ``(4,)``, indexed by action (0 up, 1 right, 2 down, 3 left).

    Raises:
        ValueError: for a ``walls`` that is not a 2-D boolean grid, or an ``agent``
            outside it or on a wall.
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
        reason: ``"target"``, ``"no legal move"``, ``"time limit"``, or ``""`` while it runs.
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
    """One step of jumanji's Maze (``Maze.step``), in plain Python.

    A legal action moves the agent one cell; an illegal one leaves it in place
    (jumanji turns it into a no-op) and still counts as a step. The episode ends
    when the agent stands on the target, has no legal move left, or the new step
    count reaches ``time_limit`` (checked in that order for ``reason``).

    Args:
        walls: bool array-like ``(rows, cols)``.
        agent, target: ``(row, col)`` free cells.
        action: 0 up, 1 right, 2 down or 3 left.
        step_count: steps taken before this one (int >= 0).
        time_limit: steps per episode; ``None`` for jumanji's default ``rows * cols``.

    Returns:
        :class:`StepResult`.

    Raises:
        ValueError: for a bad grid or cell, an ``action`` outside 0..3, a negative
            ``step_count`` or a ``time_limit`` that is not a positive int.
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
    """The agent's masked policy in one state, computed by the JAX model.

    Args:
        model: a network from :func:`~companion.agents.ppo.make_model` (for example
            :func:`load_random_maze_agent`).
        walls: bool array-like ``(rows, cols)``.
        agent, target: ``(row, col)`` free cells; the agent must have a legal move.

    Returns:
        ``(probs, greedy, value)``: float32 ``(4,)`` probabilities (0 for illegal
        moves), the greedy action (``argmax`` of the masked logits, as
        ``ppo.evaluate(..., greedy=True)``) and the value estimate.

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


#: Cell colours of the widget (as in :data:`companion.envs.maze.COLOURS`).
_HEX = {
    "free": "#ffffff",
    "wall": "#29303d",
    "agent": "#22882f",
    "target": "#d9332a",
    "visited": "#dcecd9",
}


class _Episode:
    """The widget's state: walls, start, target, agent, steps, outcome, visited cells."""

    def __init__(self, walls: np.ndarray, start: tuple, target: tuple, time_limit: int):
        self.walls, self.start, self.target, self.time_limit = walls, start, target, time_limit
        self.restart()

    def restart(self) -> None:
        self.agent, self.steps, self.reason, self.trail = self.start, 0, "", [self.start]

    def status(self) -> str:
        path = shortest_path(self.walls, self.start, self.target)
        best = "none" if path is None else len(path) - 1
        if self.agent == self.target:
            return f"Reached the target in {self.steps} steps (shortest path: {best})."
        if self.reason == "time limit":
            return f"Time limit: {self.time_limit} steps (shortest path: {best})."
        if not action_mask(self.walls, self.agent).any():
            return "The agent has no legal move."
        if path is None:
            return "No path: walls separate the start from the target."
        return f"Step {self.steps} of at most {self.time_limit}; shortest path: {best} steps."


def maze_playground(
    model=None,
    walls: Any = None,
    start: Any = None,
    target: Any = None,
    *,
    key: jax.Array | None = None,
    time_limit: int | None = None,
    delay_s: float = 0.1,
):
    """An ipywidgets playground: edit a maze, step or run the agent, see its policy.

    Click a cell to toggle a wall or, in the other modes, to place the start or the
    target; Step takes the agent's greedy action (:func:`agent_policy`), Run steps
    until the episode ends (:func:`step`: target, no legal move or time limit), Reset
    puts the agent back on the start. The policy's four probabilities and the
    shortest path length (:func:`shortest_path`) are shown beside the grid.

    Args:
        model: a network from ``ppo.make_model``; ``None`` loads
            :func:`load_random_maze_agent`.
        walls: bool array-like ``(rows, cols)``; ``None`` draws a jumanji random maze
            (with its start and target) from ``key``.
        start, target: ``(row, col)`` free cells; default the jumanji maze's, or
            ``(0, 0)`` and ``(rows - 1, cols - 1)`` for given walls.
        key: PRNG key for the random maze (default ``jax.random.key(0)``).
        time_limit: steps per episode; default ``rows * cols`` (jumanji's).
        delay_s: seconds between two steps of Run (so that the walk can be seen).

    Returns:
        ``ipywidgets.VBox``; the last expression of a cell displays it. Its
        ``episode`` attribute holds the state and ``cells`` the grid's buttons.

    Raises:
        ValueError: for ``walls`` that are not a 2-D boolean grid (a bad shape), a
            start or target outside it, on a wall, or both on the same cell.
    """
    import ipywidgets as widgets

    if walls is None:
        env = maze_lib.make_maze()
        state, _ = env_reset(env, jax.random.key(0) if key is None else key)
        walls = np.asarray(state.walls)
        start = start or (int(state.agent_position.row), int(state.agent_position.col))
        target = target or (int(state.target_position.row), int(state.target_position.col))
    walls = np.array(maze_lib.check_walls(walls))
    rows, cols = walls.shape
    start = maze_lib.check_cell((0, 0) if start is None else start, "start", walls)
    target = maze_lib.check_cell((rows - 1, cols - 1) if target is None else target, "target", walls)
    if start == target:
        raise ValueError(f"start, target: both are cell {start}; expected two different cells")
    limit = walls.size if time_limit is None else positive_int(time_limit, "time_limit")
    model = load_random_maze_agent() if model is None else model
    episode = _Episode(walls, start, target, limit)

    mode = widgets.ToggleButtons(options=["wall", "start", "target"], description="click:")
    cells = [
        widgets.Button(layout=widgets.Layout(width="32px", height="32px", padding="0"))
        for _ in range(rows * cols)
    ]
    grid = widgets.GridBox(
        cells, layout=widgets.Layout(grid_template_columns=f"repeat({cols}, 32px)", grid_gap="0")
    )
    policy_html, status = widgets.HTML(), widgets.HTML()

    def draw():
        path = shortest_path(walls, episode.agent, episode.target) or []
        for i, button in enumerate(cells):
            cell = divmod(i, cols)
            kind = "wall" if walls[cell] else "visited" if cell in episode.trail else "free"
            kind = {episode.agent: "agent", episode.target: "target"}.get(cell, kind)
            button.style.button_color = _HEX[kind]
            button.description = "S" if cell == episode.start else "·" if cell in path else ""
        lines = []
        if episode.agent != episode.target and action_mask(walls, episode.agent).any():
            probs, greedy, value = agent_policy(model, walls, episode.agent, episode.target)
            for a, name in enumerate(maze_lib.ACTION_NAMES):
                bar = "█" * int(round(20 * probs[a]))
                mark = "<b>{}</b>" if a == greedy else "{}"
                lines.append(mark.format(f"{name:>5} {probs[a]:.3f} {bar}"))
            lines.append(f"V(s) = {value:.3f}")
        policy_html.value = "<pre>" + "\n".join(lines) + "</pre>"
        status.value = f"<b>{episode.status()}</b>"

    def on_cell(i, _button=None):
        cell = divmod(i, cols)
        if mode.value == "wall" and cell not in (episode.start, episode.target):
            walls[cell] = not walls[cell]
        elif mode.value == "start" and not walls[cell] and cell != episode.target:
            episode.start = cell
        elif mode.value == "target" and not walls[cell] and cell != episode.start:
            episode.target = cell
        episode.restart()
        draw()

    def on_step(_button=None):
        if episode.reason or episode.agent == episode.target:
            return False
        if not action_mask(walls, episode.agent).any():
            episode.reason = "no legal move"
            return False
        _, greedy, _ = agent_policy(model, walls, episode.agent, episode.target)
        result = step(walls, episode.agent, episode.target, greedy, episode.steps, limit)
        episode.agent, episode.steps, episode.reason = (
            result.agent,
            result.step_count,
            result.reason,
        )
        episode.trail.append(result.agent)
        draw()
        return not result.done

    def on_run(_button=None):
        while on_step():
            time.sleep(delay_s)

    def on_reset(_button=None):
        episode.restart()
        draw()

    for i, button in enumerate(cells):
        button.on_click(lambda b, i=i: on_cell(i))
    buttons = []
    for label, handler in [("Step", on_step), ("Run", on_run), ("Reset", on_reset)]:
        buttons.append(widgets.Button(description=label))
        buttons[-1].on_click(handler)
    draw()
    box = widgets.VBox([mode, widgets.HBox(buttons), widgets.HBox([grid, policy_html]), status])
    box.episode, box.cells = episode, cells
    return box
