"""The repository's build settings stay as the README promises."""

import re
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest
import yaml
from colab_env import SPECS, pip_install_line, read_spec, setup_cell
from notebook_runner import NOTEBOOKS, ROOT
from packaging.requirements import Requirement

#: Pins of the setup cell that differ from requirements.txt on purpose. chex 0.1.91 and later
#: require jax>=0.7, absl-py>=2.3.1 and toolz>=1.0: on Colab pip would upgrade absl-py and
#: toolz (runtime 2026.08, which has no chex) and replace jax 0.5.3 (runtime 2025.10, which has
#: chex 0.1.90). 0.1.90 needs only what every Colab runtime in tests/colab/ has.
SETUP_CELL_NOT_AS_BUILT = {"chex": "0.1.90"}


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

    def pages(entry):  # a chapter and its sections (the chapter's further pages)
        return [entry["file"]] + [p for s in entry.get("sections", []) for p in pages(s)]

    files = [toc["root"]] + [
        p for part in toc["parts"] for ch in part["chapters"] for p in pages(ch)
    ]
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
        # the libraries it pins are the versions the book is built with, or those set apart
        pins = dict(r.split("==") for r in _requirements())
        for name, version in re.findall(r"([A-Za-z0-9_.\-]+)==([0-9][0-9A-Za-z.]*)", source):
            expected = SETUP_CELL_NOT_AS_BUILT.get(name, pins.get(name))
            assert version == expected, (
                f"{path.name}: {name}=={version}, expected {expected} (requirements.txt, or "
                "SETUP_CELL_NOT_AS_BUILT where Colab needs another version)"
            )
        assert "jax==" not in source and "jaxlib" not in source  # never touch Colab's JAX


def _setup_cell_requirements():
    line = pip_install_line(setup_cell())
    words = re.findall(r'"[^"]+"|\S+', line.split("%pip install", 1)[1])
    return [Requirement(w.strip('"')) for w in words if not w.startswith("-")]


def test_setup_cell_asks_for_nothing_colab_has_at_another_version():
    """Each requirement of the setup cell, where Colab has the package, is met by Colab's
    version, so that pip leaves it alone (the Colab test checks what pip really does)."""
    reqs = _setup_cell_requirements()
    assert {r.name for r in reqs} >= {
        "equinox",
        "dm-haiku",
        "jumanji",
        "jax-tqdm",
        "chex",
        "drl-jax-companion",
    }
    assert len(SPECS) >= 2
    for spec in SPECS:
        _, colab = read_spec(spec)
        for req in reqs:
            name = re.sub(r"[-_.]+", "-", req.name).lower()
            if name in colab:
                assert req.specifier.contains(colab[name], prereleases=True), (
                    f"{req} would change Colab {spec.stem}'s {name} {colab[name]}"
                )


def test_companion_lower_bounds_hold_on_every_colab_runtime():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = [Requirement(d) for d in project["dependencies"]]
    deps += [Requirement(d) for d in project["optional-dependencies"]["notebook"]]
    # lower bounds only, less releases known to be broken (jax's CPU bugs)
    for r in deps:
        operators = [s.operator for s in r.specifier]
        assert operators.count(">=") == 1 and set(operators) <= {">=", "!="}, r
    assert "ipython" not in {r.name for r in map(Requirement, project["dependencies"])}
    checked = 0
    for spec in SPECS:
        _, colab = read_spec(spec)
        for req in deps:
            if req.name in colab:
                assert req.specifier.contains(colab[req.name]), (
                    f"{spec.stem}: {req} vs {colab[req.name]}"
                )
                checked += 1
    assert checked >= 2 * 6  # jax, numpy, optax, matplotlib, ipython, ipywidgets on each line


def test_every_notebook_opens_with_a_colab_badge_that_the_book_leaves_out():
    """A notebook (on GitHub, in Jupyter) opens with its title and an Open-in-Colab badge,
    which opens its reader's notebook (the figures of its prose filled in) on the branch that
    the workflow publishes; the badge's cell is removed from the book, whose pages have a
    launch button for Colab."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from edition_notebooks import COLAB_BRANCH

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]["url"].removeprefix("https://github.com/")
    assert config["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    for path in NOTEBOOKS:
        title, badge = nbformat.read(path, as_version=4).cells[:2]
        link = (
            f"https://colab.research.google.com/github/{repo}/blob/"
            f"{COLAB_BRANCH}/notebooks/{path.name}"
        )
        assert title.cell_type == "markdown" and title.source.startswith("# "), path.name
        assert badge.cell_type == "markdown" and link in badge.source, path.name
        assert badge.metadata.get("tags") == ["remove-cell"], path.name


@pytest.mark.subprocess
def test_notebook_code_is_formatted_for_the_page_without_formatter_directives(kept_run):
    """``tools/format_notebooks.py --check`` passes; its pass is kept for the next session
    while nothing it reads changes (the tool and the notebooks among them)."""
    import subprocess
    import sys

    def run():
        done = subprocess.run(
            [sys.executable, str(ROOT / "tools" / "format_notebooks.py"), "--check"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout  # names each cell: run it without --check
        return b"formatted"

    assert kept_run("notebooks-formatted", run, Path(__file__).read_text()) == b"formatted"


def test_the_formatter_refuses_tool_directives_a_reader_would_see():
    import importlib.util

    spec = importlib.util.spec_from_file_location("fmt", ROOT / "tools" / "format_notebooks.py")
    fmt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fmt)
    for line in ("x = 1  # fmt: skip", "f = lambda x: x  # noqa: E731", "y = z  # type: ignore"):
        assert fmt.DIRECTIVE.search(line), line
    for line in ("x = 1  # the format of the key", "noqa = 3", "kind = 'type'"):
        assert not fmt.DIRECTIVE.search(line), line


def test_make_check_leaves_out_the_marks_the_readme_and_pytest_name():
    """``make check`` deselects every mark declared to pytest, and CONTRIBUTING.md's paragraph
    on ``make check`` names each of them but ``colab`` (which ``make test`` leaves out too)."""
    makefile = (ROOT / "Makefile").read_text()
    line = re.search(r"^CHECK_MARKS := ((?:.*\\\n)*.*)$", makefile, re.M).group(1)
    left_out = set(re.findall(r"not (\w+)", line))
    declared = {
        m.split(":")[0]
        for m in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"][
            "ini_options"
        ]["markers"]
    }
    assert left_out == declared, (left_out, declared)
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    check = contributing[contributing.index("`make check` is the loop") :].split("\n\n")[0]
    for mark in left_out - {"colab"}:
        assert f"`{mark}`" in check, mark


# --- the README, CONTRIBUTING.md, the licences and CI -------------------------------------

DOCS = ("README.md", "CONTRIBUTING.md")
#: Suffixes of the files a document may name in code (`tools/book_cache.py`).
FILE_SUFFIXES = {".py", ".md", ".yml", ".yaml", ".toml", ".txt", ".json", ".ipynb", ".js", ".css"}
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.DOTALL)


def _code(markdown: str) -> list[str]:
    """The text of a Markdown document's fenced blocks and inline code spans."""
    blocks = FENCE.findall(markdown)
    return blocks + [m.group(2) for m in CODE_SPAN.finditer(FENCE.sub("", markdown))]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _ignored_folders() -> set[str]:
    lines = (ROOT / ".gitignore").read_text().splitlines()
    return {l.strip().strip("/") for l in lines if l.strip() and not l.startswith("#")}


def test_readme_reads_in_two_minutes():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 80, f"README.md has {len(lines)} lines; move details to CONTRIBUTING.md"


def test_readme_points_to_the_published_book_and_to_colab():
    """The published book is the repository's GitHub Pages site and the Colab link opens a
    notebook of the reader's notebooks' branch (book/_ext/edition_notebooks.py), written
    from a notebook of the repository, both derived from _config.yml's repository."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from edition_notebooks import COLAB_BRANCH

    config = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    owner, name = config["url"].removeprefix("https://github.com/").split("/")
    readme = (ROOT / "README.md").read_text()
    assert f"https://{owner}.github.io/{name}/" in readme
    links = re.findall(r"https://colab\.research\.google\.com/github/[^)\s]+", readme)
    colab = re.findall(
        rf"https://colab\.research\.google\.com/github/{owner}/{name}/blob/"
        rf"{COLAB_BRANCH}/(notebooks/[\w.]+\.ipynb)",
        readme,
    )
    assert colab and len(colab) == len(links), links
    assert all((ROOT / path).is_file() for path in colab), colab


def test_licences_cover_code_and_text():
    apache = (ROOT / "LICENSE").read_text()
    assert "Apache License" in apache and "Version 2.0, January 2004" in apache
    # the whole text, not a notice: the definitions, the nine sections, the appendix
    for part in (
        "1. Definitions.",
        "9. Accepting Warranty or Additional Liability.",
        "END OF TERMS AND CONDITIONS",
        "APPENDIX: How to apply",
    ):
        assert part in apache, part
    text = " ".join((ROOT / "LICENSE-text").read_text().split())
    assert "Creative Commons Attribution 4.0 International" in text and "CC BY 4.0" in text
    assert "https://creativecommons.org/licenses/by/4.0/legalcode" in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    readme = (ROOT / "README.md").read_text()
    licence = readme[readme.index("## Licence") :]
    assert "(LICENSE)" in licence and "(LICENSE-text)" in licence and "CC BY 4.0" in licence


@pytest.mark.parametrize("doc", DOCS)
def test_paths_and_links_in_the_docs_exist(doc):
    """Every relative link, and every path a document writes in code, exists in the checkout,
    or lies in a folder that the build writes (git-ignored: `.venv/`, `_build/`, `lab/`); a
    command's output file (after ``--out``) needs only its folder."""
    text = (ROOT / doc).read_text()
    generated = _ignored_folders()
    missing = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = ROOT / (path or doc)
        if not file.exists():
            missing.append(target)
        elif anchor:
            headings = re.findall(r"^#+ (.+)$", file.read_text(), re.MULTILINE)
            if anchor not in map(_slug, headings):
                missing.append(target)
    checked = 0
    for code in _code(text):
        words = code.split()
        for before, word in zip([""] + words, words):
            word = word.rstrip(",;:)").lstrip("(")
            if not re.fullmatch(r"[\w.\-/]+", word) or word.startswith("-"):
                continue
            if "/" not in word and Path(word).suffix not in FILE_SUFFIXES:
                continue  # a module (companion.glue), a version (3.13), a word
            checked += 1
            if word.split("/")[0] in generated:
                continue
            exists = (ROOT / word).parent if before == "--out" else ROOT / word
            if not exists.exists():
                missing.append(word)
    assert checked >= 5, checked
    assert missing == [], f"{doc} names paths that do not exist: {missing}"


def test_every_make_command_in_the_docs_is_a_target():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", makefile, re.MULTILINE))
    named = {}
    for doc in DOCS:
        for code in _code((ROOT / doc).read_text()):
            for target in re.findall(r"\bmake\s+(?:[A-Z_]+=\S+\s+)*([a-z][\w-]*)", code):
                named.setdefault(target, doc)
    unknown = {t: doc for t, doc in named.items() if t not in targets}
    assert unknown == {}, f"make targets the Makefile lacks: {unknown}"
    assert {"test", "book", "check", "colab-test", "lab", "bench"} <= named.keys(), named


def test_the_book_workflow_runs_what_ci_runs():
    """.ci/run and the book workflow's steps are the same commands in the same order."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    ci = [l.strip() for l in lines if l.strip() and not l.startswith(("#", "set ", "cd "))]
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    steps = workflow["jobs"]["build"]["steps"]
    runs = [l.strip() for s in steps if "run" in s for l in s["run"].splitlines() if l.strip()]
    assert ci == runs, (ci, runs)
    assert ci[:3] == ["make test", "make colab-test", "make book"], ci
    assert ci[3].endswith(".ci/check_site.py"), ci


def test_the_workflow_has_every_colab_runtimes_python_and_the_makefiles():
    """The Colab test builds each runtime line of tests/colab/ with that line's Python; the
    workflow installs each of them, and the Python the Makefile prefers (3.13) last, as the
    default. pyproject's requires-python and the Makefile accept the same oldest Python."""
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    (setup,) = [
        s
        for s in workflow["jobs"]["build"]["steps"]
        if s.get("uses", "").startswith("actions/setup-python")
    ]
    versions = str(setup["with"]["python-version"]).split()
    for spec in SPECS:
        python = re.search(r"Python (\d+\.\d+)", spec.read_text().splitlines()[0]).group(1)
        assert python in versions, (spec.name, python, versions)
    assert versions[-1] == "3.13"
    oldest = re.search(r"sys\.version_info >= \((\d+), (\d+)\)", (ROOT / "Makefile").read_text())
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == f">={oldest.group(1)}.{oldest.group(2)}" == ">=3.12"
