"""The maze playground: the page's JavaScript agents (planning and propagation) equal the JAX
agents, its environment equals jumanji's Maze, its weights are the saved agents', and the page
works in Chromium.

The JavaScript runs in V8 through mini-racer (a pip wheel, pinned in requirements.txt).
"""

from __future__ import annotations

import functools
import html
import html.parser
import itertools
import json
import pickle
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from companion import playground, playground_widget
from companion.agents import ppo
from companion.envs import maze as maze_lib
from companion.envs.autoreset import env_reset

from jumanji.environments.routing.maze.generator import RandomGenerator  # after companion.envs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import export_playground  # noqa: E402  (tools/export_playground.py)
import measure_pages  # noqa: E402  (tools/measure_pages.py: the Chromium driver)

STATIC = ROOT / "book" / "_static" / "playground"
NUM_MAZES = 1000
#: States kept per maze: the start and these steps of a sampled rollout.
KEPT_STEPS = (0, 2, 5, 8)
#: The tests that read one module-scoped comparison run in one pytest-xdist worker (``--dist
#: loadgroup``), so that the comparison is computed once, not once in each worker.
SAME_ROLLOUTS = pytest.mark.xdist_group("playground-rollout-states")
SAME_PLANNING = pytest.mark.xdist_group("playground-planning-comparison")


@pytest.fixture(scope="module")
def model():
    return playground.load_agent("propagation")


@pytest.fixture(scope="module")
def planner():
    return playground.load_agent("planning")


@pytest.fixture(scope="module")
def js():
    """V8 with weights.js, agent.js and strings.js (the page's words) loaded."""
    mini_racer = pytest.importorskip("py_mini_racer")
    ctx = mini_racer.MiniRacer()
    ctx.eval((STATIC / "weights.js").read_text())
    ctx.eval((STATIC / "agent.js").read_text())
    ctx.eval((STATIC / "strings.js").read_text())
    return lambda expr: json.loads(ctx.eval(f"JSON.stringify({expr})"))


def _wall_string(walls) -> str:
    return "".join("1" if w else "0" for w in np.asarray(walls).ravel())


def _js_maze(walls, agent, target) -> str:
    """One maze as agent.js takes it, as JSON."""
    rows, cols = np.shape(walls)
    walls = np.asarray(walls).ravel().tolist()
    maze = {
        "rows": rows,
        "cols": cols,
        "walls": walls,
        "agent": list(agent),
        "target": list(target),
    }
    return json.dumps(maze)


def _agent_and_target(state) -> tuple:
    """``((row, col), (row, col))`` of a single Maze state's agent and target, as ints."""
    agent = (int(state.agent_position.row), int(state.agent_position.col))
    return agent, (int(state.target_position.row), int(state.target_position.col))


def _mask(walls, row) -> np.ndarray:
    """jumanji's action mask in state ``row`` ``[maze, agent row, agent col, target row,
    target col]`` of ``walls``: bool ``(4,)``."""
    return np.asarray(playground.maze_state(walls, row[1:3], row[3:5]).action_mask)


def test_committed_weights_are_what_the_export_writes(model, planner):
    text = (STATIC / "weights.js").read_text()
    expected = export_playground.weights_js({"planning": planner, "propagation": model})
    assert text == expected, "run python tools/export_playground.py"
    assert len(text.encode()) < 150_000  # the page's budget: 500 KB with its scripts


def _exported_arrays(exported, model) -> dict:
    """The exported arrays as float32 JAX arrays, by name, after checking that together they
    hold as many numbers as the model's arrays."""
    arrays = exported["arrays"]
    leaves = [x for x in jax.tree.leaves(model) if hasattr(x, "shape")]
    assert sum(int(np.prod(a["shape"])) for a in arrays.values()) == sum(x.size for x in leaves)
    return {
        k: jnp.asarray(np.array(v["data"], np.float32).reshape(v["shape"]))
        for k, v in arrays.items()
    }


def test_planning_export_rebuilds_the_model_bit_for_bit(planner):
    exported = export_playground.export_weights(planner)
    assert exported["network"] == "value_iteration" and exported["iterations"] is None
    get = _exported_arrays(exported, planner)
    rebuilt = eqx.tree_at(
        lambda m: (
            m.embed,
            m.log_cost,
            m.policy_hidden.weight,
            m.policy_hidden.bias,
            m.policy_out.weight,
            m.policy_out.bias,
            m.dense[0].weight,
            m.dense[0].bias,
            m.value_head.weight,
            m.value_head.bias,
        ),
        planner,
        (
            get["embed"],
            get["log_cost"],
            get["policy_hidden.weight"],
            get["policy_hidden.bias"],
            get["policy_out.weight"],
            get["policy_out.bias"],
            get["dense.0.weight"],
            get["dense.0.bias"],
            get["value.weight"],
            get["value.bias"],
        ),
    )
    image = maze_lib.observation_image(
        env_reset(maze_lib.make_maze(), jax.random.key(1))[1].observation
    )
    for a, b in zip(planner(image), rebuilt(image)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_export_holds_every_array_of_the_model(model):
    # Rebuild the model from the exported lists: the same outputs, bit for bit.
    get = _exported_arrays(export_playground.export_weights(model), model)
    rebuilt = eqx.tree_at(
        lambda m: (
            m.embed,
            m.w_self,
            m.w_nbr,
            m.w_in,
            m.bias,
            m.dense[0].weight,
            m.dense[0].bias,
            m.policy_head.weight,
            m.policy_head.bias,
            m.value_head.weight,
            m.value_head.bias,
        ),
        model,
        (
            get["embed"],
            get["w_self"],
            get["w_nbr"],
            get["w_in"],
            get["bias"],
            get["dense.0.weight"],
            get["dense.0.bias"],
            get["policy.weight"],
            get["policy.bias"],
            get["value.weight"],
            get["value.bias"].reshape(()),
        ),
    )
    image = maze_lib.observation_image(
        env_reset(maze_lib.make_maze(), jax.random.key(1))[1].observation
    )
    for a, b in zip(model(image), rebuilt(image)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _states_from_rollouts(model):
    """States of sampled rollouts of the agent on NUM_MAZES random jumanji mazes, with the
    masked logits JAX computed in them (as ``ppo.evaluate`` does: the observation image and
    jumanji's action mask).

    Returns:
        ``(walls (NUM_MAZES, 10, 10) bool, rows (S, 5) int32 [maze, agent row, agent col,
        target row, target col], logits (S, 4) float32, value (S,) float32)``.
    """
    env = maze_lib.make_maze()
    reset_key, act_key = jax.random.split(jax.random.key(2026))
    state, timestep = jax.vmap(env_reset, in_axes=(None, 0))(
        env, jax.random.split(reset_key, NUM_MAZES)
    )

    def act(key, obs):
        logits, value = model(maze_lib.observation_image(obs))
        logits = ppo.masked_logits(logits, obs.action_mask)
        return jax.random.categorical(key, logits), logits, value

    @jax.jit
    def rollout(state, obs, key):
        def body(carry, key_t):
            state, obs = carry
            actions, logits, value = jax.vmap(act)(jax.random.split(key_t, NUM_MAZES), obs)
            next_state, ts = jax.vmap(env.step)(state, actions)
            return (next_state, ts.observation), (obs, logits, value)

        return jax.lax.scan(body, (state, obs), jax.random.split(key, max(KEPT_STEPS) + 1))[1]

    obs, logits, value = jax.tree.map(np.asarray, rollout(state, timestep.observation, act_key))
    rows, kept_logits, kept_value = [], [], []
    for t in KEPT_STEPS:
        for i in range(NUM_MAZES):
            agent = (obs.agent_position.row[t, i], obs.agent_position.col[t, i])
            target = (obs.target_position.row[t, i], obs.target_position.col[t, i])
            if agent != target:  # a state from which the agent still acts
                rows.append((i,) + agent + target)
                kept_logits.append(logits[t, i])
                kept_value.append(value[t, i])
    return obs.walls[0], np.asarray(rows, np.int32), np.stack(kept_logits), np.stack(kept_value)


@pytest.fixture(scope="module")
def rollout_states(model, js, kept_run):
    """``(walls, rows, logits, value, js_out, js_out_500)``: the states of
    :func:`_states_from_rollouts`, agent.js's policy on them and on the first 500; kept for
    the next session while nothing they are computed from changes (this module among them)."""

    def compare():
        walls, rows, logits, value = _states_from_rollouts(model)
        js_out, js_out_500 = _js_policy(js, walls, rows), _js_policy(js, walls, rows[:500])
        return pickle.dumps((walls, rows, logits, value, js_out, js_out_500))

    kept = kept_run("playground-rollout-states", compare, Path(__file__).read_text())
    return pickle.loads(kept)


def _js_policy(js, walls, rows, agent="propagation"):
    batch = {
        "rows": int(np.shape(walls)[1]),
        "cols": int(np.shape(walls)[2]),
        "walls": [_wall_string(w) for w in walls],
        "states": np.asarray(rows).tolist(),
    }
    return js(
        f"MazeAgent.policyBatch(MAZE_PLAYGROUND_WEIGHTS, {json.dumps(batch)}, {json.dumps(agent)})"
    )


@SAME_ROLLOUTS
def test_javascript_agent_equals_jax_on_random_mazes(rollout_states):
    walls, rows, logits, value, out, _ = rollout_states
    assert len(rows) > 3 * NUM_MAZES
    probs = np.asarray(jax.nn.softmax(logits, axis=-1))
    greedy = np.argmax(logits, axis=-1)
    js_probs = np.asarray(out["probs"])
    # Illegal moves (jumanji's action mask): probability exactly 0 on both sides.
    illegal = np.isneginf(logits)
    assert illegal.any() and np.all(js_probs[illegal] == 0) and np.all(probs[illegal] == 0)
    np.testing.assert_array_equal(np.asarray(out["greedy"]), greedy)
    np.testing.assert_allclose(js_probs, probs, atol=1e-5, rtol=0)
    np.testing.assert_allclose(np.asarray(out["value"]), value, atol=1e-4, rtol=0)
    # The agent is far from uniform: the comparison would be weak if the weights were zero.
    assert np.mean(np.max(js_probs, axis=-1) > 0.9) > 0.5


@SAME_ROLLOUTS
def test_javascript_agent_equals_jax_in_float64(model, rollout_states):
    """agent.js computes in float64: against JAX in float64 it agrees to rounding, so the
    differences from float32 JAX (the test above) are float32 rounding, not a wrong formula."""
    walls, rows, _, _, _, out = rollout_states
    rows = rows[:500]
    masks = np.stack([_mask(walls[r[0]], r) for r in rows])
    with jax.enable_x64(True):
        model64 = jax.tree.map(
            lambda x: x.astype(jnp.float64) if eqx.is_inexact_array(x) else x, model
        )
        images = np.zeros((len(rows), 3, 10, 10))
        images[:, 0] = walls[rows[:, 0]]
        images[np.arange(len(rows)), 1, rows[:, 1], rows[:, 2]] = 1.0
        images[np.arange(len(rows)), 2, rows[:, 3], rows[:, 4]] = 1.0
        logits, value = jax.vmap(model64)(jnp.asarray(images))
        assert logits.dtype == jnp.float64
        probs = np.asarray(jax.nn.softmax(ppo.masked_logits(logits, jnp.asarray(masks)), axis=-1))
    np.testing.assert_allclose(np.asarray(out["probs"]), probs, atol=1e-12, rtol=0)
    np.testing.assert_allclose(np.asarray(out["value"]), np.asarray(value), atol=1e-12, rtol=0)


# --- the planning agent -------------------------------------------------------------------

#: Maze sizes of the planning agent's comparison, square and not, 5 x 5 to 30 x 30:
#: PLANNING_MAZES jumanji mazes of each.
PLANNING_SIZES = ((5, 5), (13, 7), (10, 10), (9, 24), (20, 20), (30, 30))
PLANNING_MAZES = 167


def _to_float64(model):
    return jax.tree.map(lambda x: x.astype(jnp.float64) if eqx.is_inexact_array(x) else x, model)


def _images(walls, rows):
    """Observation images ``(S, 3, R, C)`` of states ``[maze, agent row, agent col, target
    row, target col]``."""
    n = len(rows)
    images = np.zeros((n, 3) + walls.shape[1:])
    images[:, 0] = walls[rows[:, 0]]
    images[np.arange(n), 1, rows[:, 1], rows[:, 2]] = 1.0
    images[np.arange(n), 2, rows[:, 3], rows[:, 4]] = 1.0
    return images


@functools.cache
def _reset_many(size):
    """Jitted: keys ``(n,)`` to the first states of n random jumanji mazes of ``size``."""
    env = maze_lib.make_maze(generator=RandomGenerator(num_rows=size[0], num_cols=size[1]))
    return jax.jit(jax.vmap(lambda key: env_reset(env, key)[0]))


def _planning_states(size, seed):
    """PLANNING_MAZES random jumanji mazes of ``size``; three states in each: the start and
    two other free cells (not the target) with the same target."""
    keys = jax.random.split(jax.random.key(seed), PLANNING_MAZES)
    state = jax.tree.map(np.asarray, _reset_many(size)(keys))
    walls = state.walls
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(PLANNING_MAZES):
        agent = (int(state.agent_position.row[i]), int(state.agent_position.col[i]))
        target = (int(state.target_position.row[i]), int(state.target_position.col[i]))
        free = [tuple(c) for c in np.argwhere(~walls[i]) if tuple(c) not in (agent, target)]
        others = [free[j] for j in rng.choice(len(free), 2, replace=False)]
        rows += [(i,) + cell + target for cell in [agent] + others]
    return walls, np.asarray(rows, np.int32)


@pytest.fixture(scope="module")
def planning_comparison(js, planner, kept_run):
    """Per size: walls, states, the JS policy, and JAX's logits and values in float32 and in
    float64; kept for the next session while nothing it reads changes (this module among
    them)."""
    compare = lambda: pickle.dumps(_planning_comparison(js, planner))  # noqa: E731
    kept = kept_run("playground-planning-comparison", compare, Path(__file__).read_text())
    return pickle.loads(kept)


def _planning_comparison(js, planner):
    out = {}
    forward32 = eqx.filter_jit(eqx.filter_vmap(planner))
    with jax.enable_x64(True):
        planner64 = _to_float64(planner)
        forward64 = eqx.filter_jit(eqx.filter_vmap(planner64))
        for k, size in enumerate(PLANNING_SIZES):
            walls, rows = _planning_states(size, 500 + k)
            images = _images(walls, rows)
            logits64, value64 = forward64(jnp.asarray(images, jnp.float64))
            assert logits64.dtype == jnp.float64
            out[size] = (walls, rows, np.asarray(logits64), np.asarray(value64))
    for size, (walls, rows, _, _) in out.items():
        logits32, value32 = forward32(jnp.asarray(_images(walls, rows), jnp.float32))
        assert logits32.dtype == jnp.float32
        js_out = _js_policy(js, walls, rows, "planning")
        out[size] += (np.asarray(logits32), np.asarray(value32), js_out)
    return out


@SAME_PLANNING
def test_javascript_planning_agent_equals_jax_in_float64(planning_comparison):
    """On 1,002 jumanji mazes from 5 x 5 to 30 x 30: the same logits and value as JAX in
    float64, to 1e-9."""
    for size, (walls, _, logits64, value64, _, _, js_out) in planning_comparison.items():
        assert len(walls) == PLANNING_MAZES and walls.shape[1:] == size
        np.testing.assert_allclose(
            np.asarray(js_out["logits"]), logits64, atol=1e-9, rtol=0, err_msg=f"logits on {size}"
        )
        np.testing.assert_allclose(
            np.asarray(js_out["value"]), value64, atol=1e-9, rtol=0, err_msg=f"value on {size}"
        )


@SAME_PLANNING
def test_javascript_planning_agent_takes_jax_float32_actions(planning_comparison):
    """The greedy action of the page (float64) is the float32 JAX agent's in every state, and
    it starts a shortest path: the planning agent does not need its training size."""
    states = 0
    for size, (walls, rows, _, _, logits32, _, js_out) in planning_comparison.items():
        masks = np.stack([_mask(walls[r[0]], r) for r in rows])
        greedy32 = np.argmax(np.where(masks, logits32, -np.inf), axis=-1)
        np.testing.assert_array_equal(
            np.asarray(js_out["greedy"]), greedy32, err_msg=f"greedy actions on {size}"
        )
        for r, action in zip(rows, greedy32):
            here, target = tuple(r[1:3]), tuple(r[3:5])
            there = playground.step(walls[r[0]], here, target, int(action)).agent
            d_here = maze_lib.shortest_path_length(walls[r[0]], here, target)
            assert maze_lib.shortest_path_length(walls[r[0]], there, target) == d_here - 1
        states += len(rows)
    assert states == 3 * PLANNING_MAZES * len(PLANNING_SIZES)


def test_javascript_value_map_is_jax_values_after_each_backup(js, planner):
    """The page's value map: after i backups it is JAX's values after i backups (float64), the
    values settle after as many backups as the farthest cell is from the target, and the
    settled map falls by the mean cost per move of breadth-first distance."""
    cost = float(np.mean(np.exp(np.asarray(planner.log_cost, np.float64))))
    for k, size in enumerate(((13, 7), (10, 10), (9, 24))):
        walls, rows = _planning_states(size, 900 + k)
        w, agent, target = walls[0], rows[0, 1:3], tuple(int(x) for x in rows[0, 3:5])
        maze = _js_maze(w, agent.tolist(), target)
        out = js(
            f"(function () {{ var net = MazeAgent.loadWeights(MAZE_PLAYGROUND_WEIGHTS); "
            f"var s = MazeAgent.startBackups(net, {maze}), maps = [MazeAgent.valueMap(s)]; "
            f"while (MazeAgent.backup(s)) maps.push(MazeAgent.valueMap(s)); "
            f"return {{maps: maps, backups: s.backups}}; }})()"
        )
        dist = np.full(w.shape, -1)
        for cell in np.argwhere(~w):
            dist[tuple(cell)] = maze_lib.shortest_path_length(w, tuple(cell), target)
        assert out["backups"] == dist.max() and len(out["maps"]) == dist.max() + 1
        image = _images(w[None], np.asarray([[0, *agent, *target]]))[0]
        goal = target[0] * w.shape[1] + target[1]
        with jax.enable_x64(True):
            leaves = jax.tree.leaves(_to_float64(planner))
            # every size: the first and the settled map; one size also a backup in between
            for step_i in (0, dist.max() // 2, dist.max()) if k == 0 else (0, dist.max()):
                shown = np.asarray([np.nan if x is None else x for x in out["maps"][step_i]])
                if step_i == 0:  # v_0: only the target has a value, the log of its score
                    expected = np.full(w.size, np.nan)
                    expected[goal] = np.mean(np.log(np.asarray(planner.embed[1], float)))
                    np.testing.assert_allclose(shown, expected, atol=1e-7, rtol=0)
                    continue
                like = ppo.ValueIterationActorCritic(jax.random.key(0), 4, iterations=int(step_i))
                staged = jax.tree.unflatten(jax.tree.structure(like), leaves)
                v = np.asarray(staged.values(jnp.asarray(image)))
                expected = np.where((v > -1e4).all(-1) & ~w, v.mean(-1), np.nan)
                np.testing.assert_allclose(shown, expected.ravel(), atol=1e-9, rtol=0)
        settled = np.asarray(out["maps"][-1], dtype=float)
        top = settled[target[0] * w.shape[1] + target[1]]
        np.testing.assert_allclose(settled[~w.ravel()], top - cost * dist[~w], atol=1e-9)
        assert all(x is None for x, wall in zip(out["maps"][-1], w.ravel()) if wall)


def test_step_equals_jumanji_and_javascript(js):
    time_limit = 12
    env = maze_lib.make_maze(time_limit=time_limit)
    rng = np.random.default_rng(0)
    step = jax.jit(env.step)
    seen = set()
    for _, key in enumerate(jax.random.split(jax.random.key(7), 20)):
        state, _ = env_reset(env, key)
        walls = np.asarray(state.walls)
        agent, target = _agent_and_target(state)
        for t in range(time_limit):
            action = int(rng.integers(4))
            state, timestep = step(state, action)
            ours = playground.step(walls, agent, target, action, t, time_limit)
            maze = _js_maze(walls, agent, target)
            theirs = js(f"MazeAgent.step({maze}, {action}, {t}, {time_limit})")
            expected = _agent_and_target(state)[0]
            assert ours.agent == expected == tuple(theirs["agent"])
            assert ours.step_count == int(state.step_count) == theirs["stepCount"] == t + 1
            assert ours.done == bool(timestep.last()) == theirs["done"]
            assert ours.reason == theirs["reason"]
            seen.add(ours.reason)
            agent = ours.agent
            if ours.done:
                break
    assert {"", "time limit"} <= seen  # ran into the time limit at least once


def test_shortest_path_equals_the_reference(js):
    env = maze_lib.make_maze()
    for key in jax.random.split(jax.random.key(3), 30):
        state, _ = env_reset(env, key)
        walls = np.asarray(state.walls)
        start, target = _agent_and_target(state)
        path = maze_lib.shortest_path(walls, start, target)
        assert len(path) - 1 == maze_lib.shortest_path_length(walls, start, target)
        assert path[0] == start and path[-1] == target
        for a, b in itertools.pairwise(path):
            assert abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1 and not walls[b]
        js_path = js(f"MazeAgent.shortestPath({_js_maze(walls, start, target)})")
        assert len(js_path) == len(path) and js_path[-1] == list(target)
    walls = np.zeros((3, 3), bool)
    walls[1, :] = True
    assert maze_lib.shortest_path(walls, (0, 0), (2, 2)) is None
    assert js(f"MazeAgent.shortestPath({_js_maze(walls, (0, 0), (2, 2))})") is None


def test_javascript_random_mazes_are_connected_with_walls_on_odd_lines(js):
    for seed in range(20):
        walls = np.asarray(js(f"MazeAgent.randomWalls(10, 10, MazeAgent.seededRandom({seed}))"))
        walls = walls.reshape(10, 10)
        assert not walls[::2, ::2].any()  # cells on even rows and columns stay free
        assert 38 <= walls.sum() <= 52  # jumanji's 10 x 10 mazes: 41 to 49 walls
        free = [tuple(c) for c in np.argwhere(~walls)]
        assert all(maze_lib.shortest_path_length(walls, free[0], c) >= 0 for c in free)


def test_greedy_action_equals_the_chapters_evaluation(model):
    env = maze_lib.make_maze()
    result = ppo.evaluate(model, env, jax.random.key(11), 20, greedy=True, record_states=True)
    s = result.states
    checked = 0
    for i in range(20):
        walls = np.asarray(s.walls[0, i])
        target = (int(s.target_position.row[0, i]), int(s.target_position.col[0, i]))
        for t in range(int(result.length[i])):
            here = (int(s.agent_position.row[t, i]), int(s.agent_position.col[t, i]))
            there = (int(s.agent_position.row[t + 1, i]), int(s.agent_position.col[t + 1, i]))
            probs, greedy, _ = playground.agent_policy(model, walls, here, target)
            assert playground.step(walls, here, target, greedy).agent == there
            assert probs[greedy] == probs.max() and abs(probs.sum() - 1) < 1e-5
            checked += 1
    assert checked >= 20


def test_step_and_action_mask_by_hand():
    """A 3 x 3 maze with walls at (0, 1) and (1, 0): from (0, 0) every move is illegal, so a
    step stays there and ends the episode; from (1, 1), right is free and up a wall."""
    walls = np.zeros((3, 3), bool)
    walls[0, 1] = walls[1, 0] = True
    up, right, down, left = range(4)
    np.testing.assert_array_equal(
        playground.maze_state(walls, (1, 1), (2, 2)).action_mask, [False, True, True, False]
    )
    stuck = playground.step(walls, (0, 0), (2, 2), right)
    assert stuck[:4] == ((0, 0), 1, True, "no legal move")
    into_wall = playground.step(walls, (1, 1), (2, 2), up, step_count=3)
    assert into_wall[:4] == ((1, 1), 4, False, "")  # a move into a wall: no move, one step
    np.testing.assert_array_equal(into_wall.state.action_mask, [False, True, True, False])
    assert playground.step(walls, (1, 2), (2, 2), down)[:4] == ((2, 2), 1, True, "target")
    last = playground.step(walls, (1, 1), (2, 2), left, step_count=4, time_limit=5)
    assert last[:4] == ((1, 1), 5, True, "time limit")


def test_step_and_action_mask_equal_jumanji_with_moves_into_walls():
    """On jumanji's random mazes, each episode trying an illegal move at every other step:
    ``maze_state``'s action mask is ``Maze.reset``'s, and ``step`` (from walls and cells) and
    ``step_state`` (from the state before) are ``Maze.step``: the agent, step count, end and
    the next action mask; a move into a wall leaves the agent in place."""
    time_limit = 15
    env = maze_lib.make_maze(time_limit=time_limit)
    jumanji_step = jax.jit(env.step)
    rng = np.random.default_rng(1)
    into_walls = 0
    for key in jax.random.split(jax.random.key(8), 6):
        state, timestep = env_reset(env, key)
        walls = np.asarray(state.walls)
        agent, target = _agent_and_target(state)
        ours = playground.maze_state(walls, agent, target)
        np.testing.assert_array_equal(ours.action_mask, state.action_mask)
        chained = playground.StepResult(agent, 0, False, "", ours)
        for t in range(time_limit):
            mask = np.asarray(state.action_mask)
            illegal = np.flatnonzero(~mask)
            choices = illegal if t % 2 == 0 and illegal.size else np.flatnonzero(mask)
            action = int(rng.choice(choices))
            state, timestep = jumanji_step(state, action)
            result = playground.step(walls, agent, target, action, t, time_limit)
            chained = playground.step_state(chained.state, action, time_limit)
            assert result[:4] == chained[:4]
            assert result.agent == _agent_and_target(state)[0]
            assert result.step_count == int(state.step_count) == t + 1
            assert result.done == bool(timestep.last())
            np.testing.assert_array_equal(result.state.action_mask, state.action_mask)
            cell = np.add(agent, maze_lib.MOVES[action])
            if not mask[action]:
                assert result.agent == agent
                inside = (0 <= cell).all() and (cell < walls.shape).all()
                into_walls += bool(inside and walls[tuple(cell)])
            agent = result.agent
            if result.done:
                break
    assert into_walls >= 5


def test_widget_steps_are_a_jumanji_greedy_rollout(model):
    """The widget's Step, click by click, is jumanji's ``Maze.step`` of the greedy action of
    the model on the chapter's observation image, masked by jumanji's action mask."""
    pytest.importorskip("ipywidgets")
    box = playground_widget.maze_playground(model, key=jax.random.key(3), delay_s=0)
    episode = box.episode
    generator = maze_lib.FixedMazeGenerator(episode.walls, [episode.start], [episode.target])
    env = maze_lib.make_maze(generator=generator, time_limit=episode.time_limit)
    state, timestep = env_reset(env, jax.random.key(4))

    @jax.jit
    def greedy_step(state):
        logits, _ = model(maze_lib.observation_image(state))
        action = jnp.argmax(ppo.masked_logits(logits, state.action_mask))
        return env.step(state, action)

    while not timestep.last():
        state, timestep = greedy_step(state)
        box.controls["step"].click()
        assert episode.agent == _agent_and_target(state)[0]
        assert episode.steps == int(state.step_count)
        np.testing.assert_array_equal(episode.state.action_mask, state.action_mask)
    assert episode.reason == "target" and episode.steps > 5
    box.controls["step"].click()  # the episode is over: nothing moves
    assert episode.steps == int(state.step_count)


def test_policy_and_value_map_name_a_bad_state(model, planner):
    walls = np.zeros((3, 3), bool)
    walls[0, 1] = walls[1, 0] = True
    with pytest.raises(ValueError, match="state: the agent's cell \\(0, 0\\) has no legal move"):
        playground.policy(model, playground.maze_state(walls, (0, 0), (2, 2)))
    with pytest.raises(TypeError, match="state: expected a jumanji Maze State"):
        playground.policy(model, walls)
    batch = jax.tree.map(lambda x: jnp.stack([x, x]), playground.maze_state(walls, (1, 1), (2, 2)))
    with pytest.raises(ValueError, match="state: action_mask has shape \\(2, 4\\)"):
        playground.policy(model, batch)
    with pytest.raises(TypeError, match="state: expected a jumanji Maze State"):
        playground_widget.value_map(planner, walls)
    with pytest.raises(ValueError, match="step_count: expected an int >= 0, got -1"):
        playground.maze_state(walls, (1, 1), (2, 2), step_count=-1)
    with pytest.raises(TypeError, match="State \\(playground.maze_state\\), got ndarray"):
        playground.step_state(walls, 0)
    with pytest.raises(ValueError, match="state: action_mask has shape \\(2, 4\\)"):
        playground.step_state(batch, 0)
    with pytest.raises(ValueError, match="action: expected 0 \\(up\\)"):
        playground.step_state(playground.maze_state(walls, (1, 1), (2, 2)), -1)


def test_export_names_a_bad_model_or_agent():
    with pytest.raises(TypeError, match="model: expected a PropagationActorCritic"):
        export_playground.export_weights(object())
    with pytest.raises(ValueError, match="models: unknown value 'greedy'"):
        export_playground.weights_js({"greedy": None})
    with pytest.raises(TypeError, match="model: expected a PropagationActorCritic"):
        export_playground.weights_js({"planning": None})
    with pytest.raises(TypeError, match="models: expected a dict"):
        export_playground.weights_js([])


def test_bad_input_is_named(js):
    walls = np.zeros((4, 4), bool)
    with pytest.raises(ValueError, match="action"):
        playground.step(walls, (0, 0), (3, 3), 4)
    with pytest.raises(ValueError, match="agent"):
        playground.step(walls, (5, 0), (3, 3), 0)
    with pytest.raises(ValueError, match="time_limit"):
        playground.step(walls, (0, 0), (3, 3), 0, time_limit=0)
    with pytest.raises(TypeError, match="PropagationActorCritic"):
        export_playground.export_weights("a model")
    walls[0, 1] = walls[1, 0] = True
    with pytest.raises(ValueError, match="no legal move"):
        playground.agent_policy(None, walls, (0, 0), (3, 3))
    with pytest.raises(Exception, match="maze.agent: cell \\[0,1\\] is a wall"):
        js(
            'MazeAgent.step({"rows": 2, "cols": 2, "walls": [0, 1, 0, 0], '
            '"agent": [0, 1], "target": [1, 1]}, 0)'
        )


# --- the page in headless Chromium ---------------------------------------------------------

BROWSER = measure_pages.browser_path()


#: The page's title in each edition.
TITLES = {"en": "Maze playground", "ja": "迷路プレイグラウンド"}


def standalone_page(folder: Path, lang: str | None = None) -> Path:
    """The playground page's raw HTML block in a bare page, laid out like the built book
    (``book/playground.html`` next to ``_static/playground/``); ``lang`` marks it
    ``<html lang="...">`` as the editions do (none: unmarked)."""
    text = (ROOT / "book" / "playground.md").read_text()
    (block,) = re.findall(r"```\{raw\} html\n(.*?)\n```", text, flags=re.DOTALL)
    shutil.copytree(STATIC, folder / "_static" / "playground")
    page = folder / "book" / "playground.html"
    page.parent.mkdir()
    # The book wraps the page in a section whose id is the title's slug: the script must
    # leave it alone.
    title = TITLES["ja" if lang == "ja" else "en"]
    body = f'<section id="maze-playground"><h1>{title}</h1>{block}</section>'
    marked = f'<html lang="{lang}">' if lang else "<html>"
    page.write_text(
        f"<!DOCTYPE html>{marked}<head><meta charset='utf-8'></head><body>{body}</body></html>"
    )
    return page


def _chromium_dom(page: Path, query: str = "", budget_ms: int = 5000) -> str:
    """The DOM headless Chromium leaves after running ``page`` (with ``query``) for
    ``budget_ms`` of virtual time."""
    return measure_pages.dump_dom(page, query, budget_ms=budget_ms, timeout=180)


#: What the page's status says once the agent reached the target, in each language.
REACHED = {"en": r"Reached the target in \d+ steps", "ja": r"\d+ ステップでゴールに到達しました"}


@pytest.mark.browser
@pytest.mark.skipif(
    BROWSER is None,
    reason="no Chromium on this machine (chromium, "
    "chromium-browser or google-chrome on PATH): the page was not run",
)
@pytest.mark.parametrize("lang", ["en", "ja"])
def test_page_draws_a_maze_and_the_agent_reaches_the_target(tmp_path, kept_run, lang):
    """The page's self-test (``?selftest=1``) in Chromium, in each language: the planning
    agent walks a shortest path on 100 random mazes of each of 10 x 10, 20 x 20 and 9 x 24;
    the value map starts at the target alone and colours every free cell once the backups
    settle; switching to the propagation agent hides it; both agents reach the target of a
    maze drawn by clicks, each step taking the speed setting's time; the notices, the value
    line, the run button and the status read as the page's language writes them. The report's
    values are the same in both languages. A passing page's DOM is kept for the next session
    while nothing it reads (the page, this module, Chromium's version) changes."""

    def passed(dom):
        assert 'data-selftest="passed"' in dom, (
            re.findall(r'data-selftest="[^"]*"', dom) or dom[-2000:]
        )

    def run():
        dom = _chromium_dom(standalone_page(tmp_path, lang), "?selftest=1", 30000)
        passed(dom)  # a page that fails is not kept
        return dom.encode()

    version = subprocess.run([BROWSER, "--version"], capture_output=True, text=True).stdout
    dom = kept_run(f"playground-page-{lang}", run, Path(__file__).read_text() + version).decode()
    passed(dom)
    (report,) = re.findall(r'data-selftest-report="([^"]*)"', dom)
    report = json.loads(html.unescape(report))
    assert report["language"] == lang
    assert report["10x10"] == report["20x20"] == report["9x24"] == "100/100"
    coloured, free = report["valueMap"].split("/")
    assert coloured == free and int(free) > 30 and int(report["backups"]) > 5
    runs = {run["agent"]: run for run in report["runs"]}
    assert runs["planning"]["outcome"] == runs["propagation"]["outcome"] == "target"
    assert runs["planning"]["msPerStep"] < runs["propagation"]["msPerStep"]  # two speeds
    assert f"<h1>{TITLES[lang]}</h1>" in dom
    assert len(re.findall(r'class="pg-cell[^"]*\bpg-wall\b', dom)) >= 9
    assert re.search(REACHED[lang], dom)
    assert not re.search(REACHED["ja" if lang == "en" else "en"], dom)


#: The agents' names: the Japanese page's prose writes them as the English does.
NAMES = {"agentPropagation": "propagation"}
JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


@pytest.mark.javascript
def test_the_pages_language_picks_the_words(js):
    """``<html lang>`` "ja", "ja-JP", ... gives the Japanese words, anything else the English;
    the values are filled in as the same numbers in both; a missing message is an error."""
    for lang, chosen in [
        ("ja", "ja"),
        ("ja-JP", "ja"),
        ("JA", "ja"),
        ("en", "en"),
        ("en-GB", "en"),
        ("de", "en"),
        ("", "en"),
        (None, "en"),
    ]:
        assert js(f"mazePlaygroundWords({json.dumps(lang)}).lang") == chosen, lang
    numbers = {"steps": 12, "best": 10}
    assert js(f"mazePlaygroundWords('en')('reached', {json.dumps(numbers)})") == (
        "Reached the target in 12 steps (shortest path: 10)."
    )
    assert js(f"mazePlaygroundWords('ja')('reached', {json.dumps(numbers)})") == (
        "12 ステップでゴールに到達しました（最短経路：10 ステップ）。"
    )
    assert js("mazePlaygroundWords('ja')('speedValue', {speed: 64})") == "毎秒 64 ステップ"
    with pytest.raises(Exception, match='no words "nothing"'):
        js("mazePlaygroundWords('ja')('nothing')")


@pytest.mark.javascript
def test_every_word_of_the_page_is_in_english_and_japanese(js):
    """strings.js holds the same messages in both languages, each with the same values to fill
    in; no Japanese message is empty or an English one, each is written in Japanese with
    Japanese punctuation (the agents' names apart); playground.js uses every message and asks
    for none that is missing."""
    words = js("MAZE_PLAYGROUND_STRINGS")
    en, ja = words["en"], words["ja"]
    assert set(words) == {"en", "ja"} and en.keys() == ja.keys() and len(en) > 40

    def fills(text):
        return sorted(re.findall(r"\{(\w+)\}", text))

    english = set(en.values())
    for key in en:
        assert isinstance(en[key], str) and en[key].strip(), key
        assert isinstance(ja[key], str) and ja[key].strip(), f"{key}: no Japanese"
        assert fills(ja[key]) == fills(en[key]), key
        if key in NAMES:
            assert en[key] == ja[key] == NAMES[key]
            continue
        assert ja[key] not in english, f"{key}: the Japanese is English: {ja[key]!r}"
        assert JAPANESE.search(ja[key]), f"{key}: no Japanese in {ja[key]!r}"
        # 、。：（）「」 in Japanese sentences; ASCII only in the maths V(s)
        ascii_marks = re.findall(r"[.,:;!?()\"]", re.sub(r"V\(s\)|\{\w+\}", "", ja[key]))
        assert not ascii_marks, f"{key}: ASCII punctuation {ascii_marks} in {ja[key]!r}"
    source = (STATIC / "playground.js").read_text()
    selftest = (STATIC / "selftest.js").read_text()
    moves = {"move" + name.capitalize() for name in js("MazeAgent.ACTION_NAMES")}
    assert moves <= en.keys()  # the bars' names: "move" and the action's name
    asked = set(re.findall(r"\bt\('(\w+)'", source + selftest))
    assert asked and asked <= en.keys(), asked - en.keys()
    unused = en.keys() - moves - set(re.findall(r"'(\w+)'", source))
    assert not unused, f"messages playground.js never shows: {sorted(unused)}"


class _AppText(html.parser.HTMLParser):
    """The texts and aria-labels inside ``#playground-app``, and the run button's text."""

    def __init__(self):
        super().__init__()
        self.depth, self.texts, self.labels, self.run, self._tag = 0, [], {}, None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.depth == 0 and attrs.get("id") != "playground-app":
            return
        self.depth += tag == "div"
        if "aria-label" in attrs:
            self.labels.setdefault(attrs.get("class", ""), []).append(attrs["aria-label"])
        self._tag = attrs.get("class", "")

    def handle_endtag(self, tag):
        if self.depth and tag == "div":
            self.depth -= 1

    def handle_data(self, data):
        if self.depth and data.strip():
            self.texts.append(data.strip())
            if "pg-run" in (self._tag or ""):
                self.run = data.strip()


#: What the page shows in each language: the run button, the rows menu's aria-label, and the
#: notice after a click on the start in the wall mode.
SHOWN = {
    "en": (
        "Run",
        "rows",
        'This cell holds the start, which cannot become a wall: move the start first ("place '
        'the start").',
    ),
    "ja": (
        "実行",
        "行数",
        "このマスにはスタートがあるため、壁にできません。先に「スタートの配置」でスタートを別の"
        "マスに移してください。",
    ),
}

#: Clicks the start in the wall mode once the page has drawn, and copies the notice.
NOTICE_PROBE = """
<script>
window.addEventListener('load', function () { setTimeout(function () {
  var app = document.getElementById('playground-app');
  app.querySelector('.pg-cell.pg-start').click();
  document.body.setAttribute('data-notice', app.querySelector('.pg-notice').textContent);
}, 300); });
</script>
"""


@pytest.mark.browser
@pytest.mark.skipif(BROWSER is None, reason="no Chromium on this machine: the page was not run")
@pytest.mark.parametrize("lang", ["en", "ja"])
def test_page_speaks_the_language_of_its_html(tmp_path, lang):
    """``<html lang="ja">`` gives Japanese controls, labels, aria-labels and messages (the
    agents' names and V(s) stay as the prose writes them), ``<html lang="en">`` English ones,
    with no word of the other language."""
    page = standalone_page(tmp_path, lang)
    page.write_text(page.read_text().replace("</body>", NOTICE_PROBE + "</body>"))
    dom = _chromium_dom(page)
    shown = _AppText()
    shown.feed(dom)
    run, rows, notice = SHOWN[lang]
    assert shown.run == run
    assert shown.labels["pg-select pg-rows"] == [rows]
    (found,) = re.findall(r'data-notice="([^"]*)"', dom) or [None]
    assert found is not None and html.unescape(found) == notice
    cells = [label for cls, labels in shown.labels.items() if "pg-cell" in cls for label in labels]
    assert len(cells) == 100 and len(shown.texts) > 20
    every = shown.texts + [label for labels in shown.labels.values() for label in labels]
    for text in every + [html.unescape(found)]:
        if lang == "en":
            assert not JAPANESE.search(text), text
        else:  # the agents' names and V(s) apart, no Latin letters
            assert not re.search(r"[A-Za-z]", re.sub(r"planning|propagation|V\(s\)", "", text)), (
                text
            )


# --- the ipywidgets version -------------------------------------------------------------------


def test_widget_edits_the_maze_and_runs_the_agent(model):
    widgets = pytest.importorskip("ipywidgets")
    walls = np.zeros((5, 5), bool)
    box = playground_widget.maze_playground(model, walls, (0, 0), (0, 4), delay_s=0)
    assert isinstance(box, widgets.VBox)
    controls, episode, cells = box.controls, box.episode, box.cells
    assert controls["agent"].value == "given model"
    assert list(controls["agent"].options) == ["planning", "propagation", "given model"]
    status = box.children[-1]
    # A wall column with one gap, drawn by clicks: (0..3, 2) walls, (4, 2) free.
    for r in range(4):
        cells[r * 5 + 2].click()
    assert episode.walls[:4, 2].all() and not episode.walls[4, 2]
    assert not walls.any()  # the caller's array is left alone
    assert "shortest path: 12 steps" in status.value
    controls["mode"].value = "target"
    cells[0 * 5 + 1].click()  # the target next to the start
    assert episode.target == (0, 1)
    controls["run"].click()
    assert episode.agent == (0, 1) and episode.steps == 1
    assert "Reached the target in 1 steps" in status.value
    controls["reset"].click()
    assert episode.agent == (0, 0) and episode.steps == 0 and episode.trail == [(0, 0)]
    controls["mode"].value = "wall"
    cells[0].click()  # the start is not a wall, and the status says why nothing changed
    assert not episode.walls[0, 0]
    assert "The start and the target cannot be walls" in status.value
    controls["mode"].value = "start"
    cells[0 * 5 + 2].click()  # (0, 2) is a wall
    assert episode.start == (0, 0) and "The start cannot go on a wall" in status.value
    cells[0 * 5 + 1].click()  # the target's cell
    assert episode.start == (0, 0) and "two different cells" in status.value
    cells[4 * 5 + 4].click()  # a free cell: the start moves and the notice goes
    assert episode.start == (4, 4) and "cannot" not in status.value
    controls["mode"].value = "target"
    cells[1 * 5 + 2].click()
    assert episode.target == (0, 1) and "The target cannot go on a wall" in status.value


def test_widget_planning_agent_any_size_value_map_and_agent_switch(planner):
    pytest.importorskip("ipywidgets")
    box = playground_widget.maze_playground(key=jax.random.key(5), delay_s=0)
    controls, status = box.controls, box.children[-1]
    assert controls["agent"].value == "planning" and "given model" not in controls["agent"].options
    for rows, cols in ((9, 24), (30, 30)):
        controls["rows"].value, controls["cols"].value = rows, cols
        controls["new_maze"].click()
        episode = box.episode
        assert episode.walls.shape == (rows, cols) and len(box.cells) == rows * cols
        best = maze_lib.shortest_path_length(episode.walls, episode.start, episode.target)
        controls["run"].click()
        assert episode.reason == "target" and episode.steps == best, (rows, cols)
        assert f"Reached the target in {best} steps" in status.value
    # The value map colours the free cells by value: the target's neighbour on the path is the
    # darkest free cell, and the propagation agent shows no map.
    episode = box.episode
    controls["reset"].click()
    vmap = playground_widget.value_map(planner, episode.state)
    free = ~episode.walls
    assert np.isfinite(vmap[free]).all() and np.isnan(vmap[episode.walls]).all()
    dist = np.array(
        [
            [
                maze_lib.shortest_path_length(episode.walls, (r, c), episode.target)
                if free[r, c]
                else -1
                for c in range(30)
            ]
            for r in range(30)
        ]
    )
    order = np.argsort(-vmap[free], kind="stable")
    assert np.all(np.diff(dist[free][order]) >= 0)  # value falls with the distance
    colours = {b.style.button_color for b, f in zip(box.cells, free.ravel()) if f}
    assert len(colours) > 10
    controls["agent"].value = "propagation"
    colours = {b.style.button_color for b, f in zip(box.cells, free.ravel()) if f}
    assert colours <= {"#ffffff", "#dcecd9", "#22882f", "#d9332a"}
    controls["agent"].value = "planning"
    controls["value_map"].value = False
    colours = {b.style.button_color for b, f in zip(box.cells, free.ravel()) if f}
    assert colours <= {"#ffffff", "#dcecd9", "#22882f", "#d9332a"}
    assert set(box.models) == {"planning", "propagation"}
    with pytest.raises(TypeError, match="model: expected a ValueIterationActorCritic"):
        playground_widget.value_map(box.models["propagation"], episode.state)


def test_widget_delay_is_the_time_between_steps(planner):
    pytest.importorskip("ipywidgets")
    walls = np.zeros((5, 5), bool)
    box = playground_widget.maze_playground(planner, walls, (0, 0), (0, 4), delay_s=0.05)
    assert box.controls["delay"].value == 0.05
    t0 = time.perf_counter()
    box.controls["run"].click()
    elapsed = time.perf_counter() - t0
    assert box.episode.steps == 4 and elapsed >= 3 * 0.05  # three waits between four steps


def test_widget_time_limit_and_bad_grid(model):
    pytest.importorskip("ipywidgets")
    walls = np.zeros((3, 3), bool)
    walls[1, :] = True  # no path from the top row to the bottom row
    box = playground_widget.maze_playground(model, walls, (0, 0), (2, 2), time_limit=5, delay_s=0)
    assert "No path" in box.children[-1].value
    box.controls["run"].click()
    assert box.episode.steps == 5 and box.episode.reason == "time limit"
    assert box.episode.agent[0] == 0  # never crossed the wall
    with pytest.raises(ValueError, match="walls: expected a 2-D array"):
        playground_widget.maze_playground(model, np.zeros(10, bool))
    with pytest.raises(ValueError, match="target: cell \\(1, 1\\) is a wall"):
        playground_widget.maze_playground(model, walls, (0, 0), (1, 1))
    with pytest.raises(ValueError, match="both are cell"):
        playground_widget.maze_playground(model, np.zeros((3, 3), bool), (0, 0), (0, 0))
    with pytest.raises(ValueError, match="agent: unknown value 'greedy'"):
        playground_widget.maze_playground(agent="greedy")
    with pytest.raises(ValueError, match="delay_s: expected a number of seconds >= 0"):
        playground_widget.maze_playground(model, delay_s=-1)


def _theme_stylesheet() -> Path:
    import pydata_sphinx_theme

    root = Path(pydata_sphinx_theme.__file__).parent
    (css,) = root.glob("theme/pydata_sphinx_theme/static/styles/pydata-sphinx-theme.css")
    return css


CONTRAST_PROBE = """
<script>
window.addEventListener('load', function () { setTimeout(function () {
  function rgb(s) { var m = s.match(/[\\d.]+/g).map(Number); return m.slice(0, 3); }
  function lum(c) { return c.map(function (v) { v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
    .reduce(function (a, v, i) { return a + v * [0.2126, 0.7152, 0.0722][i]; }, 0); }
  var worst = 100, count = 0;
  document.querySelectorAll('#playground-app .pg-button, #playground-app .pg-select')
    .forEach(function (e) { var s = getComputedStyle(e);
      var a = lum(rgb(s.color)), b = lum(rgb(s.backgroundColor));
      worst = Math.min(worst, (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)); count++; });
  document.body.setAttribute('data-contrast', worst.toFixed(2) + '/' + count);
}, 500); });
</script>
"""


@pytest.mark.browser
@pytest.mark.skipif(BROWSER is None, reason="no Chromium on this machine: the page was not run")
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_control_is_legible_in_the_themes_light_and_dark_modes(tmp_path, theme):
    """The page inside the book's theme (pydata-sphinx-theme's stylesheet, its mode set as
    the theme sets it): every button and menu's text against its own background has a
    contrast ratio of at least 4.5 (WCAG AA), in both modes."""
    page = standalone_page(tmp_path)
    shutil.copy(_theme_stylesheet(), tmp_path / "theme.css")
    text = page.read_text()
    text = text.replace("<html>", f'<html data-theme="{theme}">')
    text = text.replace("</head>", '<link rel="stylesheet" href="../theme.css"></head>')
    page.write_text(text.replace("</body>", CONTRAST_PROBE + "</body>"))
    dom = measure_pages.dump_dom(page, budget_ms=5000, timeout=120)
    (found,) = re.findall(r'data-contrast="([\d.]+)/(\d+)"', dom) or [("0", "0")]
    worst, count = float(found[0]), int(found[1])
    assert count >= 5, f"{theme}: {count} controls found"
    assert worst >= 4.5, f"{theme}: the least legible control has a contrast of {worst}"
