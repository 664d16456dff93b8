"""Execute notebooks the way the book build does, on the tiny training budget."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def execute(
    nb: nbformat.NotebookNode,
    cwd: Path,
    budget: str = "tiny",
    timeout: int = 600,
    kernel_name: str = "python3",
    env: dict[str, str] | None = None,
):
    """Run ``nb`` in place in a fresh ``kernel_name`` kernel with ``DRLJAX_BUDGET=budget``;
    ``env`` sets more environment variables for the run (``JUPYTER_PATH`` to find a kernel),
    and a variable it maps to None is absent from the kernel's environment."""
    settings = {"DRLJAX_BUDGET": budget, **(env or {})}
    old = {name: os.environ.get(name) for name in settings}
    for name, value in settings.items():  # inherited by the kernel process
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        client = NotebookClient(
            nb, timeout=timeout, kernel_name=kernel_name, resources={"metadata": {"path": str(cwd)}}
        )
        client.execute()
    finally:
        for name, value in old.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value
    return nb


def outputs(nb: nbformat.NotebookNode):
    """Yield ``(cell_index, output)`` for every output of every code cell."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            for out in cell.get("outputs", []):
                yield i, out


def widget_states(nb: nbformat.NotebookNode) -> list[dict]:
    """The state of every widget model that nbclient recorded while running ``nb``."""
    store = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    return [model["state"] for model in store.get("state", {}).values()]


def check_episode_explorer(nb: nbformat.NotebookNode) -> None:
    """The DQN chapter's explorer (``companion.viz.step_explorer``): a 'step' slider over the
    episode above an image (ipywidgets 7 and 8 name these models alike)."""
    states = widget_states(nb)
    sliders = [s for s in states if s.get("_model_name") == "IntSliderModel"]
    assert [s["description"] for s in sliders] == ["step"], sliders
    assert sliders[0]["value"] == 0 and sliders[0]["max"] >= 1
    images = [s for s in states if s.get("_model_name") == "ImageModel"]
    assert len(images) == 1 and images[0]["format"] == "png", images
    assert not [s for s in states if s.get("_model_name") == "OutputModel"]
