"""check_sample_windows (chapter 7): right answers and its bank of wrong answers
(``WRONG_*``: slip, answer, verdict).

What the check guards, and the case that breaks each plausible wrong answer:

check_sample_windows (n consecutive filled steps, uniform starts, never across ``position``)
- filled slots only: starts up to the capacity reach empty slots, named;
- from the oldest slot, wrapping round the capacity: no offset crosses the write
  position, no ``% capacity`` indexes past the end, named;
- n consecutive steps in time order; one window per row (fields from two windows);
- uniform over every window: the last window never drawn, the minimum of two draws (the
  earlier windows more often), starts clipped to the last window, a uniform float rounded
  (the end windows half as often), one start for the whole batch (counts within 25% of
  uniform), named;
- one start a row, n slots from it: each step drawn apart named (not told it crosses the
  write position: the steps jump by other amounts than newest to oldest); the oldest slot
  taken to be position and a count back from position one slot short reach empty slots;
  counting back from the newest passes;
- the key passed in: a key of its own, named;
- the contract: time first, the stored data returned.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from checks.answers import (
    bank_params,
    passes,
    rejects,
    right_params,
    uniform_start,
    windows_with,
)

# --- check_sample_windows: sample_windows(buffer, key, batch_size, n) --------------------


def windows_by_columns(buffer, key, batch_size, n):
    """One gather per step of the window, stacked along axis 1."""
    oldest = (buffer.position - buffer.size) % buffer.capacity
    start = jax.random.randint(key, (batch_size,), 0, buffer.size - n + 1)
    columns = [
        jax.tree.map(lambda store, k=k: store[(oldest + start + k) % buffer.capacity], buffer.data)
        for k in range(n)
    ]
    return jax.tree.map(lambda *steps: jnp.stack(steps, axis=1), *columns)


RIGHT_SAMPLE_WINDOWS = [
    windows_with(uniform_start),  # one gather of (batch, n) slots
    windows_by_columns,  # a gather per step, stacked
]
WRONG_SAMPLE_WINDOWS = [
    # wraps its indices, yet repeats a step: told how a window's slots go, not to wrap them
    (
        "every slot of a window the same",
        windows_with(uniform_start, order=lambda n: jnp.zeros(n, jnp.int32)),
        r"start \+ 1, \.\.\., start",
    ),
    (
        "the steps cast to float",
        lambda b, k, size, n: jax.tree.map(
            lambda leaf: leaf.astype(jnp.float32), windows_with(uniform_start)(b, k, size, n)
        ),
        r"\['t'\] should be an int32 array .*; it is a float32 array",
    ),
]


def fields_from_different_windows(b, k, size, n):
    k1, k2 = jax.random.split(k)
    first, second = (
        windows_with(uniform_start)(b, k1, size, n),
        windows_with(uniform_start)(b, k2, size, n),
    )
    return {"t": first["t"], "obs": second["obs"]}


def _windows_without_wrap(buffer, key, batch_size, n):
    oldest = (buffer.position - buffer.size) % buffer.capacity
    start = jax.random.randint(key, (batch_size,), 0, buffer.size - n + 1)
    slots = oldest + start[:, None] + jnp.arange(n)  # no % capacity
    return jax.tree.map(lambda leaf: leaf[slots], buffer.data)


WRONG_SAMPLE_WINDOWS += [
    (
        "starts up to the capacity",
        windows_with(lambda b, k, size, n: jax.random.randint(k, (size,), 0, b.capacity - n + 1)),
        "empty slots",
    ),
    (
        "no offset from the oldest",
        windows_with(uniform_start, offset=False),
        "cross the write position",
    ),
    (
        "steps in reverse",
        windows_with(uniform_start, order=lambda n: jnp.arange(n)[::-1]),
        "reverse time order",
    ),
    (
        "the last window never drawn",
        windows_with(lambda b, k, size, n: jax.random.randint(k, (size,), 0, b.size - n)),
        "never draws the last window",
    ),
    (
        "the minimum of two draws",
        windows_with(
            lambda b, k, size, n: jnp.minimum(
                uniform_start(b, k, size, n),
                uniform_start(b, jax.random.fold_in(k, 1), size, n),
            )
        ),
        "not uniform over the windows: the earlier windows are drawn more often",
    ),
    (
        "its own key(0)",
        windows_with(lambda b, k, size, n: uniform_start(b, jax.random.key(0), size, n)),
        "ignores its key",
    ),
    ("fields from different windows", fields_from_different_windows, "different slots"),
    (
        "time first",
        lambda b, k, size, n: jax.tree.map(
            lambda x: jnp.swapaxes(x, 0, 1), windows_with(uniform_start)(b, k, size, n)
        ),
        r"\['obs'\] should be a float32 array of shape \(4000, 3, 2\).*; it is a float32 "
        r"array of shape \(3, 4000, 2\)",
    ),
    (
        "the stored data as a tuple",
        lambda b, k, size, n: (b.data["t"], b.data["obs"]),
        "like the stored ones",
    ),
    ("three arguments", lambda b, k, size: None, "raised TypeError"),
    ("no wrap round the capacity", _windows_without_wrap, "% capacity"),
]


def _windows_from(first_slot):
    """Windows whose first slots ``first_slot(buffer, key, batch_size, n)`` gives, wrapped."""

    def sample_windows(buffer, key, batch_size, n):
        first = first_slot(buffer, key, batch_size, n) % buffer.capacity
        slots = (first[:, None] + jnp.arange(n)) % buffer.capacity
        return jax.tree.map(lambda leaf: leaf[slots], buffer.data)

    return sample_windows


def _back(b, k, size, n, short=0):
    """First slots counted back from the write position (``short`` slots too few)."""
    return b.position - n + short - jax.random.randint(k, (size,), 0, b.size - n + 1)


RIGHT_SAMPLE_WINDOWS += [_windows_from(_back)]  # counted back from the newest


def _windows_drawn_apart(buffer, key, batch_size, n):
    """Each step of a window drawn on its own."""
    oldest = (buffer.position - buffer.size) % buffer.capacity
    start = jax.random.randint(key, (batch_size, n), 0, buffer.size - n + 1)
    slots = (oldest + start) % buffer.capacity
    return jax.tree.map(lambda leaf: leaf[slots], buffer.data)


WRONG_SAMPLE_WINDOWS += [
    (
        "the oldest slot taken to be position",
        _windows_from(lambda b, k, size, n: b.position + uniform_start(b, k, size, n)),
        "reach into empty slots",
    ),
    (
        "starts over the whole buffer clipped to the last window",
        windows_with(
            lambda b, k, size, n: jnp.minimum(jax.random.randint(k, (size,), 0, b.size), b.size - n)
        ),
        r"the window starting at step 5 is drawn \d+ times, the others about \d+ each: starts "
        r"beyond the windows are clipped",
    ),
    (
        "one start for the whole batch",
        windows_with(lambda b, k, size, n: jnp.full((size,), uniform_start(b, k, 1, n)[0])),
        r"every window of the batch starts at step \d+: draw batch_size starts",
    ),
    ("each step drawn apart", _windows_drawn_apart, r"the steps of a window are drawn apart"),
    (
        "a uniform float rounded",
        windows_with(
            lambda b, k, size, n: jnp.round(jax.random.uniform(k, (size,)) * (b.size - n)).astype(
                jnp.int32
            )
        ),
        r"the first and the last window are drawn about half as often",
    ),
    (
        "counted back from position one slot short",
        _windows_from(lambda b, k, size, n: _back(b, k, size, n, short=1)),
        r"reach into empty slots",
    ),
]


#: The check's right answers and its bank of wrong ones.
RIGHTS = {"check_sample_windows": RIGHT_SAMPLE_WINDOWS}
BANKS = {"check_sample_windows": WRONG_SAMPLE_WINDOWS}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)
