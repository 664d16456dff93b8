"""The silent-bugs chapter's exercise checks against the answers students write: a catalogue.

One table per check. Each wrong answer is one a student writes (or a slip found in the
chapter's own drafts), with the message the check must answer it with (a regex of the named
mistake); the right answers, written in different styles, must pass.

- ``check_cross_talk`` (exercise 1): the largest |∂²L/∂v_i∂t_j| over pairs i != j.
- ``check_compilations`` (exercise 2): a context manager that counts XLA compilations.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from companion.checks import CheckFailed, check_compilations, check_cross_talk

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
#: jax.monitoring removes listeners from JAX 0.8.1 on (the package allows older versions).
NEEDS_UNREGISTER = pytest.mark.skipif(
    not hasattr(jax.monitoring, "unregister_event_duration_listener"),
    reason="this JAX cannot remove a jax.monitoring listener",
)


# --- exercise 1: cross_talk(loss, values, targets) -----------------------------------------


def _mixed_block(loss, values, targets):
    """d/dt (dL/dv) as a (values.size, targets.size) matrix."""
    jac = jax.jacfwd(jax.grad(loss, argnums=0), argnums=1)(values, targets)
    return np.asarray(jac).reshape(values.size, targets.size)


def cross_talk_jacobian(loss, values, targets):
    """The chapter's solution: one Jacobian, NumPy's mask of the diagonal."""
    block = _mixed_block(loss, values, targets)
    return float(np.abs(block[~np.eye(values.size, targets.size, dtype=bool)]).max())


def cross_talk_loop(loss, values, targets):
    """One pair at a time: the derivative of one entry of the gradient by one target."""
    flat = values.reshape(-1)
    largest = 0.0
    for i in range(flat.size):

        def grad_i(t, i=i):
            return jax.grad(loss)(values, t).reshape(-1)[i]

        row = jax.grad(grad_i)(targets)
        for j in range(targets.size):
            if j != i:
                largest = max(largest, abs(float(row[j])))
    return largest


def cross_talk_hessian(loss, values, targets):
    """jax.hessian of both arguments, its (values, targets) block, masked with jnp.where."""
    block = jax.hessian(loss, argnums=(0, 1))(values, targets)[0][1]
    block = block.reshape(values.size, targets.size)
    return jnp.max(jnp.where(jnp.eye(values.size, dtype=bool), 0.0, jnp.abs(block)))


RIGHT_CROSS_TALK = [cross_talk_jacobian, cross_talk_loop, cross_talk_hessian]


def _with_diagonal(loss, values, targets):
    return float(np.abs(_mixed_block(loss, values, targets)).max())


def _mask_without_reshape(loss, values, targets):
    jac = jax.jacfwd(jax.grad(loss), argnums=1)(values, targets)  # (B, 1, B) for (B, 1) values
    return float(jnp.abs(jac * (1.0 - jnp.eye(targets.size))).max())


def _values_twice(loss, values, targets):
    hess = jax.hessian(loss)(values, targets).reshape(values.size, values.size)
    return float(jnp.abs(hess * (1.0 - jnp.eye(values.size))).max())


def _targets_twice(loss, values, targets):
    hess = jax.hessian(loss, argnums=1)(values, targets)
    return float(jnp.abs(hess * (1.0 - jnp.eye(targets.size))).max())


def _off_diagonal(loss, values, targets):
    block = _mixed_block(loss, values, targets)
    return block[~np.eye(values.size, targets.size, dtype=bool)]


def _jvp_all_targets(loss, values, targets):
    """Moves every target at once: the sums of the rows, diagonal included."""
    _, rows = jax.jvp(lambda t: jax.grad(loss)(values, t), (targets,), (jnp.ones_like(targets),))
    return float(jnp.abs(rows).max())


def _index_with_a_square_mask(loss, values, targets):
    jac = np.asarray(jax.jacfwd(jax.grad(loss), argnums=1)(values, targets))
    return float(np.abs(jac[~np.eye(values.shape[0], dtype=bool)]).max())


def _diagonal_on_one_case(loss, values, targets):
    """Includes the diagonal only for B = 6: a mistake on one case is not named."""
    full = values.size == 6
    block = _mixed_block(loss, values, targets)
    mask = np.ones_like(block, bool) if full else ~np.eye(values.size, dtype=bool)
    return float(np.abs(block[mask]).max())


WRONG_CROSS_TALK = [
    ("the diagonal included", _with_diagonal, r"includes the diagonal i = j, where a per-sample"),
    (
        "a (B, 1, B) Jacobian masked without a reshape",
        _mask_without_reshape,
        r"with values of shape \(B, 1\) it includes the diagonal.*reshape it",
    ),
    ("never fires: always 0", lambda loss, v, t: 0.0, r"returns 0 for every loss"),
    (
        "never fires: jax.hessian(loss), the values twice",
        _values_twice,
        r"∂²L/∂v_i∂v_j, the values against each other",
    ),
    ("the targets twice", _targets_twice, r"∂²L/∂t_i∂t_j, the targets against each other"),
    ("a signed maximum", lambda *a: float(_off_diagonal(*a).max()), r"largest signed entry"),
    (
        "the absolute value after the maximum",
        lambda *a: abs(float(_off_diagonal(*a).max())),
        r"absolute value after the maximum",
    ),
    (
        "first order: the gradient by the targets",
        lambda loss, v, t: float(jnp.abs(jax.grad(loss, argnums=1)(v, t)).max()),
        r"returns a first derivative",
    ),
    (
        "first order: the gradient by the values",
        lambda loss, v, t: float(jnp.abs(jax.grad(loss)(v, t)).max()),
        r"returns a first derivative",
    ),
    (
        "the mean off the diagonal",
        lambda *a: float(np.abs(_off_diagonal(*a)).mean()),
        r"averages the \|entries\|",
    ),
    (
        "the sum off the diagonal",
        lambda *a: float(np.abs(_off_diagonal(*a)).sum()),
        r"adds entries of ∂²L/∂v_i∂t_j together",
    ),
    (
        "a jvp that moves all targets at once",
        _jvp_all_targets,
        r"adds entries of ∂²L/∂v_i∂t_j together",
    ),
    (
        "a bool: is there cross-talk?",
        lambda *a: bool(np.abs(_off_diagonal(*a)).max() > 0),
        r"it returned the bool (True|False)",
    ),
    (
        "one maximum per row",
        lambda *a: np.abs(_mixed_block(*a)).max(axis=1),
        r"should return a float .*; it returned a float32 array of shape \(\d,\)",
    ),
    (
        "a square mask on the (B, 1, B) Jacobian",
        _index_with_a_square_mask,
        r"raised IndexError.*Here values have shape \(B, 1\).*\(B, 1, B\)",
    ),
    (
        "the diagonal on one case only",
        _diagonal_on_one_case,
        r"differs from the reference on targets centred within groups of three",
    ),
    ("a function not passed", 0.0, r"expected your function, got float"),
]


@pytest.mark.parametrize("answer", RIGHT_CROSS_TALK, ids=lambda f: f.__name__)
def test_cross_talk_right_answers_pass(answer, capsys):
    check_cross_talk(answer)
    assert "check passed: cross_talk gives 0 for three per-sample" in capsys.readouterr().out


@pytest.mark.parametrize(
    "what, wrong, message", WRONG_CROSS_TALK, ids=[w[0] for w in WRONG_CROSS_TALK]
)
def test_cross_talk_wrong_answers_are_named(what, wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_cross_talk(wrong)


# --- exercise 2: compilations() ------------------------------------------------------------

_log: list = []  # every compilation's duration since this module's import (the solution's)
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kwargs: _log.append(duration) if event == COMPILE_EVENT else None
)
_all_events: list = []  # every duration event, named: for the answers that keep the wrong ones
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kwargs: _all_events.append((event, duration))
)


@contextlib.contextmanager
def compilations_once():
    """The chapter's solution: one listener registered at import, a slice at the end."""
    start, seen = len(_log), []
    try:
        yield seen
    finally:
        seen.extend(_log[start:])


@contextlib.contextmanager
def compilations_unregister():
    """A listener of its own for each block, removed when the block ends (JAX >= 0.8.1)."""
    seen = []

    def listener(event, duration, **kwargs):
        if event == COMPILE_EVENT:
            seen.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield seen
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


class Compilations:
    """A class with __enter__ and __exit__, reading the log of the listener registered once."""

    def __enter__(self):
        self.start, self.seen = len(_log), []
        return self.seen

    def __exit__(self, *exc_info):
        self.seen.extend(_log[self.start :])
        return False


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
        r"differs from the reference on a static argument called cold",
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


@pytest.mark.parametrize(
    "what, wrong, message",
    WRONG_COMPILATIONS,
    ids=[getattr(w, "values", w)[0] for w in WRONG_COMPILATIONS],
)
def test_compilations_wrong_answers_are_named(what, wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_compilations(wrong)


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

# the right answer of this module that registers a listener per block (JAX's listeners were
# cleared above, so the module's own, registered at import, are the only others)
from test_check_bank_silent_bugs import compilations_unregister as right

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
        cwd=Path(__file__).parent,  # the answer imports this module's right answer
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("check passed: compilations counts as JAX does") == 2, done.stdout
