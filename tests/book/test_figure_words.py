"""The figures' words in each edition's language (``companion.figure_words``): the catalogue
``figures`` and its extraction (``tools/figure_messages.py``), plots and diagrams drawn in
Japanese, the animation player's controls, and each edition's pages keeping their own
images (``book/_ext/figure_widths.py``)."""

from __future__ import annotations

import html
import json
import re
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from docutils import nodes  # noqa: E402

from companion import figure_words, figures  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import editions  # noqa: E402  (tools/editions.py)
import figure_messages  # noqa: E402  (tools/figure_messages.py)

JAPANESE = "[\u3040-\u30ff\u4e00-\u9fff]"


def test_a_drawn_text_finds_its_translation_with_its_figures_filled_in():
    ja = figure_words.translate
    assert ja("Training loss", "ja") == "学習の損失"
    assert ja("Episode lengths of 64 random agents", "ja") == (
        "64 個のランダムなエージェントのエピソード長"
    )
    # a figure that is itself a message is translated too: "greedy" in "{value} policy"
    assert ja("greedy policy", "ja") == "貪欲方策"
    assert ja("$v_{6}$: settled", "ja") == "$v_{6}$: 収束"  # maths' braces stay
    assert ja("not a message of the catalogue", "ja") == "not a message of the catalogue"
    assert ja("Training loss", "en") == "Training loss"
    with pytest.raises(ValueError, match="language: expected one of en, ja, got 'fr'"):
        ja("Training loss", "fr")
    with pytest.raises(TypeError, match="text: expected a str, got int"):
        ja(3, "ja")


def _figure():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1], label="seed 0")
    ax.legend()
    ax.set_title("Training loss")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("3 x 4")  # no words: the same in every edition
    return fig, ax


def test_a_figure_is_drawn_in_japanese_and_back_in_english_after():
    fig, ax = _figure()
    with figure_words.in_language(fig, "ja"):
        assert ax.get_title() == "学習の損失"
        assert ax.get_xlabel() == "環境ステップ"
        assert ax.get_legend().get_texts()[0].get_text() == "シード 0"
        assert ax.get_ylabel() == "3 x 4"
        assert ax.title.get_fontfamily()[-1] == figure_words.JAPANESE_FONT
    assert ax.get_title() == "Training loss" and ax.get_xlabel() == "environment steps"
    assert figure_words.JAPANESE_FONT not in ax.title.get_fontfamily()
    with pytest.raises(TypeError, match="fig: expected a matplotlib Figure, got str"):
        with figure_words.in_language("figure", "ja"):
            pass
    plt.close(fig)


def test_without_the_japanese_font_a_figure_keeps_its_english(monkeypatch):
    monkeypatch.setattr(figure_words, "japanese_font", lambda: None)
    fig, ax = _figure()
    with figure_words.in_language(fig, "ja"):
        assert ax.get_title() == "Training loss"
    plt.close(fig)


def test_a_japanese_panel_is_drawn_with_glyphs_and_records_its_language():
    """IPAexGothic draws the Japanese: the panel differs from the English one, and no glyph
    is missing (matplotlib warns of one, which the tests make an error)."""
    fig, _ = _figure()
    (english,) = figures.panel_pngs(fig, "en")
    (japanese,) = figures.panel_pngs(fig, "ja")
    plt.close(fig)
    assert english != japanese
    assert figures.panel_record(english)["lang"] == "en"
    record = figures.panel_record(japanese)
    assert record["lang"] == "ja" and record["alt"] == "学習の損失; 3 x 4; 環境ステップ"


def test_a_diagram_is_drawn_in_each_edition_and_marked(monkeypatch):
    from companion.diagrams import dqn_data_flow

    fig = dqn_data_flow(500)
    english, japanese = fig.svg("en"), fig.svg("ja")
    assert figure_words.svg_record(english)["lang"] == "en"
    assert figure_words.svg_record(japanese)["lang"] == "ja"
    assert english != japanese
    assert [b.texts[0].get_text() for b in fig.boxes][3] == "Replay buffer"  # restored
    shown = []
    monkeypatch.setattr(
        "IPython.display.display", lambda obj, raw=False: shown.append(obj["image/svg+xml"])
    )
    monkeypatch.setattr("companion.figure_words.editions", lambda: ("en", "ja"))
    fig._ipython_display_()
    assert [figure_words.svg_record(s)["lang"] for s in shown] == ["en", "ja"]
    assert figure_words.svg_record("<svg></svg>") is None
    with pytest.raises(ValueError, match="svg: expected an SVG document"):
        figure_words.mark_svg("no svg here", "ja")


def test_the_players_controls_speak_the_pages_language():
    html = (
        '<button title="Play" aria-label="Play" onclick="x">'
        '<label for="_anim_radio1_abc">Once</label><label for="other">Once</label>'
        '<img title="Not a control">'
    )
    assert figure_words.translate_player(html, "ja") == (
        '<button title="再生" aria-label="再生" onclick="x">'
        '<label for="_anim_radio1_abc">1 回</label><label for="other">Once</label>'
        '<img title="Not a control">'
    )
    assert figure_words.translate_player(html, "en") == html


def test_an_animation_shows_its_controls_in_the_readers_language(monkeypatch):
    from companion import viz

    monkeypatch.setattr(viz, "editions", lambda: ("ja",))
    fig, ax = plt.subplots(figsize=(2, 2), dpi=40)
    html = viz._animation_html(fig, lambda t: (), 2, 100).data
    assert ">ループ</label>" in html and 'title="一時停止"' in html and ">Loop<" not in html


def _first_frame(player: str) -> bytes:
    import base64

    found = re.search(r'"data:image/png;base64,([^"]+)"', player)
    return base64.b64decode(re.sub(r"[\\\s]", "", found[1]))


def test_an_animation_is_drawn_once_per_edition_each_in_its_words():
    """In the book's build (both editions) a player per language, each marked with it: the
    Japanese one's frames carry the translated titles and caption, drawn in the Japanese font
    (its first frame differs from the English one's), and its controls are Japanese; each
    edition's page keeps its own (keep_player)."""
    import numpy as np

    from companion import viz

    frames = [[np.full((4, 4, 3), t / 3.0), np.zeros((4, 4, 3))] for t in range(3)]
    both = viz.animate_frames(
        frames, titles=["env 0", "env 1"], captions=[f"step {t}" for t in range(3)]
    ).data
    assert re.findall(r"<!-- drljax:player (\w+) -->", both) == ["en", "ja"]
    en, ja = (figure_words.keep_player(both, lang) for lang in ("en", "ja"))
    assert en.count("_anim_img") == ja.count("_anim_img") > 0
    assert "drljax:player" not in en + ja
    assert ">Loop</label>" in en and ">ループ</label>" in ja and ">Loop</label>" not in ja
    assert _first_frame(en) != _first_frame(ja)
    assert figure_words.translate("env 1", "ja") == "環境 1"
    assert figure_words.translate("step 2", "ja") == "ステップ 2"
    with pytest.raises(ValueError, match="language: expected one of"):
        figure_words.keep_player(both, "fr")
    with pytest.raises(TypeError, match="html: expected a str"):
        figure_words.mark_player(b"<img>", "en")


def test_outside_the_build_an_animation_is_one_unmarked_player(monkeypatch):
    """In a notebook (the reader's language only) one player, unmarked, in that language; a
    player without marks is kept whole by every edition."""
    import numpy as np

    from companion import viz

    frames = [[np.zeros((4, 4, 3))], [np.ones((4, 4, 3))]]
    drawn = {}
    for lang in ("en", "ja"):
        monkeypatch.setattr(viz, "editions", lambda lang=lang: (lang,))
        drawn[lang] = viz.animate_frames(frames, titles=["env 0"]).data
        assert "drljax:player" not in drawn[lang]
        assert figure_words.keep_player(drawn[lang], "en") == drawn[lang]
    assert _first_frame(drawn["en"]) != _first_frame(drawn["ja"])


def test_tick_labels_in_words_are_translated_and_a_longer_text_is_laid_out_again():
    """Fixed tick labels (set_yticks(ticks, labels)) are drawn in Japanese inside the block
    and English after; the Japanese panels (laid out again where their words reach past the
    figure) leave the figure its English layout."""
    import numpy as np

    fig, axes = plt.subplots(1, 2, figsize=(7, 3.2), dpi=80)
    axes[0].imshow(np.zeros((4, 4, 3)))
    axes[1].bar(["up", "down"], [1, 0])
    axes[1].set_yticks([0, 1], ["illegal", "legal"])
    axes[1].set_title("action mask at the start")
    fig.tight_layout()
    layout = [ax.get_position().bounds for ax in fig.axes]
    with figure_words.in_language(fig, "ja"):
        fig.canvas.draw()
        assert [t.get_text() for t in axes[1].get_yticklabels()] == ["無効", "有効"]
    fig.canvas.draw()
    assert [t.get_text() for t in axes[1].get_yticklabels()] == ["illegal", "legal"]
    english, japanese = figures.panel_pngs(fig, "en"), figures.panel_pngs(fig, "ja")
    assert [ax.get_position().bounds for ax in fig.axes] == layout
    assert english[1] != japanese[1]
    plt.close(fig)


def test_the_figures_texts_are_found_in_the_code_that_draws_them():
    source = "\n".join(
        [
            'ax.set_title(f"Returns over {num_seeds} seeds")',
            'ax.plot(x, y, label="with LayerNorm" if norm else "without LayerNorm")',
            "ax.set(xlabel=f\"batch {s['configs']['batch']:,}\", ylabel=\"$y$\")",
            'ax.text(0, 0, f"{v:.2f}")',
            'box(ax, 1, 2, 3, 4, "Replay buffer", "past transitions")',
            'every = N_(f"every {period} steps")',
            'print("not a figure")',
            'makers = {"medium (fixed)": 1, "random": 2}',
            "for ax, (name, maker) in zip(axes, makers.items()):",
            "    ax.set_title(name)",
            'for ax, values, title in [(a, 1, "TD loss"), (b, 2, "x")]:',
            '    ax.set(title=f"{title}, seed 0")',
            'animate_mazes(e, titles=[f"episode {i + 1}" for i in range(4)])',
            "names = [f\"env {e}: {'reached' if ok[e] else 'time limit'}\" for e in range(2)]",
            'animate_mazes(e, titles=names, captions=[f"step {t}" for t in range(9)])',
            "labels = []",
            'labels.append(f"{n} x {n} maze")',
            "animate_frames(frames, titles=labels)",
            'caption.set_text(f"step {t}, x = {x:+.2f} m")',
        ]
    )
    found = [text for _, text in figure_messages.code_texts(source)]
    assert sorted(found) == sorted(
        [
            "Returns over {num_seeds} seeds",
            "with LayerNorm",
            "without LayerNorm",
            "batch {batch}",
            "Replay buffer",
            "past transitions",
            "every {period} steps",
            "medium (fixed)",
            "random",
            "{title}, seed 0",
            "TD loss",
            "episode {value}",
            "env {e}: {value}",
            "reached",
            "time limit",
            "step {t}",
            "{n} x {n} maze",
            "step {t}, x = {x} m",
        ]
    )


def test_every_figure_word_is_in_the_catalogue_and_compiled():
    """The catalogue holds exactly the texts the code draws, each translated, and the
    package's compiled catalogue is its .po's."""
    found = [p for p in editions.problems("ja") if p.startswith(("figures.", "companion/locale"))]
    assert found == []
    assert editions.package_catalogue_differences("ja", "figures") == []
    english = {m.id for m in figure_messages.template() if m.id}
    assert {"Training loss", "Once", "Replay buffer", "cart position x (m)"} <= english


def test_a_changed_english_label_turns_its_translation_fuzzy(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    cell = {"cell_type": "code", "metadata": {}, "source": ['ax.set_title("Training loss")\n']}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (notebooks / "02_a.ipynb").write_text(json.dumps(nb))
    locales = tmp_path / "locales"
    (locales / "ja" / "LC_MESSAGES").mkdir(parents=True)
    po = locales / "ja" / "LC_MESSAGES" / "figures.po"
    shutil.copy(ROOT / "locales" / "ja" / "LC_MESSAGES" / "figures.po", po)
    editions.update_code_catalogue("ja", "figures", tmp_path, locales)
    assert editions._read(po).get("Training loss").string == "学習の損失"
    cell["source"] = ['ax.set_title("Training losses")\n']
    (notebooks / "02_a.ipynb").write_text(json.dumps(nb))
    editions.update_code_catalogue("ja", "figures", tmp_path, locales)
    entry = editions._read(po).get("Training losses")
    assert entry.fuzzy and entry.string == "学習の損失"


def _png(path: Path, language: str) -> None:
    fig, ax = plt.subplots(figsize=(3, 2), dpi=50)
    ax.set_title("Training loss")
    (png,) = figures.panel_pngs(fig, language)
    path.write_bytes(png)
    plt.close(fig)


@pytest.mark.parametrize("language", ["en", "ja"])
def test_each_editions_page_keeps_only_its_own_figures(tmp_path, language):
    """The other edition's panels and diagrams leave the page (and an output left empty);
    a panel's words become its alternative text; the player speaks the page's language."""
    from figure_widths import _size_output_images

    outputs = tmp_path / "_build" / "jupyter_execute"
    outputs.mkdir(parents=True)
    for lang in ("en", "ja"):
        _png(outputs / f"panel_{lang}.png", lang)
        svg = "<svg xmlns='http://www.w3.org/2000/svg' width='400' height='200'></svg>"
        (outputs / f"diagram_{lang}.svg").write_text(figure_words.mark_svg(svg, lang))
    doctree = nodes.document(None, None)
    cells = []
    for kind in ("panel_{}.png", "diagram_{}.svg"):
        for lang in ("en", "ja"):
            cell = nodes.container(classes=["cell_output"])
            cell += nodes.image(uri=f"_build/jupyter_execute/{kind.format(lang)}")
            cells.append(cell)
    player = '<img id="_anim_img{}"><label for="_anim_radio2_{}">Loop</label>'
    players = "".join(
        figure_words.mark_player(player.format(lang, lang), lang) for lang in ("en", "ja")
    )
    doctree += [*cells, nodes.raw("", players, format="html")]
    app = SimpleNamespace(
        srcdir=str(tmp_path),
        builder=SimpleNamespace(format="html"),
        config=SimpleNamespace(language=language),
    )
    _size_output_images(app, doctree, "page")
    kept = [Path(i["uri"]).name for i in doctree.findall(nodes.image)]
    assert kept == [f"panel_{language}.png", f"diagram_{language}.svg"]
    assert len(list(doctree.findall(nodes.container))) == 2
    (alt,) = [i["alt"] for i in doctree.findall(nodes.image) if "alt" in i]
    assert alt == {"en": "Training loss", "ja": "学習の損失"}[language]
    loop = {"en": ">Loop<", "ja": ">ループ<"}[language]
    kept_player = next(iter(doctree.findall(nodes.raw))).astext()
    assert loop in kept_player
    assert re.findall(r'id="_anim_img(\w+)"', kept_player) == [language]


SITE = ROOT / "_build" / "html"
_IMG = re.compile(r'<img alt="([^"]*)"[^>]*?src="([^"]+)"')


def built_figures(page: Path) -> list[tuple[str, str | None]]:
    """(alternative text, recorded language) of each output image of a built ``page``."""
    from figure_widths import output_language

    found = []
    for alt, src in _IMG.findall(page.read_text(encoding="utf-8")):
        path = (page.parent / src).resolve()
        if "_images" in path.parts and path.suffix in (".png", ".svg") and path.exists():
            found.append((html.unescape(alt), output_language(path)))
    return found


@pytest.mark.skipif(
    not (SITE / "ja" / "notebooks").is_dir(),
    reason="the book is not built (make book)",
)
@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_built_pages_show_the_figures_of_their_edition(language):
    """Every chapter page carries only its edition's panels and diagrams; on the Japanese
    pages their alternative texts and the players' controls are Japanese."""
    folder = SITE / "notebooks" if language == "en" else SITE / "ja" / "notebooks"
    pages = sorted(folder.glob("[0-9]*.html"))
    assert len(pages) >= 12
    recorded = 0
    for page in pages:
        figures_ = built_figures(page)
        other = [alt for alt, lang in figures_ if lang not in (None, language)]
        assert not other, f"{page.name}: the other edition's figures {other[:3]}"
        recorded += sum(lang == language for _, lang in figures_)
        if language == "ja":
            alts = [alt for alt, lang in figures_ if lang == "ja" and alt]
            assert all(re.search(JAPANESE, alt) for alt in alts), (page.name, alts[:3])
            text = page.read_text(encoding="utf-8")
            if "_anim_img" in text:
                assert ">ループ</label>" in text and ">Loop</label>" not in text, page.name
        if "_anim_img" in page.read_text(encoding="utf-8"):  # one player an animation, its own
            assert "drljax:player" not in page.read_text(encoding="utf-8"), page.name
    assert recorded >= 30
