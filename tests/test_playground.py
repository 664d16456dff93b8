"""The maze playground: the page's JavaScript agent equals the JAX agent, its environment
equals jumanji's Maze, its weights are the saved agent's, and the page works in Chromium.

The JavaScript runs in V8 through mini-racer (a pip wheel, pinned in requirements.txt).
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from companion import playground
from companion.agents import ppo
from companion.envs import maze as maze_lib
from companion.envs.autoreset import env_reset

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "book" / "_static" / "playground"
NUM_MAZES = 1000
#: States kept per maze: the start and these steps of a sampled rollout.
KEPT_STEPS = (0, 2, 5, 8)


@pytest.fixture(scope="module")
def model():
    return playground.load_random_maze_agent()


@pytest.fixture(scope="module")
def js():
    """V8 with weights.js and agent.js loaded."""
    mini_racer = pytest.importorskip("py_mini_racer")
    ctx = mini_racer.MiniRacer()
    ctx.eval((STATIC / "weights.js").read_text())
    ctx.eval((STATIC / "agent.js").read_text())
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


def test_committed_weights_are_what_the_export_writes(model):
    text = (STATIC / "weights.js").read_text()
    assert text == playground.weights_js(model), "run python tools/export_playground.py"


def test_export_holds_every_array_of_the_model(model):
    arrays = playground.export_weights(model)["arrays"]
    leaves = [x for x in jax.tree.leaves(model) if hasattr(x, "shape")]
    assert sum(int(np.prod(a["shape"])) for a in arrays.values()) == sum(x.size for x in leaves)
    # Rebuild the model from the exported lists: the same outputs, bit for bit.
    get = {
        k: jnp.asarray(np.array(v["data"], np.float32).reshape(v["shape"]))
        for k, v in arrays.items()
    }
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
def rollout_states(model):
    return _states_from_rollouts(model)


def _js_policy(js, walls, rows):
    batch = {
        "rows": 10,
        "cols": 10,
        "walls": [_wall_string(w) for w in walls],
        "states": rows.tolist(),
    }
    return js(f"MazeAgent.policyBatch(MAZE_PLAYGROUND_WEIGHTS, {json.dumps(batch)})")


def test_javascript_agent_equals_jax_on_random_mazes(js, rollout_states):
    walls, rows, logits, value = rollout_states
    assert len(rows) > 3 * NUM_MAZES
    probs = np.asarray(jax.nn.softmax(logits, axis=-1))
    greedy = np.argmax(logits, axis=-1)
    out = _js_policy(js, walls, rows)
    js_probs = np.asarray(out["probs"])
    # Illegal moves (jumanji's action mask): probability exactly 0 on both sides.
    illegal = np.isneginf(logits)
    assert illegal.any() and np.all(js_probs[illegal] == 0) and np.all(probs[illegal] == 0)
    np.testing.assert_array_equal(np.asarray(out["greedy"]), greedy)
    np.testing.assert_allclose(js_probs, probs, atol=1e-5, rtol=0)
    np.testing.assert_allclose(np.asarray(out["value"]), value, atol=1e-4, rtol=0)
    # The agent is far from uniform: the comparison would be weak if the weights were zero.
    assert np.mean(np.max(js_probs, axis=-1) > 0.9) > 0.5


def test_javascript_agent_equals_jax_in_float64(js, model, rollout_states):
    """agent.js computes in float64: against JAX in float64 it agrees to rounding, so the
    differences from float32 JAX (the test above) are float32 rounding, not a wrong formula."""
    walls, rows, _, _ = rollout_states
    rows = rows[:500]
    masks = np.stack([playground.action_mask(walls[r[0]], r[1:3]) for r in rows])
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
    out = _js_policy(js, walls, rows)
    np.testing.assert_allclose(np.asarray(out["probs"]), probs, atol=1e-12, rtol=0)
    np.testing.assert_allclose(np.asarray(out["value"]), np.asarray(value), atol=1e-12, rtol=0)


def test_step_equals_jumanji_and_javascript(js):
    time_limit = 12
    env = maze_lib.make_maze(time_limit=time_limit)
    rng = np.random.default_rng(0)
    step = jax.jit(env.step)
    seen = set()
    for k, key in enumerate(jax.random.split(jax.random.key(7), 20)):
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
        path = playground.shortest_path(walls, start, target)
        assert len(path) - 1 == maze_lib.shortest_path_length(walls, start, target)
        assert path[0] == start and path[-1] == target
        for a, b in itertools.pairwise(path):
            assert abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1 and not walls[b]
        js_path = js(f"MazeAgent.shortestPath({_js_maze(walls, start, target)})")
        assert len(js_path) == len(path) and js_path[-1] == list(target)
    walls = np.zeros((3, 3), bool)
    walls[1, :] = True
    assert playground.shortest_path(walls, (0, 0), (2, 2)) is None
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


def test_bad_input_is_named(js):
    walls = np.zeros((4, 4), bool)
    with pytest.raises(ValueError, match="action"):
        playground.step(walls, (0, 0), (3, 3), 4)
    with pytest.raises(ValueError, match="agent"):
        playground.step(walls, (5, 0), (3, 3), 0)
    with pytest.raises(ValueError, match="time_limit"):
        playground.step(walls, (0, 0), (3, 3), 0, time_limit=0)
    with pytest.raises(TypeError, match="PropagationActorCritic"):
        playground.export_weights("a model")
    walls[0, 1] = walls[1, 0] = True
    with pytest.raises(ValueError, match="no legal move"):
        playground.agent_policy(None, walls, (0, 0), (3, 3))
    with pytest.raises(Exception, match="maze.agent: cell \\[0,1\\] is a wall"):
        js(
            'MazeAgent.step({"rows": 2, "cols": 2, "walls": [0, 1, 0, 0], '
            '"agent": [0, 1], "target": [1, 1]}, 0)'
        )


# --- the page in headless Chromium ---------------------------------------------------------

BROWSER = next(
    (shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)),
    None,
)


def standalone_page(folder: Path) -> Path:
    """The playground page's raw HTML block in a bare page, laid out like the built book
    (``book/playground.html`` next to ``_static/playground/``)."""
    text = (ROOT / "book" / "playground.md").read_text()
    (block,) = re.findall(r"```\{raw\} html\n(.*?)\n```", text, flags=re.DOTALL)
    shutil.copytree(STATIC, folder / "_static" / "playground")
    page = folder / "book" / "playground.html"
    page.parent.mkdir()
    # The book wraps the page in a section whose id is the title's slug: the script must
    # leave it alone.
    body = f'<section id="maze-playground"><h1>Maze playground</h1>{block}</section>'
    page.write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{body}</body></html>"
    )
    return page


@pytest.mark.skipif(
    BROWSER is None,
    reason="no Chromium on this machine (chromium, "
    "chromium-browser or google-chrome on PATH): the page was not run",
)
def test_page_draws_a_maze_and_the_agent_reaches_the_target(tmp_path):
    page = standalone_page(tmp_path)
    dom = subprocess.run(
        [
            BROWSER,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--virtual-time-budget=20000",
            "--dump-dom",
            page.resolve().as_uri() + "?selftest=1",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert 'data-selftest="passed"' in dom, re.findall(r'data-selftest="[^"]*"', dom) or dom[-2000:]
    assert 'data-outcome="target"' in dom
    assert "<h1>Maze playground</h1>" in dom
    assert len(re.findall(r'class="pg-cell[^"]*\bpg-wall\b', dom)) >= 9
    assert re.search(r"Reached the target in \d+ steps", dom)


# --- the ipywidgets version -------------------------------------------------------------------


def test_widget_edits_the_maze_and_runs_the_agent(model):
    widgets = pytest.importorskip("ipywidgets")
    walls = np.zeros((5, 5), bool)
    box = playground.maze_playground(model, walls, (0, 0), (0, 4), delay_s=0)
    assert isinstance(box, widgets.VBox)
    mode, buttons = box.children[0], box.children[1].children
    episode, cells = box.episode, box.cells
    # A wall column with one gap, drawn by clicks: (0..3, 2) walls, (4, 2) free.
    for r in range(4):
        cells[r * 5 + 2].click()
    assert episode.walls[:4, 2].all() and not episode.walls[4, 2]
    assert not walls.any()  # the caller's array is left alone
    assert "shortest path: 12 steps" in box.children[3].value
    mode.value = "target"
    cells[0 * 5 + 1].click()  # the target next to the start
    assert episode.target == (0, 1)
    buttons[1].click()  # Run
    assert episode.agent == (0, 1) and episode.steps == 1
    assert "Reached the target in 1 steps" in box.children[3].value
    buttons[2].click()  # Reset
    assert episode.agent == (0, 0) and episode.steps == 0 and episode.trail == [(0, 0)]
    mode.value = "wall"
    cells[0].click()  # the start is not a wall
    assert not episode.walls[0, 0]


def test_widget_time_limit_and_bad_grid(model):
    pytest.importorskip("ipywidgets")
    walls = np.zeros((3, 3), bool)
    walls[1, :] = True  # no path from the top row to the bottom row
    box = playground.maze_playground(model, walls, (0, 0), (2, 2), time_limit=5, delay_s=0)
    assert "No path" in box.children[3].value
    box.children[1].children[1].click()  # Run
    assert box.episode.steps == 5 and box.episode.reason == "time limit"
    assert box.episode.agent[0] == 0  # never crossed the wall
    with pytest.raises(ValueError, match="walls: expected a 2-D array"):
        playground.maze_playground(model, np.zeros(10, bool))
    with pytest.raises(ValueError, match="target: cell \\(1, 1\\) is a wall"):
        playground.maze_playground(model, walls, (0, 0), (1, 1))
    with pytest.raises(ValueError, match="both are cell"):
        playground.maze_playground(model, np.zeros((3, 3), bool), (0, 0), (0, 0))
