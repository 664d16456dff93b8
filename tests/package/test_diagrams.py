"""The book's diagrams: each draws the symbols its chapter uses, keeps every text inside the
figure, inside its box and clear of the other texts, at sizes a phone can read; bad
arguments raise; a chapter that imports one diagram is re-executed when that one changes."""

import re
import sys

import matplotlib
import pytest
import setuptools
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from notebook_runner import ROOT

from companion import diagrams
from companion.diagrams import _draw

matplotlib.use("Agg")

#: Each diagram and texts it must show (the chapters' symbols, as mathtext).
EXPECTED = {
    "agent_environment_loop": ["Agent", "Environment", r"action $a_t$", r"$s_{t+1}$", r"$r_t$"],
    "corridor_mdp": ["$s_1$", "$s_2$", "T", "right, $r = 1$", "$p = 1$"],
    "episode_endings": [
        "terminated",
        "truncated",
        r"target $r_t$",
        r"$r_t + \gamma\, V(s_{t+1})$",
        "reset",
        "next episode",
    ],
    "jit_compile": ["Python function", "traced computation", "compiled program", "same shape"],
    "vmap_batch": ["predict", "vmap(predict)", "(4,)", "(3,)", "(batch, 4)", "(batch, 3)"],
    "scan_carry": ["body", "init", "carry", "xs", "$x_0$", "$y_2$", "ys: every y stacked"],
    "init_apply_and_module": [
        "init(key, x)",
        "apply(params, x)",
        "eqx.partition",
        "params",
        "static",
    ],
    "dqn_data_flow": [
        "Replay buffer",
        r"Target net $Q_{\theta^-}$",
        r"Online net $Q_\theta$",
        "TD target $y$",
        r"\epsilon$-greedy",
        r"$(Q_\theta(s, a) - y)^2$",
        r"\nabla_\theta",
        r"\theta^- \leftarrow \theta",
        r"(1 - \mathrm{terminated})",
    ],
    "ppo_iteration": ["Rollout", "GAE", r"$T$ steps", r"$N$ envs", "$A_t$", r"\lambda", "clipped"],
    "value_backups": ["$v_{0}$", "$v_{1}$", "$-c$", "$-2c$", "$-6c$", "settled", r"$-\infty$"],
    "data_parallel": ["part 1", "part D", "device 2", "all-reduce: pmean", r"\bar g", "Adam step"],
}


def _drawn(name, **kwargs):
    fig = getattr(diagrams, name)(**kwargs)
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig


def _texts(fig):
    return [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text()]


def test_every_diagram_is_listed():
    assert set(EXPECTED) == set(diagrams.__all__)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shows_its_symbols_inside_the_figure_at_a_legible_size(name):
    fig = _drawn(name)
    assert isinstance(fig, Figure)
    texts = _texts(fig)
    shown = [t.get_text() for t in texts]
    for expected in EXPECTED[name]:
        assert any(expected in s for s in shown), f"{name}: no text contains {expected!r}"
    assert fig.get_figwidth() <= _draw.MAX_WIDTH
    renderer = fig.canvas.get_renderer()
    inside = fig.bbox
    for t in texts:
        extent = t.get_window_extent(renderer)
        assert t.get_fontsize() >= _draw.SMALL, f"{name}: {t.get_text()!r} is too small"
        assert (
            extent.x0 >= inside.x0
            and extent.y0 >= inside.y0
            and extent.x1 <= inside.x1
            and extent.y1 <= inside.y1
        ), f"{name}: {t.get_text()!r} leaves the figure ({extent} outside {inside})"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_texts_stay_in_their_boxes_and_apart(name):
    fig = _drawn(name)
    renderer = fig.canvas.get_renderer()
    for drawn in fig.boxes:
        outline = drawn.patch.get_window_extent(renderer)
        for t in drawn.texts:
            if t.get_text():
                extent = t.get_window_extent(renderer)
                assert outline.contains(extent.x0, extent.y0) and outline.contains(
                    extent.x1, extent.y1
                ), f"{name}: {t.get_text()!r} spills out of its box"
    # apart by at least 3 px (a few hundredths of an inch) on every side
    extents = [(t.get_text(), t.get_window_extent(renderer).padded(1.5)) for t in _texts(fig)]
    for i, (a, box_a) in enumerate(extents):
        for b, box_b in extents[i + 1 :]:
            assert not box_a.overlaps(box_b), f"{name}: {a!r} overlaps {b!r}"


def test_a_figure_is_white_and_shows_as_svg_with_its_text_as_paths():
    fig = diagrams.dqn_data_flow()
    assert fig.get_facecolor() == (1.0, 1.0, 1.0, 1.0)  # not transparent on a dark page
    svg = fig._repr_svg_()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "<text" not in svg  # glyphs as paths: no font needed where the page is read
    width_pt = float(re.search(r'<svg[^>]*width="([\d.]+)pt"', svg).group(1))
    assert width_pt == pytest.approx(72 * fig.get_figwidth())
    assert fig._repr_svg_() == svg  # the same bytes on every execution


def test_the_copy_period_is_shown_and_checked():
    fig = _drawn("dqn_data_flow", target_update_period=10)
    assert any("every 10 gradient steps" in t.get_text() for t in _texts(fig))
    with pytest.raises(ValueError, match="target_update_period: expected a positive int"):
        diagrams.dqn_data_flow(target_update_period=0)
    with pytest.raises(TypeError, match="target_update_period: expected a positive int"):
        diagrams.dqn_data_flow(target_update_period=10.0)


def test_backups_reach_cells_by_moves_not_by_distance():
    """The cell two rows below the target, behind a wall, is 6 moves away: 4 backups do not
    reach it, 6 do, and then the values are settled."""
    fig = _drawn("value_backups", maze=("..T", ".##", "..."), iterations=(0, 1, 2, 4))
    shown = [t.get_text() for t in _texts(fig)]
    assert {"$0$", "$-c$", "$-2c$", "$-4c$"} <= set(shown)
    assert "$-5c$" not in shown and "$-6c$" not in shown
    assert not any("settled" in s for s in shown)
    settled = [t.get_text() for t in _texts(_drawn("value_backups", maze=("..T", ".##", "...")))]
    assert "$v_{6}$: settled" in settled and "$-6c$" in settled


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"maze": "..T"}, TypeError, "maze: expected a non-empty sequence of strings"),
        ({"maze": ("..T", ".")}, ValueError, "maze: expected strings of one length"),
        ({"maze": ("...", "...")}, ValueError, "maze: expected exactly one target"),
        ({"maze": ("T" + "." * 4,)}, ValueError, "maze: expected at most 4 x 4 cells"),
        ({"iterations": (0, 2, 1, 3)}, ValueError, "iterations: expected four increasing"),
        ({"iterations": (0, 1, 2)}, ValueError, "iterations: expected four increasing"),
    ],
)
def test_a_bad_maze_or_iterations_raise(kwargs, error, match):
    with pytest.raises(error, match=match):
        diagrams.value_backups(**kwargs)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'dqn_flow'"):
        diagrams.dqn_flow  # noqa: B018


@pytest.mark.subprocess
def test_a_chapter_reads_only_the_module_of_its_diagram(tmp_path):
    """The book's cache re-executes a chapter when a file its kernel read changes
    (tools/book_cache.py records them): drawing one diagram reads the module that draws it
    and the shared primitives, not another chapter's diagram (``companion.diagrams`` loads a
    name's module only)."""
    import subprocess

    sys.path.insert(0, str(ROOT / "tools"))
    import book_cache

    record = tmp_path / "reads"
    code = "from companion.diagrams import dqn_data_flow\n\ndqn_data_flow()"
    env = book_cache.recording_env(record, ROOT)
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True, timeout=300)
    read = set(book_cache.recorded_reads(record, ROOT))
    assert {
        "companion/diagrams/agents.py",
        "companion/diagrams/_draw.py",
        "companion/diagrams/__init__.py",
    } <= read, read
    assert "companion/diagrams/rl.py" not in read and "companion/diagrams/planning.py" not in read


def test_the_package_ships_the_diagrams():
    """pyproject.toml's package list includes companion.diagrams, so Colab's install has it."""
    found = setuptools.find_packages(str(ROOT), include=["companion*"])
    assert "companion.diagrams" in found
