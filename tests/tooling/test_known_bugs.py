"""A bug that every supported jaxlib has on the CPU, and the rule that keeps the book clear of it.

openxla/xla#49176: a slice of an array written back into the same array at a shifted place,
then reshaped (``s.at[1:].set(s[:-1]).reshape(...)``, ``[None]``, ``jnp.expand_dims``), comes
out wrong under ``jit`` on the CPU and right op by op. XLA moves the reshape across the write
and then copies in place, reading rows it has already overwritten. Measured wrong on jaxlib
0.4.35 (the package's lower bound), 0.5.3 and 0.7.2 (Colab's runtimes), 0.12.0.1 (the pin)
and 0.12.1. Without the reshape, or shifted with ``jnp.roll`` or ``jnp.concatenate``, it is
right.

- The upstream reproducer and the frame-stack idiom are strict expected failures up to
  ``FIXED_IN``: a jaxlib that computes them right makes them XPASS, which fails the run.
- The work-arounds are right under ``jit`` on every version.
- No code in ``companion/`` and no code cell of a notebook writes that way (an AST check).
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from jax import lax
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
CPU = jax.devices("cpu")[0]

#: The first jaxlib that computes the cases below right on the CPU; None while none does.
FIXED_IN: str | None = None
JAXLIB = importlib.metadata.version("jaxlib")
WRONG_HERE = FIXED_IN is None or Version(JAXLIB) < Version(FIXED_IN)
KNOWN_BUG = pytest.mark.xfail(
    WRONG_HERE,
    strict=True,
    raises=AssertionError,
    reason=(
        f"openxla/xla#49176: a shifted slice written into its own array, then reshaped, is "
        f"wrong under jit on the CPU (jaxlib 0.4.35 to 0.12.1). XPASS means jaxlib {JAXLIB} "
        "computes it right: set FIXED_IN in tests/tooling/test_known_bugs.py to the first fixed "
        "release and move the note in book/setup.md (Which JAX) to the older releases."
    ),
)


def upstream(x):
    """openxla/xla#49176's reproducer: ``base`` shifted down by one row, then reshaped."""
    base = x + np.int32(1)
    return lax.dynamic_update_slice(base, base[:3], (1, 0, 0)).reshape((1, 4, 1))


def frame_stack(s, new):
    """Push ``new`` on a stack of frames: the oldest drops out, a batch axis goes in front."""
    return s.at[1:].set(s[:-1]).at[0].set(new).reshape((1,) + s.shape)


UPSTREAM_X = np.arange(4, dtype=np.int32).reshape(4, 1, 1)
FRAMES = np.arange(24, dtype=np.float32).reshape(4, 6)
NEW = np.full(6, -1.0, np.float32)
#: By hand: the frames shifted down one row, ``NEW`` on top, a batch axis in front.
PUSHED = np.concatenate([NEW[None], FRAMES[:-1]])[None]

CASES = {
    "upstream reproducer": (upstream, (UPSTREAM_X,), np.array([1, 1, 2, 3]).reshape(1, 4, 1)),
    "frame stack": (frame_stack, (FRAMES, NEW), PUSHED),
}

WORKAROUNDS = {
    "no reshape": lambda s, new: s.at[1:].set(s[:-1]).at[0].set(new),
    "jnp.roll": lambda s, new: jnp.roll(s, 1, axis=0).at[0].set(new).reshape((1,) + s.shape),
    "jnp.concatenate": lambda s, new: jnp.concatenate([new[None], s[:-1]]).reshape((1,) + s.shape),
}


def _on_cpu(f, args, jit):
    """``f(*args)`` on the CPU, the arrays uncommitted as in the book (an array put on a device
    by ``jax.device_put(x, device)`` compiles the frame stack another way, which is right)."""
    with jax.default_device(CPU):
        return np.asarray((jax.jit(f) if jit else f)(*map(jnp.asarray, args)))


@pytest.mark.parametrize("name", list(CASES))
def test_op_by_op_is_right(name):
    f, args, expected = CASES[name]
    np.testing.assert_array_equal(_on_cpu(f, args, jit=False), expected)


@KNOWN_BUG
@pytest.mark.parametrize("name", list(CASES))
def test_jit_is_right(name):
    """Wrong where the bug is: the upstream case gives [1 1 1 1], the frame stack repeats its
    second row in the last two (12 of 24 values wrong)."""
    f, args, expected = CASES[name]
    np.testing.assert_array_equal(_on_cpu(f, args, jit=True), expected)


@pytest.mark.parametrize("name", list(WORKAROUNDS))
def test_the_workarounds_are_right_under_jit(name):
    out = _on_cpu(WORKAROUNDS[name], (FRAMES, NEW), jit=True)
    np.testing.assert_array_equal(out.reshape(PUSHED.shape), PUSHED)


# --- the rule: no shifted self-write followed by a reshape --------------------------------

#: Calls that only reshape their first argument (a unit axis in front is one too).
RESHAPES = {"reshape", "expand_dims", "ravel", "flatten", "squeeze"}


def _sliced(index: ast.expr) -> bool:
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(p, ast.Slice) for p in parts)


def _adds_axis(index: ast.expr) -> bool:
    """``x[None]``, ``x[jnp.newaxis, ...]``: a reshape too."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(
        (isinstance(p, ast.Constant) and p.value is None)
        or (isinstance(p, ast.Attribute) and p.attr == "newaxis")
        for p in parts
    )


def _slices_of(array: ast.expr, tree: ast.AST) -> list[str]:
    """The slice indices of ``array`` read anywhere in ``tree`` (``array[:-1]``)."""
    key = ast.dump(array)
    return [
        ast.dump(n.slice)
        for n in ast.walk(tree)
        if isinstance(n, ast.Subscript) and ast.dump(n.value) == key and _sliced(n.slice)
    ]


def _shifted_self_write(node: ast.expr) -> bool:
    """``x.at[a:b].set(... x[c:d] ...)`` (any ``.at`` method) or
    ``lax.dynamic_update_slice(x, ... x[c:d] ..., ...)``: a slice of x written into x at
    another place."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    target = node.func.value
    if (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Attribute)
        and target.value.attr == "at"
        and _sliced(target.slice)
    ):
        array, written = target.value.value, ast.dump(target.slice)
        return any(s != written for a in node.args for s in _slices_of(array, a))
    if node.func.attr == "dynamic_update_slice" and len(node.args) >= 2:
        return bool(_slices_of(node.args[0], node.args[1]))
    return False


def _chain(node: ast.expr):
    """``node`` and what it is built on by method calls, attributes and indexing:
    ``x.at[1:].set(y).at[0].set(z)`` yields the whole, then ``x.at[1:].set(y)``, ... ``x``."""
    while True:
        yield node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        elif isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        else:
            return


def _is_module(node: ast.expr) -> bool:
    """``jnp``, ``np``, ``lax``, ``jax.numpy``, ``jax.lax``."""
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
    return name in {"jnp", "np", "numpy", "lax"}


def _reshaped(node: ast.AST) -> ast.expr | None:
    """What ``node`` reshapes: ``a.reshape(...)``, ``jnp.reshape(a, ...)``, ``a[None]``."""
    if isinstance(node, ast.Subscript) and _adds_axis(node.slice):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        if name in RESHAPES:
            if isinstance(node.func, ast.Attribute) and not _is_module(node.func.value):
                return node.func.value  # a method: x.reshape(...)
            return node.args[0] if node.args else None  # a function: jnp.reshape(x, ...)
    return None


def shifted_writes_then_reshaped(source: str) -> list[int]:
    """Line numbers where a shifted self-write is reshaped, in one expression or through a
    name assigned from it earlier in ``source``."""
    tree = ast.parse(source)
    written = set()  # names bound to a shifted self-write
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(map(_shifted_self_write, _chain(node.value))):
            written |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        reshaped = _reshaped(node)
        if reshaped is None:
            continue
        for link in _chain(reshaped):
            if _shifted_self_write(link) or (isinstance(link, ast.Name) and link.id in written):
                found.append(node.lineno)
                break
    return sorted(found)


BAD = {
    "frame stack": "s.at[1:].set(s[:-1]).at[0].set(new).reshape((1,) + s.shape)",
    "a unit axis": "frames = frames.at[1:].set(frames[:-1])[None]",
    "jnp.reshape": "y = jnp.reshape(x.at[1:].set(x[:-1] * 2.0), (1, 4, 6))",
    "jax.numpy.reshape": "y = jax.numpy.reshape(x.at[1:].set(x[:-1]), (1, 4, 6))",
    "jnp.expand_dims": "y = jnp.expand_dims(x.at[:, 1:].set(x[:, :-1]), 0)",
    "an attribute": "y = state.obs.at[1:].set(state.obs[:-1]).reshape(-1, 6)",
    "two statements": "y = x.at[1:].add(x[:-1])\nz = y.reshape(1, 4, 6)",
    "dynamic_update_slice": "y = lax.dynamic_update_slice(x, x[:3], (1, 0)).reshape(1, 4, 6)",
}
GOOD = {
    "jnp.roll": "s = jnp.roll(s, 1, axis=0).at[0].set(new).reshape((1,) + s.shape)",
    "jnp.concatenate": "s = jnp.concatenate([new[None], s[:-1]]).reshape((1,) + s.shape)",
    "no reshape": "s = s.at[1:].set(s[:-1]).at[0].set(new)",
    "another array": "y = buffer.at[1:].set(x[:-1]).reshape(1, 4, 6)",
    "not shifted": "y = x.at[0].set(new).reshape(1, 4, 6)",
    "reshaped before": "y = x.reshape(4, 6).at[1:].set(x[:-1].reshape(3, 6))",
}


@pytest.mark.parametrize(("name", "source"), [*BAD.items(), *GOOD.items()])
def test_the_check_tells_the_bad_idiom_from_the_workarounds(name, source):
    lines = source.count("\n") + 1
    assert shifted_writes_then_reshaped(source) == ([lines] if name in BAD else [])


def _sources() -> dict[str, str]:
    """Every module of the package, and every code cell of the notebooks as Python (IPython's
    own transform of magics and shell lines)."""
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / "companion").rglob("*.py")}
    to_python = TransformerManager().transform_cell
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "code":
                sources[f"{path.name} cell {i}"] = to_python("".join(cell["source"]))
    return sources


def test_no_code_reshapes_a_shifted_self_write():
    sources = _sources()
    assert sum(name.endswith(".py") for name in sources) > 20
    assert sum(" cell " in name for name in sources) > 100
    found = {}
    for name, source in sources.items():
        try:
            lines = shifted_writes_then_reshaped(source)
        except SyntaxError as error:  # a cell that does not parse would go unchecked
            pytest.fail(f"{name} does not parse: {error}")
        if lines:
            found[name] = lines
    assert not found, (
        f"a shifted slice written into its own array, then reshaped, is wrong under jit on "
        f"the CPU; shift with jnp.roll or jnp.concatenate instead (line numbers): {found}"
    )
