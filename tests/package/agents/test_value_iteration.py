"""The value-iteration actor-critic: its values against breadth-first search, its fixed
point, its policy features, and the saved planning agent on mazes larger than it trained on."""

import collections
import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from companion.agents import ppo
from companion.agents.ppo.networks import UNREACHED
from companion.agents.ppo.saved import load_saved_agent, saved_network, saved_summary
from companion.envs import maze as maze_lib

from jumanji.environments.routing.maze.generator import RandomGenerator  # after companion.envs

MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))  # up, right, down, left: Maze's action ids


def bfs_distances(walls: np.ndarray, target: tuple) -> np.ndarray:
    """Moves from every cell to ``target`` through open cells; -1 where it cannot get."""
    rows, cols = walls.shape
    dist = np.full((rows, cols), -1)
    dist[target] = 0
    queue = collections.deque([target])
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVES:
            nr, nc = r + dr, c + dc
            if 0 <= nr < rows and 0 <= nc < cols and not walls[nr, nc] and dist[nr, nc] < 0:
                dist[nr, nc] = dist[r, c] + 1
                queue.append((nr, nc))
    return dist


def image_of(walls, agent, target):
    image = np.zeros((3,) + np.shape(walls), np.float32)
    image[0] = walls
    image[1][tuple(agent)] = 1.0
    image[2][tuple(target)] = 1.0
    return jnp.asarray(image)


def random_maze(size, key):
    rows, cols = size
    env = maze_lib.make_maze(generator=RandomGenerator(num_rows=rows, num_cols=cols))
    state, _ = env.reset(key)
    walls = np.asarray(state.walls)
    agent = (int(state.agent_position.row), int(state.agent_position.col))
    target = (int(state.target_position.row), int(state.target_position.col))
    return walls, agent, target


@pytest.mark.parametrize("size, seed", [((10, 10), 0), ((7, 13), 1), ((13, 7), 2), ((20, 20), 3)])
def test_values_are_target_score_minus_cost_times_bfs_distance(size, seed):
    model = ppo.ValueIterationActorCritic(jax.random.key(seed), width=3)
    walls, agent, target = random_maze(size, jax.random.key(100 + seed))
    v = np.asarray(model.values(image_of(walls, agent, target)))
    dist = bfs_distances(walls, target)
    cost = np.exp(np.asarray(model.log_cost))
    expected = np.log(np.asarray(model.embed)[1]) - cost * dist[..., None]
    free = ~walls
    assert (dist[free] >= 0).all()  # jumanji's mazes connect every free cell
    np.testing.assert_allclose(v[free], expected[free], rtol=1e-5, atol=1e-4)


def with_iterations(model, iterations):
    like = ppo.ValueIterationActorCritic(
        jax.random.key(0), model.embed.shape[1], iterations=iterations
    )
    return jax.tree.unflatten(jax.tree.structure(like), jax.tree.leaves(model))


def test_a_walled_off_region_stays_unreached_and_more_iterations_change_nothing():
    walls = np.zeros((6, 9), bool)
    walls[:, 4] = True  # the right part (columns 5-8) cannot reach the target at (0, 0)
    model = ppo.ValueIterationActorCritic(jax.random.key(0), width=2, iterations=53)
    image = image_of(walls, (5, 3), (0, 0))
    v = np.asarray(model.values(image))
    assert (v[:, 5:] == UNREACHED).all()
    assert (v[:, :4] > UNREACHED / 2).all()
    # 53 = rows * cols - 1 backups reach the fixed point: four times as many agree exactly
    longer = with_iterations(model, 4 * 53)
    for a, b in zip(model(image), longer(image)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("size", [(10, 10), (20, 20), (7, 13)])
def test_backups_until_settled_give_the_converged_outputs(size):
    """iterations=None stops the while_loop as soon as the values the readout uses are
    final; the logits, value and value map equal those of rows * cols - 1 backups."""
    settled = ppo.ValueIterationActorCritic(jax.random.key(1), width=3, iterations=None)
    full = with_iterations(settled, size[0] * size[1] - 1)
    call = eqx.filter_jit(lambda m, image: (m(image), m.values(image)))
    for seed in range(6):
        walls, agent, target = random_maze(size, jax.random.key(200 + seed))
        image = image_of(walls, agent, target)
        (logits, value), v = call(settled, image)
        (logits_full, value_full), v_full = call(full, image)
        np.testing.assert_array_equal(logits, logits_full)
        np.testing.assert_array_equal(value, value_full)
        np.testing.assert_array_equal(v, v_full)
    # two targets with different scores: the first value to arrive is not the final one,
    # and the stopping rule must wait for the larger, later one
    walls = np.zeros((1, 9), bool)
    image = np.array(image_of(walls, (0, 3), (0, 0)))
    image[2, 0, 8] = 30.0  # a second source 5 moves away, its score 30 times larger
    image = jnp.asarray(image)
    (logits, value), _ = call(settled, image)
    (logits_full, value_full), _ = call(with_iterations(settled, 8), image)
    np.testing.assert_array_equal(logits, logits_full)
    np.testing.assert_array_equal(value, value_full)
    (logits_first, _), _ = call(with_iterations(settled, 4), image)  # only the near source
    assert not np.allclose(logits_first, logits_full)


def test_too_few_iterations_leave_a_far_agent_without_information():
    walls = np.zeros((1, 12), bool)
    model = ppo.ValueIterationActorCritic(jax.random.key(0), width=2, iterations=4)
    v = np.asarray(model.values(image_of(walls, (0, 11), (0, 0))))
    assert (v[0, :5] > UNREACHED / 2).all() and (v[0, 5:] == UNREACHED).all()
    logits, _ = model(image_of(walls, (0, 11), (0, 0)))
    near_logits, _ = model(image_of(walls, (0, 3), (0, 0)))
    # far away every direction looks the same (features all zero); near, left is better
    assert logits[1] == logits[3]
    assert not np.isclose(near_logits[1], near_logits[3])


def test_policy_reads_cost_times_distance_differences_through_one_shared_network():
    walls, agent, target = random_maze((10, 10), jax.random.key(7))
    model = ppo.ValueIterationActorCritic(jax.random.key(5), width=3)
    logits, _ = model(image_of(walls, agent, target))
    dist = bfs_distances(walls, target)
    cost = np.exp(np.asarray(model.log_cost))
    rows, cols = walls.shape
    expected = []
    for dr, dc in MOVES:
        r, c = agent[0] + dr, agent[1] + dc
        if 0 <= r < rows and 0 <= c < cols and not walls[r, c]:
            f = cost * (dist[agent] - dist[r, c])  # +c toward the target, -c away
        else:
            f = np.zeros(3)
        h = np.maximum(np.asarray(model.policy_hidden.weight) @ f + model.policy_hidden.bias, 0)
        expected.append((np.asarray(model.policy_out.weight) @ h + model.policy_out.bias)[0])
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-6)


def test_value_iteration_network_and_bad_input():
    network = ppo.VALUE_ITERATION_NETWORK
    model = network(jax.random.key(0))
    assert isinstance(model, ppo.ValueIterationActorCritic) and model.iterations == 99
    images = jax.random.bernoulli(jax.random.key(1), 0.3, (5, 3, 10, 10)).astype(jnp.float32)
    logits, value = jax.vmap(model)(images)
    assert logits.shape == (5, 4) and value.shape == (5,)
    assert np.isfinite(np.asarray(logits)).all() and np.isfinite(np.asarray(value)).all()
    np.testing.assert_allclose(jax.nn.softmax(logits), 0.25, atol=0.02)
    with pytest.raises(
        ValueError, match="network: builds a model with iterations=None .* reverse mode"
    ):
        ppo.make_train(
            ppo.VALUE_ITERATION_MAZE_CONFIG,
            functools.partial(network, iterations=None),
            maze_lib.make_maze_task("random"),
        )
    # the class's own default is None too (for acting): make_train names it as well
    with pytest.raises(ValueError, match="network: builds a model with iterations=None"):
        ppo.make_train(
            ppo.VALUE_ITERATION_MAZE_CONFIG,
            functools.partial(ppo.ValueIterationActorCritic, width=2),
            maze_lib.make_maze_task("random"),
        )
    with pytest.raises(ValueError, match="iterations"):
        ppo.ValueIterationActorCritic(jax.random.key(0), iterations=0)
    with pytest.raises(TypeError, match="width"):
        ppo.ValueIterationActorCritic(jax.random.key(0), width=2.5)
    with pytest.raises(TypeError, match="image: expected a float image"):
        model(jnp.zeros((3, 10, 10), jnp.int32))
    with pytest.raises(ValueError, match="image: expected one image"):
        model(jnp.zeros((2, 3, 10, 10)))


def test_gradients_reach_the_costs_and_stay_finite():
    walls, agent, target = random_maze((10, 10), jax.random.key(9))
    model = ppo.ValueIterationActorCritic(jax.random.key(2), width=2, iterations=99)

    def loss(m):
        logits, value = m(image_of(walls, agent, target))
        return jax.nn.log_softmax(logits)[0] + value

    grads = jax.grad(loss)(model)
    leaves = jax.tree.leaves(grads)
    assert all(np.isfinite(np.asarray(g)).all() for g in leaves)
    assert np.abs(np.asarray(grads.log_cost)).sum() > 0
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jax.grad(loss)(with_iterations(model, None))  # the while_loop is for acting only


def test_saved_planning_agent_walks_shortest_paths_on_larger_unseen_mazes():
    """Trained on 10 x 10 only; greedy on 12 x 12 and 9 x 16 mazes it has never seen, every
    episode reaches the target in exactly the breadth-first-search number of moves."""
    model = load_saved_agent("value_iteration", iterations=None)
    assert model.iterations is None and load_saved_agent("value_iteration").iterations == 99
    summary = saved_summary("value_iteration")
    assert summary["network"]["class"] == "ValueIterationActorCritic"
    network = saved_network("value_iteration")
    assert network.func is ppo.ValueIterationActorCritic
    assert network.keywords == ppo.VALUE_ITERATION_NETWORK.keywords
    for (rows, cols), seed in (((12, 12), 20), ((9, 16), 21)):
        env = maze_lib.make_maze(
            generator=RandomGenerator(num_rows=rows, num_cols=cols), time_limit=rows * cols
        )
        result = ppo.evaluate(model, env, jax.random.key(seed), 24, greedy=True)
        first = result.start
        shortest = ppo.shortest_path_lengths(first)
        assert np.asarray(result.success).all()
        np.testing.assert_array_equal(np.asarray(result.length), shortest)
