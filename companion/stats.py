"""How the book compares results: one statistics rule, stated in chapter 7 (section 6).

An RL result depends on the key (seed) it was trained with, so a result is a sample over keys
(Henderson et al., 2018), and the book reports it with interval estimates (Agarwal et al.,
2021). Its rule for a comparison word is its own, a significance test at 5%:

- **Solved.** A key solves the task when the mean greedy return of its *final* parameters over
  100 fresh episodes is at least the threshold (475 on CartPole-v1): :func:`solved`. "A first
  evaluation during training reached 475" is a different event, :func:`reached_by` and
  :func:`median_first_step`.
- **A share of keys** that solve comes with its 95% Wilson interval: :func:`share_interval`.
- **Scores per key** are summarised by the interquartile mean (the mean of the middle half)
  with a 95% bootstrap interval: :func:`iqm`, :func:`iqm_interval`.
- **Two configurations on the same keys** are paired: the exact McNemar test on the keys where
  one solves and the other does not (:func:`paired_solved`); scores by a paired bootstrap of
  a statistic of both, the difference of their means by default (:func:`paired_interval`).
  **On different keys**: Fisher's exact test (:func:`unpaired_solved`).
- **Several comparisons at once** (six levers against one configuration) have their p-values
  adjusted by Holm's method: :func:`holm`.
- A comparison word ("more", "fewer") is licensed only when the test rejects at the 5% level
  (:data:`ALPHA`), after the adjustment; otherwise the difference is within the spread
  (:class:`Comparison`). :func:`require` stops a build whose re-run contradicts a sentence.

The tests come from scipy (``scipy.stats.binomtest``, ``fisher_exact``, ``bootstrap``,
``trim_mean``); only Holm's step-down adjustment, four lines, is written here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from scipy import stats as _scipy

from companion.budget import budget_mode

__all__ = [
    "ALPHA",
    "Comparison",
    "holm",
    "holm_adjust",
    "iqm",
    "iqm_interval",
    "median_first_step",
    "paired_interval",
    "paired_solved",
    "reached_by",
    "require",
    "share_interval",
    "solved",
    "unpaired_solved",
]

#: The level at which a difference counts as one (after Holm's adjustment where it applies).
ALPHA = 0.05
#: Confidence of every interval the book prints.
CONFIDENCE = 0.95
#: Resamples of every bootstrap (its seed is fixed, so a page prints the same interval twice).
RESAMPLES = 10_000

DIRECTION_WORDS = {1: "above", -1: "below", 0: "within the spread"}


class Comparison(NamedTuple):
    """What a test says of ``a`` against ``b``.

    ``direction`` is +1 (``a`` above ``b``), -1 (below) or 0 (within the spread: the test does
    not reject at :data:`ALPHA`); ``p_value`` is the test's (adjusted where it was); ``test``
    names it; ``a`` and ``b`` are the two summaries compared (counts or statistics).
    """

    direction: int
    p_value: float
    test: str
    a: float
    b: float

    def __str__(self) -> str:
        return (
            f"{self.test}: {self.a:g} against {self.b:g}, p = {self.p_value:.3g} "
            f"({DIRECTION_WORDS[self.direction]})"
        )


def _scores(values: Any, name: str, *, min_size: int = 1) -> np.ndarray:
    """``values`` as a 1-D float array of finite numbers."""
    if isinstance(values, (str, bytes, dict)):
        raise TypeError(f"{name}: expected a sequence of numbers, got {type(values).__name__}")
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected a sequence of numbers, got {values!r}") from None
    if array.ndim != 1:
        raise ValueError(
            f"{name}: expected a 1-D sequence (one value per key), shape {array.shape}"
        )
    if array.size < min_size:
        raise ValueError(f"{name}: expected at least {min_size} values, got {array.size}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name}: expected finite numbers, got {array[~np.isfinite(array)][:3]}")
    return array


def _flags(values: Any, name: str) -> np.ndarray:
    """``values`` as a 1-D bool array (one flag per key)."""
    array = np.asarray(values)
    if array.ndim != 1 or array.dtype != bool:
        raise TypeError(
            f"{name}: expected a 1-D sequence of bools (one per key), got dtype {array.dtype}, "
            f"shape {array.shape}"
        )
    return array


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise TypeError(f"{name}: expected a count (an int >= 0), got {value!r}")
    return int(value)


def _direction(p_value: float, difference: float, alpha: float) -> int:
    return int(np.sign(difference)) if p_value < alpha and difference != 0 else 0


def solved(final_returns: Any, threshold: float = 475.0) -> np.ndarray:
    """Which keys solve: bool ``(keys,)``, a key's mean greedy return of its final parameters
    (over 100 fresh episodes) at least ``threshold``.

    Args:
        final_returns: one mean return per key, shape ``(keys,)``.
        threshold: CartPole-v1's 475 by default (gymnasium's ``reward_threshold``).

    Raises:
        TypeError, ValueError: if ``final_returns`` is not a 1-D sequence of finite numbers.
    """
    return _scores(final_returns, "final_returns") >= float(threshold)


def share_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson interval of a share ``successes / n`` (``scipy.stats.binomtest``).

    Returns:
        ``(low, high)``, floats in [0, 1].

    Raises:
        TypeError: if ``successes`` or ``n`` is not a count.
        ValueError: if ``n`` is 0 or ``successes > n``.
    """
    k, n = _count(successes, "successes"), _count(n, "n")
    if n == 0 or k > n:
        raise ValueError(f"successes, n: expected 0 <= successes <= n and n > 0, got {k}, {n}")
    ci = _scipy.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def iqm(scores: Any) -> float:
    """Interquartile mean: the mean of the middle half of ``scores`` (25% trimmed from each
    end, ``scipy.stats.trim_mean``), robust to a few outlying keys (Agarwal et al., 2021).

    Raises:
        TypeError, ValueError: if ``scores`` is not a non-empty 1-D sequence of finite numbers.
    """
    return float(_scipy.trim_mean(_scores(scores, "scores"), 0.25))


def iqm_interval(scores: Any, confidence: float = CONFIDENCE, seed: int = 0) -> tuple[float, float]:
    """A percentile bootstrap interval of :func:`iqm` over keys (``scipy.stats.bootstrap``,
    :data:`RESAMPLES` resamples, keys drawn with replacement; one task, so the stratified
    bootstrap of Agarwal et al. is this one).

    Raises:
        TypeError, ValueError: as :func:`iqm`; also fewer than 2 scores.
    """
    array = _scores(scores, "scores", min_size=2)
    if np.ptp(array) == 0:
        return float(array[0]), float(array[0])
    result = _scipy.bootstrap(
        (array,),
        lambda x, axis: _scipy.trim_mean(x, 0.25, axis=axis),
        confidence_level=confidence,
        n_resamples=RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def paired_interval(
    *samples: Any,
    statistic: Callable[..., float] | None = None,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``statistic(*samples)`` and its paired percentile bootstrap interval: keys are
    resampled together, so the ``i``-th entries of every sample (the same key) stay side by
    side (``scipy.stats.bootstrap`` with ``paired=True``).

    Args:
        samples: one score per key each, the same keys in the same order.
        statistic: of as many 1-D arrays; by default, of two, the difference of their means.
            A ratio, such as ``lambda a, b: a.mean() / b.mean()``, works too.

    Returns:
        ``(value, low, high)``.

    Raises:
        TypeError, ValueError: a sample that is not 1-D finite numbers, samples of different
            lengths, no ``statistic`` for other than two samples, or an interval that is not
            finite (the statistic divided by 0 on too many resamples).
    """
    arrays = [_scores(x, f"samples[{i}]", min_size=2) for i, x in enumerate(samples)]
    if not arrays or any(a.shape != arrays[0].shape for a in arrays):
        sizes = [a.size for a in arrays]
        raise ValueError(f"samples: expected one score per key for the same keys, got {sizes}")
    if statistic is None:
        if len(arrays) != 2:
            raise ValueError(f"statistic: needed for {len(arrays)} samples (the default takes 2)")
        statistic = lambda u, v: float(np.mean(u) - np.mean(v))  # noqa: E731

    def quiet(*resampled):  # a resample may divide by 0: checked below, not warned about
        with np.errstate(divide="ignore", invalid="ignore"):
            return statistic(*resampled)

    # a degenerate distribution, or resamples whose statistic is infinite (checked below)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", _scipy.DegenerateDataWarning)
        result = _scipy.bootstrap(
            tuple(arrays),
            quiet,
            paired=True,
            vectorized=False,
            confidence_level=confidence,
            n_resamples=RESAMPLES,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    low, high = result.confidence_interval.low, result.confidence_interval.high
    if not (np.isfinite(low) and np.isfinite(high)):
        raise ValueError(
            f"statistic: not finite on {np.sum(~np.isfinite(result.bootstrap_distribution))} of "
            f"{RESAMPLES} resamples of the keys (a division by a share that a resample can make 0?)"
        )
    return float(statistic(*arrays)), float(low), float(high)


def paired_solved(a_solved: Any, b_solved: Any, *, adjust: int = 1) -> Comparison:
    """Exact McNemar test of two configurations trained on the same keys.

    Only the keys where they disagree carry information: under "no difference", each of those
    is as likely to favour ``a`` as ``b`` (a binomial test at 1/2, ``scipy.stats.binomtest``).

    Args:
        a_solved, b_solved: bool ``(keys,)``, same keys in the same order (:func:`solved`).
        adjust: how many comparisons are made at once; the p-value is multiplied by it
            (Bonferroni, for one comparison of a family; use :func:`holm` for the family).

    Raises:
        TypeError: if either is not a 1-D bool sequence; ValueError: lengths differ.
    """
    a, b = _flags(a_solved, "a_solved"), _flags(b_solved, "b_solved")
    if a.shape != b.shape:
        raise ValueError(f"a_solved, b_solved: expected the same keys, got {a.size} and {b.size}")
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    if only_a + only_b == 0:
        p = 1.0
    else:
        p = float(_scipy.binomtest(only_a, only_a + only_b, 0.5).pvalue)
    p = min(1.0, p * _count(adjust, "adjust"))
    return Comparison(
        _direction(p, only_a - only_b, ALPHA), p, "McNemar", int(a.sum()), int(b.sum())
    )


def unpaired_solved(a_successes: int, a_n: int, b_successes: int, b_n: int) -> Comparison:
    """Fisher's exact test of two shares of solved keys from different keys
    (``scipy.stats.fisher_exact``).

    Raises:
        TypeError: a count that is not an int >= 0; ValueError: successes above n, or n = 0.
    """
    ka, na = _count(a_successes, "a_successes"), _count(a_n, "a_n")
    kb, nb = _count(b_successes, "b_successes"), _count(b_n, "b_n")
    if not (0 < na and 0 < nb and ka <= na and kb <= nb):
        raise ValueError(f"expected 0 <= successes <= n, n > 0: got {ka}/{na} and {kb}/{nb}")
    p = float(_scipy.fisher_exact([[ka, na - ka], [kb, nb - kb]]).pvalue)
    return Comparison(_direction(p, ka / na - kb / nb, ALPHA), p, "Fisher", ka / na, kb / nb)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values (Holm, 1979): the ``i``-th smallest
    is multiplied by ``m - i`` (``i`` from 0), then made non-decreasing in that order, capped
    at 1. Rejecting where the adjusted value is below alpha keeps the chance of any false
    "different" in the family below alpha.

    Raises:
        TypeError, ValueError: if ``p_values`` is not a non-empty 1-D sequence in [0, 1].
    """
    p = _scores(p_values, "p_values")
    if ((p < 0) | (p > 1)).any():
        raise ValueError(f"p_values: expected values in [0, 1], got {p}")
    order = np.argsort(p)
    scaled = np.minimum(1.0, p[order] * (p.size - np.arange(p.size)))
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def holm_adjust(comparisons: dict) -> dict:
    """A family of :class:`Comparison` s with their p-values adjusted together by :func:`holm`
    and each direction read again from its adjusted p-value.

    Args:
        comparisons: ``{name: Comparison}``, the tests a page reads at once.

    Returns:
        ``{name: Comparison}`` in the same order.

    Raises:
        TypeError: if a value is not a :class:`Comparison`.
    """
    for name, c in comparisons.items():
        if not isinstance(c, Comparison):
            raise TypeError(f"comparisons[{name!r}]: expected a Comparison, got {type(c).__name__}")
    adjusted = holm([c.p_value for c in comparisons.values()]) if comparisons else []
    return {
        name: c._replace(
            p_value=float(p),
            direction=c.direction if p < ALPHA else 0,
        )
        for (name, c), p in zip(comparisons.items(), adjusted)
    }


def reached_by(first_steps: Sequence[int | None], at_steps: Sequence[int]) -> np.ndarray:
    """The share of keys whose first in-training evaluation reached the threshold by each step.

    A key that never reached it (``None``) counts as not yet reached at every step: the curve
    is honest about keys a median over the reaching keys would drop.

    Args:
        first_steps: per key, the step of its first evaluation at the threshold, or ``None``.
        at_steps: the steps at which to read the share.

    Returns:
        float ``(len(at_steps),)`` in [0, 1].

    Raises:
        TypeError: if an entry is neither an int nor ``None``; ValueError: no keys.
    """
    if isinstance(first_steps, (str, bytes)) or len(first_steps) == 0:
        raise ValueError("first_steps: expected one entry per key, got none")
    for s in first_steps:
        integer = isinstance(s, (int, float, np.integer, np.floating)) and float(s).is_integer()
        if s is not None and (isinstance(s, bool) or not integer):
            raise TypeError(f"first_steps: expected steps (ints) or None, got {s!r}")
    steps = np.array([np.inf if s is None else float(s) for s in first_steps])
    at = _scores(at_steps, "at_steps")
    return (steps[None, :] <= at[:, None]).mean(axis=1)


def median_first_step(first: Sequence[float | None]) -> float | None:
    """The median over **all** keys of the step (or the time) of a first evaluation at the
    threshold, a key that never reached it counting as later than any: ``None`` when half
    or more of the keys never reached it. (A median over only the keys that reached it
    describes a different, luckier, set of keys for each configuration.)

    Args:
        first: per key, the step or the seconds of its first evaluation at the threshold (a
            number >= 0), or ``None``.

    Raises:
        TypeError: an entry that is neither a number nor ``None``; ValueError: no keys, or a
            negative or non-finite number.
    """
    if isinstance(first, (str, bytes)) or len(first) == 0:
        raise ValueError("first: expected one entry per key, got none")
    for s in first:
        if s is not None and (isinstance(s, bool) or not isinstance(s, (int, float, np.number))):
            raise TypeError(f"first: expected numbers (steps or seconds) or None, got {s!r}")
        if s is not None and not (np.isfinite(s) and s >= 0):
            raise ValueError(f"first: expected finite numbers >= 0, got {s!r}")
    values = np.sort([np.inf if s is None else float(s) for s in first])
    middle = float(np.median(values))
    return None if not np.isfinite(middle) else middle


def require(
    comparison: Comparison, direction: int, claim: str, *, live: bool = False
) -> Comparison:
    """Stop the build when the evidence no longer says what the page's prose says.

    Args:
        comparison: what the test says now.
        direction: what the prose says: +1 (a above b), -1 (below), 0 (within the spread).
        claim: the sentence, for the message.
        live: the evidence is the page's own training run. The tests run the pages on a tiny
            budget (:mod:`companion.budget`) that trains nothing worth a claim, so a live
            claim is checked at the real budget only; a claim on a committed result always.

    Returns:
        ``comparison``, for the figures the page glues.

    Raises:
        AssertionError: naming the claim, the test and its result, when they disagree.
    """
    if direction not in (-1, 0, 1):
        raise ValueError(f"direction: expected -1, 0 or 1, got {direction!r}")
    if live and budget_mode() == "tiny":
        return comparison
    if comparison.direction != direction:
        raise AssertionError(
            f"The page says: {claim!r} ({DIRECTION_WORDS[direction]}), but the evidence now "
            f"says {comparison}. Reword the sentence from the new result."
        )
    return comparison
