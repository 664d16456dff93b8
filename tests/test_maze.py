from typing import NamedTuple

import jax
import numpy as np
import pytest

from companion.envs.maze import ACTION_NAMES, COLOURS, make_maze, maze_rgb


class Pos(NamedTuple):
    row: int
    col: int


class FakeState(NamedTuple):
    walls: np.ndarray
    agent_position: Pos
    target_position: Pos


def test_maze_rgb_colours_walls_agent_and_target():
    walls = np.zeros((3, 4), dtype=bool)
    walls[1, 2] = True
    image = maze_rgb(FakeState(walls, Pos(0, 1), Pos(2, 3)))
    assert image.shape == (3, 4, 3) and image.dtype == np.float32
    np.testing.assert_allclose(image[1, 2], COLOURS["wall"])
    np.testing.assert_allclose(image[0, 1], COLOURS["agent"])
    np.testing.assert_allclose(image[2, 3], COLOURS["target"])
    np.testing.assert_allclose(image[0, 0], COLOURS["free"])
    # Exactly one wall, one agent and one target cell.
    flat = image.reshape(-1, 3)
    for name, count in [("wall", 1), ("agent", 1), ("target", 1), ("free", 9)]:
        assert np.all(np.isclose(flat, COLOURS[name]), axis=1).sum() == count, name


def test_agent_is_drawn_over_the_target_when_they_meet():
    image = maze_rgb(FakeState(np.zeros((2, 2), bool), Pos(1, 1), Pos(1, 1)))
    np.testing.assert_allclose(image[1, 1], COLOURS["agent"])


def test_maze_rgb_of_a_real_reset():
    env = make_maze()
    state, timestep = jax.jit(env.reset)(jax.random.key(0))
    for thing in (state, timestep.observation):
        image = maze_rgb(thing)
        assert image.shape == (env.num_rows, env.num_cols, 3)
        r, c = int(thing.agent_position.row), int(thing.agent_position.col)
        np.testing.assert_allclose(image[r, c], COLOURS["agent"])
        walls = np.asarray(thing.walls)
        assert np.all(np.isclose(image[walls], COLOURS["wall"]))


def test_maze_rgb_rejects_batched_and_foreign_states():
    env = make_maze()
    batched, _ = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 3))
    with pytest.raises(ValueError, match=r"walls has shape \(3, 10, 10\).*unstack"):
        maze_rgb(batched)
    with pytest.raises(TypeError, match="'walls' field"):
        maze_rgb(np.zeros((3, 3)))


def test_action_names_follow_jumanji_moves():
    # jumanji's Maze: action 0 moves up (row - 1), action 1 right (col + 1).
    env = make_maze()
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    moves = {"up": (-1, 0), "right": (0, 1), "down": (1, 0), "left": (0, -1)}
    tried = set()
    for seed in range(20):
        state, timestep = reset(jax.random.key(seed))
        mask = np.asarray(timestep.observation.action_mask)
        row, col = int(state.agent_position.row), int(state.agent_position.col)
        for action, name in enumerate(ACTION_NAMES):
            if mask[action]:
                new_state, _ = step(state, action)
                dr, dc = moves[name]
                got = (int(new_state.agent_position.row), int(new_state.agent_position.col))
                assert got == (row + dr, col + dc), name
                tried.add(name)
    assert tried == set(ACTION_NAMES)
