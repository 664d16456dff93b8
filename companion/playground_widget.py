"""The maze playground as an ipywidgets widget, for Jupyter and Colab.

The book's playground page (``book/playground.md``) with the JAX agents in place of its
JavaScript; each state is jumanji's Maze ``State`` (:mod:`companion.playground`), whose action
mask says which moves are legal.
"""

from __future__ import annotations

import time
from typing import Any

import equinox as eqx
import jax
import numpy as np

from companion._validate import one_of, positive_int
from companion.agents import ppo
from companion.agents.ppo.planning import UNREACHED
from companion.envs import maze as maze_lib
from companion.envs.autoreset import env_reset
from companion.envs.maze import shortest_path
from companion.playground import AGENTS, load_agent, maze_state, policy, step_state

from jumanji.environments.routing.maze.generator import RandomGenerator  # after companion.envs
from jumanji.environments.routing.maze.types import State

#: Cell colours of the widget (as in :data:`companion.envs.maze.COLOURS`).
_HEX = {
    "free": "#ffffff",
    "wall": "#29303d",
    "agent": "#22882f",
    "target": "#d9332a",
    "visited": "#dcecd9",
}
#: The value map's colour scale, low value to high (the playground page's).
_STOPS = np.array(
    [
        [255, 255, 217],
        [199, 233, 180],
        [127, 205, 187],
        [65, 182, 196],
        [29, 145, 192],
        [34, 94, 168],
    ],
    float,
)
#: Grid sizes the widget offers (rows and columns apart), as the page does.
SIZES = (5, 30)


def _colour(t: float) -> str:
    """``t`` in [0, 1] on the value map's scale, as ``#rrggbb``."""
    x = float(np.clip(t, 0.0, 1.0)) * (len(_STOPS) - 1)
    i = min(len(_STOPS) - 2, int(x))
    rgb = np.round(_STOPS[i] + (x - i) * (_STOPS[i + 1] - _STOPS[i])).astype(int)
    return "#" + "".join(f"{c:02x}" for c in rgb)


@eqx.filter_jit
def _values(model, state) -> jax.Array:
    return model.values(maze_lib.observation_image(state))


def value_map(model, state) -> np.ndarray:
    """The planning agent's settled value map of a Maze ``state`` (its walls and target).

    Returns:
        float ``(rows, cols)``: per cell the mean over the value channels of ``model.values``;
        NaN on walls and on cells that no value reached.

    Raises:
        TypeError: if ``model`` is not a ``ValueIterationActorCritic`` (it has no value map),
            or ``state`` not a Maze ``State`` (:func:`companion.playground.maze_state`).
    """
    if not isinstance(model, ppo.ValueIterationActorCritic):
        raise TypeError(
            f"model: expected a ValueIterationActorCritic (the planning agent has a value "
            f"map), got {type(model).__name__}"
        )
    if not isinstance(state, State):
        raise TypeError(
            f"state: expected a jumanji Maze State (playground.maze_state), "
            f"got {type(state).__name__}"
        )
    v = np.asarray(_values(model, state))
    return np.where((v > UNREACHED).all(-1) & ~np.asarray(state.walls), v.mean(-1), np.nan)


def _random_maze(rows: int, cols: int, key: jax.Array):
    """A jumanji random maze of ``rows x cols``: ``(walls, start, target)``."""
    env = maze_lib.make_maze(generator=RandomGenerator(num_rows=rows, num_cols=cols))
    state, _ = env_reset(env, key)
    walls = np.array(state.walls)
    start = (int(state.agent_position.row), int(state.agent_position.col))
    return walls, start, (int(state.target_position.row), int(state.target_position.col))


class _Episode:
    """The widget's episode: walls, start, target, agent, steps, outcome, visited cells, and
    jumanji's ``state`` of the agent's cell (its action mask: the legal moves)."""

    def __init__(self, walls: np.ndarray, start: tuple, target: tuple, time_limit: int | None):
        self.walls, self.start, self.target = walls, start, target
        self.fixed_limit = time_limit
        self.restart()

    @property
    def time_limit(self) -> int:
        return self.walls.size if self.fixed_limit is None else self.fixed_limit

    def restart(self) -> None:
        self.agent, self.steps, self.reason, self.trail = self.start, 0, "", [self.start]
        self.state = maze_state(self.walls, self.start, self.target)

    @property
    def can_move(self) -> bool:
        """Whether the agent has a legal move (the state's action mask)."""
        return bool(np.any(self.state.action_mask))

    def status(self) -> str:
        path = shortest_path(self.walls, self.start, self.target)
        best = "none" if path is None else len(path) - 1
        if self.agent == self.target:
            return f"Reached the target in {self.steps} steps (shortest path: {best})."
        if self.reason == "time limit":
            return f"Time limit: {self.time_limit} steps (shortest path: {best})."
        if not self.can_move:
            return "The agent has no legal move."
        if path is None:
            return "No path: walls separate the start from the target."
        return f"Step {self.steps} of at most {self.time_limit}; shortest path: {best} steps."


def _refused_click(mode: str, cell: tuple, episode: _Episode) -> str:
    """Why a click on ``cell`` in ``mode`` ("wall", "start" or "target") changes nothing;
    "" when it changes the maze."""
    if mode == "wall" and cell in (episode.start, episode.target):
        return "The start and the target cannot be walls: move them first."
    if mode in ("start", "target") and episode.walls[cell]:
        return (
            f"The {mode} cannot go on a wall: click a free cell, or clear this wall first "
            'with "wall".'
        )
    if (mode, cell) in (("start", episode.target), ("target", episode.start)):
        return "The start and the target must be two different cells."
    return ""


def maze_playground(
    model=None,
    walls: Any = None,
    start: Any = None,
    target: Any = None,
    *,
    agent: str | None = None,
    key: jax.Array | None = None,
    time_limit: int | None = None,
    delay_s: float = 0.1,
):
    """An ipywidgets playground: edit a maze, step or run an agent, see its policy and value map.

    Args:
        model: your own model (e.g. ``network(key)`` or ``ppo.trained_model``), offered as
            ``agent="given model"``.
        walls: bool ``(rows, cols)``; ``None``: a jumanji random maze drawn from ``key``.
        start, target: ``(row, col)`` free cells; default the random maze's, or the two corners.

    Returns:
        ``ipywidgets.VBox`` with ``episode``, ``cells``, ``controls`` (name to widget), ``models``.

    Raises:
        TypeError, ValueError: a ``time_limit`` that is not a positive int; ValueError: a bad grid
            or cell, ``start == target``, an unknown ``agent`` or a negative ``delay_s``.
    """
    import ipywidgets as widgets

    key = jax.random.key(0) if key is None else key
    if walls is None:
        key, maze_key = jax.random.split(key)
        walls, first_start, first_target = _random_maze(10, 10, maze_key)
        start = start or first_start
        target = target or first_target
    walls = np.array(maze_lib.check_walls(walls))
    rows, cols = walls.shape
    start = maze_lib.check_cell((0, 0) if start is None else start, "start", walls)
    corner = (rows - 1, cols - 1)
    target = maze_lib.check_cell(corner if target is None else target, "target", walls)
    if start == target:
        raise ValueError(f"start, target: both are cell {start}; expected two different cells")
    limit = None if time_limit is None else positive_int(time_limit, "time_limit")
    if not delay_s >= 0:
        raise ValueError(f"delay_s: expected a number of seconds >= 0, got {delay_s!r}")
    names = list(AGENTS) + (["given model"] if model is not None else [])
    agent = one_of(agent or ("given model" if model is not None else "planning"), names, "agent")
    models = {"given model": model} if model is not None else {}
    episode = _Episode(walls, start, target, limit)
    state = {"key": key}

    def current_model():
        name = controls["agent"].value
        if name not in models:
            models[name] = load_agent(name)
        return models[name]

    controls = {
        "agent": widgets.Dropdown(options=names, value=agent, description="agent:"),
        "rows": widgets.IntSlider(
            value=min(max(rows, SIZES[0]), SIZES[1]),
            min=SIZES[0],
            max=SIZES[1],
            description="rows:",
        ),
        "cols": widgets.IntSlider(
            value=min(max(cols, SIZES[0]), SIZES[1]),
            min=SIZES[0],
            max=SIZES[1],
            description="columns:",
        ),
        "new_maze": widgets.Button(description="New maze"),
        "delay": widgets.FloatSlider(
            value=delay_s, min=0.0, max=max(1.0, delay_s), step=0.05, description="delay (s):"
        ),
        "value_map": widgets.Checkbox(value=True, description="value map"),
        "mode": widgets.ToggleButtons(options=["wall", "start", "target"], description="click:"),
        "step": widgets.Button(description="Step"),
        "run": widgets.Button(description="Run"),
        "reset": widgets.Button(description="Reset"),
    }
    grid_box = widgets.Box()
    policy_html, status = widgets.HTML(), widgets.HTML()
    box = widgets.VBox()

    def build_grid():
        r, c = episode.walls.shape
        size = max(12, min(32, 480 // max(r, c)))
        box.cells = [
            widgets.Button(
                layout=widgets.Layout(width=f"{size}px", height=f"{size}px", padding="0")
            )
            for _ in range(r * c)
        ]
        for i, button in enumerate(box.cells):
            button.on_click(lambda b, i=i: on_cell(i))
        grid_box.children = [
            widgets.GridBox(
                box.cells,
                layout=widgets.Layout(grid_template_columns=f"repeat({c}, {size}px)", grid_gap="0"),
            )
        ]

    def draw():
        walls_now, cols_now = episode.walls, episode.walls.shape[1]
        path = shortest_path(walls_now, episode.agent, episode.target) or []
        m = current_model()
        values = None
        if controls["value_map"].value and isinstance(m, ppo.ValueIterationActorCritic):
            values = value_map(m, episode.state)
            low, high = np.nanmin(values), np.nanmax(values)
        for i, button in enumerate(box.cells):
            cell = divmod(i, cols_now)
            kind = "wall" if walls_now[cell] else "visited" if cell in episode.trail else "free"
            kind = {episode.agent: "agent", episode.target: "target"}.get(cell, kind)
            colour = _HEX[kind]
            if kind in ("free", "visited") and values is not None and np.isfinite(values[cell]):
                colour = _colour((values[cell] - low) / max(high - low, 1e-9))
            button.style.button_color = colour
            mark = "·" if cell in path else "∘" if kind == "visited" else ""
            button.description = "S" if cell == episode.start else mark
        lines = []
        if episode.agent != episode.target and episode.can_move:
            probs, greedy, value = policy(m, episode.state)
            for a, name in enumerate(maze_lib.ACTION_NAMES):
                bar = "█" * int(round(20 * probs[a]))
                mark = "<b>{}</b>" if a == greedy else "{}"
                lines.append(mark.format(f"{name:>5} {probs[a]:.3f} {bar}"))
            lines.append(f"V(s) = {value:.3f}")
        if values is not None:
            lines.append("value map: light = low, dark = high")
        policy_html.value = "<pre>" + "\n".join(lines) + "</pre>"
        status.value = f"<b>{episode.status()}</b>"

    def on_cell(i):
        cell = divmod(i, episode.walls.shape[1])
        mode = controls["mode"].value
        refused = _refused_click(mode, cell, episode)
        if refused:  # nothing changes: say why, under the episode's status
            status.value = f"<b>{episode.status()}</b><br>{refused}"
            return
        if mode == "wall":
            episode.walls[cell] = not episode.walls[cell]
        elif mode == "start":
            episode.start = cell
        else:
            episode.target = cell
        episode.restart()
        draw()

    def on_step(_button=None):
        if episode.reason or episode.agent == episode.target:
            return False
        if not episode.can_move:
            episode.reason = "no legal move"
            return False
        _, greedy, _ = policy(current_model(), episode.state)
        result = step_state(episode.state, greedy, episode.time_limit)
        episode.agent, episode.steps = result.agent, result.step_count
        episode.reason, episode.state = result.reason, result.state
        episode.trail.append(result.agent)
        draw()
        return not result.done

    def on_run(_button=None):
        while on_step():
            time.sleep(controls["delay"].value)

    def on_reset(_button=None):
        episode.restart()
        draw()

    def on_new_maze(_button=None):
        state["key"], maze_key = jax.random.split(state["key"])
        new = _random_maze(controls["rows"].value, controls["cols"].value, maze_key)
        episode.walls, episode.start, episode.target = new
        episode.restart()
        build_grid()
        draw()

    controls["step"].on_click(on_step)
    controls["run"].on_click(on_run)
    controls["reset"].on_click(on_reset)
    controls["new_maze"].on_click(on_new_maze)
    controls["agent"].observe(lambda change: draw(), names="value")
    controls["value_map"].observe(lambda change: draw(), names="value")
    build_grid()
    draw()
    box.children = [
        widgets.HBox([controls["agent"], controls["value_map"]]),
        widgets.HBox([controls["rows"], controls["cols"], controls["new_maze"]]),
        controls["mode"],
        widgets.HBox([controls["step"], controls["run"], controls["reset"], controls["delay"]]),
        widgets.HBox([grid_box, policy_html]),
        status,
    ]
    box.episode, box.controls, box.models = episode, controls, models
    return box
