"""companion.tabular against independent references: jumanji's own step, breadth-first
search, a plain-Python policy evaluation, finite differences and hand-computed values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from companion.envs.maze import make_maze, parse_maze, shortest_path_length
from companion.tabular import (
    action_values,
    discounted_returns,
    evaluate_policy,
    maze_mdp,
    sample_episode,
    value_iteration,
)

from jumanji.environments.routing.maze.types import Position

CORRIDOR = ("S.T",)  # two states, the target at the end
SMALL = ("S...#", ".##..", "...#.", "#.#..", "..#.T")


def _random_maze(seed):
    """A jumanji random 10 x 10 maze (every free cell connected) and its target."""
    env = make_maze()
    state, _ = env.reset(jax.random.key(seed))
    target = (int(state.target_position.row), int(state.target_position.col))
    return env, state, np.asarray(state.walls), target


def test_corridor_by_hand():
    walls, _, (target,) = parse_maze(CORRIDOR)
    mdp = maze_mdp(walls, target)
    assert mdp.cells.tolist() == [[0, 0], [0, 1]]
    # (0, 0): only "right" is legal; (0, 1): "right" reaches the target, "left" goes back.
    assert mdp.legal.tolist() == [[False, True, False, False], [False, True, False, True]]
    assert mdp.terminal.tolist() == [[False] * 4, [False, True, False, False]]
    assert mdp.next_state[0, 1] == 1 and mdp.next_state[1, 3] == 0
    assert mdp.next_state[0, 0] == 0  # an illegal move stays
    v_star, _ = value_iteration(mdp, 0.9)
    np.testing.assert_allclose(v_star, [0.9, 1.0], atol=1e-6)
    q = action_values(mdp, v_star, 0.9)
    # Up and down are illegal there: the agent stays, so they are worth 0.9 * V(0, 1).
    np.testing.assert_allclose(q[1], [0.9, 1.0, 0.9, 0.81], atol=1e-6)
    # The uniform random policy: V1 = 0.5 + 0.5 * 0.9 * V0, V0 = 0.9 * V1.
    probs = mdp.legal / mdp.legal.sum(axis=1, keepdims=True)
    v1 = 0.5 / (1 - 0.5 * 0.81)
    np.testing.assert_allclose(evaluate_policy(mdp, probs, 0.9), [0.9 * v1, v1], rtol=1e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_tables_are_jumanjis_step(seed):
    env, state, walls, target = _random_maze(seed)
    mdp = maze_mdp(walls, target)

    def step(cell, action):
        mask = jnp.array(
            [
                0 <= cell[0] + dr < walls.shape[0]
                and 0 <= cell[1] + dc < walls.shape[1]
                and not walls[cell[0] + dr, cell[1] + dc]
                for dr, dc in [(-1, 0), (0, 1), (1, 0), (0, -1)]
            ]
        )
        s = state.replace(
            agent_position=Position(jnp.int32(cell[0]), jnp.int32(cell[1])), action_mask=mask
        )
        s, ts = env.step(s, jnp.int32(action))
        return (
            (int(s.agent_position.row), int(s.agent_position.col)),
            float(ts.reward),
            bool(ts.last()),
        )

    cells = [tuple(c) for c in np.asarray(mdp.cells).tolist()]
    for i in range(0, len(cells), 7):  # every 7th state, all four actions
        for a in range(4):
            landed, reward, last = step(cells[i], a)
            assert reward == mdp.reward[i, a] and last == mdp.terminal[i, a]
            if not last:
                assert cells[int(mdp.next_state[i, a])] == landed
            assert bool(mdp.legal[i, a]) == (landed != cells[i])  # legal iff it moved


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_optimal_values_are_gamma_to_the_distance(seed):
    _, _, walls, target = _random_maze(seed)
    mdp = maze_mdp(walls, target)
    v_star, iterations = value_iteration(mdp, 0.95)
    d = np.array([shortest_path_length(walls, tuple(c), target) for c in np.asarray(mdp.cells)])
    np.testing.assert_allclose(v_star, 0.95 ** (d - 1.0), atol=1e-5)
    assert iterations >= d.max()  # the values travel one cell per sweep


def _python_policy_evaluation(mdp, probs, gamma, sweeps=2000):
    nxt, rew, term = (np.asarray(x) for x in (mdp.next_state, mdp.reward, mdp.terminal))
    v = [0.0] * nxt.shape[0]
    for _ in range(sweeps):
        v = [
            sum(
                float(probs[s, a]) * (rew[s, a] + gamma * (0.0 if term[s, a] else v[nxt[s, a]]))
                for a in range(4)
            )
            for s in range(len(v))
        ]
    return np.array(v)


def test_policy_evaluation_against_python_sweeps():
    walls, _, (target,) = parse_maze(SMALL)
    mdp = maze_mdp(walls, target)
    logits = jax.random.normal(jax.random.key(0), mdp.legal.shape)
    probs = np.asarray(jax.nn.softmax(jnp.where(mdp.legal, logits, -jnp.inf), axis=1))
    expected = _python_policy_evaluation(mdp, probs, 0.8, sweeps=300)
    np.testing.assert_allclose(evaluate_policy(mdp, jnp.asarray(probs), 0.8), expected, atol=1e-5)


def test_value_gradient_matches_finite_differences():
    walls, _, (target,) = parse_maze(SMALL)
    mdp = maze_mdp(walls, target)

    def value_of_start(theta):
        probs = jax.nn.softmax(jnp.where(mdp.legal, theta, -jnp.inf), axis=1)
        return evaluate_policy(mdp, probs, 0.9)[0]

    theta = 0.3 * jax.random.normal(jax.random.key(1), mdp.legal.shape)
    grad = jax.grad(value_of_start)(theta)
    for s, a in [(0, 1), (0, 2), (3, 1), (10, 2)]:
        if not mdp.legal[s, a]:
            continue
        eps = 1e-2
        up, down = theta.at[s, a].add(eps), theta.at[s, a].add(-eps)
        fd = (value_of_start(up) - value_of_start(down)) / (2 * eps)
        np.testing.assert_allclose(grad[s, a], fd, rtol=2e-2, atol=1e-6)


def test_an_episode_follows_the_tables_and_stops_at_the_target():
    walls, _, (target,) = parse_maze(CORRIDOR)
    mdp = maze_mdp(walls, target)
    right = jnp.zeros((2, 4)).at[:, 1].set(1.0)  # always "right": two moves to the target
    s_t, a_t, r_t, alive_t = jax.jit(sample_episode, static_argnums=4)(
        mdp, jax.random.key(0), right, 0, 5
    )
    assert s_t.tolist()[:2] == [0, 1] and a_t.tolist()[:2] == [1, 1]
    assert r_t.tolist() == [0.0, 1.0, 0.0, 0.0, 0.0]
    assert alive_t.tolist() == [True, True, False, False, False]


def test_episodes_visit_states_as_often_as_the_policy_says():
    """From the small maze's start, the uniform random policy's first action: each of the
    two legal moves about half the time, over 4,096 episodes; every step's action legal."""
    walls, (start,), (target,) = parse_maze(SMALL)
    mdp = maze_mdp(walls, target)
    uniform = mdp.legal / mdp.legal.sum(axis=1, keepdims=True)
    keys = jax.random.split(jax.random.key(1), 4096)
    # lax.map: the key-reuse checker takes a vmapped scan over split keys for a reuse
    episodes = jax.jit(lambda ks: jax.lax.map(lambda k: sample_episode(mdp, k, uniform, 0), ks))
    s_t, a_t, _, alive_t = episodes(keys)
    assert np.all(np.asarray(mdp.legal)[np.asarray(s_t), np.asarray(a_t)][np.asarray(alive_t)])
    first = np.bincount(np.asarray(a_t[:, 0]), minlength=4) / 4096
    np.testing.assert_allclose(first, np.asarray(uniform[0]), atol=0.03)


def test_discounted_returns_against_a_python_loop():
    rewards = jax.random.uniform(jax.random.key(2), (37,))
    expected, g = [], 0.0
    for r in reversed(np.asarray(rewards, np.float64)):
        g = r + 0.9 * g
        expected.append(g)
    np.testing.assert_allclose(discounted_returns(rewards, 0.9), expected[::-1], rtol=1e-5)
    np.testing.assert_allclose(discounted_returns(jnp.array([0.0, 0.0, 1.0]), 1.0), [1, 1, 1])


def test_bad_input_is_named():
    walls, _, (target,) = parse_maze(SMALL)
    with pytest.raises(ValueError, match="target: cell .* is a wall"):
        maze_mdp(walls, (0, 4))
    cut = walls.copy()
    cut[1, 0] = cut[0, 1] = True  # the start cell (0, 0) is walled in
    cut_off = r"walls: the free cells \[\(0, 0\), .* cannot reach the target \(4, 4\)"
    with pytest.raises(ValueError, match=cut_off):
        maze_mdp(cut, target)
    mdp = maze_mdp(walls, target)
    uniform = mdp.legal / mdp.legal.sum(axis=1, keepdims=True)
    with pytest.raises(ValueError, match="gamma"):
        evaluate_policy(mdp, uniform, 1.0)
    with pytest.raises(ValueError, match=r"probs: expected shape \(17, 4\)"):
        evaluate_policy(mdp, uniform[:3], 0.9)
    with pytest.raises(ValueError, match="0 on illegal actions"):
        evaluate_policy(mdp, jnp.full((17, 4), 0.25), 0.9)
    with pytest.raises(ValueError, match="sum to 1"):
        evaluate_policy(mdp, uniform * 0.5, 0.9)
    with pytest.raises(ValueError, match=r"v: expected shape \(17,\)"):
        action_values(mdp, jnp.zeros(3), 0.9)
    with pytest.raises(ValueError, match="tol"):
        value_iteration(mdp, 0.9, tol=0.0)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=r"probs: expected shape \(17, 4\)"):
        sample_episode(mdp, key, uniform[:3], 0)
    with pytest.raises(ValueError, match=r"start_state: expected a state in \[0, 17\)"):
        sample_episode(mdp, key, uniform, 17)
    with pytest.raises(TypeError, match="key"):
        sample_episode(mdp, 0, uniform, 0)
    with pytest.raises(ValueError, match=r"rewards: expected shape \(T,\)"):
        discounted_returns(jnp.zeros((2, 3)), 0.9)
    with pytest.raises(ValueError, match="gamma"):
        discounted_returns(jnp.zeros(3), 1.5)
