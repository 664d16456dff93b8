"""Markdown tables of the committed benchmark results, for the chapters.

Each function takes a result as :func:`companion.bench.load_result` returns it and raises
``ValueError``, naming the argument, when it is not that result.
"""

from __future__ import annotations

import statistics
from typing import Any

POST_TASKS = {
    "post-medium": "post's maze, 4 pairs",
    "post-medium-9": "post's maze, 9 pairs",
    "book-medium": "book's maze, 9 pairs",
}


def measured_on(result: dict) -> str:
    """``"Measured <date> on <cpu> (<n> cores), JAX <version> (<backend>)."`` for a result.

    Raises:
        ValueError: if ``result`` is not a benchmark result with ``date`` and ``hardware``.
    """
    hw = result.get("hardware") if isinstance(result, dict) else None
    if not isinstance(hw, dict) or "date" not in result:
        raise ValueError("result: expected a benchmark result (load_result) with date and hardware")
    return (
        f"Measured {result['date'][:10]} on {hw['cpu']} ({hw['cpu_cores']} cores), "
        f"JAX {hw['jax']} ({hw['backend']})."
    )


def _require(posts: Any, *keys: str) -> None:
    missing = [k for k in keys if not isinstance(posts, dict) or k not in posts]
    if missing:
        raise ValueError(f"posts: expected the source_posts result, missing {', '.join(missing)}")


def _count(value: Any, fmt: str = "{:,}") -> str:
    return "not reached" if value is None else fmt.format(value)


def _success_cells(run: dict) -> str:
    return " | ".join(
        f"{run['final_success'][t]['sampled']:.3f} / {run['final_success'][t]['greedy']:.3f}"
        for t in POST_TASKS
    )


def post_ppo_table(posts: dict) -> str:
    """Markdown: each PPO run of the post's agent and the book's (time and steps to 0.99,
    final success, sampled / greedy, on the three tasks), and the ratio of median times.

    Raises:
        ValueError: if ``posts`` is not the ``source_posts`` result.
    """
    _require(posts, "ppo_runs", "book_ppo_runs", "comparisons")
    head = " | ".join(f"{name} (sampled / greedy)" for name in POST_TASKS.values())
    lines = [
        f"| agent | trained on | key | steps to 0.99 | time to 0.99 (s) | {head} |",
        "|---" * (5 + len(POST_TASKS)) + "|",
    ]
    for r in posts["ppo_runs"] + posts["book_ppo_runs"]:
        if r["variant"] not in ("post", "book"):
            continue
        agent = "book" if r["variant"] == "book" else "post"
        lines.append(
            f"| {agent} | {POST_TASKS[r['task']]} | {r['seed']} | "
            f"{_count(r['steps_to_target'])} | {_count(r['time_to_target_s'], '{:.1f}')}"
            f" | {_success_cells(r)} |"
        )
    for task, c in posts["comparisons"]["ppo"].items():
        if c.get("post_over_book_time") is not None:
            lines.append(
                f"\nOn the {POST_TASKS[task]}, median time to 0.99, post / book: "
                f"{c['post_over_book_time']:.2f} (same run, same machine)."
            )
    return "\n".join(lines)


def post_ppo_ablation_table(posts: dict) -> str:
    """Markdown: the post's PPO on key 0 as published and with each of its bugs fixed alone
    (steps and time to 0.99, final success on the three tasks).

    Raises:
        ValueError: if ``posts`` is not the ``source_posts`` result.
    """
    _require(posts, "ppo_runs")
    head = " | ".join(f"{name} (sampled / greedy)" for name in POST_TASKS.values())
    lines = [
        f"| post's agent | trained on | steps to 0.99 | time to 0.99 (s) | {head} |",
        "|---" * (4 + len(POST_TASKS)) + "|",
    ]
    for r in posts["ppo_runs"]:
        if r["seed"] == 0:
            lines.append(
                f"| {r['variant']} | {POST_TASKS[r['task']]} | "
                f"{_count(r['steps_to_target'])} | "
                f"{_count(r['time_to_target_s'], '{:.1f}')} | {_success_cells(r)} |"
            )
    return "\n".join(lines)


def post_dqn_table(posts: dict) -> str:
    """Markdown: the post's DQN, the same with CartPole-v1's reward and truncation, and the
    book's DQN on the same keys: final and kept-best parameters at a mean greedy return
    >= 475, and the median time to a first evaluation at 475 (compile included).

    Raises:
        ValueError: if ``posts`` is not the ``source_posts`` result.
    """
    _require(posts, "dqn_runs", "book_dqn_runs")
    groups: dict = {}
    for r in posts["dqn_runs"] + posts["book_dqn_runs"]:
        groups.setdefault(
            "book"
            if r["variant"] == "book"
            else "post"
            if r["variant"] == "post"
            else f"post, {r['variant']}",
            [],
        ).append(r)
    lines = [
        "| agent | keys | final ≥ 475 | kept-best ≥ 475 | an evaluation ≥ 475 | "
        "median time to it (s) |",
        "|---" * 6 + "|",
    ]
    for name, runs in groups.items():
        times = [r["time_to_target_s"] for r in runs if r["time_to_target_s"] is not None]
        median = f"{statistics.median(times):.1f}" if times else "—"
        lines.append(
            f"| {name} | {len(runs)} | {sum(r['final_return'] >= 475 for r in runs)} | "
            f"{sum(r['best_return'] >= 475 for r in runs)} | {len(times)} | {median} |"
        )
    return "\n".join(lines)


def _rows(header: list, rows: list) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(x) for x in row) + " |" for row in rows])


def _envs(n: Any) -> str:
    return f"{n} env" if str(n) == "1" else f"{n} envs"


def _seconds(value: Any) -> str:
    return "not reached" if value is None else f"{value:.1f}"


def dqn_cartpole_table(result: dict) -> str:
    """Markdown: the book's DQN and rejax's, key by key (compile and training time, steps and
    time to solve CartPole-v1), the book's seeds trained at once, and the ratio of medians.

    Args:
        result: the ``dqn_cartpole`` result (``benchmarks/dqn_cartpole.py``).

    Raises:
        ValueError: if ``result`` is not that result.
    """
    _require_result(result, "dqn_cartpole", "book", "book_all_seeds")
    lines = [
        "| agent | PRNG key | compile (s) | training (s) | steps to solve | time to solve (s) |",
        "|---" * 6 + "|",
    ]
    for name, runs in [
        ("this book", result["book"]),
        (f"rejax {result.get('rejax_version', '')}", result.get("rejax", [])),
    ]:
        for r in runs:
            steps = r.get("solve_steps")
            lines.append(
                f"| {name} | {r['seed']} | {r['compile_s']:.1f} | {r['run_s']:.1f} | "
                f"{'not reached' if steps is None else f'{steps:,}'} | "
                f"{_seconds(r.get('time_to_solve_s'))} |"
            )
    a = result["book_all_seeds"]
    lines.append(
        f"\nAll {a['num_seeds']} seeds at once: compile {a['compile_s']:.1f} s, "
        f"training {a['run_s']:.1f} s, {a['solved']} solved."
    )
    if "ratio_rejax_over_book_time_to_solve" in result:
        lines.append(
            f"rejax's median time to solve / this book's median: "
            f"{result['ratio_rejax_over_book_time_to_solve']:.1f}x (same run)."
        )
    return "\n".join(lines)


def dqn_levers_table(result: dict) -> str:
    """Markdown: the chapter's DQN and each of its levers removed in turn, one row each (final
    and kept-best solves, per set of 11 keys, last-quarter evaluations, steps to 475, the
    values' scale, training time).

    Args:
        result: the ``dqn_stability`` result (``benchmarks/dqn_stability.py``).

    Raises:
        ValueError: if ``result`` is not that result.
    """
    _require_result(result, "dqn_stability", "configs")
    lines = [
        "| configuration | final ≥ 475 | per set of 11 keys | kept-best ≥ 475 "
        "| last-quarter evaluations | median step of a first evaluation ≥ 475 "
        "| largest mean Q (median) | training, 3 × 11 keys |",
        "|---" * 8 + "|",
    ]
    for name, row in result["configs"].items():
        n = len(row["keys"])
        steps = row["median_steps_to_475"]
        sets = ", ".join(str(v) for v in row["final_solved_by_keys"].values())
        lines.append(
            f"| {name} | {row['final_solved']} of {n} | {sets} | {row['best_solved']} of {n} "
            f"| {row['last_quarter_eval_mean']:.0f} | {'—' if steps is None else f'{steps:,.0f}'} "
            f"| {row['median_q_max']:.0f} | {sum(row['run_s']):.0f} s |"
        )
    return "\n".join(lines)


def _require_result(result: Any, name: str, *keys: str) -> None:
    missing = [k for k in keys if not isinstance(result, dict) or k not in result]
    if missing:
        raise ValueError(f"result: expected the {name} result, missing {', '.join(missing)}")


def benchmarks_against_others(env: dict, dqn: dict, posts: dict) -> str:
    """Markdown: env steps/s against gymnasium and gymnax, DQN against rejax, PPO against the post.

    Each comparison is of two programs measured in one run on one machine; the ratios follow.

    Args:
        env, dqn, posts: the ``env_throughput``, ``dqn_cartpole`` and ``source_posts`` results.

    Raises:
        ValueError: naming the argument that is not its result.
    """
    _require_result(env, "env_throughput", "gymnasium", "jax_cartpole", "ratios")
    _require_result(dqn, "dqn_cartpole", "book")
    _require(posts, "ppo_runs", "book_ppo_runs", "comparisons", "ppo_target")
    gym_rate = env["gymnasium"]["gym.make"]["steps_per_s"]
    rows = [["gymnasium CartPole-v1, Python loop, 1 env", f"{gym_rate:,.0f}", "1.0"]]
    for n, r in env["jax_cartpole"].items():
        rows.append(
            [
                f"book's JAX CartPole, {_envs(n)}",
                f"{r['steps_per_s']:,.0f}",
                f"{r['steps_per_s'] / gym_rate:,.1f}",
            ]
        )
        peer = env.get("gymnax_cartpole", {}).get(n)
        if peer:
            rows.append(
                [
                    f"gymnax CartPole, {_envs(n)}",
                    f"{peer['steps_per_s']:,.0f}",
                    f"{peer['steps_per_s'] / gym_rate:,.1f}",
                ]
            )
    parts = [
        "**Environment steps per second** (random actions; `benchmarks/env_throughput.py`)",
        _rows(["environment", "steps/s (median)", "× gymnasium"], rows),
    ]

    dqn_rows = []
    for name, key in [("this book", "book"), (f"rejax {dqn.get('rejax_version', '')}", "rejax")]:
        if key in dqn:
            solved = sum("time_to_solve_s" in r for r in dqn[key])
            dqn_rows.append(
                [
                    name,
                    _seconds(dqn.get(f"{key}_time_to_solve_median_s")),
                    f"{solved} of {len(dqn[key])}",
                ]
            )
    parts += [
        "**DQN: time to solve CartPole-v1** (compile included; `benchmarks/dqn_cartpole.py`)",
        _rows(["agent", "median time to solve (s)", "seeds solved"], dqn_rows),
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
                    POST_TASKS[task],
                    "this book" if agent == "book" else "the post",
                    "—" if rate is None else f"{rate:,.0f}",
                    _seconds(cmp[f"{agent}_median_time_to_target_s"]),
                    cmp[f"{agent}_reached"],
                ]
            )
    parts += [
        f"**PPO on Maze against the source post** (`benchmarks/source_posts.py`; the "
        f"target is {posts['ppo_target']} success on 1,000 fresh episodes)",
        _rows(
            ["task", "agent", "steps/s (median)", "median time to target (s)", "keys reaching it"],
            ppo_rows,
        ),
    ]

    ratios = [
        f"JAX CartPole (best batch) / gymnasium: "
        f"{env['ratios']['jax_best_vs_gym_make']:,.0f}x steps/s"
    ]
    if "ratio_rejax_over_book_time_to_solve" in dqn:
        ratios.append(
            f"DQN time to solve, rejax / this book: "
            f"{dqn['ratio_rejax_over_book_time_to_solve']:.1f}x"
        )
    for task, cmp in posts["comparisons"]["ppo"].items():
        if cmp.get("post_over_book_time") is not None:
            ratios.append(
                f"PPO time to {posts['ppo_target']} on the {POST_TASKS[task]}, "
                f"post / this book: {cmp['post_over_book_time']:.1f}x"
            )
    parts.append("Ratios, each between two figures of one run: " + "; ".join(ratios) + ".")
    return "\n\n".join(parts)
