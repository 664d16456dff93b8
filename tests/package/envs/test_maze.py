from typing import NamedTuple

import jax
import numpy as np
import pytest

from companion.envs.autoreset import env_reset  # jumanji gets raw keys (see its notes)
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
    batched, _ = jax.vmap(lambda k: env_reset(env, k))(jax.random.split(jax.random.key(0), 3))
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


# --- observation image -----------------------------------------------------------------------

from collections import Counter  # noqa: E402

import jax.numpy as jnp  # noqa: E402
from scipy import stats  # noqa: E402

from companion.envs.maze import (  # noqa: E402
    MEDIUM_MAZE,
    EmptyMazeGenerator,
    FixedMazeGenerator,
    medium_maze_generator,
    observation_image,
    parse_maze,
    shortest_path_length,
)


def test_observation_image_channels():
    env = make_maze()
    _, timestep = env.reset(jax.random.key(1))
    obs = timestep.observation
    image = observation_image(obs)
    assert image.shape == (3, 10, 10) and image.dtype == jnp.float32
    np.testing.assert_array_equal(image[0], np.asarray(obs.walls, np.float32))
    r, c = int(obs.agent_position.row), int(obs.agent_position.col)
    tr, tc = int(obs.target_position.row), int(obs.target_position.col)
    assert float(image[1].sum()) == 1.0 and float(image[1, r, c]) == 1.0
    assert float(image[2].sum()) == 1.0 and float(image[2, tr, tc]) == 1.0
    assert set(np.unique(np.asarray(image))) <= {0.0, 1.0}


def test_observation_image_batches_with_vmap_and_rejects_raw_batches():
    env = make_maze()
    _, timesteps = jax.vmap(lambda k: env_reset(env, k))(jax.random.split(jax.random.key(0), 5))
    images = jax.jit(jax.vmap(observation_image))(timesteps.observation)
    assert images.shape == (5, 3, 10, 10)
    np.testing.assert_array_equal(images[3], observation_image(unstack_obs(timesteps, 3)))
    with pytest.raises(ValueError, match=r"walls has shape \(5, 10, 10\).*jax.vmap"):
        observation_image(timesteps.observation)


def unstack_obs(timesteps, i):
    return jax.tree.map(lambda leaf: leaf[i], timesteps.observation)


# --- generators ------------------------------------------------------------------------------


def _pair_counts(generator, n=9000):
    states = jax.jit(jax.vmap(generator))(jax.random.split(jax.random.key(0), n))
    pairs = zip(
        zip(np.asarray(states.agent_position.row), np.asarray(states.agent_position.col)),
        zip(np.asarray(states.target_position.row), np.asarray(states.target_position.col)),
    )
    return Counter((tuple(map(int, s)), tuple(map(int, t))) for s, t in pairs)


def _all_pairs_uniform(counts, num_pairs):
    if len(counts) != num_pairs:
        return False
    return stats.chisquare(list(counts.values())).pvalue > 1e-3


def test_medium_maze_draws_all_nine_pairs_uniformly():
    counts = _pair_counts(medium_maze_generator())
    assert _all_pairs_uniform(counts, 9), counts


def test_the_two_of_three_mistake_is_caught():
    class OffByOne(FixedMazeGenerator):  # maxval=len - 1: randint never draws the last cell
        def __call__(self, key):
            key, k1, k2 = jax.random.split(key, 3)
            state = super().__call__(key)
            s = self.starts[jax.random.randint(k1, (), 0, self.starts.shape[0] - 1)]
            t = self.targets[jax.random.randint(k2, (), 0, self.targets.shape[0] - 1)]
            position = type(state.agent_position)
            return state.replace(
                agent_position=position(row=s[0], col=s[1]),
                target_position=position(row=t[0], col=t[1]),
            )

    counts = _pair_counts(OffByOne(*parse_maze(MEDIUM_MAZE)))
    assert len(counts) == 4 and not _all_pairs_uniform(counts, 9)


def test_medium_maze_layout_is_solvable_from_every_start():
    walls, starts, targets = parse_maze(MEDIUM_MAZE)
    assert walls.shape == (10, 10) and len(starts) == 3 and len(targets) == 3
    for s in starts:
        for t in targets:
            assert shortest_path_length(walls, s, t) > 0


def test_generators_work_inside_the_environment():
    env = make_maze(generator=medium_maze_generator())
    walls, starts, targets = parse_maze(MEDIUM_MAZE)
    state, timestep = jax.jit(env.reset)(jax.random.key(3))
    np.testing.assert_array_equal(state.walls, walls)
    assert (int(state.agent_position.row), int(state.agent_position.col)) in starts
    assert (int(state.target_position.row), int(state.target_position.col)) in targets
    # the action mask is computed by the environment from our walls
    assert timestep.observation.action_mask.shape == (4,)

    empty = make_maze(generator=EmptyMazeGenerator())
    state, timestep = empty.reset(jax.random.key(0))
    assert not np.asarray(state.walls).any()
    assert (int(state.agent_position.row), int(state.agent_position.col)) == (0, 0)
    assert (int(state.target_position.row), int(state.target_position.col)) == (9, 9)
    np.testing.assert_array_equal(timestep.observation.action_mask, [False, True, True, False])


def test_generator_errors_name_the_argument():
    walls = np.zeros((3, 3), bool)
    walls[1, 1] = True
    with pytest.raises(ValueError, match=r"starts: cell \(1, 1\) is a wall"):
        FixedMazeGenerator(walls, [(1, 1)], [(0, 0)])
    with pytest.raises(ValueError, match=r"targets: cell \(5, 0\) is outside the 3x3 maze"):
        FixedMazeGenerator(walls, [(0, 0)], [(5, 0)])
    with pytest.raises(ValueError, match="starts: expected a non-empty list"):
        FixedMazeGenerator(walls, [], [(0, 0)])
    with pytest.raises(ValueError, match="walls: expected a 2-D array"):
        FixedMazeGenerator(np.zeros(3, bool), [(0, 0)], [(0, 0)])
    with pytest.raises(ValueError, match="unknown character 'x'"):
        parse_maze(["..", ".x"])


def test_shortest_path_by_hand():
    empty = np.zeros((10, 10), bool)
    assert shortest_path_length(empty, (0, 0), (9, 9)) == 18
    assert shortest_path_length(empty, (4, 4), (4, 4)) == 0
    corridor = np.array([[0, 1, 0], [0, 1, 0], [0, 0, 0]], bool)
    assert shortest_path_length(corridor, (0, 0), (0, 2)) == 6
    blocked = np.array([[0, 1, 0], [0, 1, 0], [0, 1, 0]], bool)
    assert shortest_path_length(blocked, (0, 0), (0, 2)) == -1
