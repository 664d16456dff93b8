"""The repository's build settings stay as the README promises."""

import re

import nbformat
import yaml

from notebook_runner import NOTEBOOKS, ROOT


def _requirements():
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return [l.split("#")[0].strip() for l in lines if l.split("#")[0].strip()]


def test_requirements_are_exact_pins():
    for req in _requirements():
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][0-9A-Za-z.]*", req), req


def test_jupyter_book_stays_on_1x():
    (jb,) = [r for r in _requirements() if r.lower().startswith("jupyter-book")]
    assert jb.split("==")[1].startswith("1.")


def test_toc_lists_existing_pages_and_every_notebook():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [ch["file"] for part in toc["parts"] for ch in part["chapters"]]
    for f in files:
        assert any((ROOT / f"{f}{ext}").exists() for ext in (".md", ".ipynb")), f
    for nb in NOTEBOOKS:
        assert f"notebooks/{nb.stem}" in files, f"{nb.name} is not in _toc.yml"


def test_build_settings():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "cache"
    assert config["execute"]["allow_errors"] is False
    assert config["execute"]["timeout"] >= 600
    assert config["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert config["repository"]["branch"] == "main"
    assert "--warningiserror" in (ROOT / "Makefile").read_text()


def test_setup_cells_install_from_the_configured_repository():
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    branch = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["branch"]
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        setup = [c for c in nb.cells if "colab-setup" in c.metadata.get("tags", [])]
        assert len(setup) == 1, path.name
        source = setup[0].source
        assert f'REPO = "{url}"' in source and f"git+{{REPO}}@{branch}" in source, path.name
        # the libraries it pins are the versions the book is built with
        pins = dict(r.split("==") for r in _requirements())
        for pin in re.findall(r"([A-Za-z0-9_.\-]+)==([0-9][0-9A-Za-z.]*)", source):
            assert pins.get(pin[0]) == pin[1], f"{path.name}: {pin[0]}=={pin[1]} is not in requirements.txt"
        assert "jax==" not in source and "jaxlib" not in source  # never touch Colab's JAX


def test_every_notebook_opens_with_a_colab_badge():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]["url"].removeprefix("https://github.com/")
    for path in NOTEBOOKS:
        first = nbformat.read(path, as_version=4).cells[0]
        link = (f"https://colab.research.google.com/github/{repo}/blob/"
                f"{config['repository']['branch']}/notebooks/{path.name}")
        assert first.cell_type == "markdown" and link in first.source, path.name
