"""Every notebook is stored clean and runs start to finish on the tiny budget."""

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
from notebook_runner import NOTEBOOKS, ROOT, check_episode_explorer, execute, outputs

sys.path.insert(0, str(ROOT / "tools"))
import folded_figures  # noqa: E402  (tools/folded_figures.py)

IDS = [p.stem for p in NOTEBOOKS]
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def glued_texts(nb, lang: str = "en") -> dict[str, str]:
    """The texts a notebook glued, by name; a phrase glued with ``words`` (one text in each
    of the book's languages, in inline elements marked with it) in the language ``lang``."""
    record = "application/papermill.record/text/markdown"
    edition = re.compile(
        r'<span class="edition-text" lang="en">(.*)</span>'
        r'<span class="edition-text" lang="ja">(.*)</span>',
        re.S,
    )
    texts = {}
    for _, o in outputs(nb):
        if "scrapbook" in o.get("metadata", {}):
            text = o["data"][record]
            both = edition.fullmatch(text)
            texts[o["metadata"]["scrapbook"]["name"]] = (
                both.group(1 if lang == "en" else 2) if both else text
            )
    return texts


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_a_notebooks_tests_share_one_worker(path, request):
    """``make test`` runs the suite with ``pytest -n auto --dist loadgroup``: every test of one
    notebook carries the notebook's group, so the tests that read its execution run in one
    worker and the notebook is executed once (pytest-xdist 3.8 groups by a suffix of the test
    id, which pytest 9 no longer lets it set; requirements.txt pins pytest 8)."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("runs under make test's pytest -n auto --dist loadgroup")
    assert request.node.nodeid.endswith(f"@{path.stem}"), request.node.nodeid


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 5


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stored_without_outputs_and_with_python3_kernel(path):
    nb = json.loads(path.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{path.name}: stored outputs in {cell['source'][:1]}"
            assert cell["execution_count"] is None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_structure(path):
    nb = nbformat.read(path, as_version=4)
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert "colab-setup" in first_code.metadata.get("tags", []), "first code cell is the setup cell"
    assert "hide-input" in first_code.metadata["tags"], "the book shows the setup cell collapsed"
    text = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    # a chapter's first page says what the chapter builds, a later page of it what it adds
    assert "In this chapter you will" in text or "On this page you will" in text
    assert "## What you learned" in text and "## Exercises" in text
    # The quiz comes last before "What you learned": nothing of the chapter after it.
    (quiz,) = [i for i, c in enumerate(nb.cells) if "show_quiz(" in c.source]
    assert "## Quiz" in nb.cells[quiz - 1].source, "the quiz has its heading"
    after = nb.cells[quiz + 1].source
    assert after.startswith("## What you learned"), f"after the quiz comes: {after[:60]!r}"


@pytest.fixture
def executed(executed_notebook):
    """Each notebook executed once per session (conftest.py), shared with tests/book/test_lab.py."""
    return executed_notebook


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_runs_on_tiny_budget_without_warnings_or_unbacked_widgets(path, executed):
    """No errors, no warnings; a widget only in a cell whose output the book removes,
    followed by a static fallback (a figure or an animation) within the next two cells."""
    nb = executed(path)
    for i, out in outputs(nb):
        assert out.output_type != "error", f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
        if out.output_type == "stream" and out.name == "stderr":
            assert "Warning" not in out.text, f"cell {i} warned: {out.text[:500]}"
        if WIDGET_MIME in out.get("data", {}):
            assert "remove-output" in nb.cells[i].metadata.get("tags", []), (
                f"cell {i} shows a widget, which the static book cannot show"
            )
            following = [
                o
                for c in nb.cells[i + 1 : i + 3]
                if c.cell_type == "code"
                for o in c.get("outputs", [])
            ]
            assert any(
                "image/png" in o.get("data", {}) or "text/html" in o.get("data", {})
                for o in following
            ), f"cell {i}: a widget without a static fallback"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_figure_is_folded_away_as_code(path, executed):
    """A figure is a result: its cell may fold the code (``hide-input``), never the figure
    with it (``hide-cell`` or ``hide-output``), except in an exercise's hidden solution
    (``tools/folded_figures.py``; ``.ci/check_site.py`` checks the built pages the same way)."""
    problems = folded_figures.notebook_problems(executed(path))
    assert not problems, f"{problems}: show the figure, fold only the code (hide-input)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_quoted_figure_is_glued_once_by_the_run(path, executed):
    """Each ``{glue:md}`name``` of the prose names Markdown text that the executed notebook
    glued (``companion.glue``), once, and non-empty."""
    nb = executed(path)
    glued = [
        (o["metadata"]["scrapbook"]["name"], o["data"])
        for _, o in outputs(nb)
        if "scrapbook" in o.get("metadata", {})
    ]
    names = [name for name, _ in glued]
    assert len(names) == len(set(names)), (
        f"glued twice: {sorted(n for n in names if names.count(n) > 1)}"
    )
    for name, data in glued:
        assert data.get("application/papermill.record/text/markdown", "").strip(), name
    markdown = "".join(c.source for c in nb.cells if c.cell_type == "markdown")
    used = set(re.findall(r"\{glue:md\}`([^`]+)`", markdown))
    assert used <= set(names), f"quoted but not glued by the run: {sorted(used - set(names))}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_quiz_is_shown_with_its_questions_embedded(path, executed):
    """The quiz cell leaves jupyterquiz's script in the notebook, with every question of the
    chapter's quiz file in it, so that the static page draws the quiz with no server."""
    nb = executed(path)
    questions = json.loads((ROOT / "notebooks" / "quizzes" / f"{path.stem}.json").read_text())
    scripts = [
        o["data"]["application/javascript"]
        for _, o in outputs(nb)
        if "application/javascript" in o.get("data", {})
    ]
    embedded = [s for s in scripts if all(json.dumps(q["question"]) in s for q in questions)]
    assert len(embedded) == 1, f"{path.name}: the quiz's script with its questions"


def _stream_text(nb):
    """Everything the notebook printed, as one string."""
    return "".join(o.get("text", "") for _, o in outputs(nb))


PAGE_COLUMNS = 100  # the width of the book's code column, in characters


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_printed_lines_fit_the_page(path, executed):
    """Text a shown cell prints (streams and plain-text results) has no line over 100
    characters, which would scroll sideways on the page: print a config or a spec one field
    per line (``pprint``), wrap long messages (``textwrap``)."""
    nb = executed(path)
    for i, out in outputs(nb):
        if {"remove-output", "remove-cell"} & set(nb.cells[i].metadata.get("tags", [])):
            continue
        data = out.get("data", {})
        if out.output_type == "stream":
            text = out.text
        elif "text/plain" in data and not {"text/html", "image/png"} & set(data):
            text = data["text/plain"]
        else:
            continue
        long = [line for line in text.splitlines() if len(line.expandtabs()) > PAGE_COLUMNS]
        assert not long, f"cell {i} prints a line of {len(long[0])} characters: {long[0][:120]}"


def _html_outputs(nb):
    return [o["data"]["text/html"] for _, o in outputs(nb) if "text/html" in o.get("data", {})]


def _png_outputs(nb):
    return [o for _, o in outputs(nb) if "image/png" in o.get("data", {})]


_EDITION_BLOCK = re.compile(r'<div class="edition-text" lang="(\w+)">\n\n(.*?)\n\n</div>', re.S)


def _markdown_outputs(nb, lang: str = "en") -> list[str]:
    """The Markdown outputs (``text/markdown``), each in the language ``lang`` where it is
    given in both (``companion.glue.markdown``: one block per language); every such output
    has one block in each language, and the two lay out the same tables (lines of cells)."""
    texts = []
    for _, o in outputs(nb):
        text = o.get("data", {}).get("text/markdown")
        if text is None:
            continue
        blocks = dict(_EDITION_BLOCK.findall(text))
        if not blocks:
            texts.append(text)
            continue
        assert set(blocks) == {"en", "ja"}, text[:300]
        shape = {
            k: [line.count("|") for line in b.splitlines() if line.startswith("|")]
            for k, b in blocks.items()
        }
        assert shape["en"] == shape["ja"], (blocks["en"][:300], blocks["ja"][:300])
        texts.append(blocks[lang])
    return texts


def _has_japanese(text: str) -> bool:
    return re.search("[\u3040-\u30ff\u4e00-\u9fff]", text) is not None


def test_jax_essentials_shows_measured_figures(executed):
    nb = executed(ROOT / "notebooks" / "01_jax_essentials.ipynb")
    text = _stream_text(nb)
    assert "df/dx   = [ 6.  8. 10. 12. 14.]" in text
    assert "compile time (once)" in text and "x NumPy" in text
    assert "lax.scan (jit)" in text and "Python loop, jit step" in text
    assert text.count("check passed") == 3
    assert len(_png_outputs(nb)) >= 1


def test_neural_networks_chapter_claims(executed):
    nb = executed(ROOT / "notebooks" / "02_neural_networks.ipynb")
    text = _stream_text(nb)
    assert "jax.grad: gradient for the constant scale = " in text
    assert "eqx.filter_grad: gradient for scale = None" in text
    assert "traces with a float temperature: 5" in text
    assert "traces with an array temperature: 1" in text
    assert "Non-hashable static arguments" in text
    # find the bug: the faulty loop still learns; its fixed version passes the fourth check
    first, last = re.search(r"loss (\S+) -> (\S+) in 20 steps", text).groups()
    assert float(last) < float(first)
    assert "ms a step; section 5's eqx_step on the same data:" in text
    assert text.count("check passed") == 4
    assert len(_png_outputs(nb)) >= 1


def test_maze_page_has_inline_figures_and_animations(executed):
    nb = executed(ROOT / "notebooks" / "03_maze_first_look.ipynb")
    animations = [h for h in _html_outputs(nb) if "new Array(" in h and "data:image/png" in h]
    assert len(animations) == 2  # one episode, then several side by side
    assert len(_png_outputs(nb)) >= 2  # observation figure and episode lengths
    text = _stream_text(nb)
    assert text.count("check passed") == 2


GUARDED_IMPORT = (
    "from companion.envs import import_jumanji\nimport_jumanji()\n"
    "import jumanji, matplotlib\nprint(matplotlib.get_backend())"
)
PLAIN_IMPORT = "import jumanji, matplotlib\nprint(matplotlib.get_backend())"


@pytest.mark.notebook
def test_plain_jumanji_import_in_a_kernel_is_what_the_guard_prevents(tmp_path, kept_run):
    """jumanji's import-time backend switch, and the companion import that avoids it. The two
    kernels' output is kept for the next session while nothing they read changes."""
    spec = {"name": "python3", "display_name": "Python 3", "language": "python"}

    def in_a_kernel(source):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
        nb.metadata.kernelspec = spec
        execute(nb, cwd=tmp_path)
        (out,) = nb.cells[0].outputs
        return {"printed": out.text}

    def check(guarded, plain):
        assert "inline" in guarded["printed"], guarded
        if "error" in plain:  # jumanji 1.x without ipympl: the import fails
            assert "ipympl" in plain["error"]
        else:  # a jumanji that no longer switches backends must leave it alone too
            assert "inline" in plain["printed"], plain

    def both():  # a run that fails its check (or the guarded kernel's error) is not kept
        guarded = in_a_kernel(GUARDED_IMPORT)
        try:
            plain = in_a_kernel(PLAIN_IMPORT)
        except Exception as exc:
            plain = {"error": str(exc)}
        check(guarded, plain)
        return json.dumps([guarded, plain]).encode()

    check(*json.loads(kept_run("jumanji-import-kernels", both, Path(__file__).read_text())))


def test_maze_in_depth_claims(executed):
    nb = executed(ROOT / "notebooks" / "04_maze_in_depth.ipynb")
    text = _stream_text(nb)
    assert "already the NEXT episode" in text
    assert "9 of 9 pairs occur" in text
    assert "all leaves equal: True" in text
    assert "pooled / per-step:" in text
    assert text.count("check passed") == 2  # classify and count_endings
    assert re.search(r"^terminated: \d+, truncated: \d+$", text, re.M)
    animations = [h for h in _html_outputs(nb) if "new Array(" in h]
    assert len(animations) == 1
    assert len(_png_outputs(nb)) >= 3


def _printed_number(text: str, pattern: str) -> float:
    """The number that ``pattern``'s first group finds in a notebook's printed ``text``."""
    match = re.search(pattern, text)
    assert match, f"not printed: {pattern}"
    return float(match.group(1))


def test_rl_foundations_checks_every_equation(executed):
    """Each check of the foundations chapter's first page, asserted on what it printed."""
    nb = executed(ROOT / "notebooks" / "05_rl_foundations.ipynb")
    text = _stream_text(nb)

    def number(pattern):
        return _printed_number(text, pattern)

    assert "tables read from env.step agree with tabular.maze_mdp: True" in text
    # 1. the return of one episode: reverse scan against a Python loop, G_0 = gamma^(T - 1)
    assert "reward 1 on the last one" in text
    assert number(r"reverse scan vs Python loop: max \|difference\| = (\S+)") < 1e-5
    g0, power = re.search(r"G_0 = (\S+) = gamma\^\d+ = (\S+)", text).groups()
    assert g0 == power
    # 2. exact values by a linear solve, and Monte Carlo within 4 standard errors
    assert number(r"residual of the linear solve, max \|V - sum_a pi Q\|: (\S+)") < 1e-6
    assert "tabular.evaluate_policy agrees: True" in text
    assert number(r"largest difference in standard errors: (\S+)") < 4
    # 3. value iteration gives gamma^(k-1); its greedy policy walks shortest paths
    assert number(r"max \|V\* - gamma\^\(k-1\)\| = (\S+)") < 1e-5
    assert "tabular.value_iteration agrees: True" in text
    assert "greedy moves == shortest path, every state: True" in text
    # 4. TD(0) converges to V^pi, Q-learning from random actions to Q*
    assert number(r"RMS error to V\^pi (\S+)") < 0.02
    assert number(r"max \|Q - Q\*\| over legal actions = (\S+)") < 1e-4
    assert "its greedy policy is value iteration's: True" in text
    # the find-the-bug symptom, and every exercise's check
    assert number(r"largest learned value: (\S+)") > 1.5
    assert text.count("check passed") == 2  # the two exercises
    assert len(_png_outputs(nb)) >= 2  # the maze and the two value maps


def test_rl_policy_gradients_checks_every_equation(executed):
    """Each check of the foundations chapter's policy-gradient page, asserted on what it
    printed."""
    nb = executed(ROOT / "notebooks" / "05_rl_policy_gradients.ipynb")
    text = _stream_text(nb)

    def number(pattern):
        return _printed_number(text, pattern)

    # 1. the policy gradient theorem against jax.grad; REINFORCE is unbiased (its mean error
    # within 3 standard errors, which shrink ~4x for 16x the episodes, and falling like
    # 1/sqrt(n)); a state baseline keeps the mean (and here lowers the variance), an
    # action-dependent one fails the same check
    assert number(r"policy gradient theorem vs jax.grad: max \|difference\| = (\S+)") < 1e-6
    errors = re.findall(
        r"^(?:no baseline|baseline V)\s+mean error\s+(\S+)\s+(\S+)\s+(\S+)$", text, re.M
    )
    ses = re.findall(r"^\s+standard error\s+(\S+)\s+(\S+)\s+(\S+)$", text, re.M)
    assert len(errors) == 2 and len(ses) == 2
    for (_, _, error), (se_first, _, se_last) in zip(errors, ses):
        assert float(error) < 3 * float(se_last)
        assert 3 < float(se_first) / float(se_last) < 5.5
    slopes = re.search(
        r"slope of the mean error against n: no baseline (\S+), baseline V (\S+) ", text
    )
    assert slopes and all(-0.65 < float(s) < -0.35 for s in slopes.groups()), slopes
    assert "unbiasedness check passed" in text
    assert number(r"variance of one episode's estimate, with the baseline / without: (\S+)") < 0.9
    gap_v = number(
        r"b\(s\) = V\(s\)\s+vs no baseline: largest gap\s+(\S+) standard errors, means agree"
    )
    gap_q = number(
        r"b\(s, a\) = Q\(s, a\) vs no baseline: largest gap\s+(\S+) standard errors, means differ"
    )
    assert gap_v < 3 < gap_q
    # 2. lambda-returns against Q^pi: with V* the bias falls to ~0 as lambda -> 1 and the variance
    # grows, lambda = 1 is best; with a nearly right critic an interior lambda is best; GAE; clipping
    best = re.findall(r"^critic (.+): lowest error at lambda = (\S+)$", text, re.M)
    rows = [
        tuple(map(float, row))
        for row in re.findall(r"^\s+(\d\.\d\d)\s+(\S+)\s+(\S+)\s+(\S+)$", text, re.M)
    ]
    assert len(best) == 2 and len(rows) == 14
    star, near = rows[:7], rows[7:]
    assert star[0][1] > 0.1 and star[-1][1] < 0.005 and star[-1][2] > star[0][2]
    assert float(best[0][1]) == 1.0 and 0 < float(best[1][1]) < 1
    for table, (_, lam) in zip((star, near), best):  # the printed winner has the lowest total
        assert {row[0]: row[3] for row in table}[float(lam)] == min(row[3] for row in table)
    assert number(r"lambda-return - V vs gae\(\), \d+ steps: max \|difference\| = (\S+)") < 1e-5
    optimal = number(r"optimal J: (\S+)")
    runs = {
        name: (float(mean), float(worst), int(stuck))
        for name, _, mean, worst, stuck in re.findall(
            r"^(unclipped|clipped)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)%$", text, re.M
        )
    }
    assert runs["unclipped"][2] > 0 and runs["clipped"][2] == 0
    mean, worst, _ = runs["clipped"]
    assert worst > 0.99 * optimal and mean > runs["unclipped"][0]
    # clipping does not bound the ratio: ratios left [0.8, 1.2] with clipping too
    assert float(re.search(r"^  clipped: (\d+)% of them", text, re.M).group(1)) > 0
    # the exercise's check
    assert text.count("check passed") == 2  # the unbiasedness check and the exercise
    assert len(_png_outputs(nb)) >= 1  # the clipped and unclipped runs


def test_cartpole_claims(executed):
    nb = executed(ROOT / "notebooks" / "06_cartpole.ipynb")
    text = _stream_text(nb)
    assert "falling pole -> terminated: True  reward: 1.0" in text
    assert "step 500 -> truncated: True  terminated: False" in text
    assert "action: expected 0 (push left) or 1 (push right)" in text
    assert "linear controller  mean return  500.0" in text
    assert text.count("check passed") == 2
    animations = [h for h in _html_outputs(nb) if "new Array(" in h]
    assert len(animations) == 2
    assert len(_png_outputs(nb)) >= 2


def test_dqn_chapter(executed):
    nb = executed(ROOT / "notebooks" / "07_dqn.ipynb")
    text = _stream_text(nb)
    assert "same contents and same samples as companion.replay: True" in text
    assert "mine:      [ 1.   95.05]" in text and "companion: [ 1.   95.05]" in text
    loss_line = next(line for line in text.splitlines() if line.startswith("loss: mine"))
    mine, theirs = loss_line.replace(",", "").split()[2], loss_line.split()[-1]
    assert mine == theirs
    # the training loop in view gives the companion's make_train agent on the same key
    # with a hard copy and with Polyak averaging (the in-view loop honours target_tau)
    assert "target network: hard copy every 10 gradient steps; max |difference| of" in text
    assert "target network: Polyak averaging, τ = 0.005; max |difference| of" in text
    # LayerNorm written out gives haiku's Q-values
    ln = re.search(r"Q-values, mine against haiku's: max \|difference\| (\S+)", text)
    assert ln and float(ln.group(1)) < 1e-4, ln
    names = ["final parameters", "kept parameters", "losses", "evaluations"]
    diffs = re.findall(rf"({'|'.join(names)}) (\S+?)(?:,|$)", text, re.M)
    assert [name for name, _ in diffs] == names * 2, diffs
    assert all(float(d) < 1e-4 for _, d in diffs), diffs
    assert text.count("check passed") == 5  # exercises 1 to 3, exercise 4's measure, the bug
    tables, tables_ja = _markdown_outputs(nb), _markdown_outputs(nb, "ja")
    # find the bug: every flag one step late, so none on a transition where the pole fell
    (counts,) = [t for t in tables if "off the track:" in t]
    fell = int(re.search(r"off the track: (\d+)", counts).group(1))
    assert fell >= 5 and "of these, marked terminated: 0" in counts
    marked = int(re.search(r"Transitions marked terminated: (\d+)", counts).group(1))
    assert marked in (fell, fell - 1)  # the last fall may be flagged after the 300 steps
    assert any("seeds solved" in t for t in tables)
    # the result it leads with is the final policy (chapter 10 lays out the lever benchmark)
    assert any("| final params: mean return |" in t for t in tables)
    # the Japanese page's table: the same seeds under Japanese labels
    (page_ja,) = [t for t in tables_ja if "| 最終パラメータ：平均収益 |" in t]
    assert all(_has_japanese(t) for t in tables_ja)  # every Markdown output in both languages
    assert "個が解けました" in page_ja and "| 評価が初めて 475 以上になったステップ |" in page_ja
    # the prose states the Huber comparison and the steps training runs from the run (glued)
    glued, glued_ja = glued_texts(nb), glued_texts(nb, "ja")
    solved = re.search(r"final parameters solve: squared loss (\d+), Huber loss (\d+) seeds", text)
    squared, huber = map(int, solved.groups())
    assert (glued["huber_sq_solved"], glued["huber_hu_solved"]) == (str(squared), str(huber))
    # the comparison is the paired test's (McNemar), not a word chosen from the counts
    assert 0 < float(glued["huber_p"]) <= 1 and glued_ja["huber_p"] == glued["huber_p"]
    assert abs(squared - huber) > 0 or float(glued["huber_p"]) == 1.0
    total = int(re.search(r"total_steps=(\d+)", text).group(1))
    run = int(re.search(r"\(([\d,]+) steps\), ", text).group(1).replace(",", ""))
    assert ("runs every step of it" in glued["dqn_steps_words"]) == (run == total)
    assert ("1 ステップも余さず実行されます" in glued_ja["dqn_steps_words"]) == (run == total)
    animations = [h for h in _html_outputs(nb) if "new Array(" in h]
    assert len(animations) == 1
    assert len(_png_outputs(nb)) >= 2  # the learning curves, the episode
    widget_cells = [
        c for c in nb.cells if any(WIDGET_MIME in o.get("data", {}) for o in c.get("outputs", []))
    ]
    assert len(widget_cells) == 1  # the episode explorer
    check_episode_explorer(
        nb
    )  # with this environment's ipywidgets 8 (Colab's 7: test_colab_runtime)


def test_ppo_chapter(executed):
    nb = executed(ROOT / "notebooks" / "08_ppo_maze.ipynb")
    text = _stream_text(nb)
    assert "legal actions: [1 3]" in text and "actions sampled in 10,000 draws: [1 3]" in text
    assert "log p replaced first: H = 0.6931" in text
    assert "naive: H = nan" in text
    assert "identical to companion.agents.ppo.rollout: True" in text
    # section 1's network is the one later pages take as ppo.FIXED_MAZE_NETWORK
    from companion.agents import ppo

    assert f"ActorCritic {ppo.FIXED_MAZE_NETWORK.keywords}" in text
    # V(s_t+1) gathered at the truncations: fewer observations through the network
    (gathered, every) = re.findall(r"V\(s_t\+1\) from ([\d,]+) observations, not ([\d,]+)", text)[0]
    assert int(gathered.replace(",", "")) < int(every.replace(",", "")), (gathered, every)
    # in-view GAE agrees with the loop and the companion; the companion with rlax
    for line in text.splitlines():
        if "max |difference|" in line:
            assert float(line.split(":")[-1]) < 1e-4, line
    # the gathered next values (1) and GAE (3); the training loop's are on the next page
    assert text.count("max |difference|") == 1 + 3
    mine = next(line for line in text.splitlines() if line.startswith("loss in view:"))
    theirs = next(line for line in text.splitlines() if line.startswith("companion   :"))
    assert abs(float(mine.split(":")[1]) - float(theirs.split(":")[1])) < 1e-5
    # find the bug: with one key for every step, untrained agents visit fewer cells
    visited = dict(
        re.findall(
            r"(With the bug|`ppo.rollout`): cells visited in 32 steps, "
            r"median over 64 agents (\d+)",
            "\n".join(_markdown_outputs(nb)),
        )
    )
    assert int(visited["With the bug"]) < int(visited["`ppo.rollout`"]), visited
    assert text.count("check passed") == 4  # exercises 1 to 3, the bug


def test_ppo_training_page(executed):
    nb = executed(ROOT / "notebooks" / "08_ppo_training.ipynb")
    text = _stream_text(nb)
    # the training loop in view (the companion's pieces) gives make_train's model on one key
    assert text.count("max |difference|") == 4
    diffs = dict(re.findall(r"^(\w+) +max \|difference\|: (\S+)$", text, re.M))
    assert set(diffs) == {"model", "policy_loss", "value_loss", "entropy"}, diffs
    assert all(float(d) < 1e-4 for d in diffs.values()), diffs
    assert text.count("check passed") == 2  # exercises 1 (its measure) and 2
    tables = [
        o["data"]["text/markdown"] for _, o in outputs(nb) if "text/markdown" in o.get("data", {})
    ]
    (evaluation,) = [t for t in tables if "50 episodes per seed" in t]  # the tiny budget's 50
    blocks = re.findall(
        r'<div class="edition-text" lang="(en|ja)">\n\n(.*?)\n\n</div>', evaluation, re.S
    )
    assert [lang for lang, _ in blocks] == ["en", "ja"], evaluation
    (_, en), (_, ja) = blocks
    assert "シードごとに 50 エピソード" in ja and "| 迷路 | シード | 成功率 |" in ja
    rows = {}
    for lang, block in blocks:
        assert block.count("| empty |") == block.count("| medium |") == 2  # 2 seeds each
        body = [line for line in block.splitlines() if line.startswith(("| empty", "| medium"))]
        rows[lang] = re.findall(r"\d[\d.,]*%?", "\n".join(body))
    assert rows["en"] == rows["ja"] and rows["en"], rows  # the same figures in both
    # the prose quotes the evaluation size and the medium run's clip statistics (glued)
    glued, glued_ja = glued_texts(nb), glued_texts(nb, "ja")
    assert glued["num_eval_episodes"] == "50" and glued["draws_per_pair"] == "6"
    assert glued["clip_fraction_peak"].endswith("%"), glued["clip_fraction_peak"]
    peak = float(glued["clip_fraction_peak"].rstrip("%"))
    if peak > 0:  # some ratio left [1 - eps, 1 + eps], and the sentence says so
        assert glued["clip_verdict"].startswith("In "), glued["clip_verdict"]
        assert not glued["clip_verdict"].startswith("In this run no ratio"), glued
        assert glued_ja["clip_verdict"].endswith("範囲の外にある比がありました。"), glued_ja
    animations = [h for h in _html_outputs(nb) if "new Array(" in h]
    assert len(animations) == 1  # the medium maze


def test_generalising_chapter(executed):
    nb = executed(ROOT / "notebooks" / "09_generalising.ipynb")
    text = _stream_text(nb)
    tables, tables_ja = _markdown_outputs(nb), _markdown_outputs(nb, "ja")
    assert any("50 unseen mazes, propagation network" in t for t in tables)
    # the planning network: backups equal BFS, its values are scaled distances, and it
    # solves every one of the tiny budget's 50 unseen mazes, greedy along shortest paths
    assert "-v equals the breadth-first-search distance in every free cell: True" in text
    assert "equals the BFS distance: True" in text
    (planner,) = [t for t in tables if "value-iteration network" in t]
    assert "| 0 | greedy | 100.0% |" in planner and "| 1.000 |" in planner
    assert all(_has_japanese(t) for t in tables_ja)  # every Markdown output in both languages
    (planner_ja,) = [t for t in tables_ja if "価値反復ネットワーク" in t]
    assert "| シード | 方策 | 成功率 |" in planner_ja and "| 0 | 貪欲 | 100.0% |" in planner_ja
    assert any("見たことのない 50 個の迷路、伝播ネットワーク" in t for t in tables_ja)
    assert sum("コア）で測定しました" in t for t in tables_ja) == 2  # the size sweeps
    # exercise 1: the while_loop settles to the scan's values after as many backups
    assert "15 x 15: values as the scan's: True" in text
    (settled,) = re.findall(r"backups that changed something: (\d+) \(section 3: (\d+)\)", text)
    assert settled[0] == settled[1], settled
    assert "20 x 20: -v equals breadth-first search: True" in text
    # both exercise checks pass: settle against breadth-first search, the split by reach
    assert text.count("check passed") == 2
    animations = [h for h in _html_outputs(nb) if "new Array(" in h]
    assert len(animations) == 2  # four unseen mazes; 15 x 15 and 20 x 20
    assert len(_png_outputs(nb)) >= 4


def test_silent_bugs_chapter(executed):
    nb = executed(ROOT / "notebooks" / "10_silent_bugs.ipynb")
    text = _stream_text(nb)
    # 1: the ratio is 1 before any update with -inf, not with the bug
    assert "mask with -inf (correct): ratio mean 1.000, below 0.8: 0%" in text
    bug = re.search(r"mask with +1.0 \(the bug\): ratio mean ([\d.]+), below 0.8: (\d+)%", text)
    assert bug and float(bug.group(1)) < 1 and int(bug.group(2)) > 0, text
    # 3: time-outs occur in the batch and a 1 - discount flag marks every one terminated
    ends, timeouts = map(
        int, re.search(r"episode ends: (\d+), of which time-outs: (\d+)", text).groups()
    )
    marked = dict(
        re.findall(
            r"time-outs marked terminated by (1 - discount|the book's "
            r"terminated): (\d+)",
            text,
        )
    )
    assert 0 < timeouts <= ends
    assert marked == {"1 - discount": str(timeouts), "the book's terminated": "0"}, marked
    # 4: randint's exclusive bound never draws the last cell; the book's generator draws 9 pairs
    assert " 0]" in text.split("randint(0, n - 1) draws:")[1].splitlines()[0]
    assert "book generator: 9 start/target pairs" in text
    # 5: JAX's checker finds the reused key, and the reused key costs success
    assert "jax.debug_key_reuse, fresh keys: no error" in text
    assert "jax.debug_key_reuse, one key reused: KeyReuseError" in text
    rates = dict(
        re.findall(
            r"(a fresh key every step|one key reused): success on \d+ unseen "
            r"mazes ([\d.]+)%",
            text,
        )
    )
    assert float(rates["one key reused"]) < float(rates["a fresh key every step"]), rates
    # 6: a static clip range compiles at every new value; a traced one once
    counts = dict(re.findall(r"(clip_eps static|clip_eps traced): (\d+) compilations, ", text))
    assert counts == {"clip_eps static": "8", "clip_eps traced": "1"}, counts
    # 8: the detector finds the late flags; TD(0) pays for them in value error
    assert "flag on time: " in text and ", 0 disagree with the physics" in text
    late = int(
        re.search(r"flag one step late: \d+ marked terminated, (\d+) disagree", text).group(1)
    )
    assert late > 0
    errors = dict(
        re.findall(r"flag (on time|one step late): RMS error of the values ([\d.]+)", text)
    )
    assert float(errors["one step late"]) > 2 * float(errors["on time"]), errors
    # exercises: cross-talk is 0 for the per-sample loss and not for the broadcast one
    assert "values (4,):   cross-talk 0.0000" in text
    assert float(re.search(r"values \(4, 1\): cross-talk ([\d.]+)", text).group(1)) > 0
    # ... and the counter: cold, each gradient compiles once; warm, only the static one
    found = re.findall(
        r"(clip_eps static|clip_eps traced): (\d+) compilation\(s\) for the "
        r"first call, then (\d+) compilations for 3 new",
        text,
    )
    counted = {name: (cold, warm) for name, cold, warm in found}
    assert counted == {"clip_eps static": ("1", "3"), "clip_eps traced": ("1", "0")}, counted
    assert text.count("check passed: cross_talk gives 0 ") == 1, text
    assert text.count("check passed: compilations counts as JAX does: ") == 1, text
    tables, tables_ja = _markdown_outputs(nb), _markdown_outputs(nb, "ja")
    assert any("| post's agent | trained on |" in t and "9 pairs" in t for t in tables)
    # section 7 lays out chapter 7's lever benchmark: each setting taken away
    for row in (
        "| chapter | ",
        "| without LayerNorm | ",
        "| 1 gradient step per iteration | ",
        "| batch 64 | ",
        "| constant learning rate | ",
        "| Polyak τ = 0.005 every step | ",
        "| buffer 10,000 | ",
    ):
        assert any(row in t for t in tables), row
    assert any("| training |" in t and "(McNemar, Holm)" in t for t in tables)
    # and the grid: one row per target network, four columns of final solves
    assert any("| copy every 200 | 99.5 | " in t for t in tables)
    # the Japanese page: the same tables under Japanese headers and labels
    assert all(_has_japanese(t) for t in tables_ja)  # every Markdown output in both languages
    joined_ja = "\n".join(tables_ja)
    for row in (
        "| 記事のエージェント | 学習した迷路 |",
        "| エージェント | キー数 | 最終パラメータ ≥ 475 |",
        "| LayerNorm なし | ",
        "| 10,000 遷移のバッファ | ",
        "| 学習時間 |",
        "| 200 ステップごとにコピー | 99.5 | ",
        "の DQN：平均収益が 475 以上の最終パラメータは",
    ):
        assert row in joined_ja, row
    assert joined_ja.count("で測定しました。") == 2 and not _has_japanese("\n".join(tables))
    # the prose quotes what the cells printed (glued), and the results' sentences are glued
    record = "application/papermill.record/text/markdown"
    glued = {
        o["metadata"]["scrapbook"]["name"]: o["data"][record]
        for _, o in outputs(nb)
        if "scrapbook" in o.get("metadata", {})
    }
    assert glued["mask_below_clip"] == f"{bug.group(2)}%", glued["mask_below_clip"]
    assert glued["mean_target"] == "2.5"
    # the single-key ablations glue the committed figures, and one key against the keys
    # with the bug gets the rank test's p (never below 5% with so few keys)
    posts = json.loads((ROOT / "benchmarks/results/source_posts.json").read_text())
    key0 = {r["variant"]: r for r in posts["ppo_runs"] if r["seed"] == 0}
    mask = key0["mask fixed (-inf in the loss)"]
    assert glued["ppo_mask_steps"] == f"{mask['steps_to_target']:,}", glued
    bug_keys = sum(r["variant"] == "post" for r in posts["ppo_runs"])
    assert glued["ppo_post_rank_p"] == f"{1 / (bug_keys + 1):.2f}", glued


def test_performance_chapter(executed):
    nb = executed(ROOT / "notebooks" / "11_performance.ipynb")
    text = _stream_text(nb)
    assert "all four end in the same state: True" in text
    # jit traces once per input signature: 100, 100 (cached), 200 (new), 100 (cached)
    trace_lines = [line for line in text.splitlines() if "traces so far" in line]
    assert len(trace_lines) == 4 and trace_lines[-1].endswith("traces so far: [(100,), (200,)]")
    # the buffer's measured memory grows by exactly the predicted bytes per transition
    assert "predicted: 41 bytes per transition" in text
    slope = next(line for line in text.splitlines() if line.startswith("measured slope between"))
    assert slope.endswith(": 41.00 bytes per transition"), slope
    assert text.count("check passed") == 4  # the four exercises' checks
    assert "dqn_envs: bends at " in text
    tables, tables_ja = _markdown_outputs(nb), _markdown_outputs(nb, "ja")
    joined = "\n".join(tables)
    for row in (
        "| eager |",
        "| jit(lax.scan) |",
        "| style | this page: µs per step | benchmark: µs per step |",  # one table, both runs
        "**dqn_envs**",
        "**ppo_seeds**",
        "| this page | per_step |",  # the profile Amdahl's law reads, and the benchmark's
        "| benchmark | per_step |",
        "gymnasium CartPole-v1",
        "DQN: time to solve",
        "PPO on Maze",
        "| PPO, the chapter's 64 envs |",  # the CPU and the TPU side by side
        "| CartPole, random actions, 1 env |",
    ):
        assert row in joined, row
    # the provenance: one line per machine, each naming the benchmarks measured there
    machines = [line for line in joined.splitlines() if line.startswith("- ") and "JAX" in line]
    assert len(machines) >= 2 and any("scaling_tpu (" in line for line in machines), machines
    assert sum(", scaling (" in line for line in machines) == 1, machines
    assert "AMD" in joined or "Intel" in joined or "cores" in joined  # the machine is named
    joined_ja = "\n".join(tables_ja)
    for row in (
        "scaling_tpu（",
        "| PPO、章の環境 64 個 |",
        "| 方式 | このページ：ステップあたりの µs |",
        "| jit(lax.scan) |",
        "**dqn_envs**",
        "| 環境数 | ステップ/秒 |",
        "| このページ | per_step |",
        "| ベンチマーク | pooled |",
        "**DQN：CartPole-v1 を解くまでの時間**",
        "| 本書の JAX CartPole、",
    ):
        assert row in joined_ja, row
    assert all(_has_japanese(t) for t in tables_ja) and not _has_japanese(joined)
    assert len(_png_outputs(nb)) >= 3  # compile time, scaling, memory


def test_many_devices_chapter(executed):
    """On 8 simulated CPU devices: the data-parallel gradient and step equal one device's, the
    compiled step has its all-reduce, the replicas agree, sharded seeds match vmap, the cost
    table and the benchmark plot are drawn, and the three exercise checks pass."""
    nb = executed(ROOT / "notebooks" / "12_many_devices.ipynb")
    text = _stream_text(nb)
    assert "backend cpu: 8 device(s)" in text  # the first cell set XLA_FLAGS in time
    gaps = [
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if "largest difference from one device" in line
    ]
    assert len(gaps) == 2 and max(gaps) < 1e-6, gaps
    assert "all-reduce operation(s) in the compiled step" in text
    differ = next(line for line in text.splitlines() if line.startswith("parameters moved"))
    moved, gap = (float(w.rstrip(";")) for w in (differ.split()[5], differ.split()[-1]))
    assert moved > 1e-3 and gap < 1e-6, differ
    assert "replica spread 0.0," in text
    seeds = next(line for line in text.splitlines() if "against vmap on one device" in line)
    assert float(seeds.rsplit(" ", 1)[1]) < 1e-4, seeds  # the first update
    assert "where the metrics live: P('devices',)" in text
    tables, tables_ja = _markdown_outputs(nb), _markdown_outputs(nb, "ja")
    assert any("| 8 | 391,811 |" in t for t in tables)  # 2 * 7/8 * 4 bytes * 55,973 parameters
    assert any("seeds split / vmap on one device" in t for t in tables)
    assert all(_has_japanese(t) for t in tables_ja)  # every Markdown output in both languages
    assert any("| デバイス数 | ステップあたりのバイト数 |" in t for t in tables_ja)
    assert any("| 8 | 391,811 |" in t for t in tables_ja)
    assert any("| シード分割 / 1 デバイスでの vmap |" in t for t in tables_ja)
    assert text.count("check passed") == 3  # the three exercises' checks
    assert len(_png_outputs(nb)) >= 2  # training curves, benchmark


#: The chapters' code in view against the companion, compared on arrays (agreement_probes.py):
#: {chapter: {check: largest |difference| allowed}}. Equal programs on the same key agree to
#: float32 rounding; the replay buffer and the rollout are copies, so exactly.
AGREEMENT = {
    "05_rl_foundations": {
        "episode in view against tabular.sample_episode": 0.0,
        "returns in view against tabular.discounted_returns": 1e-6,
    },
    "07_dqn": {
        "replay buffer contents": 0.0,
        "replay buffer position and size": 0.0,
        "replay buffer samples": 0.0,
        "DQN loop final parameters": 1e-4,
        "DQN loop kept parameters": 1e-4,
        "DQN loop losses": 1e-4,
        "DQN loop evaluations": 1e-4,
    },
    "08_ppo_maze": {
        "PPO rollout": 0.0,
        "GAE in view against the companion": 1e-5,
        "next values gathered against every next observation": 1e-5,
        "GAE in view against a plain loop": 1e-4,
        "PPO loss": 1e-5,
    },
    "08_ppo_training": {
        "PPO loop parameters": 1e-4,
        "PPO loop optimiser state": 1e-4,
        "PPO loop model": 1e-4,
        "PPO loop metrics": 1e-4,
    },
}


@pytest.mark.parametrize(
    "path", [ROOT / "notebooks" / f"{s}.ipynb" for s in AGREEMENT], ids=list(AGREEMENT)
)
def test_code_in_view_gives_the_companions_arrays(path, executed):
    stem = path.stem
    found = executed(path).metadata["agreement"]
    assert set(found) == set(AGREEMENT[stem]), sorted(found)
    for check, tolerance in AGREEMENT[stem].items():
        result = found[check]
        assert result["max_abs_diff"] <= tolerance, (check, result)
    # what is compared varies: not a comparison of constants (a loss, a buffer of zeros)
    for check in (
        "episode in view against tabular.sample_episode",
        "returns in view against tabular.discounted_returns",
        "replay buffer contents",
        "DQN loop losses",
        "PPO rollout",
        "GAE in view against the companion",
        "next values gathered against every next observation",
        "PPO loop parameters",
    ):
        if check in found:
            assert found[check]["spread"] > 0, (check, found[check])


@pytest.mark.notebook
@pytest.mark.subprocess
def test_many_devices_runs_on_a_machine_with_one_device(tmp_path):
    """Chapter 12 on one device, as on a Colab GPU or TPU runtime or one TPU v5e chip: JAX has
    started before the chapter asks for 8 simulated CPU devices, so its mesh holds one. (On a
    TPU, XLA also drops the one-device all-reduce from the compiled step, which the CPU keeps:
    the chapter's cell that prints it must not assume one; benchmarks/device_notebooks.py
    runs the chapter there.)"""
    import subprocess

    record = tmp_path / "record.json"
    script = (
        "import json, sys\n"
        "import jax\n"
        "jax.devices()  # the backend starts with one CPU device\n"
        f"sys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"
        "import device_notebooks\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        f"out = device_notebooks.run_one(device_notebooks.NOTEBOOKS / '12_many_devices.ipynb')\n"
        "out['num_devices'] = InteractiveShell.instance().user_ns.get('num_devices')\n"
        f"open({str(record)!r}, 'w').write(json.dumps(out))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "XLA_FLAGS"}
    env.update(DRLJAX_BUDGET="tiny", MPLBACKEND="Agg")
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert record.is_file(), done.stderr[-2000:]
    out = json.loads(record.read_text())
    assert out["passed"], out.get("error")
    assert out["num_devices"] == 1, out["num_devices"]
