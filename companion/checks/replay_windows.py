"""Self-check of the DQN chapter's exercise on the replay buffer: windows of n steps."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import describe, require_array
from companion.checks._messages import _
from companion.checks.core import (
    fail,
    passed,
    require_function,
    run_answer,
    self_check,
)
from companion.replay import replay_add, replay_init


def _time_buffer(num_added: int, capacity: int):
    """A buffer filled by one environment: slot of step t (1, 2, ...) holds t in every field."""
    example = {"t": jnp.int32(0), "obs": jnp.zeros(2)}
    buffer = replay_init(example, capacity)
    for t in range(1, num_added + 1):
        buffer = replay_add(buffer, {"t": jnp.int32(t), "obs": jnp.full(2, float(t))})
    return buffer


def _drawn_apart(where: str, steps: np.ndarray, diffs: np.ndarray) -> None:
    """Fail: the steps of a window (``steps`` ``(batch, n)``) are not start, start + 1, ..."""
    example = steps[np.argmax(np.any(diffs != 1, axis=1))].tolist()
    fail(
        _(
            "{where}, the steps of a window are drawn apart (for example {example}): draw one "
            "start per row and take the n slots start, start + 1, ..., start + n - 1"
        ).format(where=where, example=example)
    )


def _name_non_uniform(where: str, counts: np.ndarray, first: int) -> None:
    """Fail, saying how the windows' ``counts`` (window starting at step ``first`` first) are
    not uniform: one end piled up, both ends drawn half as often, or a trend."""
    inner = counts[1:-1]
    level = inner.mean()
    flat = np.max(np.abs(inner - level)) <= 0.25 * level
    last = first + counts.size - 1
    for end, step in ((-1, last), (0, first)):
        others = np.delete(counts, end)
        if counts[end] > 1.5 * level and np.max(np.abs(others - others.mean())) <= 0.25 * level:
            fail(
                _(
                    "{where}, the window starting at step {step} is drawn {count} times, the "
                    "others about {level} each: starts beyond the windows are clipped to it. "
                    "Draw each start uniformly from the size - n + 1 windows"
                ).format(where=where, step=step, count=int(counts[end]), level=int(round(level)))
            )
    if flat and counts[0] < 0.75 * level and counts[-1] < 0.75 * level:
        fail(
            _(
                "{where}, the first and the last window are drawn about half as often as the "
                "others (counts {counts}): rounding a uniform float gives the end windows half "
                "a bin. Take the floor (or jax.random.randint)"
            ).format(where=where, counts=counts.tolist())
        )
    trend = np.corrcoef(np.arange(counts.size), counts)[0, 1]
    if abs(trend) > 0.9:
        fail(
            (
                _(
                    "sample_windows is not uniform over the windows: the earlier windows are "
                    "drawn more often (counts {counts}, oldest first)"
                )
                if trend < 0
                else _(
                    "sample_windows is not uniform over the windows: the later windows are drawn "
                    "more often (counts {counts}, oldest first)"
                )
            ).format(counts=counts.tolist())
        )
    fail(
        _("sample_windows is not uniform over the windows: counts {counts}").format(
            counts=counts.tolist()
        )
    )


@self_check
def check_sample_windows(sample_windows: Callable) -> None:
    """Check ``sample_windows(buffer, key, batch_size, n)``: uniform n-step windows.

    ``buffer``: :class:`companion.replay.ReplayBuffer` filled in time order by one environment.
    Returns a pytree like one transition, leaves ``(batch_size, n, ...)``: n consecutive steps per
    row, starts uniform (with replacement) over windows in filled slots, not across ``position``.

    Runs the answer under ``jax.jit``: ``batch_size`` and ``n`` static, the buffer's arrays
    (``position`` and ``size`` too) traced.

    Raises:
        CheckFailed: naming the mistake (empty slots, crossing ``position``, indices clamped at
            the last slot, steps repeated, out of order or drawn apart, mixed slots, one start
            for the batch, the last window never drawn, starts clipped to an end window, end
            windows rounded to half a bin, a trend or other non-uniform counts, shape or dtype,
            key ignored).
    """
    require_function(sample_windows, "sample_windows")
    batch_size, n = 4000, 3
    # 7 steps in 10 slots: windows start at steps 1..5. 23 steps in 10 slots: the ring holds
    # steps 14..23, position 3, and windows start at steps 14..21.
    for added, first, last in ((7, 1, 5), (23, 14, 21)):
        buffer = _time_buffer(added, 10)
        call = f"sample_windows(buffer, key, {batch_size}, {n})"
        got = run_answer(sample_windows, buffer, jax.random.key(added), batch_size, n, call=call)
        where = _("{call} on a buffer holding steps {first}..{last}").format(
            call=call, first=max(1, added - 9), last=added
        )
        if not isinstance(got, dict) or set(got) != {"t", "obs"}:
            fail(
                _(
                    "{where} should return a transition like the stored ones (here a dict with "
                    "'t' and 'obs'), each leaf with leading axes (batch_size, n); it returned "
                    "{got}"
                ).format(where=where, got=describe(got))
            )
        leaves = {
            name: require_array(
                got[name],
                _("{where}: [{name}]").format(where=where, name=repr(name)),
                (batch_size, n) + stored.shape[1:],
                stored.dtype,
                why=_("one row per window, its steps along axis 1, {dtype} as stored").format(
                    dtype=stored.dtype
                ),
                hint=lambda leaf, stored=stored: (
                    _("Index the stored arrays, which keeps their dtypes")
                    if leaf.dtype != stored.dtype
                    else ""
                ),
                returns=False,
            )
            for name, stored in buffer.data.items()
        }
        steps = leaves["t"]
        if np.any(steps == 0):
            fail(
                _(
                    "{where}, some windows reach into empty slots; a window must lie in the "
                    "buffer.size filled slots"
                ).format(where=where)
            )
        if not np.array_equal(np.asarray(got["obs"])[..., 0], steps):
            fail(
                _(
                    "sample_windows takes the fields of a transition from different slots: index "
                    "every leaf with the same (batch_size, n) indices"
                )
            )
        diffs = np.diff(steps, axis=1)
        if np.any(diffs == 0):
            example = steps[np.argmax(np.any(diffs == 0, axis=1))].tolist()
            in_last_slot = int(np.asarray(buffer.data["t"])[buffer.capacity - 1])
            repeated = steps[:, 1:][diffs == 0]
            if np.all(repeated == in_last_slot):  # the step of the last slot, and only it
                fail(
                    _(
                        "{where}, some windows repeat a step (for example {example}): the step "
                        "in the last slot, {step}, which is what an index past the last slot "
                        "gives (JAX clamps it). Wrap the slot indices round the ring with "
                        "% capacity"
                    ).format(where=where, example=example, step=in_last_slot)
                )
            if not np.all(np.isin(diffs, (0, 1))):
                _drawn_apart(where, steps, diffs)
            fail(
                _(
                    "{where}, some windows repeat a step (for example {example}): the n slots "
                    "of a window are start, start + 1, ..., start + n - 1 (jnp.arange(n) along "
                    "the window's axis)"
                ).format(where=where, example=example)
            )
        if np.all(diffs == -1):
            fail(_("sample_windows returns the steps of each window in reverse time order"))
        if not np.all(diffs == 1):
            example = steps[np.argmax(np.any(diffs != 1, axis=1))].tolist()
            held = min(added, buffer.capacity)
            if np.all(np.isin(diffs, (1, 1 - held))):  # from the newest step to the oldest
                fail(
                    _(
                        "{where}, some windows are not consecutive steps (for example "
                        "{example}): a window must not cross the write position, where the "
                        "newest transition is followed by the oldest. Count starts from the "
                        "oldest slot, (position - size) % capacity"
                    ).format(where=where, example=example)
                )
            _drawn_apart(where, steps, diffs)
        counts = np.bincount(steps[:, 0] - first, minlength=last - first + 1)
        if counts.size > last - first + 1:
            fail(_("{where}, a window starts after step {step}").format(where=where, step=last))
        if np.unique(steps[:, 0]).size == 1:
            fail(
                _(
                    "{where}, every window of the batch starts at step {step}: draw batch_size "
                    "starts, one per row (shape (batch_size,)), not one for the whole batch"
                ).format(where=where, step=int(steps[0, 0]))
            )
        if counts[-1] == 0:
            fail(
                _(
                    "sample_windows never draws the last window (steps {first}..{last}): there "
                    "are size - n + 1 windows, and randint's maxval is excluded"
                ).format(first=last, last=last + n - 1)
            )
        if counts.min() == 0:
            missing = first + int(np.argmin(counts))
            fail(
                _("sample_windows never draws the window that starts at step {step}").format(
                    step=missing
                )
            )
        expected = batch_size / counts.size
        if np.max(np.abs(counts - expected)) > 0.25 * expected:
            _name_non_uniform(where, counts, first)
    again = run_answer(sample_windows, buffer, jax.random.key(added), batch_size, n, call=call)
    if not np.array_equal(np.asarray(again["t"]), steps):
        fail(
            _(
                "sample_windows is not a pure function of its key: the same key must give the "
                "same batch"
            )
        )
    other = run_answer(sample_windows, buffer, jax.random.key(1), batch_size, n, call=call)
    if np.array_equal(np.asarray(other["t"]), steps):
        fail(_("sample_windows ignores its key: different keys should give different batches"))
    passed(_("sample_windows draws n consecutive steps uniformly, never across the write position"))
