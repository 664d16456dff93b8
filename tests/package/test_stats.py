"""The book's statistics rule (companion.stats) against hand-computed values and formulas."""

import math

import numpy as np
import pytest

from companion import stats


def test_solved_is_a_final_mean_at_the_threshold():
    assert stats.solved([475.0, 474.9, 500.0]).tolist() == [True, False, True]
    assert stats.solved([10.0, 11.0], threshold=10.5).tolist() == [False, True]
    with pytest.raises(ValueError, match="final_returns: expected finite"):
        stats.solved([1.0, float("nan")])
    with pytest.raises(ValueError, match="final_returns: expected a 1-D"):
        stats.solved([[1.0, 2.0]])


def test_share_interval_is_wilsons():
    # the Wilson score interval written out (Wilson, 1927), z for 95%
    k, n, z = 27, 33, 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low, high = stats.share_interval(k, n)
    assert low == pytest.approx(centre - half, abs=1e-9)
    assert high == pytest.approx(centre + half, abs=1e-9)
    assert stats.share_interval(0, 10)[0] == 0.0 and stats.share_interval(10, 10)[1] == 1.0
    with pytest.raises(ValueError, match="successes, n"):
        stats.share_interval(4, 3)
    with pytest.raises(TypeError, match="successes: expected a count"):
        stats.share_interval(2.5, 3)


def test_iqm_is_the_mean_of_the_middle_half():
    assert stats.iqm([1, 2, 3, 4, 5, 6, 7, 8]) == 4.5  # (3 + 4 + 5 + 6) / 4
    assert stats.iqm([0, 100, 100, 100, 100, 100, 100, 10_000]) == 100.0  # outliers dropped
    low, high = stats.iqm_interval([0.0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    assert low < stats.iqm([0.0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]) < high
    assert stats.iqm_interval([500.0] * 5) == (500.0, 500.0)  # no spread, no interval
    assert stats.iqm_interval(np.arange(20.0)) == stats.iqm_interval(np.arange(20.0))  # seeded
    with pytest.raises(ValueError, match="scores: expected at least 2"):
        stats.iqm_interval([1.0])


def test_paired_interval_keeps_keys_together():
    rng = np.random.default_rng(1)
    key_effect = rng.normal(0, 100, size=30)  # keys differ a lot, the configurations little
    a, b = key_effect + 1.0, key_effect
    value, low, high = stats.paired_interval(a, b)
    assert value == pytest.approx(1.0)
    assert low == pytest.approx(1.0) and high == pytest.approx(1.0)  # the pairing removes keys
    ratio, low, high = stats.paired_interval(
        [2.0, 4.0, 6.0, 8.0], [1.0, 2.0, 3.0, 4.0], statistic=lambda u, v: u.mean() / v.mean()
    )
    assert (ratio, low, high) == pytest.approx((2.0, 2.0, 2.0))
    # four samples: a ratio of two expected times (time per run over the share that solves)
    t = np.linspace(9.0, 12.0, 30)
    solved = np.array([1.0, 0.0] + [1.0] * 28)
    value, low, high = stats.paired_interval(
        t,
        solved,
        2 * t,
        solved,
        statistic=lambda a, s, b, r: (a.mean() / s.mean()) / (b.mean() / r.mean()),
    )
    assert (value, low, high) == pytest.approx((0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="samples: expected one score per key"):
        stats.paired_interval([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="statistic: not finite on"):  # no NaN comes back
        stats.paired_interval(
            [1.0, 2.0], [0.0, 1.0], statistic=lambda u, v: u.mean() / v.mean() - 1 / v.min()
        )
    with pytest.raises(ValueError, match="statistic: needed for 3 samples"):
        stats.paired_interval([1.0, 2.0], [1.0, 2.0], [1.0, 2.0])


def test_mcnemar_counts_only_the_keys_that_disagree():
    agree = [True] * 20
    # 6 keys solved by a alone, none by b alone: p = 2 * 0.5**6
    a = np.array(agree + [True] * 6)
    b = np.array(agree + [False] * 6)
    c = stats.paired_solved(a, b)
    assert c.p_value == pytest.approx(2 * 0.5**6) and c.direction == 1
    assert (c.a, c.b) == (26, 20)
    # 5 against 0 is not enough at 5%: p = 0.0625
    c = stats.paired_solved(a[:-1], b[:-1])
    assert c.p_value == pytest.approx(0.0625) and c.direction == 0
    assert stats.paired_solved(b, a).direction == -1
    assert stats.paired_solved(a, a).p_value == 1.0
    assert stats.paired_solved(a, b, adjust=6).p_value == pytest.approx(6 * 2 * 0.5**6)
    with pytest.raises(TypeError, match="a_solved: expected a 1-D sequence of bools"):
        stats.paired_solved([1, 0], [True, False])
    with pytest.raises(ValueError, match="the same keys"):
        stats.paired_solved([True], [True, False])


def test_mcnemar_ignores_agreeing_keys_that_an_unpaired_test_would_count():
    """The paired test sees 8 keys against 0; the same counts on unpaired keys are less clear."""
    a = np.array([True] * 8 + [True] * 10 + [False] * 15)
    b = np.array([False] * 8 + [True] * 10 + [False] * 15)
    assert stats.paired_solved(a, b).p_value == pytest.approx(2 * 0.5**8)
    assert stats.unpaired_solved(18, 33, 10, 33).p_value > 0.05


def test_fisher_matches_the_hypergeometric_by_hand():
    # 3 of 3 against 0 of 3: of the C(6, 3) = 20 ways to place 3 successes, 2 are as extreme
    c = stats.unpaired_solved(3, 3, 0, 3)
    assert c.p_value == pytest.approx(2 / 20) and c.direction == 0
    assert stats.unpaired_solved(30, 30, 0, 30).direction == 1
    with pytest.raises(ValueError, match="expected 0 <= successes <= n"):
        stats.unpaired_solved(4, 3, 0, 3)


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 scaled by 3, 2, 1: 0.03, 0.06, 0.04 -> non-decreasing 0.06
    assert stats.holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5]).tolist() == [0.5]
    assert stats.holm([0.6, 0.7]).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="p_values: expected values in"):
        stats.holm([1.5])


def test_reached_by_counts_keys_that_never_reach_as_not_yet():
    shares = stats.reached_by([1000, None, 3000], [500, 1000, 5000])
    assert shares.tolist() == pytest.approx([0.0, 1 / 3, 2 / 3])
    with pytest.raises(TypeError, match="first_steps: expected steps"):
        stats.reached_by([1.5], [1])
    with pytest.raises(ValueError, match="first_steps: expected one entry per key"):
        stats.reached_by([], [1])


def test_require_stops_a_flipped_claim():
    up = stats.Comparison(1, 0.01, "McNemar", 27, 4)
    assert stats.require(up, 1, "more keys solve with LayerNorm") is up
    with pytest.raises(AssertionError, match="more keys solve with LayerNorm.*within the spread"):
        stats.require(up._replace(direction=0, p_value=0.2), 1, "more keys solve with LayerNorm")
    with pytest.raises(ValueError, match="direction: expected -1, 0 or 1"):
        stats.require(up, 2, "x")


def test_median_first_step_counts_every_key():
    assert stats.median_first_step([1000, 2000, None]) == 2000.0
    assert stats.median_first_step([1000, None, None]) is None  # most keys never reached it
    # the median over reaching keys alone would say 1,500 for both of these
    assert stats.median_first_step([1000, 2000, None, None, None]) is None
    assert stats.median_first_step([1000, 2000, 3000, 4000]) == 2500.0
    assert stats.median_first_step([5.5, None, 2.5]) == 5.5  # seconds too
    with pytest.raises(ValueError, match="first: expected finite numbers >= 0"):
        stats.median_first_step([-1.0])


def test_holm_adjust_reads_each_direction_again():
    family = {
        "clear": stats.Comparison(1, 0.001, "McNemar", 27, 4),
        "marginal": stats.Comparison(-1, 0.03, "McNemar", 18, 27),
        "none": stats.Comparison(0, 0.5, "McNemar", 24, 27),
    }
    adjusted = stats.holm_adjust(family)
    assert list(adjusted) == ["clear", "marginal", "none"]
    assert adjusted["clear"].p_value == pytest.approx(0.003) and adjusted["clear"].direction == 1
    # 0.03 x 2 = 0.06: no longer a difference once three tests are read together
    assert adjusted["marginal"].p_value == pytest.approx(0.06)
    assert adjusted["marginal"].direction == 0
    with pytest.raises(TypeError, match="comparisons\\['x'\\]: expected a Comparison"):
        stats.holm_adjust({"x": 0.5})


def test_a_live_claim_is_checked_at_the_real_budget_only(monkeypatch):
    flat = stats.Comparison(0, 0.4, "McNemar", 5, 4)
    monkeypatch.setenv("DRLJAX_BUDGET", "tiny")
    assert stats.require(flat, 1, "the Huber loss solves more", live=True) is flat
    with pytest.raises(AssertionError):
        stats.require(flat, 1, "a committed result says more")
    monkeypatch.setenv("DRLJAX_BUDGET", "full")
    with pytest.raises(AssertionError, match="the Huber loss solves more"):
        stats.require(flat, 1, "the Huber loss solves more", live=True)
