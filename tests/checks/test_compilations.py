"""check_compilations (chapter 10): right answers, its bank of wrong answers (``WRONG_*``:
slip, answer, verdict), the factor of three the chapter measured, and process-global state
(an answer that clears JAX's listeners does not fail a later right answer).

What the check guards, and the case that breaks each plausible wrong answer:

check_compilations (a context manager: the durations of the XLA compilations in its block)
- compilations only: every compile event (three per program), every event, traces,
  lowerings, named;
- within the block: a snapshot at entry, plain events, the list's name rebound in
  ``finally:`` or the start noted there (an empty list; the message tells both causes, no
  listener and a list never filled), a copy of the log so far, one list for two blocks, a
  listener never removed or removed without finally (grows after the block), named;
- a block that raises: counted, its error not swallowed, named;
- durations: event names, every compilation twice (generic);
- a context manager: a generator without the decorator, one that yields nothing,
  ``compilations()`` passed for ``compilations``, named.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from checks.answers import (
    COMPILE_EVENT,
    NEEDS_UNREGISTER,
    Compilations,
    _all_events,
    _log,
    bank_params,
    compilations_once,
    compilations_unregister,
    generic,
    rejects,
)
from companion.checks import check_compilations

# --- check_compilations: compilations() --------------------------------------------------


RIGHT_COMPILATIONS = [
    compilations_once,
    pytest.param(compilations_unregister, marks=NEEDS_UNREGISTER),
    Compilations,
]


def _counting(keep):
    """A context manager that appends the duration of every event ``keep(event)`` accepts."""

    @contextlib.contextmanager
    def compilations():
        start, seen = len(_all_events), []
        try:
            yield seen
        finally:
            seen.extend(d for e, d in _all_events[start:] if keep(e))

    return compilations


@contextlib.contextmanager
def _never_removed():
    seen = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, duration, **kwargs: seen.append(duration) if event == COMPILE_EVENT else None
    )
    yield seen


@contextlib.contextmanager
def _removed_without_finally():
    seen = []

    def listener(event, duration, **kwargs):
        if event == COMPILE_EVENT:
            seen.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    yield seen
    jax.monitoring.unregister_event_duration_listener(listener)


@contextlib.contextmanager
def _without_finally():
    start, seen = len(_log), []
    yield seen
    seen.extend(_log[start:])


@contextlib.contextmanager
def _the_global_log():
    yield _log


_shared: list = []  # a log of its own for the answer that clears it


jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kwargs: _shared.append(duration) if event == COMPILE_EVENT else None
)


@contextlib.contextmanager
def _cleared_global_log():
    _shared.clear()
    yield _shared


@contextlib.contextmanager
def _copy_of_the_log():
    """Starts from everything logged so far: counts what compiled before the block."""
    seen = list(_log)
    start = len(_log)
    try:
        yield seen
    finally:
        seen.extend(_log[start:])


@contextlib.contextmanager
def _snapshot_at_entry():
    """Takes the slice when the block starts: it is empty, and stays so."""
    seen = _log[len(_log) :]
    yield seen


@contextlib.contextmanager
def _rebound_list():
    """Rebinds its local name in ``finally:``: the list the block received stays empty."""
    start, seen = len(_log), []
    try:
        yield seen
    finally:
        seen = _log[start:]  # noqa: F841 (the slip: a new list, never seen by the block)


@contextlib.contextmanager
def _start_in_finally():
    """Notes where the record stands only when the block ends: nothing after it."""
    seen = []
    try:
        yield seen
    finally:
        start = len(_log)
        seen.extend(_log[start:])


@contextlib.contextmanager
def _plain_events_listener():
    """register_event_listener: plain events, never the compile durations."""
    seen = []
    jax.monitoring.register_event_listener(
        lambda event, **kwargs: seen.append(0.0) if event == COMPILE_EVENT else None
    )
    yield seen


class _Swallows(Compilations):
    def __exit__(self, *exc_info):
        super().__exit__(*exc_info)
        return True


@contextlib.contextmanager
def _event_names():
    start, seen = len(_all_events), []
    try:
        yield seen
    finally:
        seen.extend(e for e, _ in _all_events[start:] if e == COMPILE_EVENT)


def _not_decorated():
    start, seen = len(_log), []
    try:
        yield seen
    finally:
        seen.extend(_log[start:])


@contextlib.contextmanager
def _yields_nothing():
    start = len(_log)
    yield
    print(len(_log) - start)


@contextlib.contextmanager
def _counts_doubled():
    """Appends each duration twice (two listeners, say): generic, not named."""
    start, seen = len(_log), []
    try:
        yield seen
    finally:
        seen.extend(d for d in _log[start:] for _ in range(2))


WRONG_COMPILATIONS = [
    (
        "every event under /jax/core/compile/ ('compile' in event): three per program",
        _counting(lambda e: "compile" in e),
        r"counts every event JAX reports while it compiles",
    ),
    (
        "every duration event, unfiltered",
        _counting(lambda e: True),
        r"counts every event JAX reports while it compiles",
    ),
    ("the traces", _counting(lambda e: e.endswith("jaxpr_trace_duration")), r"counts the traces"),
    (
        "the lowerings",
        _counting(lambda e: e.endswith("jaxpr_to_mlir_module_duration")),
        r"counts the lowerings",
    ),
    ("a slice taken when the block starts", _snapshot_at_entry, r"the list stays empty"),
    ("register_event_listener (no durations)", _plain_events_listener, r"the list stays empty"),
    (
        "the list's name rebound in finally",
        _rebound_list,
        r"the list stays empty.*`c = \.\.\.` only rebinds a local name",
    ),
    (
        "the start noted in finally",
        _start_in_finally,
        r"the list stays empty.*before `yield` \(not in `finally:`\)",
    ),
    ("the global log yielded", _the_global_log, r"one and the same list for two blocks"),
    (
        "the global log cleared and yielded",
        _cleared_global_log,
        r"one and the same list for two blocks",
    ),
    ("a copy of the log so far", _copy_of_the_log, r"compilations made before the block"),
    (
        "a listener per block, never removed",
        _never_removed,
        r"grew from 3 to \d+ after the block ended",
    ),
    pytest.param(
        "a listener per block, removed without a finally",
        _removed_without_finally,
        r"after a block that raised an error, its list keeps growing",
        marks=NEEDS_UNREGISTER,
    ),
    (
        "no finally: a block that raises is not counted",
        _without_finally,
        r"compiled 1 time\(s\) and then raised an error ends with 0",
    ),
    ("an __exit__ that returns True", _Swallows, r"swallows the error"),
    (
        "event names, not durations",
        _event_names,
        r"should hold floats.*; it holds the str '/jax/core/compile/backend_compile_",
    ),
    (
        "a generator without @contextlib.contextmanager",
        _not_decorated,
        r"returned generator, not a context manager.*@contextlib.contextmanager",
    ),
    ("yields nothing", _yields_nothing, r"should yield a list.*; around .* it yields None"),
    (
        "every compilation twice",
        _counts_doubled,
        generic(r"differs from the reference on a static argument called cold"),
    ),
    (
        "compilations() passed, not compilations",
        compilations_once(),
        r"expected your function.*without calling it",
    ),
]


@pytest.mark.parametrize("answer", RIGHT_COMPILATIONS, ids=["once", "unregister", "class"])
def test_compilations_right_answers_pass(answer, capsys):
    check_compilations(answer)
    out = capsys.readouterr().out
    assert (
        "check passed: compilations counts as JAX does: static 3 cold, 2 warm; traced 1 cold, "
        "0 warm" in out
    )


#: The check's right answers (they pass in their own test, above) and its bank of wrong ones.
RIGHTS = {"check_compilations": RIGHT_COMPILATIONS}
BANKS = {"check_compilations": WRONG_COMPILATIONS}


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)


def test_the_factor_of_three_is_what_the_chapter_measured():
    """Counting every compile event gives three per new program: the exercise's gradient
    functions, called cold, would read 3 and 9 where JAX compiled once and three times."""
    every = _counting(lambda e: e.startswith("/jax/core/compile/"))

    def f(x, s):
        return jnp.sin(x) * s

    x = jnp.ones(3)
    static = jax.jit(f, static_argnums=1)
    with every() as wrong, compilations_once() as right:
        for s in (0.1, 0.2, 0.3):
            jax.block_until_ready(static(x, s))
    assert (len(right), len(wrong)) == (3, 9)


_AFTER_A_CLEARING_ANSWER = '''
import contextlib

import jax

from companion.checks import CheckFailed, check_compilations


@contextlib.contextmanager
def clearing():
    """A student's answer that clears every listener of JAX's, the check's included."""
    jax.monitoring.clear_event_listeners()
    yield []


try:
    check_compilations(clearing)
except CheckFailed as failure:
    assert "clear_event_listeners" in str(failure), failure
else:
    raise AssertionError("an answer that clears JAX's listeners passed")
jax.config.update("jax_default_device", jax.devices()[-1])  # more global state changed

# the right answer that registers a listener per block (JAX's listeners were cleared above,
# so those answers.py registers at import are the only others)
from checks.answers import compilations_unregister as right

check_compilations(right)
check_compilations(right)  # and again: the first call left no listener that counts twice
'''


@NEEDS_UNREGISTER
def test_compilations_check_survives_an_answer_that_clears_jax_listeners():
    """The check sets up its own listener at every call: an earlier answer that cleared
    JAX's listeners (process-global state) does not make a later right answer fail."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _AFTER_A_CLEARING_ANSWER],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[1],  # the answer imports checks/answers.py's right answer
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("check passed: compilations counts as JAX does") == 2, done.stdout
