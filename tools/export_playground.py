"""Export the generalising chapter's saved random-maze agents for the book's playground page.

Reads the planning agent (``companion/data/ppo_value_iteration_maze.eqx``) and the
propagation agent (``ppo_random_maze.eqx``), each with its configuration in the ``.json``
beside it, and writes ``book/_static/playground/weights.js``, which
``book/_static/playground/agent.js`` reads in the browser.

    python tools/export_playground.py          # write weights.js
    python tools/export_playground.py --check  # exit 1 if weights.js is stale

tests/book/test_playground.py checks that the committed file is what this script writes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from companion.agents import ppo
from companion.playground import AGENTS, load_agent

OUT = Path(__file__).resolve().parent.parent / "book" / "_static" / "playground" / "weights.js"

#: Version tag of the exported weights; agent.js refuses any other.
EXPORT_FORMAT = "drljax-maze-playground-2"


def _named_arrays(model) -> tuple[str, dict]:
    """``(network name, {array name: array})`` of a model the playground can run."""
    named = {}
    if isinstance(model, ppo.PropagationActorCritic):
        network = "propagation"
        for name in ("embed", "w_self", "w_nbr", "w_in", "bias"):
            named[name] = getattr(model, name)
    elif isinstance(model, ppo.ValueIterationActorCritic):
        network = "value_iteration"
        named["embed"], named["log_cost"] = model.embed, model.log_cost
        for name in ("policy_hidden", "policy_out"):
            layer = getattr(model, name)
            named[f"{name}.weight"], named[f"{name}.bias"] = layer.weight, layer.bias
    else:
        raise TypeError(
            f"model: expected a PropagationActorCritic or a ValueIterationActorCritic (the "
            f"playground computes their forward passes), got {type(model).__name__}"
        )
    for i, layer in enumerate(model.dense):
        named[f"dense.{i}.weight"], named[f"dense.{i}.bias"] = layer.weight, layer.bias
    if network == "propagation":
        named["policy.weight"] = model.policy_head.weight
        named["policy.bias"] = model.policy_head.bias
    named["value.weight"] = model.value_head.weight
    named["value.bias"] = jnp.reshape(model.value_head.bias, (1,))
    return network, named


def export_weights(model) -> dict:
    """A playground agent's arrays as plain lists, for the playground page.

    Returns:
        ``{"network": "value_iteration" | "propagation", "iterations": int | None, "arrays"}``
        (``None``: until settled); ``arrays``: name (``embed``, ``dense.{i}.weight``, ...) ->
        ``{"shape", "data"}``: float32, row-major, as Python floats; Linear weights ``(out, in)``.

    Raises:
        TypeError: for a model not a ``ValueIterationActorCritic`` or ``PropagationActorCritic``.
    """
    network, named = _named_arrays(model)
    arrays = {}
    for name, value in named.items():
        value = np.asarray(value, dtype=np.float32)
        arrays[name] = {"shape": list(value.shape), "data": [float(v) for v in value.ravel()]}
    return {"network": network, "iterations": model.iterations, "arrays": arrays}


def weights_js(models: dict | None = None) -> str:
    """The text of ``weights.js``: ``var MAZE_PLAYGROUND_WEIGHTS = {format, agents}``.

    Args:
        models: agent name (a key of ``companion.playground.AGENTS``) to model, exported into
            ``agents`` with :func:`export_weights`; ``None`` loads both saved agents.

    Raises:
        ValueError: for a name that is not in ``AGENTS``.
        TypeError: ``models`` not a dict, or a model :func:`export_weights` cannot export.
    """
    if models is None:
        models = {name: load_agent(name) for name in AGENTS}
    if not isinstance(models, dict):
        raise TypeError(f"models: expected a dict of agent name to model, got {models!r}")
    for name in models:
        if name not in AGENTS:
            raise ValueError(f"models: unknown value {name!r}; expected one of {tuple(AGENTS)}")
    exported = {name: export_weights(model) for name, model in models.items()}
    body = json.dumps({"format": EXPORT_FORMAT, "agents": exported}, separators=(",", ":"))
    return (
        "// The PPO chapter's saved random-maze agents (companion/data/ppo_*.eqx),\n"
        "// written by tools/export_playground.py: do not edit by hand.\n"
        f"var MAZE_PLAYGROUND_WEIGHTS = {body};\n"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=OUT, help="file to write (default: %(default)s)"
    )
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    text = weights_js()
    if args.check:
        current = args.out.read_text() if args.out.exists() else None
        if current != text:
            print(f"{args.out} is stale: run python tools/export_playground.py", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text.encode()):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
