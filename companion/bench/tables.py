"""Markdown tables of the committed benchmark results, for the chapters.

Each function takes a result as :func:`companion.bench.load_result` returns it and raises
``ValueError``, naming the argument, when it is not that result. Each writes its table in one
of :data:`LANGUAGES` (``language="ja"``: the Japanese edition's headers and sentences, the same
rows and figures), for ``companion.glue.markdown(en=..., ja=...)``. The words are written in
English here and translated with gettext (:mod:`companion.bench.words`).
"""

from __future__ import annotations

import functools
import statistics
from typing import Any

from companion import stats
from companion.bench.words import (  # noqa: F401  (LABELS: the labels, named here too)
    LABELS,
    LANGUAGES,
    N_,
    POST_TASKS,
    _,
    _check_language,
    _count,
    _envs,
    _label,
    _of,
    _of_text,
    _seconds,
    _tasks,
)


def _head(*cells: str) -> str:
    """A Markdown table's header row."""
    return "| " + " | ".join(cells) + " |"


def measured_on(result: dict, language: str = "en") -> str:
    """``"Measured <date> on <cpu> (<n> cores), JAX <version> (<backend>)."`` for a result, in
    ``language``.

    Raises:
        ValueError: if ``result`` is not a benchmark result with ``date`` and ``hardware``, or
            ``language`` not one of :data:`LANGUAGES`.
    """
    hw = result.get("hardware") if isinstance(result, dict) else None
    if not isinstance(hw, dict) or "date" not in result:
        raise ValueError("result: expected a benchmark result (load_result) with date and hardware")
    _check_language(language)
    where = _("{cpu} ({cores} cores)", language).format(cpu=hw["cpu"], cores=hw["cpu_cores"])
    if hw.get("backend", "cpu") != "cpu":  # an accelerator: name it, not its host's CPU
        where = ", ".join(sorted(set(hw.get("devices", [])))) or hw["backend"]
    return _("Measured {date} on {where}, JAX {jax} ({backend}).", language).format(
        date=result["date"][:10], where=where, jax=hw["jax"], backend=hw["backend"]
    )


def _require(posts: Any, *keys: str) -> None:
    missing = [k for k in keys if not isinstance(posts, dict) or k not in posts]
    if missing:
        raise ValueError(f"posts: expected the source_posts result, missing {', '.join(missing)}")


def _success_cells(run: dict) -> str:
    return " | ".join(
        f"{run['final_success'][t]['sampled']:.3f} / {run['final_success'][t]['greedy']:.3f}"
        for t in POST_TASKS
    )


def _success_head(language: str) -> str:
    success = _("{task} (sampled / greedy)", language)
    return " | ".join(success.format(task=name) for name in _tasks(language).values())


def post_ppo_table(posts: dict, language: str = "en") -> str:
    """Markdown: each PPO run of the post's agent and the book's (time and steps to 0.99,
    final success, sampled / greedy, on the three tasks), and the ratio of median times.

    Raises:
        ValueError: if ``posts`` is not the ``source_posts`` result, or ``language`` not one
            of :data:`LANGUAGES`.
    """
    _require(posts, "ppo_runs", "book_ppo_runs", "comparisons")
    tasks = _tasks(_check_language(language))
    head = _head(
        _("agent", language),
        _("trained on", language),
        _("key", language),
        _("steps to 0.99", language),
        _("time to 0.99 (s)", language),
    )
    lines = [f"{head} {_success_head(language)} |", "|---" * (5 + len(POST_TASKS)) + "|"]
    for r in posts["ppo_runs"] + posts["book_ppo_runs"]:
        if r["variant"] not in ("post", "book"):
            continue
        lines.append(
            f"| {_label(r['variant'], language)} | {tasks[r['task']]} | {r['seed']} | "
            f"{_count(r['steps_to_target'], language)} | "
            f"{_count(r['time_to_target_s'], language, '{:.1f}')} | {_success_cells(r)} |"
        )
    for task, c in posts["comparisons"]["ppo"].items():
        if c.get("post_over_book_time") is not None:
            ratio = f"{c['post_over_book_time']:.2f}"
            sentence = _(
                "On the {task}, median time to 0.99, post / book: {ratio} "
                "(same run, same machine).",
                language,
            )
            lines.append("\n" + sentence.format(task=tasks[task], ratio=ratio))
    return "\n".join(lines)


def post_ppo_ablation_table(posts: dict, language: str = "en") -> str:
    """Markdown: the post's PPO on key 0 as published and with each of its bugs fixed alone
    (steps and time to 0.99, final success on the three tasks).

    Raises:
        ValueError: if ``posts`` is not the ``source_posts`` result, or ``language`` not one
            of :data:`LANGUAGES`.
    """
    _require(posts, "ppo_runs")
    _check_language(language)
    head = _head(
        _("post's agent", language),
        _("trained on", language),
        _("steps to 0.99", language),
        _("time to 0.99 (s)", language),
    )
    lines = [f"{head} {_success_head(language)} |", "|---" * (4 + len(POST_TASKS)) + "|"]
    for r in posts["ppo_runs"]:
        if r["seed"] == 0:
            lines.append(
                f"| {_label(r['variant'], language)} | {_tasks(language)[r['task']]} | "
                f"{_count(r['steps_to_target'], language)} | "
                f"{_count(r['time_to_target_s'], language, '{:.1f}')} | {_success_cells(r)} |"
            )
    return "\n".join(lines)


def post_dqn_table(posts: dict, language: str = "en") -> str:
    """Markdown: the post's DQN, the same with CartPole-v1's reward and truncation, and the
    book's DQN on the same keys: final and kept-best parameters at a mean greedy return
    >= 475, and the median over all keys of the time to a first evaluation at 475 (compile
    included; a key that never got there counts as later than any, "—" when half never did).

    Raises:
        ValueError: if ``posts`` is not the ``source_posts`` result, or ``language`` not one
            of :data:`LANGUAGES`.
    """
    _require(posts, "dqn_runs", "book_dqn_runs")
    _check_language(language)
    groups: dict = {}
    for r in posts["dqn_runs"] + posts["book_dqn_runs"]:
        variant = r["variant"]
        name = (
            _label(variant, language)
            if variant in ("book", "post")
            else _("{agent}, {variant}", language).format(
                agent=_label("post", language), variant=_label(variant, language)
            )
        )
        groups.setdefault(name, []).append(r)
    lines = [
        _head(
            _("agent", language),
            _("keys", language),
            _("final ≥ 475", language),
            _("kept-best ≥ 475", language),
            _("an evaluation ≥ 475", language),
            _("median time to it, all keys (s)", language),
        ),
        "|---" * 6 + "|",
    ]
    for name, runs in groups.items():
        times = [r["time_to_target_s"] for r in runs]
        first = stats.median_first_step(times)  # over all keys: one that never got there is later
        median = "—" if first is None else f"{first:.1f}"
        lines.append(
            f"| {name} | {len(runs)} | {sum(r['final_return'] >= 475 for r in runs)} | "
            f"{sum(r['best_return'] >= 475 for r in runs)} | "
            f"{sum(t is not None for t in times)} | {median} |"
        )
    return "\n".join(lines)


def _rows(header: list, rows: list) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(x) for x in row) + " |" for row in rows])


def dqn_cartpole_table(result: dict, language: str = "en") -> str:
    """Markdown: the book's DQN and rejax's, key by key (compile and training time, steps and
    time to solve CartPole-v1), the book's seeds trained at once, and the ratio of medians.

    Args:
        result: the ``dqn_cartpole`` result (``benchmarks/dqn_cartpole.py``).
        language: one of :data:`LANGUAGES`.

    Raises:
        ValueError: if ``result`` is not that result, or ``language`` not one of
            :data:`LANGUAGES`.
    """
    _require_result(result, "dqn_cartpole", "book", "book_all_seeds")
    _check_language(language)
    lines = [
        _head(
            _("agent", language),
            _("PRNG key", language),
            _("compile (s)", language),
            _("training (s)", language),
            _("steps to solve", language),
            _("time to solve (s)", language),
        ),
        "|---" * 6 + "|",
    ]
    for name, runs in [
        (_label("this book", language), result["book"]),
        (f"rejax {result.get('rejax_version', '')}", result.get("rejax", [])),
    ]:
        for r in runs:
            lines.append(
                f"| {name} | {r['seed']} | {r['compile_s']:.1f} | {r['run_s']:.1f} | "
                f"{_count(r.get('solve_steps'), language)} | "
                f"{_seconds(r.get('time_to_solve_s'), language)} |"
            )
    a = result["book_all_seeds"]
    compile_s, run_s = f"{a['compile_s']:.1f}", f"{a['run_s']:.1f}"
    at_once = _(
        "All {seeds} seeds at once: compile {compile_s} s, training {run_s} s, {solved} solved.",
        language,
    )
    lines.append(
        "\n"
        + at_once.format(seeds=a["num_seeds"], compile_s=compile_s, run_s=run_s, solved=a["solved"])
    )
    if "ratio_rejax_over_book_time_to_solve" in result:
        ratio = f"{result['ratio_rejax_over_book_time_to_solve']:.1f}"
        sentence = _(
            "rejax's median time to solve / this book's median: {ratio}x (same run).", language
        )
        lines.append(sentence.format(ratio=ratio))
    return "\n".join(lines)


def lever_verdicts(result: dict) -> dict:
    """``{lever: Comparison}``: each of the ``dqn_stability`` levers against the chapter's
    configuration on the same keys (McNemar, Holm-adjusted over the levers).

    Raises:
        ValueError: if ``result`` is not the ``dqn_stability`` result with a ``chapter`` row.
    """
    _require_result(result, "dqn_stability", "configs")
    if "chapter" not in result["configs"]:
        raise ValueError("result: expected the dqn_stability result, missing its chapter row")
    rows = result["configs"]
    chapter = stats.solved(rows["chapter"]["final_returns"])
    tests = {
        name: stats.paired_solved(stats.solved(row["final_returns"]), chapter)
        for name, row in rows.items()
        if name != "chapter"
    }
    return stats.holm_adjust(tests)


#: A paired test's direction, as :func:`_verdict` words it.
DIRECTIONS = {1: N_("more"), -1: N_("fewer"), 0: N_("within the spread")}


def _verdict(comparison: Any, language: str) -> str:
    """``"fewer (p = 0.0009)"``, ``"within the spread (p = 0.55)"``, in ``language``."""
    return _("{verdict} (p = {p:.2g})", language).format(
        verdict=_(DIRECTIONS[comparison.direction], language), p=comparison.p_value
    )


def _interval(value: Any, low: float, high: float, language: str) -> str:
    """``value`` with its interval: ``"12 of 20 (0.39–0.78)"``."""
    return _("{value} ({low:.2f}–{high:.2f})", language).format(value=value, low=low, high=high)


def _reach(row: dict, language: str) -> str:
    median = stats.median_first_step(row["steps_to_475"])
    return "—" if median is None else f"{median:,.0f}"


def dqn_levers_table(result: dict, language: str = "en") -> str:
    """Markdown: the chapter's DQN and each of its levers removed in turn, one row each: final
    solves with their 95% Wilson interval, the paired test against the chapter's row
    (:func:`lever_verdicts`), kept-best solves, last-quarter evaluations, the median over all
    keys of the step of a first evaluation at 475 (— when half the keys never reach it), the
    values' scale and the training time.

    Args:
        result: the ``dqn_stability`` result (``benchmarks/dqn_stability.py``).
        language: one of :data:`LANGUAGES`.

    Raises:
        ValueError: if ``result`` is not that result, or ``language`` not one of
            :data:`LANGUAGES`.
    """
    _require_result(result, "dqn_stability", "configs")
    _check_language(language)
    verdicts = lever_verdicts(result)
    lines = [
        _head(
            _("configuration", language),
            _("final ≥ 475 (95% interval)", language),
            _("against the chapter's (McNemar, Holm)", language),
            _("kept-best ≥ 475", language),
            _("last-quarter evaluations", language),
            _("first evaluation ≥ 475: median step over all keys", language),
            _("largest mean Q (median)", language),
            _("training", language),
        ),
        "|---" * 8 + "|",
    ]
    for name, row in result["configs"].items():
        n = len(row["keys"])
        low, high = stats.share_interval(row["final_solved"], n)
        against = "—" if name not in verdicts else _verdict(verdicts[name], language)
        final = _interval(_of(row["final_solved"], n, language), low, high, language)
        run_s = _("{seconds:.0f} s", language).format(seconds=sum(row["run_s"]))
        lines.append(
            f"| {_label(name, language)} | {final} | {against} | {_of(row['best_solved'], n, language)} "
            f"| {row['last_quarter_eval_mean']:.0f} | {_reach(row, language)} "
            f"| {row['median_q_max']:.0f} | {run_s} |"
        )
    return "\n".join(lines)


def dqn_grid_table(result: dict, language: str = "en") -> str:
    """Markdown: the target network's speed against LayerNorm and the budget, one row per
    target (with its mean lag in gradient steps), one column per budget and LayerNorm: the keys
    whose final policy solves, with the share's 95% Wilson interval.

    Args:
        result: the ``dqn_stability`` result with its ``grid``.
        language: one of :data:`LANGUAGES`.

    Raises:
        ValueError: if ``result`` has no grid, or ``language`` is not one of :data:`LANGUAGES`.
    """
    _require_result(result, "dqn_stability", "grid")
    _check_language(language)
    grid = result["grid"]
    budgets = sorted({row["budget"] for row in grid.values()})
    cells: dict = {}
    for row in grid.values():
        cells.setdefault((row["target"], row["mean_lag"]), {})[
            (row["budget"], row["layer_norm"])
        ] = row
    head = [_("target", language), _("mean lag", language)]
    for b in budgets:
        for ln in (True, False):
            column = (
                _("{steps:,} steps, with LayerNorm", language)
                if ln
                else _("{steps:,} steps, without LayerNorm", language)
            )
            head.append(column.format(steps=b))
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for (target, lag), by in cells.items():
        line = [_label(target, language), f"{lag:g}"]
        for b in budgets:
            for ln in (True, False):
                row = by.get((b, ln))
                if row is None:
                    line.append("—")
                    continue
                low, high = stats.share_interval(row["final_solved"], len(row["keys"]))
                line.append(_interval(row["final_solved"], low, high, language))
        lines.append("| " + " | ".join(line) + " |")
    n = len(next(iter(grid.values()))["keys"])
    caption = _(
        "Keys whose final policy solves, of {n}, with the share's 95% interval; the mean lag "
        "is in gradient steps.",
        language,
    ).format(n=n)
    return caption + "\n\n" + "\n".join(lines)


def _require_result(result: Any, name: str, *keys: str) -> None:
    missing = [k for k in keys if not isinstance(result, dict) or k not in result]
    if missing:
        raise ValueError(f"result: expected the {name} result, missing {', '.join(missing)}")


def benchmarks_against_others(env: dict, dqn: dict, posts: dict, language: str = "en") -> str:
    """Markdown: env steps/s against gymnasium and gymnax, DQN against rejax, PPO against the post.

    Each comparison is of two programs measured in one run on one machine; the ratios follow.

    Args:
        env, dqn, posts: the ``env_throughput``, ``dqn_cartpole`` and ``source_posts`` results.
        language: one of :data:`LANGUAGES`.

    Raises:
        ValueError: naming the argument that is not its result, or ``language`` if it is not
            one of :data:`LANGUAGES`.
    """
    _require_result(env, "env_throughput", "gymnasium", "jax_cartpole", "ratios")
    _require_result(dqn, "dqn_cartpole", "book")
    _require(posts, "ppo_runs", "book_ppo_runs", "comparisons", "ppo_target")
    _check_language(language)
    book, post = _label("this book", language), _label("the post", language)
    gym_rate = env["gymnasium"]["gym.make"]["steps_per_s"]
    gym = _("gymnasium CartPole-v1, Python loop, {envs}", language)
    rows = [[gym.format(envs=_envs(1, language)), f"{gym_rate:,.0f}", "1.0"]]
    for n, r in env["jax_cartpole"].items():
        rows.append(
            [
                _("book's JAX CartPole, {envs}", language).format(envs=_envs(n, language)),
                f"{r['steps_per_s']:,.0f}",
                f"{r['steps_per_s'] / gym_rate:,.1f}",
            ]
        )
        peer = env.get("gymnax_cartpole", {}).get(n)
        if peer:
            rows.append(
                [
                    _("gymnax CartPole, {envs}", language).format(envs=_envs(n, language)),
                    f"{peer['steps_per_s']:,.0f}",
                    f"{peer['steps_per_s'] / gym_rate:,.1f}",
                ]
            )
    parts = [
        _(
            "**Environment steps per second** (random actions; `benchmarks/env_throughput.py`)",
            language,
        ),
        _rows(
            [
                _("environment", language),
                _("steps/s (median)", language),
                _("× gymnasium", language),
            ],
            rows,
        ),
    ]

    dqn_rows = []
    for name, key in [(book, "book"), (f"rejax {dqn.get('rejax_version', '')}", "rejax")]:
        if key in dqn:
            solved = sum("time_to_solve_s" in r for r in dqn[key])
            dqn_rows.append(
                [
                    name,
                    _seconds(dqn.get(f"{key}_time_to_solve_median_s"), language),
                    _of(solved, len(dqn[key]), language),
                ]
            )
    parts += [
        _(
            "**DQN: time to solve CartPole-v1** (compile included; `benchmarks/dqn_cartpole.py`)",
            language,
        ),
        _rows(
            [
                _("agent", language),
                _("median time to solve (s)", language),
                _("seeds solved", language),
            ],
            dqn_rows,
        ),
    ]

    ppo_rows = []
    for task, cmp in posts["comparisons"]["ppo"].items():
        for agent, runs_key in (("book", "book_ppo_runs"), ("post", "ppo_runs")):
            runs = [
                r
                for r in posts[runs_key]
                if r["task"] == task
                and r["variant"] in ("book", "post", "post on the book's medium maze")
            ]
            rate = statistics.median(r["steps_per_s"] for r in runs) if runs else None
            ppo_rows.append(
                [
                    _tasks(language)[task],
                    book if agent == "book" else post,
                    "—" if rate is None else f"{rate:,.0f}",
                    _seconds(cmp[f"{agent}_median_time_to_target_s"], language),
                    _of_text(cmp[f"{agent}_reached"], language),
                ]
            )
    target = posts["ppo_target"]
    parts += [
        _(
            "**PPO on Maze against the source post** (`benchmarks/source_posts.py`; the "
            "target is {target} success on 1,000 fresh episodes)",
            language,
        ).format(target=target),
        _rows(
            [
                _("task", language),
                _("agent", language),
                _("steps/s (median)", language),
                _("median time to target (s)", language),
                _("keys reaching it", language),
            ],
            ppo_rows,
        ),
    ]

    best = f"{env['ratios']['jax_best_vs_gym_make']:,.0f}"
    ratios = [
        _("JAX CartPole (best batch) / gymnasium: {best}x steps/s", language).format(best=best)
    ]
    if "ratio_rejax_over_book_time_to_solve" in dqn:
        ratio = f"{dqn['ratio_rejax_over_book_time_to_solve']:.1f}"
        ratios.append(
            _("DQN time to solve, rejax / this book: {ratio}x", language).format(ratio=ratio)
        )
    for task, cmp in posts["comparisons"]["ppo"].items():
        if cmp.get("post_over_book_time") is not None:
            ratio = f"{cmp['post_over_book_time']:.1f}"
            sentence = _("PPO time to {target} on the {task}, post / this book: {ratio}x", language)
            ratios.append(sentence.format(target=target, task=_tasks(language)[task], ratio=ratio))
    joined = functools.reduce(
        lambda earlier, later: _("{earlier}; {later}", language).format(
            earlier=earlier, later=later
        ),
        ratios,
    )
    parts.append(
        _("Ratios, each between two figures of one run: {ratios}.", language).format(ratios=joined)
    )
    return "\n\n".join(parts)
