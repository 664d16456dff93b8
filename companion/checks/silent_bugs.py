"""Self-checks for the exercises of the silent-bugs chapter: :func:`check_cross_talk` (a detector
of a loss whose samples talk to each other) and :func:`check_compilations` (a context manager
that counts XLA compilations).
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.core import (
    Case,
    CheckFailed,
    check_shape,
    error_text,
    fail,
    passed,
    require_function,
    run_answer,
    self_check,
    verdict,
)

# --- exercise 1: cross-talk between samples -----------------------------------------------


def _mse(v, t):
    return jnp.mean(0.5 * (v - t) ** 2)


def _reshaped_mse(v, t):
    return jnp.mean(0.5 * (v.reshape(t.shape) - t) ** 2)


def _mse_with_spread_penalty(v, t):
    return jnp.mean(0.5 * (v - t) ** 2) + 0.5 * jnp.var(v)


def _mse_targets_centred_in_threes(v, t):
    groups = t.reshape(-1, 3)
    centred = (groups - groups.mean(axis=1, keepdims=True)).reshape(t.shape)
    return jnp.mean(0.5 * (v - centred) ** 2)


def _softmax_weighted_mse(v, t):
    return jnp.sum(jax.nn.softmax(t) * 0.5 * (v - t) ** 2)


def _f32(values) -> jax.Array:
    return jnp.asarray(values, jnp.float32)


#: (label, loss, values, targets): a per-sample loss gives no cross-talk, whatever the shapes.
_CROSS_TALK_CASES = [
    ("a per-sample loss, jnp.mean(0.5 * (v - t) ** 2), values (5,)", _mse,
     _f32([0.5, -1.0, 2.0, 0.0, 1.5]), _f32([1.0, 0.5, -0.5, 2.0, 1.0])),
    ("the broadcast loss: the same with values (5, 1) against targets (5,)", _mse,
     _f32([[0.5], [-1.0], [2.0], [0.0], [1.5]]), _f32([1.0, 0.5, -0.5, 2.0, 1.0])),
    ("a per-sample loss that reshapes (4, 1) values, "
     "jnp.mean(0.5 * (v.reshape(t.shape) - t) ** 2)", _reshaped_mse,
     _f32([[0.0], [1.0], [2.0], [3.0]]), _f32([1.0, 2.0, 3.0, 4.0])),
    ("a per-sample loss plus a penalty on the values' spread, "
     "jnp.mean(0.5 * (v - t) ** 2) + 0.5 * jnp.var(v)", _mse_with_spread_penalty,
     _f32([0.0, 1.0, 2.0, 3.0]), _f32([1.0, 2.0, 3.0, 4.0])),
    ("targets centred within groups of three samples (cross-talk inside a group only)",
     _mse_targets_centred_in_threes,
     _f32([0.0, 1.0, -1.0, 2.0, 0.5, 1.5]), _f32([1.0, 3.0, 2.0, 0.0, -1.0, 4.0])),
    ("a loss weighted by jax.nn.softmax(t), computed from the targets without stop_gradient",
     _softmax_weighted_mse, _f32([-1.0, 3.0, 0.5, 1.0]), _f32([0.0, 1.0, 0.5, 2.0])),
]  # fmt: skip

_INCLUDES_DIAGONAL = (
    "it includes the diagonal i = j, where a per-sample loss is not 0 either "
    "(∂²L/∂v_i∂t_i = -1/B for the mean squared error), so every loss seems to have "
    "cross-talk: take the largest |entry| off the diagonal only"
)
_DIAGONAL_OF_COLUMNS = (
    "with values of shape (B, 1) it includes the diagonal i = j (the per-sample loss that "
    "reshapes its (4, 1) values gives 0.25, its |∂²L/∂v_i∂t_i|): the Jacobian has shape "
    "(B, 1, B) there; reshape it to (values.size, targets.size) before leaving out the diagonal"
)
_NEVER_FIRES = (
    "it returns 0 for every loss, also for the broadcast one (values (5, 1) against targets "
    "(5,)), whose ∂L/∂v_i depends on every target: ∂²L/∂v_i∂t_j = -1/25 for every pair. "
    "Differentiate jax.grad(loss), the gradient with respect to the values, once more with "
    "respect to the targets (argnums=1)"
)
_VALUES_TWICE = (
    "it measures ∂²L/∂v_i∂v_j, the values against each other (jax.hessian(loss) "
    "differentiates twice with respect to the first argument): it finds cross-talk in the "
    "per-sample loss with a penalty on the values' spread, and none in the broadcast loss. "
    "Differentiate the gradient with respect to the targets (argnums=1)"
)
_TARGETS_TWICE = (
    "it measures ∂²L/∂t_i∂t_j, the targets against each other (jax.hessian(loss, "
    "argnums=1)): it finds none in the broadcast loss, whose ∂L/∂v_i depends on every target. "
    "Differentiate the gradient with respect to the values (argnums=0) once more with respect "
    "to the targets (argnums=1)"
)
_SIGNED = (
    "it returns the largest signed entry, not the largest absolute value: the broadcast "
    "loss's cross-talk is negative, -1/25 for every pair; take the maximum of the absolute "
    "values"
)
_ABS_AFTER_MAX = (
    "it takes the absolute value after the maximum: in the softmax-weighted loss the largest "
    "cross-talk is a negative entry, which |max| misses; take the maximum of the absolute "
    "values"
)
_FIRST_ORDER = (
    "it returns a first derivative, the largest |∂L/∂v_i| or |∂L/∂t_j|, which a per-sample "
    "loss has too (it is not 0 while a value differs from its target). Cross-talk is the "
    "mixed second derivative ∂²L/∂v_i∂t_j of i ≠ j: "
    "jax.jacfwd(jax.grad(loss), argnums=1)(values, targets)"
)
_MEAN = (
    "it averages the |entries| off the diagonal instead of taking the largest: cross-talk "
    "inside groups of three samples is diluted by the many pairs without it"
)
_SUMMED = (
    "it adds entries of ∂²L/∂v_i∂t_j together (over every pair, or over j for each i, as a "
    "jvp that moves all targets at once does), where the largest single |entry| off the "
    "diagonal is asked for"
)


def _second_block(loss: Callable, values, targets, first: int = 0, then: int = 1) -> Any:
    """``∂²L/∂x_i∂y_j`` as a ``(x.size, y.size)`` matrix: ``x`` and ``y`` the values (0) or the
    targets (1), ``first`` and ``then``."""
    block = jax.jit(jax.jacfwd(jax.grad(loss, argnums=first), argnums=then))(values, targets)
    x, y = (values, targets)[first], (values, targets)[then]
    return np.asarray(block, np.float64).reshape(x.size, y.size)


def _off_diagonal(matrix: np.ndarray) -> np.ndarray:
    return matrix[~np.eye(*matrix.shape, dtype=bool)]


def _cross_talk_case(label: str, loss: Callable, values, targets) -> Case:
    block = _second_block(loss, values, targets)
    off = _off_diagonal(block)
    mistakes = {
        _INCLUDES_DIAGONAL: np.abs(block).max(),
        _DIAGONAL_OF_COLUMNS: np.abs(block).max() if values.ndim == 2 else np.abs(off).max(),
        _NEVER_FIRES: 0.0,
        _VALUES_TWICE: np.abs(_off_diagonal(_second_block(loss, values, targets, 0, 0))).max(),
        _TARGETS_TWICE: np.abs(_off_diagonal(_second_block(loss, values, targets, 1, 1))).max(),
        _SIGNED: off.max(),
        _ABS_AFTER_MAX: abs(off.max()),
        _FIRST_ORDER: [
            np.abs(np.asarray(jax.jit(jax.grad(loss, argnums=n))(values, targets))).max()
            for n in (0, 1)
        ],
        _MEAN: np.abs(off).mean(),
        _SUMMED: [
            np.abs(off).sum(),
            np.abs(block.sum(axis=1)).max(),
            np.abs(block.sum(axis=1) - np.diag(block)).max(),
        ],
    }
    inputs = {"values": np.asarray(values), "targets": np.asarray(targets)}
    return Case(label, inputs, np.abs(off).max(), mistakes)


_cross_talk_cases: list = []  # the Cases of _CROSS_TALK_CASES, computed at the first check


def _cross_talk_reference() -> list:
    if not _cross_talk_cases:
        _cross_talk_cases.extend(_cross_talk_case(*case) for case in _CROSS_TALK_CASES)
    return _cross_talk_cases


@self_check
def check_cross_talk(cross_talk: Callable) -> None:
    """Check ``cross_talk(loss, values, targets) -> float``: the largest ``|∂²L/∂v_i∂t_j|``
    over pairs ``i != j`` (0 for a per-sample loss).

    ``loss(values, targets)`` returns a float32 scalar; ``values`` float32 ``(B,)`` or
    ``(B, 1)``, ``targets`` float32 ``(B,)``. The answer is called as it is (not under ``jit``:
    NumPy is fine) on six losses whose cross-talk is known: three per-sample ones (the mean
    squared error, one that reshapes ``(B, 1)`` values, one with a penalty on the values'
    spread), the broadcast ``(B, 1)``-against-``(B,)`` loss, targets centred within groups of
    three (cross-talk between some samples only) and a loss weighted by a softmax of the
    targets (cross-talk of both signs).

    Raises:
        CheckFailed: naming the mistake (the diagonal included, for all shapes or for
            ``(B, 1)`` values only; a detector that never fires; the values or the targets
            differentiated twice; a signed maximum or the absolute value after it; a first
            derivative; a mean or a sum of entries; not one number).
    """
    require_function(cross_talk, "cross_talk")
    outputs = []
    for label, loss, values, targets in _CROSS_TALK_CASES:
        call = (f"cross_talk({loss.__name__.lstrip('_')}, values {tuple(values.shape)}, "
                f"targets {tuple(targets.shape)})")  # fmt: skip
        columns = values.ndim == 2
        hint = ("Here values have shape (B, 1) against targets (B,): the Jacobian d/dt (dL/dv) "
                "then has shape (B, 1, B)") if columns else ""  # fmt: skip
        got = run_answer(cross_talk, loss, values, targets, call=call, jit=False, hint=hint)
        arr = check_shape(got, (), f"the result of {call}",
                          hint="Return one float, the largest over all pairs i != j.")  # fmt: skip
        if arr.dtype == bool:
            fail(f"{call} returned a bool ({arr}): return the largest |∂²L/∂v_i∂t_j| "
                 "itself, a float, so that it says how much cross-talk there is")  # fmt: skip
        if arr.dtype.kind not in "fiu":
            fail(f"{call} should return a float, got {type(got).__name__} {got!r:.60}")
        outputs.append(float(arr))
    verdict("cross_talk", _cross_talk_reference(), outputs, rtol=1e-4, atol=1e-6)
    passed("cross_talk gives 0 for three per-sample losses and the largest entry for three others")


# --- exercise 2: a context manager that counts compilations -------------------------------

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"

#: ``(event, duration)`` of every duration event JAX reported since the first check ran.
_events: list = []
_listening: list = []


def _listen() -> None:
    """Register the check's own listener, once per process (``jax.monitoring`` keeps it)."""
    if not _listening:
        jax.monitoring.register_event_duration_secs_listener(
            lambda event, duration, **kwargs: _events.append((event, duration))
        )
        _listening.append(True)


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
        return sum(e == event for e, _ in self.events)


def _enter(compilations: Callable) -> Any:
    """``compilations()``, checked to be a context manager."""
    try:
        manager = compilations()
    except Exception as exc:
        fail(f"compilations() raised {type(exc).__name__}: {error_text(exc)}")
    if not (hasattr(manager, "__enter__") and hasattr(manager, "__exit__")):
        hint = (
            "a generator function needs the decorator @contextlib.contextmanager"
            if hasattr(manager, "__next__") and hasattr(manager, "send")
            else "write a generator function decorated with @contextlib.contextmanager, or a "
            "class with __enter__ and __exit__"
        )
        fail(f"compilations() returned {type(manager).__name__}, not a context manager "
             f"(`with compilations() as c:` needs one): {hint}")  # fmt: skip
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
        fail(f"`with compilations() as c:` raised {type(exc).__name__} around {label}: "
             f"{error_text(exc)}")  # fmt: skip
    block.events = _events[start:]
    block.length = _length(block.seen, label)
    block.after = len(_events)
    blocks.append(block)
    return block


def _length(seen: Any, label: str) -> int:
    if not isinstance(seen, list):
        fail(f"compilations() should yield a list (`as c` gives it), got "
             f"{type(seen).__name__} {seen!r:.60} around {label}")  # fmt: skip
    return len(seen)


_EMPTY = (
    "the list stays empty, though JAX compiled inside the blocks. JAX reports each "
    f"compilation as the event '{COMPILE_EVENT}' to the listeners registered with "
    "jax.monitoring.register_event_duration_secs_listener, and the list must hold them by the "
    "end of the block"
)
_EVERY_EVENT = (
    "it counts every event JAX reports while it compiles, not only the compilation: for each "
    "new program a trace, a lowering and the compilation, three events (all named "
    f"'/jax/core/compile/...'). Keep only '{COMPILE_EVENT}'"
)
_TRACES = (
    f"it counts the traces ('{TRACE_EVENT}'), not the compilations: jax.make_jaxpr traces "
    "without compiling, and a lowered program's .compile() compiles without tracing. Keep "
    f"'{COMPILE_EVENT}'"
)
_LOWERINGS = (
    f"it counts the lowerings to MLIR ('{LOWER_EVENT}'), not the compilations: a lowered "
    f"program's .compile() compiles without lowering again. Keep '{COMPILE_EVENT}'"
)
_BEFORE = (
    "the list holds compilations made before the block too (the same surplus in every "
    "block): yield a new list, and put in it only what JAX reported during the block"
)


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
            swallowed; items that are not durations).
    """
    if hasattr(compilations, "__enter__") and not isinstance(compilations, type):
        fail(
            f"compilations: expected your function, got {type(compilations).__name__}, a "
            "context manager already made: pass the function itself, without calling it "
            "(check_compilations(compilations))"
        )
    require_function(compilations, "compilations")
    _listen()
    x = jnp.linspace(-1.0, 1.0, 3, dtype=jnp.float32)
    blocks: list[_Block] = []

    def three_calls(fn):
        return lambda: [jax.block_until_ready(fn(x, s)) for s in (0.5, 0.25, 0.125)]

    calls = "f(x, 0.5); f(x, 0.25); f(x, 0.125)"
    static_cold = jax.jit(_fresh(), static_argnums=1)
    _run_block(compilations, "a static argument called cold with three new values",
               f"f = jax.jit(scale, static_argnums=1), new to JAX; {calls}",
               three_calls(static_cold), blocks)  # fmt: skip
    traced_cold = jax.jit(_fresh())
    _run_block(compilations, "a traced argument called cold, three times",
               f"f = jax.jit(scale), new to JAX; {calls}", three_calls(traced_cold),
               blocks)  # fmt: skip
    static_warm = jax.jit(_fresh(), static_argnums=1)
    jax.block_until_ready(static_warm(x, 0.5))
    _run_block(compilations, "a static argument called warm (once before, with 0.5)",
               f"f = jax.jit(scale, static_argnums=1); f(x, 0.5) before the block; {calls}",
               three_calls(static_warm), blocks)  # fmt: skip
    traced_warm = jax.jit(_fresh())
    jax.block_until_ready(traced_warm(x, 0.5))
    _run_block(compilations, "a traced argument called warm (once before), three times",
               f"f = jax.jit(scale); f(x, 0.5) before the block; {calls}",
               three_calls(traced_warm), blocks)  # fmt: skip
    _run_block(compilations, "a trace without a compilation (jax.make_jaxpr)",
               "jax.make_jaxpr(scale)(x, 0.5)", lambda: jax.make_jaxpr(_fresh())(x, 0.5),
               blocks)  # fmt: skip
    lowered = jax.jit(_fresh()).lower(x, 0.5)
    _run_block(compilations, "a compilation without a trace (a lowered program's .compile())",
               "lowered = jax.jit(scale).lower(x, 0.5) before the block; lowered.compile()",
               lowered.compile, blocks)  # fmt: skip

    def once():
        jax.block_until_ready(jax.jit(_fresh())(x, 0.5))

    def outer_body():
        once()
        _run_block(compilations, "the inner of two nested blocks",
                   "jax.jit(scale)(x, 0.5), scale new to JAX", once, blocks)  # fmt: skip
        once()

    _run_block(compilations, "the outer of two nested blocks",
               "jax.jit(scale)(x, 0.5) for three functions new to JAX, the second one in an "
               "inner block", outer_body, blocks)  # fmt: skip
    jax.block_until_ready(jax.jit(_fresh())(x, 0.5))  # a compilation after every block

    shared = [(a, b) for i, a in enumerate(blocks) for b in blocks[i + 1 :] if a.seen is b.seen]
    if shared:
        a, b = shared[0]
        fail(
            "compilations yields one and the same list for two blocks (the first around "
            f"{a.label}; the second around {b.label}): each block needs a new list of its "
            "own, holding only what JAX compiled during that block"
        )
    for block in blocks:
        odd = [d for d in block.seen if not isinstance(d, (float, np.floating))]
        if odd:
            fail(
                f"compilations: the list of the block around {block.label} holds "
                f"{odd[0]!r:.60} (a {type(odd[0]).__name__}); append each compilation's "
                "duration, the float of seconds the listener gets as its second argument"
            )
    cases, outputs, surplus = [], [], None
    for block in blocks:
        compiles = block.count(COMPILE_EVENT)
        before = sum(e == COMPILE_EVENT for e, _ in _events[: block.after])
        surplus = block.length - before if surplus is None else surplus
        every = [sum(e.startswith("/jax/core/compile/") for e, _ in block.events),
                 len(block.events)]  # fmt: skip
        mistakes = {
            _EVERY_EVENT: every,
            _TRACES: block.count(TRACE_EVENT),
            _LOWERINGS: block.count(LOWER_EVENT),
            _EMPTY: 0,
            _BEFORE: before + surplus,
        }
        inputs = {"the block runs": block.code}
        cases.append(Case(f"{block.label} (JAX compiled {compiles} time(s))", inputs, compiles,
                          mistakes))  # fmt: skip
        outputs.append(block.length)
    verdict("compilations", cases, outputs)
    grown = [b for b in blocks if len(b.seen) != b.length]
    if grown:
        fail(
            f"compilations: the list of the block around {grown[0].label} grew from "
            f"{grown[0].length} to {len(grown[0].seen)} after the block ended, when JAX "
            "compiled elsewhere: a listener registered for the block and never removed keeps "
            "appending. Register one listener once and copy into the list what arrived during "
            "the block, or (in recent JAX) remove the block's listener when the block ends, "
            "with jax.monitoring.unregister_event_duration_listener in a `finally:`"
        )
    _check_a_raising_block(compilations, x)
    counts = [b.length for b in blocks]
    passed(f"compilations counts as JAX does: static {counts[0]} cold, {counts[2]} warm; traced "
           f"{counts[1]} cold, {counts[3]} warm")  # fmt: skip


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
        fail(f"compilations() raised {type(exc).__name__} when its block raised an error: "
             f"{error_text(exc)}")  # fmt: skip
    compiles = sum(e == COMPILE_EVENT for e, _ in _events[start:])
    length = _length(seen, "a block that raises")
    if not escaped:
        fail(
            "compilations swallows the error raised inside its block (an __exit__ that "
            "returns True, or a generator that catches the error without raising it again): "
            "a counter must let errors through"
        )
    if length != compiles:
        fail(
            f"compilations: the block that compiled {compiles} time(s) and then raised an "
            f"error ends with {length} in its list. Fill the list in a `finally:` (try: yield "
            "seen / finally: ...), so that a block that fails is counted too"
        )
    jax.block_until_ready(jax.jit(_fresh())(x, 0.5))
    if len(seen) != length:
        fail(
            "compilations: after a block that raised an error, its list keeps growing when "
            "JAX compiles elsewhere: its listener is not removed when the block fails. Remove "
            "it in a `finally:`, or register one listener once and copy into the list what "
            "arrived during the block"
        )
