"""The self-check of the silent-bugs chapter's exercise 2: :func:`check_compilations` (a
context manager that counts XLA compilations).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import describe
from companion.checks._messages import N_, _
from companion.checks.core import (
    Case,
    CheckFailed,
    error_text,
    fail,
    passed,
    require_function,
    self_check,
    verdict,
)

# --- exercise 2: a context manager that counts compilations -------------------------------

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"

#: ``(event, duration)`` of every duration event JAX reported during the running check (a
#: new list at each call of :func:`check_compilations`).
_events: list = []


@contextlib.contextmanager
def _listener():
    """Listen to JAX's duration events for one call of the check, into a new ``_events``.

    The check sets up its listener at every call and removes it after: an answer that
    changes ``jax.monitoring``'s global state (``clear_event_listeners()``) cannot leave a
    later call deaf. Where JAX cannot remove a listener (older releases), the one left behind
    writes to a list no later call reads."""
    global _events
    events: list = []
    _events = events

    def listener(event, duration, **kwargs):
        events.append((event, duration))

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield
    finally:
        unregister = getattr(jax.monitoring, "unregister_event_duration_listener", None)
        if unregister is not None:
            with contextlib.suppress(AssertionError, ValueError):  # the answer removed it
                unregister(listener)


def _fresh() -> Callable:
    """A new function at each call: no cache of JAX's knows it, so its first call compiles."""

    def scale(x, s):
        return jnp.tanh(x) * s + 0.5

    return scale


class _Block:
    """One ``with compilations() as c:`` block run by the check: the list it yielded, its
    length right after the block, and the events JAX reported inside it."""

    def __init__(self, label: str, code: str):
        self.label, self.code = label, code
        self.seen, self.length, self.events, self.after = None, 0, [], 0

    def count(self, event: str) -> int:
        return sum(e == event for e, _duration in self.events)


def _enter(compilations: Callable) -> Any:
    """``compilations()``, checked to be a context manager."""
    try:
        manager = compilations()
    except Exception as exc:
        fail(
            _("compilations() raised {error}: {message}").format(
                error=type(exc).__name__, message=error_text(exc)
            )
        )
    if not (hasattr(manager, "__enter__") and hasattr(manager, "__exit__")):
        hint = (
            _("a generator function needs the decorator @contextlib.contextmanager")
            if hasattr(manager, "__next__") and hasattr(manager, "send")
            else _(
                "write a generator function decorated with @contextlib.contextmanager, or a "
                "class with __enter__ and __exit__"
            )
        )
        fail(
            _(
                "compilations() returned {type}, not a context manager "
                "(`with compilations() as c:` needs one): {hint}"
            ).format(type=type(manager).__name__, hint=hint)
        )
    return manager


def _run_block(
    compilations: Callable, label: str, code: str, body: Callable, blocks: list
) -> _Block:
    """Run ``body()`` (``code`` says what it does) inside a block of the answer's; record it
    in ``blocks``."""
    block = _Block(label, code)
    manager = _enter(compilations)
    start = len(_events)
    try:
        with manager as seen:
            block.seen = seen
            body()
    except CheckFailed:  # from a nested block: already says what is wrong
        raise
    except Exception as exc:
        fail(
            _("`with compilations() as c:` raised {error} around {label}: {message}").format(
                error=type(exc).__name__, label=label, message=error_text(exc)
            )
        )
    block.events = _events[start:]
    block.length = _length(block.seen, label)
    block.after = len(_events)
    blocks.append(block)
    return block


def _length(seen: Any, label: str) -> int:
    if not isinstance(seen, list):
        fail(
            _(
                "compilations() should yield a list (`as c` gives it), which holds one float, "
                "the seconds of each compilation, by the end of the block; around {label} it "
                "yields {got}"
            ).format(label=label, got=describe(seen))
        )
    return len(seen)


#: The named mistakes, in English with the events' names as placeholders: told by :func:`_told`.
_EMPTY = N_(
    "the list stays empty, though JAX compiled inside the blocks. Either nothing listens: JAX "
    "reports each compilation as the event '{compile}' to the listeners registered with "
    "jax.monitoring.register_event_duration_secs_listener. Or what arrived never reaches the "
    "list the block received: note where the record stands before `yield` (not in "
    "`finally:`), and fill that same list at the end (c.extend(...); `c = ...` only rebinds "
    "a local name)"
)
_EVERY_EVENT = N_(
    "it counts every event JAX reports while it compiles, not only the compilation: for each "
    "new program a trace, a lowering and the compilation, three events (all named "
    "'/jax/core/compile/...'). Keep only '{compile}'"
)
_TRACES = N_(
    "it counts the traces ('{trace}'), not the compilations: jax.make_jaxpr traces "
    "without compiling, and a lowered program's .compile() compiles without tracing. Keep "
    "'{compile}'"
)
_LOWERINGS = N_(
    "it counts the lowerings to MLIR ('{lower}'), not the compilations: a lowered "
    "program's .compile() compiles without lowering again. Keep '{compile}'"
)
_BEFORE = N_(
    "the list holds compilations made before the block too (the same surplus in every "
    "block): yield a new list, and put in it only what JAX reported during the block"
)


def _told(mistake: str) -> str:
    """A named mistake in the reader's language, the events' names filled in."""
    return _(mistake).format(compile=COMPILE_EVENT, trace=TRACE_EVENT, lower=LOWER_EVENT)


@self_check
def check_compilations(compilations: Callable) -> None:
    """Check ``compilations()``, a context manager: ``with compilations() as c:`` yields a list
    that ends the block holding the duration (float seconds) of every XLA compilation made
    inside it (JAX's event ``/jax/core/compile/backend_compile_duration``).

    The answer is run as it is (not under ``jit``) around calls whose compilations the check
    counts with a listener of its own: a function with a static argument and one with a traced
    argument, each called cold (new to JAX) and warm (called once before), a trace without a
    compilation (``jax.make_jaxpr``), a compilation without a trace (a lowered program's
    ``.compile()``), nested blocks, a block that raises, and compilations after each block
    (which must not reach its list).

    Raises:
        CheckFailed: naming the mistake (not a context manager or no list; one list shared
            by the blocks; every compile event counted, about three per compilation; traces
            or lowerings counted; an empty list; compilations before the block counted; a list
            that grows after its block; a block that raised uncounted or its error
            swallowed; items that are not durations; JAX's listeners cleared).
    """
    if hasattr(compilations, "__enter__") and not isinstance(compilations, type):
        fail(
            _(
                "compilations: expected your function, got {type}, a context manager already "
                "made: pass the function itself, without calling it "
                "(check_compilations(compilations))"
            ).format(type=type(compilations).__name__)
        )
    require_function(compilations, "compilations")
    with _listener():
        _check_compilations(compilations)


def _check_compilations(compilations: Callable) -> None:
    """The body of :func:`check_compilations`, with the check's listener registered."""
    x = jnp.linspace(-1.0, 1.0, 3, dtype=jnp.float32)
    blocks: list[_Block] = []

    def three_calls(fn):
        return lambda: [jax.block_until_ready(fn(x, s)) for s in (0.5, 0.25, 0.125)]

    calls = "f(x, 0.5); f(x, 0.25); f(x, 0.125)"
    static_cold = jax.jit(_fresh(), static_argnums=1)
    _run_block(
        compilations,
        _("a static argument called cold with three new values"),
        _("f = jax.jit(scale, static_argnums=1), new to JAX; {calls}").format(calls=calls),
        three_calls(static_cold),
        blocks,
    )
    traced_cold = jax.jit(_fresh())
    _run_block(
        compilations,
        _("a traced argument called cold, three times"),
        _("f = jax.jit(scale), new to JAX; {calls}").format(calls=calls),
        three_calls(traced_cold),
        blocks,
    )
    static_warm = jax.jit(_fresh(), static_argnums=1)
    jax.block_until_ready(static_warm(x, 0.5))
    _run_block(
        compilations,
        _("a static argument called warm (once before, with 0.5)"),
        _("f = jax.jit(scale, static_argnums=1); f(x, 0.5) before the block; {calls}").format(
            calls=calls
        ),
        three_calls(static_warm),
        blocks,
    )
    traced_warm = jax.jit(_fresh())
    jax.block_until_ready(traced_warm(x, 0.5))
    _run_block(
        compilations,
        _("a traced argument called warm (once before), three times"),
        _("f = jax.jit(scale); f(x, 0.5) before the block; {calls}").format(calls=calls),
        three_calls(traced_warm),
        blocks,
    )
    _run_block(
        compilations,
        _("a trace without a compilation (jax.make_jaxpr)"),
        "jax.make_jaxpr(scale)(x, 0.5)",
        lambda: jax.make_jaxpr(_fresh())(x, 0.5),
        blocks,
    )
    lowered = jax.jit(_fresh()).lower(x, 0.5)
    _run_block(
        compilations,
        _("a compilation without a trace (a lowered program's .compile())"),
        _("lowered = jax.jit(scale).lower(x, 0.5) before the block; lowered.compile()"),
        lowered.compile,
        blocks,
    )

    def once():
        jax.block_until_ready(jax.jit(_fresh())(x, 0.5))

    def outer_body():
        once()
        _run_block(
            compilations,
            _("the inner of two nested blocks"),
            _("jax.jit(scale)(x, 0.5), scale new to JAX"),
            once,
            blocks,
        )
        once()

    _run_block(
        compilations,
        _("the outer of two nested blocks"),
        _(
            "jax.jit(scale)(x, 0.5) for three functions new to JAX, the second one in an inner "
            "block"
        ),
        outer_body,
        blocks,
    )
    jax.block_until_ready(jax.jit(_fresh())(x, 0.5))  # a compilation after every block
    if not any(block.count(COMPILE_EVENT) for block in blocks):  # JAX compiled in 6 blocks
        fail(
            _(
                "compilations() removed the check's listener with JAX's others "
                "(jax.monitoring.clear_event_listeners()), so nothing could count the "
                "compilations: register a listener of your own, and remove only that one"
            )
        )

    shared = [(a, b) for i, a in enumerate(blocks) for b in blocks[i + 1 :] if a.seen is b.seen]
    if shared:
        a, b = shared[0]
        fail(
            _(
                "compilations yields one and the same list for two blocks (the first around "
                "{first}; the second around {second}): each block needs a new list of its "
                "own, holding only what JAX compiled during that block"
            ).format(first=a.label, second=b.label)
        )
    for block in blocks:
        odd = [d for d in block.seen if not isinstance(d, (float, np.floating))]
        if odd:
            fail(
                _(
                    "compilations: the list of the block around {label} should hold floats, "
                    "the seconds of each compilation; it holds {got}. Append each "
                    "compilation's duration, the float of seconds the listener gets as its "
                    "second argument"
                ).format(label=block.label, got=describe(odd[0]))
            )
    cases, outputs, surplus = [], [], None
    for block in blocks:
        compiles = block.count(COMPILE_EVENT)
        before = sum(e == COMPILE_EVENT for e, _duration in _events[: block.after])
        surplus = block.length - before if surplus is None else surplus
        # the compile events plus the traces and lowerings, filtered by prefix, by the word
        # "compile" (which the persistent compilation cache's events also hold), or not at all
        every = [
            sum(e.startswith("/jax/core/compile/") for e, _duration in block.events),
            sum("compile" in e for e, _duration in block.events),
            len(block.events),
        ]
        mistakes = {
            _told(_EVERY_EVENT): every,
            _told(_TRACES): block.count(TRACE_EVENT),
            _told(_LOWERINGS): block.count(LOWER_EVENT),
            _told(_EMPTY): 0,
            _told(_BEFORE): before + surplus,
        }
        inputs = {_("the block runs"): block.code}
        label = _("{label} (JAX compiled {count} time(s))").format(
            label=block.label, count=compiles
        )
        cases.append(Case(label, inputs, compiles, mistakes))
        outputs.append(block.length)
    verdict("compilations", cases, outputs)
    grown = [b for b in blocks if len(b.seen) != b.length]
    if grown:
        fail(
            _(
                "compilations: the list of the block around {label} grew from {length} to "
                "{grown} after the block ended, when JAX compiled elsewhere: a listener "
                "registered for the block and never removed keeps appending. Register one "
                "listener once and copy into the list what arrived during the block, or (in "
                "recent JAX) remove the block's listener when the block ends, with "
                "jax.monitoring.unregister_event_duration_listener in a `finally:`"
            ).format(label=grown[0].label, length=grown[0].length, grown=len(grown[0].seen))
        )
    _check_a_raising_block(compilations, x)
    counts = [b.length for b in blocks]
    passed(
        _(
            "compilations counts as JAX does: static {static_cold} cold, {static_warm} warm; "
            "traced {traced_cold} cold, {traced_warm} warm"
        ).format(
            static_cold=counts[0],
            static_warm=counts[2],
            traced_cold=counts[1],
            traced_warm=counts[3],
        )
    )


class _RaisedInside(Exception):
    """What the check raises inside a block, after one compilation."""


def _check_a_raising_block(compilations: Callable, x) -> None:
    """A block that compiles once and raises: the error leaves the block, the list holds one
    compilation, and it stays so after the block."""
    manager = _enter(compilations)
    start, seen, escaped = len(_events), None, False
    try:
        with manager as seen:
            jax.block_until_ready(jax.jit(_fresh())(x, 0.5))
            raise _RaisedInside("raised by the check inside the block")
    except _RaisedInside:
        escaped = True
    except Exception as exc:
        fail(
            _("compilations() raised {error} when its block raised an error: {message}").format(
                error=type(exc).__name__, message=error_text(exc)
            )
        )
    compiles = sum(e == COMPILE_EVENT for e, _duration in _events[start:])
    length = _length(seen, _("a block that raises"))
    if not escaped:
        fail(
            _(
                "compilations swallows the error raised inside its block (an __exit__ that "
                "returns True, or a generator that catches the error without raising it "
                "again): a counter must let errors through"
            )
        )
    if length != compiles:
        fail(
            _(
                "compilations: the block that compiled {count} time(s) and then raised an "
                "error ends with {length} in its list. Fill the list in a `finally:` (try: "
                "yield seen / finally: ...), so that a block that fails is counted too"
            ).format(count=compiles, length=length)
        )
    jax.block_until_ready(jax.jit(_fresh())(x, 0.5))
    if len(seen) != length:
        fail(
            _(
                "compilations: after a block that raised an error, its list keeps growing when "
                "JAX compiles elsewhere: its listener is not removed when the block fails. "
                "Remove it in a `finally:`, or register one listener once and copy into the "
                "list what arrived during the block"
            )
        )
