"""Array-level agreement between a chapter's code in view and the companion package.

A chapter writes an idea in plain view (the replay buffer, the DQN loop, the PPO rollout, GAE,
the PPO loss and loop) and shows that it gives what ``companion`` gives. The chapter's printed
line is for the reader; the test reads the arrays. When the tests execute a notebook
(``conftest.executed_notebook``), each probe below runs as a cell of its own right after the
cell that holds its anchor, so that it sees that cell's variables before a later cell reuses a
name. It displays one output of type ``MIME``: ``{check: {"max_abs_diff": float, "leaves":
int, "spread": float}}``, where ``spread`` is the largest max − min over the compared leaves
(a comparison of constants is no comparison). After the run the probe cells are taken out
again and their results kept in the notebook's metadata (``agreement``), so that the cells the
other tests read are the chapter's own.
"""

from __future__ import annotations

import json

import nbformat

MIME = "application/vnd.drljax.agreement+json"

_HELPERS = """
def __agreement(checks):
    import jax as _jax
    import numpy as _np
    from IPython.display import display as _display

    def _compare(a, b):
        xs, ys = _jax.tree.leaves(a), _jax.tree.leaves(b)
        assert len(xs) == len(ys) and xs, (len(xs), len(ys))
        diff, spread = 0.0, 0.0
        for x, y in zip(xs, ys):
            x, y = _np.asarray(x, dtype=_np.float64), _np.asarray(y, dtype=_np.float64)
            assert x.shape == y.shape, (x.shape, y.shape)
            diff = max(diff, float(_np.max(_np.abs(x - y))) if x.size else 0.0)
            spread = max(spread, float(_np.ptp(x)) if x.size else 0.0)
        return {"max_abs_diff": diff, "leaves": len(xs), "spread": spread}

    _display({"MIME": {name: _compare(*pair) for name, pair in checks.items()}}, raw=True)
""".replace("MIME", MIME)

#: ``{notebook stem: [(anchor, probe code)]}``; the probe calls ``__agreement({name: (a, b)})``.
PROBES: dict[str, list[tuple[str, str]]] = {
    # the episode sampler and the returns that the policy-gradient page takes from the
    # companion, against the first page's code in view (same keys: the same episodes)
    "05_rl_foundations": [
        (
            "def episode(",
            """__agreement({
    "episode in view against tabular.sample_episode": (
        jax.jit(jax.vmap(episode, (0, None, None)))(
            jax.random.split(jax.random.key(8), 16), random_policy, index[start]
        ),
        jax.jit(jax.vmap(tabular.sample_episode, (None, 0, None, None)))(
            tabular.maze_mdp(walls, target),
            jax.random.split(jax.random.key(8), 16),
            random_policy,
            index[start],
        ),
    ),
    "returns in view against tabular.discounted_returns": (
        returns(jax.random.uniform(jax.random.key(0), (100,)), GAMMA),
        tabular.discounted_returns(jax.random.uniform(jax.random.key(0), (100,)), GAMMA),
    ),
})""",
        ),
    ],
    "07_dqn": [
        (
            "def buffer_sample(",
            """__agreement({
    "replay buffer contents": (mine["data"], theirs.data),
    "replay buffer position and size": ((mine["position"], mine["size"]), (theirs.position, theirs.size)),
    "replay buffer samples": (buffer_sample(mine, key, 5), replay.replay_sample(theirs, key, 5)),
})""",
        ),
        (
            "make_train_in_view(cfg, network, env)",
            """__agreement({
    "DQN loop final parameters": (mine.params, theirs.params),
    "DQN loop kept parameters": (mine.best_params, theirs.best_params),
    "DQN loop losses": (mine_metrics["loss"], their_metrics["loss"][learned]),
    "DQN loop evaluations": (mine_metrics["eval_return"], their_metrics["eval_return"]),
})""",
        ),
    ],
    "08_ppo_maze": [
        (
            "ppo.rollout(*args)",
            """__agreement({
    "PPO rollout": (traj, traj_companion),
    "next values gathered against every next observation": (value_tp1_gathered, value_tp1_plain),
})""",
        ),
        (
            "def gae_loop(",
            """__agreement({
    "GAE in view against the companion": (advantages, adv_companion),
    "GAE in view against a plain loop": (advantages, adv_loop),
})""",
        ),
        (
            "def ppo_loss_in_view(",
            """__agreement({
    "PPO loss": (ppo_loss_in_view(model, batch), ppo.ppo_loss(model, batch)[0]),
})""",
        ),
    ],
    "08_ppo_training": [
        (
            "make_train_in_view(two",
            """__agreement({
    "PPO loop parameters": (mine.params, runner.params),
    "PPO loop optimiser state": (mine.opt_state, runner.opt_state),
    "PPO loop model": (my_model, their_model),
    "PPO loop metrics": (
        {k: mine_metrics[k] for k in ("policy_loss", "value_loss", "entropy")},
        {k: their_metrics[k] for k in ("policy_loss", "value_loss", "entropy")},
    ),
})""",
        ),
    ],
}


def add_probes(nb: nbformat.NotebookNode, stem: str) -> nbformat.NotebookNode:
    """``nb`` with each of ``stem``'s probes as a cell right after the one cell holding its
    anchor.

    Raises:
        LookupError: if an anchor is in no code cell or in more than one.
    """
    for anchor, code in PROBES.get(stem, []):
        where = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and anchor in c.source]
        if len(where) != 1:
            raise LookupError(f"{stem}: anchor {anchor!r} is in {len(where)} code cells, not 1")
        probe = nbformat.v4.new_code_cell(_HELPERS + "\n" + code + "\ndel __agreement\n")
        probe.metadata["agreement_probe"] = True
        nb.cells.insert(where[0] + 1, probe)
    return nb


def take_out_probes(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The executed ``nb`` without its probe cells, their results in ``nb.metadata.agreement``:
    ``{check: {"max_abs_diff", "leaves", "spread"}}``."""
    found, kept = {}, []
    for cell in nb.cells:
        if not cell.metadata.get("agreement_probe"):
            kept.append(cell)
            continue
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                raise RuntimeError(f"an agreement probe failed: {out.ename}: {out.evalue}")
            data = out.get("data", {}).get(MIME)
            if data is not None:
                found.update(json.loads(data) if isinstance(data, str) else data)
    nb.cells = kept
    nb.metadata["agreement"] = found
    return nb
