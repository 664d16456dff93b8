"""One training convention for every agent: ``make_train(config, network, env)`` returns an
un-jitted ``train(key) -> (state, metrics)``; the chapters' loops in view follow it too."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import jax
import pytest

# the tests' one set of tiny programs, which the compilation cache already holds
from tiny import TINY_CONV_NET, TINY_DQN, TINY_PPO, TINY_Q_NETWORK

from companion import parallel
from companion.agents import dqn, ppo
from companion.envs import cartpole
from companion.envs import maze as maze_lib

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _builders():
    """(name, make_train-like builder, its arguments after (config, network, env))."""
    empty = maze_lib.make_maze_task("empty")
    return [
        (
            "dqn.make_train",
            dqn.make_train,
            (TINY_DQN, TINY_Q_NETWORK, cartpole.CartPole()),
            (),
        ),
        ("ppo.make_train", ppo.make_train, (TINY_PPO, TINY_CONV_NET, empty), ()),
        (
            "parallel.make_data_parallel_train",
            parallel.make_data_parallel_train,
            (TINY_PPO, TINY_CONV_NET, empty),
            (parallel.make_mesh(1),),
        ),
    ]


@pytest.mark.parametrize("name", [b[0] for b in _builders()])
def test_every_trainer_is_called_the_same_way(name):
    _, builder, (config, network, env), extra = next(b for b in _builders() if b[0] == name)
    assert list(inspect.signature(builder).parameters)[:3] == ["config", "network", "env"]
    train = builder(config, network, env, *extra)
    assert inspect.isfunction(train), f"{name}: train should be a plain, un-jitted function"
    assert not hasattr(train, "lower"), f"{name}: train is jitted; the caller jits it"
    state, metrics = jax.jit(train)(jax.random.key(0))
    assert hasattr(state, "_fields") and "params" in state._fields, type(state)
    assert isinstance(metrics, dict) and metrics
    again, _ = train(jax.random.key(0))  # called directly, not jitted: the same run
    for a, b in zip(jax.tree.leaves(state.params), jax.tree.leaves(again.params)):
        assert jax.numpy.allclose(a, b, atol=1e-5)


def _in_view_loops():
    """``(notebook, FunctionDef)`` of every ``make_train*`` written out in a chapter."""
    found = []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] != "code" or "def make_train" not in source:
                continue
            lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
            for node in ast.walk(ast.parse("\n".join(lines))):
                if isinstance(node, ast.FunctionDef) and node.name.startswith("make_train"):
                    found.append((path.stem, node))
    return found


def _own_returns(fn: ast.FunctionDef) -> list:
    """The values ``fn`` itself returns (not those of functions defined inside it)."""
    found, todo = [], list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            found.append(node.value)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return found


def test_the_chapters_loops_in_view_follow_the_convention():
    loops = _in_view_loops()
    assert {stem for stem, _ in loops} >= {"07_dqn", "08_ppo_training"}
    for stem, fn in loops:
        args = [a.arg for a in fn.args.args]
        assert args[:3] == ["config", "network", "env"], (stem, fn.name, args)
        inner = [n for n in fn.body if isinstance(n, ast.FunctionDef) and n.name == "train"]
        assert inner and [a.arg for a in inner[0].args.args] == ["key"], (stem, fn.name)
        returned = _own_returns(fn)
        assert any(isinstance(v, ast.Name) and v.id == "train" for v in returned), (stem, fn.name)
        outs = _own_returns(inner[0])
        assert outs and all(_a_pair(v) for v in outs), (
            f"{stem}: {fn.name}'s train should return (state, metrics)"
        )


def _a_pair(value) -> bool:
    """A returned ``(state, metrics)``: a tuple of two, or a ``lax.scan``'s (carry, outputs)."""
    if isinstance(value, ast.Tuple):
        return len(value.elts) == 2
    return isinstance(value, ast.Call) and ast.unparse(value.func).endswith("lax.scan")
