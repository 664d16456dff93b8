"""The readings the chapters state from the target-network grid of ``dqn_stability``, each
computed by the book's statistics rule (:mod:`companion.stats`) and checked as stated.

The prose of chapters 7 and 10 says, in words written once: with a fast target, more keys
solve with LayerNorm, and without it every key's values pass the bound; a slow target solves
fewer keys than the chapter's copy in the chapter's budget; given the longer budget, a slow
target without LayerNorm solves more keys than the fast copy, and LayerNorm or not is within
the spread there; Polyak averaging and a hard copy at the same mean lag are within the
spread. :func:`dqn_grid_readings` returns the figures those sentences quote and raises
``AssertionError`` when the committed result no longer says what they say.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from companion import stats

#: The grid's fast targets (a mean lag of at most 4.5 gradient steps) and slow ones (99.5).
FAST = ("no target network", "copy every 10", "Polyak, lag of a copy every 10")
SLOW = ("copy every 200", "Polyak, lag of a copy every 200")
#: Each Polyak target and the hard copy with its mean lag.
SAME_LAG = {FAST[2]: FAST[1], SLOW[1]: SLOW[0]}
#: The names :func:`dqn_grid_readings` returns (a page glues them all, or a note for each).
FIGURES = (
    "grid_fast_p grid_speed_p grid_slow_noln_p grid_slow_short_max grid_slow_short_q "
    "grid_slow_long_solved grid_slow_long_p grid_slow_long_q grid_fast_long_q "
    "grid_slow_long_steps grid_fast_ln_steps grid_form_p grid_form_pairs"
).split()
BOUND = 100.0  # 1 / (1 - gamma) for gamma = 0.99: no discounted return of CartPole exceeds it


def _row(grid: dict, target: str, layer_norm: bool, steps: int) -> dict:
    norm = "LayerNorm" if layer_norm else "no LayerNorm"
    return grid[f"{target}, {norm}, {steps:,} steps"]


def _test(a: dict, b: dict) -> stats.Comparison:
    return stats.paired_solved(stats.solved(a["final_returns"]), stats.solved(b["final_returns"]))


def dqn_grid_readings(result: Any) -> dict[str, str]:
    """The figures of the grid's readings, ``{name: text}`` for ``companion.glue.glue``.

    Tests (McNemar on the shared keys), adjusted together by Holm's method: LayerNorm against
    none for each fast target at the short budget and each slow one at the long budget; each
    slow target against the copy every 10 steps, with LayerNorm at the short budget and
    without it at the long one; each Polyak target against its hard copy, with and without
    LayerNorm, at both budgets. A difference quotes its adjusted p; a reading of "within the
    spread" is checked, and quoted, before adjustment (the stricter reading).

    Raises:
        ValueError: if ``result`` is not the ``dqn_stability`` result with its ``grid``.
        AssertionError: when the result contradicts a reading (naming it).
    """
    if not isinstance(result, dict) or "grid" not in result:
        raise ValueError("result: expected the dqn_stability result with its grid")
    grid = result["grid"]
    short = min(r["budget"] for r in grid.values())
    long = max(r["budget"] for r in grid.values())
    fast_copy = "copy every 10"
    tests = {
        ("ln", t, short): _test(_row(grid, t, True, short), _row(grid, t, False, short))
        for t in FAST
    }
    tests |= {
        ("ln", t, long): _test(_row(grid, t, True, long), _row(grid, t, False, long)) for t in SLOW
    }
    for t in SLOW:
        tests[("speed", t)] = _test(_row(grid, t, True, short), _row(grid, fast_copy, True, short))
        tests[("bounded", t)] = _test(
            _row(grid, t, False, long), _row(grid, fast_copy, False, long)
        )
    for polyak, copy in SAME_LAG.items():
        for ln in (True, False):
            for steps in (short, long):
                tests[("form", polyak, ln, steps)] = _test(
                    _row(grid, polyak, ln, steps), _row(grid, copy, ln, steps)
                )
    said = stats.holm_adjust(tests)
    for key, c in said.items():
        if key[0] == "ln" and key[2] == short:
            stats.require(c, 1, f"with a fast target ({key[1]}), more keys solve with LayerNorm")
            worst = min(_row(grid, key[1], False, short)["q_max"])
            assert worst > BOUND, (
                f"{key[1]} without LayerNorm: every key passes the bound ({worst})"
            )
        elif key[0] == "speed":
            stats.require(c, -1, f"with {key[1]} for {short:,} steps, fewer keys solve")
        elif key[0] == "bounded":
            stats.require(
                c, 1, f"without LayerNorm for {long:,} steps, more keys solve with {key[1]}"
            )
        else:
            stats.require(tests[key], 0, f"{key}: within the spread")
    slow_short = [_row(grid, t, ln, short) for t in SLOW for ln in (True, False)]
    slow_long = [_row(grid, t, ln, long) for t in SLOW for ln in (True, False)]
    fast_long = [_row(grid, t, False, long) for t in FAST]
    q_short = [r["median_q_max"] for r in slow_short]
    q_long = [r["median_q_max"] for r in slow_long]
    q_fast = [r["median_q_max"] for r in fast_long]
    assert max(q_short) < BOUND, f"slow targets, {short:,} steps: below the bound ({q_short})"
    assert max(q_long) < 1.5 * BOUND, f"slow targets, {long:,} steps: near the bound ({q_long})"
    assert min(q_fast) > 10 * BOUND, f"fast targets without LayerNorm: diverging ({q_fast})"
    reach = [stats.median_first_step(r["steps_to_475"]) for r in slow_long]
    fast_reach = [
        stats.median_first_step(_row(grid, t, True, steps)["steps_to_475"])
        for t in FAST
        for steps in (short, long)
    ]
    solved_long = [r["final_solved"] for r in slow_long]
    form = [c.p_value for k, c in tests.items() if k[0] == "form"]

    def largest(kind, budget=None):
        """The largest adjusted p of a kind of test (at one budget, for LayerNorm's)."""
        return max(
            c.p_value
            for k, c in said.items()
            if k[0] == kind and (budget is None or k[2] == budget)
        )

    return {
        "grid_fast_p": f"{largest('ln', short):.1g}",
        "grid_speed_p": f"{largest('speed'):.1g}",
        "grid_slow_noln_p": f"{largest('bounded'):.1g}",
        "grid_slow_short_max": str(max(r["final_solved"] for r in slow_short)),
        "grid_slow_short_q": f"{max(q_short):.0f}",
        "grid_slow_long_solved": f"{min(solved_long)}–{max(solved_long)}",
        "grid_slow_long_p": f"{min(tests[('ln', t, long)].p_value for t in SLOW):.2f}",
        "grid_slow_long_q": f"{min(q_long):.0f}–{max(q_long):.0f}",
        "grid_fast_long_q": f"{min(q_fast):,.0f}",
        "grid_slow_long_steps": f"{min(reach):,.0f}–{max(reach):,.0f}",
        "grid_fast_ln_steps": f"{min(fast_reach):,.0f}–{max(fast_reach):,.0f}",
        "grid_form_p": f"{min(form):.2f}",
        "grid_form_pairs": str(len(form)),
    }


def dqn_expected_times(posts: Any) -> tuple[float, float, float, float, float]:
    """The DQN post's agent and the book's, from ``source_posts``: the expected time to a
    final policy that solves when retrying keys until one does, and the ratio book / post
    with its 95% paired bootstrap interval over the shared keys.

    A user who retries compiles once (a retry reuses the program), then runs
    ``keys / solving keys`` times on average: ``median(compile_s) + median(run_s) / share``,
    the same formula as ``benchmarks/source_posts.py``'s ``expected_time_to_solving_final_s``.

    Returns:
        ``(post_s, book_s, ratio, low, high)``.

    Raises:
        ValueError: ``posts`` is not the ``source_posts`` result, or one agent's final
            policy solves on no shared key (the expected time is not defined).
    """
    if not isinstance(posts, dict) or not {"dqn_runs", "book_dqn_runs"} <= set(posts):
        raise ValueError("posts: expected the source_posts result with dqn_runs and book_dqn_runs")
    agents = {
        "post": {r["seed"]: r for r in posts["dqn_runs"] if r["variant"] == "post"},
        "book": {r["seed"]: r for r in posts["book_dqn_runs"]},
    }
    shared = sorted(set(agents["post"]) & set(agents["book"]))
    samples = [
        np.array([field(agents[name][k]) for k in shared], dtype=float)
        for name in ("post", "book")
        for field in (
            lambda r: r["compile_s"],
            lambda r: r["run_s"],
            lambda r: r["final_return"] >= 475,
        )
    ]
    if len(shared) < 2 or min(samples[2].sum(), samples[5].sum()) == 0:
        raise ValueError(
            "posts: the expected time needs two shared keys and a solving final policy for "
            f"both agents (post {samples[2].sum():.0f}, book {samples[5].sum():.0f} of "
            f"{len(shared)} keys)"
        )

    def expected(compile_s, run_s, solves):
        return float(np.median(compile_s) + np.median(run_s) / solves.mean())

    ratio, low, high = stats.paired_interval(
        *samples, statistic=lambda a, b, c, u, v, w: expected(u, v, w) / expected(a, b, c)
    )
    return expected(*samples[:3]), expected(*samples[3:]), ratio, low, high
