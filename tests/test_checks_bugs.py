"""Find-the-bug exercises, run both ways: the faulty function as the chapter prints it fails its
self-check with the symptom named; the one-line fix passes. (The chapters' solutions pass
their checks in the notebooks' own runs, tests/test_notebooks.py.)

The functions are read from the notebooks, so the test runs what students see.
"""

import ast

import equinox as eqx
import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest
from notebook_runner import ROOT

from companion.agents import dqn, ppo
from companion.checks import (
    CheckFailed,
    check_collector,
    check_decayed_training,
    check_q_learning,
    check_rollout_keys,
)
from companion.envs import cartpole
from companion.envs import maze as maze_lib
from companion.envs.autoreset import pooled_autoreset_step


def _cell(notebook: str, defines: str) -> str:
    """The source of the one code cell of ``notebook``, not a solution, that defines
    ``defines``."""
    nb = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    found = [
        c.source
        for c in nb.cells
        if c.cell_type == "code"
        and f"def {defines}(" in c.source
        and "solution" not in c.metadata.get("tags", [])
    ]
    assert len(found) == 1, f"{notebook}: {len(found)} cells define {defines}"
    return found[0]


def _definitions(source: str, namespace: dict) -> dict:
    """Execute only the imports and function definitions of ``source`` in a copy of
    ``namespace`` (the rest of the cell runs the chapter's demonstration)."""
    tree = ast.parse(source)
    tree.body = [
        node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom))
    ]
    scope = dict(namespace)
    exec(compile(tree, "<notebook cell>", "exec"), scope)
    return scope


def _one_line_fix(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"the faulty line {old!r} is not in the cell once"
    return source.replace(old, new)


def _passes(check, answer, capsys):
    check(answer)
    assert "check passed" in capsys.readouterr().out


# --- networks chapter: a step that compiles at every call --------------------------------


def _eqx_loss(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


NETWORKS = {"jax": jax, "jnp": jnp, "np": np, "eqx": eqx, "eqx_loss": _eqx_loss}


def test_decayed_training_both_ways(capsys):
    buggy = _cell("02_neural_networks", "train_decayed")
    with pytest.raises(CheckFailed, match=r"ran 8 times in 8 steps.*Python float"):
        check_decayed_training(_definitions(buggy, NETWORKS)["train_decayed"])
    fixed = _one_line_fix(
        buggy, "learning_rate = 0.1 * 0.97**step", "learning_rate = jnp.asarray(0.1 * 0.97**step)"
    )
    _passes(check_decayed_training, _definitions(fixed, NETWORKS)["train_decayed"], capsys)


def test_decayed_training_names_a_schedule_that_was_dropped():
    buggy = _cell("02_neural_networks", "train_decayed")
    constant = _one_line_fix(
        buggy, "learning_rate = 0.1 * 0.97**step", "learning_rate = jnp.asarray(0.1)"
    )
    with pytest.raises(CheckFailed, match="does not decay"):
        check_decayed_training(_definitions(constant, NETWORKS)["train_decayed"])


# --- DQN chapter: a termination flag one step late ----------------------------------------

DQN = {"jax": jax, "jnp": jnp, "np": np, "dqn": dqn, "cartpole": cartpole}


def test_collector_both_ways(capsys):
    buggy = _cell("07_dqn", "collect")
    with pytest.raises(CheckFailed, match="terminated is one step late"):
        check_collector(_definitions(buggy, DQN)["collect"])
    fixed = _one_line_fix(buggy, "terminated=terminated_t,", "terminated=timestep.terminated,")
    _passes(check_collector, _definitions(fixed, DQN)["collect"], capsys)


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("next_obs=timestep.next_obs,", "next_obs=timestep.obs,", "first observation of the next"),
        ("terminated=terminated_t,", "terminated=jnp.bool_(False),", "no transition is marked"),
        (
            "terminated=terminated_t,",
            "terminated=timestep.terminated | timestep.truncated | (obs_t[0] > 0.04),",
            "disagrees at steps",
        ),
    ],
)
def test_collector_names_other_faults(old, new, message):
    buggy = _cell("07_dqn", "collect")
    fixed_flag = _one_line_fix(buggy, "terminated=terminated_t,", "terminated=timestep.terminated,")
    source = buggy if old == "terminated=terminated_t," else fixed_flag
    with pytest.raises(CheckFailed, match=message):
        check_collector(_definitions(_one_line_fix(source, old, new), DQN)["collect"])


# --- PPO chapter: a key reused at every step ----------------------------------------------

_PPO_NAMES = {
    "jax": jax,
    "jnp": jnp,
    "np": np,
    "ppo": ppo,
    "maze_lib": maze_lib,
    "images_of": jax.vmap(maze_lib.observation_image),
    "step_env": jax.vmap(pooled_autoreset_step, in_axes=(None, None, 0, 0)),
}


def ppo_namespace(*step_edits) -> dict:
    """The PPO chapter's names with the functions of its section-3 cell, which defines
    ``rollout_step`` (one step of every environment; the find-the-bug rollout calls it), each
    ``(old, new)`` of ``step_edits`` applied to that cell first."""
    source = _cell("08_ppo_maze", "rollout_step")
    for old, new in step_edits:
        source = _one_line_fix(source, old, new)
    return _definitions(source, _PPO_NAMES)


PPO = ppo_namespace()


def test_rollout_keys_both_ways(capsys):
    buggy = _cell("08_ppo_maze", "rollout_with_a_bug")
    with pytest.raises(CheckFailed, match="key-reuse checker finds a key used twice"):
        check_rollout_keys(_definitions(buggy, PPO)["rollout_with_a_bug"])
    fixed = _one_line_fix(
        buggy,
        "return (env_state, timestep, key), transition",
        "return (env_state, timestep, next_key), transition",
    )
    _passes(check_rollout_keys, _definitions(fixed, PPO)["rollout_with_a_bug"], capsys)


def test_rollout_keys_names_the_symptom_when_the_checker_cannot_see_it():
    """The same fault with the key copied through its raw data, which the key-reuse checker
    does not follow: the check still finds it, from the actions' statistics."""
    buggy = _cell("08_ppo_maze", "rollout_with_a_bug")
    hidden = _one_line_fix(
        buggy,
        "next_key, key_t = jax.random.split(key)",
        "next_key, key_t = jax.random.split(jax.random.wrap_key_data(jax.random.key_data(key)))",
    )
    with pytest.raises(CheckFailed, match="takes its previous action again"):
        check_rollout_keys(_definitions(hidden, PPO)["rollout_with_a_bug"])


# --- foundations chapter: Q-learning that bootstraps past the target ----------------------

FOUNDATIONS = {"jax": jax, "jnp": jnp}


def test_q_learning_both_ways(capsys):
    buggy = _cell("05_rl_foundations", "q_learning_buggy")
    with pytest.raises(CheckFailed, match="values up to 20.*bootstraps past the end"):
        check_q_learning(_definitions(buggy, FOUNDATIONS)["q_learning_buggy"])
    fixed = _one_line_fix(
        buggy,
        "td_target = r + gamma * best_next",
        "td_target = r + gamma * (1.0 - d) * best_next",
    )
    _passes(check_q_learning, _definitions(fixed, FOUNDATIONS)["q_learning_buggy"], capsys)
