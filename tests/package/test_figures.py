"""``companion.figures``: a matplotlib figure shown one panel at a time, each PNG recording its
figure, row and smallest type, and cut so that the panels of a row keep one height."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from companion import figures  # noqa: E402


def _sizes(pngs):
    return [Image.open(io.BytesIO(png)).size for png in pngs]


def test_a_grid_gives_one_png_a_panel_row_by_row_and_a_row_keeps_one_height():
    fig, axes = plt.subplots(2, 2, figsize=(8, 5), dpi=100)
    for ax in axes.ravel():
        ax.plot(np.arange(5))
        ax.set_title("a title")
    axes[1, 1].set_xlabel("a label below one panel of the row")
    axes[0, 0].legend(["line"], fontsize=9)
    fig.tight_layout()
    pngs = figures.panel_pngs(fig)
    records = [figures.panel_record(png) for png in pngs]
    assert [r["row"] for r in records] == [0, 0, 1, 1]
    assert len({r["figure"] for r in records}) == 1
    assert {r["font_px"] for r in records} == {12.5, 13.89}  # 9 and 10 points at 100 dpi
    (w0, h0), (w1, h1), (w2, h2), (w3, h3) = _sizes(pngs)
    assert h0 == h1 and h2 == h3  # the row's height: its x labels line up
    assert 350 < w0 < 420 and 350 < w1 < 420  # half of 8 inches at 100 dpi, with margins
    plt.close(fig)


def test_colorbars_and_twins_go_with_their_panel():
    fig, axes = plt.subplots(1, 2, figsize=(7, 3), dpi=100)
    image = axes[1].imshow(np.eye(3))
    fig.colorbar(image, ax=axes[1], label="colour")
    axes[0].twinx().plot([1, 2])
    fig.tight_layout()
    pngs = figures.panel_pngs(fig)
    assert len(pngs) == 2
    assert _sizes(pngs)[1][0] > _sizes(pngs)[0][0] * 0.8  # the colorbar is in the second
    plt.close(fig)


def test_a_single_panel_keeps_its_figure_text_and_several_refuse_it():
    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    fig.suptitle("the whole figure", fontsize=7)
    (png,) = figures.panel_pngs(fig)
    assert figures.panel_record(png)["font_px"] == pytest.approx(7 * 100 / 72, abs=0.01)
    plt.close(fig)
    fig, axes = plt.subplots(1, 2)
    fig.suptitle("no panel holds this")
    with pytest.raises(ValueError, match="'no panel holds this'.*belongs to no panel"):
        figures.panel_pngs(fig)
    plt.close(fig)


def test_show_panels_displays_each_panel_and_closes_the_figure(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setattr("companion.figure_words.editions", lambda: ("en",))
    fig, axes = plt.subplots(1, 3, figsize=(9, 3))
    figures.show_panels(fig)
    assert len(shown) == 3 and all(s.format == "png" for s in shown)
    assert not plt.fignum_exists(fig.number)


def test_show_panels_shows_the_panels_once_in_each_edition(monkeypatch):
    """In the book's build every panel comes in English, then in Japanese, each PNG
    recording its language and its words (the page's alternative text)."""
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setattr("companion.figure_words.editions", lambda: ("en", "ja"))
    fig, axes = plt.subplots(1, 2, figsize=(8, 3))
    axes[0].set_title("Training loss")
    axes[0].set_xlabel("step")
    figures.show_panels(fig)
    records = [figures.panel_record(s.data) for s in shown]
    assert [r["lang"] for r in records] == ["en", "en", "ja", "ja"]
    assert records[0]["alt"] == "Training loss; step"
    assert records[2]["alt"] == "学習の損失; ステップ"
    assert records[0]["figure"] != records[2]["figure"]  # two figures for the book's rows


def test_a_png_without_the_record_has_none():
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buffer, format="png")
    assert figures.panel_record(buffer.getvalue()) is None
