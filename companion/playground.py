"""The maze playground: the PPO chapter's saved random-maze agents on a maze you draw.

The rules are jumanji 1.1's ``Maze-v0``: :func:`maze_state` makes its ``State`` for given
walls, agent and target (``Maze.reset`` computes the action mask), :func:`step` runs
``Maze.step``, and :func:`policy` feeds an agent the chapter's observation image
(:func:`companion.envs.maze.observation_image`) and masks its logits with the state's action
mask. Used by chapter 9 and :mod:`companion.playground_widget`; ``tools/export_playground.py``
exports the same agents for the book's page.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from companion._validate import one_of, positive_int
from companion.agents import ppo
from companion.agents.ppo import saved
from companion.envs import maze as maze_lib

from jumanji.environments.routing.maze.generator import Generator  # after companion.envs
from jumanji.environments.routing.maze.types import Position, State

#: The playground's agents, by name: the saved network each loads
#: (:data:`companion.agents.ppo.saved.SAVED_AGENTS`).
AGENTS = {"planning": "value_iteration", "propagation": "propagation"}


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


class _GivenMaze(Generator):
    """The generator of :func:`_programs`' Maze: ``Maze.reset(arg)`` hands ``arg`` to its
    generator, and this one takes there, in place of a key, the maze to start from: ``(walls,
    agent, target, step_count)``."""

    def __call__(self, maze: tuple) -> State:
        walls, agent, target, step_count = maze
        return State(
            agent_position=Position(row=agent[0], col=agent[1]),
            target_position=Position(row=target[0], col=target[1]),
            walls=walls,
            action_mask=None,  # Maze.reset computes it
            key=jax.random.key(0),  # a State holds a key; nothing here draws from it
            step_count=step_count,
        )


@functools.cache
def _programs(rows: int, cols: int, time_limit: int):
    """Compiled ``(reset, step)`` of jumanji's Maze on a ``rows x cols`` grid: ``reset(maze)``,
    the ``State`` of a given maze (:class:`_GivenMaze`); ``step(state, action)``, the next
    state and whether the episode ended, the target was reached and no move is left."""
    env = maze_lib.make_maze(generator=_GivenMaze(rows, cols), time_limit=time_limit)

    def step(state, action):
        state, timestep = env.step(state, action)
        ends = maze_lib.reached_target(state), maze_lib.no_legal_move(state)
        return state, timestep.last(), *ends

    return jax.jit(lambda maze: env.reset(maze)[0]), jax.jit(step)


def _non_negative_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name}: expected an int >= 0, got {value!r}")
    return int(value)


def maze_state(walls: Any, agent: Any, target: Any, step_count: int = 0) -> State:
    """jumanji's Maze ``State`` of a given maze, its action mask computed by ``Maze.reset``.

    Args:
        walls: bool array-like ``(rows, cols)``; agent, target: ``(row, col)`` free cells.
        step_count: steps taken so far in the episode (int >= 0).

    Returns:
        ``State``: bool ``walls`` ``(rows, cols)``, int32 ``agent_position`` and
        ``target_position``, bool ``action_mask`` ``(4,)`` (up, right, down, left: True into a
        free cell of the grid) and int32 ``step_count``.

    Raises:
        ValueError: for ``walls`` not a 2-D boolean grid, a cell outside it or on a wall, or a
            ``step_count`` that is not an int >= 0.
    """
    walls = maze_lib.check_walls(walls)
    agent = maze_lib.check_cell(agent, "agent", walls)
    target = maze_lib.check_cell(target, "target", walls)
    count = _non_negative_int(step_count, "step_count")
    rows, cols = walls.shape
    given = (walls, np.int32(agent), np.int32(target), np.int32(count))
    return _programs(rows, cols, rows * cols)[0](given)


class StepResult(NamedTuple):
    """What one environment step returns.

    Attributes:
        agent: ``(row, col)`` after the step.
        step_count: steps taken so far in the episode (int).
        done: whether the episode ended with this step.
        reason: first that holds of ``"target"``, ``"no legal move"``, ``"time limit"``; else ``""``
            (the episode runs on).
        state: jumanji's Maze ``State`` after the step (:func:`maze_state`'s fields).
    """

    agent: tuple
    step_count: int
    done: bool
    reason: str
    state: State


def _check_action(action: Any) -> int:
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or not 0 <= action < 4:
        raise ValueError(
            f"action: expected 0 (up), 1 (right), 2 (down) or 3 (left), got {action!r}"
        )
    return int(action)


def _check_state(state: Any) -> np.ndarray:
    """``state``'s action mask, bool ``(4,)``, if ``state`` is one jumanji Maze ``State``."""
    if not isinstance(state, State):
        raise TypeError(
            f"state: expected a jumanji Maze State (playground.maze_state), "
            f"got {type(state).__name__}"
        )
    mask = np.asarray(state.action_mask)
    if mask.shape != (4,):
        raise ValueError(
            f"state: action_mask has shape {mask.shape}, expected (4,): one state, not a batch"
        )
    return mask


def _advance(state: State, action: int, time_limit: int | None) -> StepResult:
    rows, cols = state.walls.shape
    limit = rows * cols if time_limit is None else positive_int(time_limit, "time_limit")
    state, done, reached, stuck = _programs(rows, cols, limit)[1](state, np.int32(action))
    row, col, count, done, reached, stuck = jax.device_get(
        (*state.agent_position, state.step_count, done, reached, stuck)
    )
    reason = "target" if reached else "no legal move" if stuck else "time limit" if done else ""
    return StepResult((int(row), int(col)), int(count), bool(done), reason, state)


def step_state(state: State, action: int, time_limit: int | None = None) -> StepResult:
    """One step of jumanji's Maze (``Maze.step``) from a Maze ``state``: :func:`maze_state`'s,
    or the ``state`` of the step before. An illegal action leaves the agent in place.

    Args:
        action: 0 up, 1 right, 2 down or 3 left.
        time_limit: the episode ends when the step count reaches it; ``None``: ``rows * cols``.

    Raises:
        TypeError: ``state`` not a jumanji Maze ``State``, or a ``time_limit`` not an int.
        ValueError: a batched ``state``, ``action`` not 0..3, or ``time_limit`` < 1.
    """
    _check_state(state)
    return _advance(state, _check_action(action), time_limit)


def step(
    walls: Any,
    agent: Any,
    target: Any,
    action: int,
    step_count: int = 0,
    time_limit: int | None = None,
) -> StepResult:
    """:func:`step_state` from :func:`maze_state` ``(walls, agent, target, step_count)``.

    Args:
        walls: bool array-like ``(rows, cols)``; agent, target: ``(row, col)`` free cells.
        action: 0 up, 1 right, 2 down or 3 left; an illegal one leaves the agent in place.
        step_count: steps taken before this one (int >= 0), illegal actions included.
        time_limit: the episode ends when the step count reaches it; ``None``: ``rows * cols``.

    Raises:
        ValueError: bad grid or cell, ``action`` not 0..3, ``step_count`` < 0 or ``time_limit`` < 1.
        TypeError: a ``time_limit`` that is not an int.
    """
    action = _check_action(action)
    return _advance(maze_state(walls, agent, target, step_count), action, time_limit)


@eqx.filter_jit
def _policy(model, state: State):
    logits, value = model(maze_lib.observation_image(state))
    logits = ppo.masked_logits(logits, state.action_mask)
    return logits, jax.nn.softmax(logits), value


def policy(model, state: State) -> tuple[np.ndarray, int, float]:
    """The masked policy of ``model`` (e.g. :func:`load_agent`) in one Maze ``state``.

    The model sees the observation image of ``state``; its logits are masked with the
    state's action mask (illegal moves: probability 0).

    Returns:
        ``(probs, greedy, value)``: float32 ``(4,)`` probabilities, the greedy action (int,
        ``argmax`` of the masked logits) and the value estimate (float).

    Raises:
        TypeError: if ``state`` is not a jumanji Maze ``State`` (:func:`maze_state`).
        ValueError: if it is batched, or its agent has no legal move.
    """
    if not _check_state(state).any():
        here = (int(state.agent_position.row), int(state.agent_position.col))
        raise ValueError(
            f"state: the agent's cell {here} has no legal move; the policy has nothing to choose"
        )
    logits, probs, value = _policy(model, state)
    return np.asarray(probs), int(jnp.argmax(logits)), float(value)


def agent_policy(model, walls: Any, agent: Any, target: Any) -> tuple[np.ndarray, int, float]:
    """:func:`policy` in the state of :func:`maze_state` ``(walls, agent, target)``.

    Returns:
        ``(probs, greedy, value)`` for bool ``walls`` ``(rows, cols)`` and free cells ``agent``,
        ``target`` ``(row, col)``: float32 ``(4,)`` probabilities (0 for illegal moves), the greedy
        action (int) and the value estimate (float).

    Raises:
        ValueError: for a bad grid or cell, or an agent with no legal move.
    """
    return policy(model, maze_state(walls, agent, target))
