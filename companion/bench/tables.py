"""Markdown tables of the committed benchmark results, for the chapters.

Each function takes a result as :func:`companion.bench.load_result` returns it and raises
``ValueError``, naming the argument, when it is not that result. Each writes its table in one
of :data:`LANGUAGES` (``language="ja"``: the Japanese edition's headers and sentences, the same
rows and figures), for ``companion.glue.markdown(en=..., ja=...)``.
"""

from __future__ import annotations

import statistics
from typing import Any

from companion import stats
from companion.bench.words import (  # noqa: F401  (LABELS_JA: the labels, named here too)
    LABELS_JA,
    LANGUAGES,
    POST_TASKS,
    POST_TASKS_JA,
    _check_language,
    _count,
    _envs,
    _label,
    _of,
    _of_text,
    _seconds,
    _tasks,
)


def measured_on(result: dict, language: str = "en") -> str:
    """``"Measured <date> on <cpu> (<n> cores), JAX <version> (<backend>)."`` for a result
    (``language="ja"``: ``"<date> に <cpu>（<n> コア）、JAX <version>（<backend>）で測定しました。"``).

    Raises:
        ValueError: if ``result`` is not a benchmark result with ``date`` and ``hardware``, or
            ``language`` not one of :data:`LANGUAGES`.
    """
    hw = result.get("hardware") if isinstance(result, dict) else None
    if not isinstance(hw, dict) or "date" not in result:
        raise ValueError("result: expected a benchmark result (load_result) with date and hardware")
    where, where_ja = (
        f"{hw['cpu']} ({hw['cpu_cores']} cores)",
        f"{hw['cpu']}（{hw['cpu_cores']} コア）",
    )
    if hw.get("backend", "cpu") != "cpu":  # an accelerator: name it, not its host's CPU
        device = ", ".join(sorted(set(hw.get("devices", [])))) or hw["backend"]
        where, where_ja = device, device
    if _check_language(language) == "ja":
        return f"{result['date'][:10]} に {where_ja}、JAX {hw['jax']}（{hw['backend']}）で測定しました。"
    return f"Measured {result['date'][:10]} on {where}, JAX {hw['jax']} ({hw['backend']})."


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
    if language == "ja":
        return " | ".join(f"{name}：サンプリング / 貪欲" for name in POST_TASKS_JA.values())
    return " | ".join(f"{name} (sampled / greedy)" for name in POST_TASKS.values())


def post_ppo_table(posts: dict, language: str = "en") -> str:
    """Markdown: each PPO run of the post's agent and the book's (time and steps to 0.99,
    final success, sampled / greedy, on the three tasks), and the ratio of median times.

    Raises:
        ValueError: if ``posts`` is not the ``source_posts`` result, or ``language`` not one
            of :data:`LANGUAGES`.
    """
    _require(posts, "ppo_runs", "book_ppo_runs", "comparisons")
    ja = _check_language(language) == "ja"
    tasks = _tasks(language)
    head = (
        "| エージェント | 学習した迷路 | キー | 0.99 までのステップ数 | 0.99 までの時間（s） |"
        if ja
        else "| agent | trained on | key | steps to 0.99 | time to 0.99 (s) |"
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
            lines.append(
                f"\n{tasks[task]}での 0.99 までの時間の中央値の比、記事 / 本書：{ratio}"
                "（同じ実行、同じマシン）。"
                if ja
                else f"\nOn the {tasks[task]}, median time to 0.99, post / book: {ratio} "
                "(same run, same machine)."
            )
    return "\n".join(lines)


def post_ppo_ablation_table(posts: dict, language: str = "en") -> str:
    """Markdown: the post's PPO on key 0 as published and with each of its bugs fixed alone
    (steps and time to 0.99, final success on the three tasks).

    Raises:
        ValueError: if ``posts`` is not the ``source_posts`` result, or ``language`` not one
            of :data:`LANGUAGES`.
    """
    _require(posts, "ppo_runs")
    ja = _check_language(language) == "ja"
    head = (
        "| 記事のエージェント | 学習した迷路 | 0.99 までのステップ数 | 0.99 までの時間（s） |"
        if ja
        else "| post's agent | trained on | steps to 0.99 | time to 0.99 (s) |"
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
    ja = _check_language(language) == "ja"
    groups: dict = {}
    for r in posts["dqn_runs"] + posts["book_dqn_runs"]:
        variant = r["variant"]
        name = (
            _label(variant, language)
            if variant in ("book", "post")
            else f"{_label('post', language)}、{_label(variant, language)}"
            if ja
            else f"post, {variant}"
        )
        groups.setdefault(name, []).append(r)
    lines = [
        "| エージェント | キー数 | 最終パラメータ ≥ 475 | 最良時のパラメータ ≥ 475 | "
        "評価で ≥ 475 に到達 | 到達までの時間の中央値、全キー（s） |"
        if ja
        else "| agent | keys | final ≥ 475 | kept-best ≥ 475 | an evaluation ≥ 475 | "
        "median time to it, all keys (s) |",
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
    ja = _check_language(language) == "ja"
    lines = [
        "| エージェント | PRNG キー | コンパイル（s） | 学習（s） | 解くまでのステップ数 | "
        "解くまでの時間（s） |"
        if ja
        else "| agent | PRNG key | compile (s) | training (s) | steps to solve | "
        "time to solve (s) |",
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
    lines.append(
        f"\n{a['num_seeds']} 個のシードを一度に学習：コンパイル {compile_s} s、学習 {run_s} s、"
        f"解けたのは {a['solved']} 個。"
        if ja
        else f"\nAll {a['num_seeds']} seeds at once: compile {compile_s} s, "
        f"training {run_s} s, {a['solved']} solved."
    )
    if "ratio_rejax_over_book_time_to_solve" in result:
        ratio = f"{result['ratio_rejax_over_book_time_to_solve']:.1f}"
        lines.append(
            f"解くまでの時間の中央値、rejax / 本書：{ratio} 倍（同じ実行）。"
            if ja
            else f"rejax's median time to solve / this book's median: {ratio}x (same run)."
        )
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


def _verdict(comparison: Any, language: str) -> str:
    """``"fewer (p = 0.0009)"``, ``"within the spread (p = 0.55)"`` (``「少ない（p = 0.0009）」``)."""
    if language == "ja":
        word = {1: "多い", -1: "少ない", 0: "ばらつきの範囲内"}[comparison.direction]
        return f"{word}（p = {comparison.p_value:.2g}）"
    word = {1: "more", -1: "fewer", 0: "within the spread"}[comparison.direction]
    return f"{word} (p = {comparison.p_value:.2g})"


def _interval(low: float, high: float, language: str) -> str:
    return f"（{low:.2f}–{high:.2f}）" if language == "ja" else f" ({low:.2f}–{high:.2f})"


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
    ja = _check_language(language) == "ja"
    verdicts = lever_verdicts(result)
    lines = [
        "| 設定 | 最終パラメータ ≥ 475（95% 信頼区間） | 第 7 章の設定と比べて（McNemar、Holm） "
        "| 最良時のパラメータ ≥ 475 | 最後の 4 分の 1 の評価 "
        "| 評価が初めて 475 以上になるステップ（全キーの中央値） "
        "| 平均 Q の最大値（中央値） | 学習時間 |"
        if ja
        else "| configuration | final ≥ 475 (95% interval) | against the chapter's "
        "(McNemar, Holm) | kept-best ≥ 475 | last-quarter evaluations "
        "| first evaluation ≥ 475: median step over all keys "
        "| largest mean Q (median) | training |",
        "|---" * 8 + "|",
    ]
    for name, row in result["configs"].items():
        n = len(row["keys"])
        low, high = stats.share_interval(row["final_solved"], n)
        against = "—" if name not in verdicts else _verdict(verdicts[name], language)
        lines.append(
            f"| {_label(name, language)} | {_of(row['final_solved'], n, language)}"
            f"{_interval(low, high, language)} | {against} | {_of(row['best_solved'], n, language)} "
            f"| {row['last_quarter_eval_mean']:.0f} | {_reach(row, language)} "
            f"| {row['median_q_max']:.0f} | {sum(row['run_s']):.0f} {'秒' if ja else 's'} |"
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
    ja = _check_language(language) == "ja"
    grid = result["grid"]
    budgets = sorted({row["budget"] for row in grid.values()})
    cells: dict = {}
    for row in grid.values():
        cells.setdefault((row["target"], row["mean_lag"]), {})[
            (row["budget"], row["layer_norm"])
        ] = row
    head = ["ターゲット", "平均の遅れ"] if ja else ["target", "mean lag"]
    for b in budgets:
        for ln in (True, False):
            if ja:
                head.append(f"{b:,} ステップ、LayerNorm {'あり' if ln else 'なし'}")
            else:
                head.append(f"{b:,} steps, {'with' if ln else 'without'} LayerNorm")
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
                line.append(f"{row['final_solved']}{_interval(low, high, language)}")
        lines.append("| " + " | ".join(line) + " |")
    n = len(next(iter(grid.values()))["keys"])
    caption = (
        f"最終方策が解けたキーの数（{n} 個中）と、その割合の 95% 信頼区間。平均の遅れの単位は勾配ステップです。"
        if ja
        else f"Keys whose final policy solves, of {n}, with the share's 95% interval; the mean lag "
        "is in gradient steps."
    )
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
    ja = _check_language(language) == "ja"
    book, post = _label("this book", language), _label("the post", language)
    gym_rate = env["gymnasium"]["gym.make"]["steps_per_s"]
    rows = [
        [
            f"gymnasium CartPole-v1、Python ループ、{_envs(1, language)}"
            if ja
            else "gymnasium CartPole-v1, Python loop, 1 env",
            f"{gym_rate:,.0f}",
            "1.0",
        ]
    ]
    for n, r in env["jax_cartpole"].items():
        rows.append(
            [
                f"本書の JAX CartPole、{_envs(n, language)}"
                if ja
                else f"book's JAX CartPole, {_envs(n, language)}",
                f"{r['steps_per_s']:,.0f}",
                f"{r['steps_per_s'] / gym_rate:,.1f}",
            ]
        )
        peer = env.get("gymnax_cartpole", {}).get(n)
        if peer:
            rows.append(
                [
                    f"gymnax CartPole{'、' if ja else ', '}{_envs(n, language)}",
                    f"{peer['steps_per_s']:,.0f}",
                    f"{peer['steps_per_s'] / gym_rate:,.1f}",
                ]
            )
    parts = [
        "**毎秒の環境ステップ数**（ランダムな行動。`benchmarks/env_throughput.py`）"
        if ja
        else "**Environment steps per second** (random actions; `benchmarks/env_throughput.py`)",
        _rows(
            ["環境", "ステップ/s（中央値）", "gymnasium に対する倍率"]
            if ja
            else ["environment", "steps/s (median)", "× gymnasium"],
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
        "**DQN：CartPole-v1 を解くまでの時間**（コンパイルを含む。`benchmarks/dqn_cartpole.py`）"
        if ja
        else "**DQN: time to solve CartPole-v1** (compile included; `benchmarks/dqn_cartpole.py`)",
        _rows(
            ["エージェント", "解くまでの時間の中央値（s）", "解けたシード"]
            if ja
            else ["agent", "median time to solve (s)", "seeds solved"],
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
        f"**Maze での PPO：元の記事との比較**（`benchmarks/source_posts.py`。目標は、新しい "
        f"1,000 エピソードでの成功率 {target}）"
        if ja
        else f"**PPO on Maze against the source post** (`benchmarks/source_posts.py`; the "
        f"target is {target} success on 1,000 fresh episodes)",
        _rows(
            [
                "タスク",
                "エージェント",
                "ステップ/s（中央値）",
                "目標までの時間の中央値（s）",
                "到達したキー",
            ]
            if ja
            else [
                "task",
                "agent",
                "steps/s (median)",
                "median time to target (s)",
                "keys reaching it",
            ],
            ppo_rows,
        ),
    ]

    best = f"{env['ratios']['jax_best_vs_gym_make']:,.0f}"
    ratios = [
        f"JAX CartPole（最良のバッチ）/ gymnasium：毎秒ステップ数で {best} 倍"
        if ja
        else f"JAX CartPole (best batch) / gymnasium: {best}x steps/s"
    ]
    if "ratio_rejax_over_book_time_to_solve" in dqn:
        ratio = f"{dqn['ratio_rejax_over_book_time_to_solve']:.1f}"
        ratios.append(
            f"DQN の解くまでの時間、rejax / 本書：{ratio} 倍"
            if ja
            else f"DQN time to solve, rejax / this book: {ratio}x"
        )
    for task, cmp in posts["comparisons"]["ppo"].items():
        if cmp.get("post_over_book_time") is not None:
            ratio = f"{cmp['post_over_book_time']:.1f}"
            ratios.append(
                f"{POST_TASKS_JA[task]}での PPO の {target} までの時間、記事 / 本書：{ratio} 倍"
                if ja
                else f"PPO time to {target} on the {POST_TASKS[task]}, post / this book: {ratio}x"
            )
    parts.append(
        "同じ実行の中で測った数値どうしの比：" + "。".join(ratios) + "。"
        if ja
        else "Ratios, each between two figures of one run: " + "; ".join(ratios) + "."
    )
    return "\n\n".join(parts)
