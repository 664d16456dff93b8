"""What an answer must return, checked before any of its values is compared.

Each exercise states its answer's contract: an array of a dtype and a shape, a Python number,
a pair, a pytree. :func:`require_array` and :func:`require_number` check one output against
it and fail with a message that names the output, the contract and what came instead:
"legal_fraction(masks) for 5 masks should return a float32 array of shape (4,) (one fraction
per action); it returned a tuple of 4 arrays". :func:`describe` says what a value is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.core import _broadcast, fail

#: The dtypes a contract names: an exact dtype (``np.float32``), or one of these kinds.
_KINDS = {"float": "a float", "int": "an integer", "bool": "a bool", "key": "a PRNG key"}


def _a(word: str) -> str:
    """``word`` with its indefinite article: "an int32", "a float32", "a uint8"."""
    return f"{'an' if word[:1] in 'aeio' else 'a'} {word}"


def _is_key(value: Any) -> bool:
    return hasattr(value, "dtype") and jnp.issubdtype(value.dtype, jax.dtypes.prng_key)


def _is_array(value: Any) -> bool:
    """A JAX or NumPy array, a NumPy scalar (a 0-d array) or a shape-and-dtype description."""
    return isinstance(value, (jax.Array, np.ndarray, np.generic, jax.ShapeDtypeStruct))


def _brief(value: Any) -> str:
    """A few words for one item of a tuple or list: "float32 (6,)", "0.5", "dict"."""
    if _is_key(value):
        return f"key {tuple(value.shape)}"
    if _is_array(value):
        return f"{value.dtype} {tuple(np.shape(value))}"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    return type(value).__name__


def _noun(items: list) -> str:
    """What the items of a tuple or list are, in the plural: "arrays", "floats", "items"."""
    for test, noun in (
        (_is_array, "arrays"),
        (lambda v: isinstance(v, float), "floats"),
        (lambda v: isinstance(v, int) and not isinstance(v, bool), "ints"),
    ):
        if items and all(test(v) for v in items):
            return noun
    return "items"


def describe(value: Any) -> str:
    """What ``value`` is, as a message says what an answer returned: "None", "the Python
    float 0.5", "an int32 array of shape (3,)", "a tuple of 2 arrays (float32 (6,), int32
    ())", "a dict with keys 't', 'obs'", "an equinox module (MLP)"."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return f"the bool {value}"
    if isinstance(value, np.generic):  # before float: np.float64 is a Python float too
        return f"{_a(str(value.dtype))} NumPy scalar"
    if isinstance(value, (int, float)):
        return f"the Python {type(value).__name__} {value!r}"
    if isinstance(value, str):
        text = repr(value)
        return f"the str {text if len(text) <= 48 else text[:47] + '…'}"
    if _is_key(value):
        return f"a PRNG key array of shape {tuple(value.shape)}"
    if _is_array(value):
        return f"{_a(str(value.dtype))} array of shape {tuple(value.shape)}"
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return f"{_a(type(value).__name__)} (fields {', '.join(value._fields)})"
    if isinstance(value, (tuple, list)) and not value:
        return f"an empty {type(value).__name__}"
    if isinstance(value, (tuple, list)):
        items = list(value)
        noun = _noun(items)
        noun = noun[:-1] if len(items) == 1 else noun
        detail = f" ({', '.join(_brief(v) for v in items)})" if 0 < len(items) <= 4 else ""
        return f"{_a(type(value).__name__)} of {len(items)} {noun}{detail}"
    if isinstance(value, dict):
        keys = ", ".join(repr(k) for k in list(value)[:6])
        return f"a dict with keys {keys}" if value else "an empty dict"
    if isinstance(value, type):
        return f"the class {value.__name__}"
    import equinox as eqx

    if isinstance(value, eqx.Module):
        return f"an equinox module ({type(value).__name__})"
    if callable(value):
        return f"a function ({getattr(value, '__name__', type(value).__name__)})"
    return _a(type(value).__name__)


def _dtype_matches(dtype: Any, wanted: Any) -> bool:
    if _KINDS.get(wanted) is None:
        return not jnp.issubdtype(dtype, jax.dtypes.prng_key) and np.dtype(dtype) == np.dtype(
            wanted
        )
    if wanted == "key":
        return jnp.issubdtype(dtype, jax.dtypes.prng_key)
    if jnp.issubdtype(dtype, jax.dtypes.prng_key):
        return False
    if wanted == "bool":
        return np.dtype(dtype) == np.dtype(bool)
    return jnp.issubdtype(dtype, jnp.floating if wanted == "float" else jnp.integer)


def array_contract(shape: tuple, dtype: Any) -> str:
    """The words for an array of ``dtype`` (a dtype or a kind of :data:`_KINDS`) and
    ``shape``: "a float32 array of shape (6,)", "an int32 scalar (shape ())"."""
    if isinstance(dtype, str) and dtype == "key":
        return "one PRNG key (shape ())" if shape == () else f"PRNG keys of shape {shape}"
    words = _KINDS.get(dtype) or _a(str(np.dtype(dtype)))
    return f"{words} scalar (shape ())" if shape == () else f"{words} array of shape {shape}"


def _hint(hint: str | Callable[[Any], str], got: Any) -> str:
    """``hint``, or what it returns for ``got`` ("" where it cannot tell)."""
    if not callable(hint):
        return hint
    try:
        return hint(got)
    except Exception:  # a hint reads what the answer returned, which may be anything
        return ""


def require_array(
    got: Any,
    what: str,
    shape: tuple,
    dtype: Any,
    *,
    why: str = "",
    hint: str | Callable[[Any], str] = "",
    dtype_hint: str = "",
    returns: bool = True,
    finite: bool = True,
) -> np.ndarray:
    """Return ``got`` as a NumPy array after checking it against its contract: a JAX or NumPy
    array (a NumPy scalar for shape ``()``) of ``dtype`` and ``shape``, and finite unless
    ``finite`` is False. A key array or a ``jax.ShapeDtypeStruct`` (``jax.eval_shape``'s
    description of an output) is returned as it is.

    ``dtype`` is a dtype (``np.float32``: that one exactly) or a kind, "float", "int", "bool"
    or "key" (any dtype of that kind). ``what`` names the output ("legal_fraction(masks) for
    5 masks", or "the values of settle(...)" with ``returns=False``), ``why`` what it holds
    ("one fraction per action"), and ``hint`` how to get it right: a text, or a function of
    ``got`` that returns one (empty when it has nothing to add); ``dtype_hint`` is added only
    for an array of another dtype.

    Raises:
        CheckFailed: "<what> should return <contract> (<why>); it returned <what got is>",
            with a note where the shape is one that broadcasting a ``(..., 1)`` array against
            a ``(...)`` one gives; or, for an array that has NaN or inf, saying so.
    """
    shape = tuple(shape)
    right = _is_array(got) and _dtype_matches(got.dtype, dtype) and tuple(got.shape) == shape
    if not right:
        should, did = ("should return", "it returned") if returns else ("should be", "it is")
        contract = array_contract(shape, dtype) + (f" ({why})" if why else "")
        notes = []
        if _is_array(got) and _broadcast(tuple(got.shape), shape):
            notes.append(
                "Two shapes were broadcast together: an array of shape "
                f"{shape + (1,)} against one of {shape} (values against targets, say), "
                f"or an array of shape {shape[-1:]} where a scalar belongs (a scan's "
                "initial carry, say)"
            )
        if dtype_hint and _is_array(got) and not _dtype_matches(got.dtype, dtype):
            notes.append(dtype_hint.rstrip("."))
        extra = _hint(hint, got)
        if extra:
            notes.append(extra.rstrip("."))
        fail(". ".join([f"{what} {should} {contract}; {did} {describe(got)}", *notes]))
    if _is_key(got) or isinstance(got, jax.ShapeDtypeStruct):
        return got
    arr = np.asarray(got)
    if finite and arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        note = ""
        if np.any(np.isneginf(arr)):
            note = " (-inf: is something masked here? Mask only where an action is chosen)"
        fail(f"{what} contains NaN or inf values{note}")
    return arr


def require_number(
    got: Any,
    what: str,
    kind: str,
    *,
    why: str = "",
    hint: str | Callable[[Any], str] = "",
    none: bool = False,
    returns: bool = True,
) -> int | float | None:
    """Return ``got`` as a Python int or float after checking it against its contract: a
    number of ``kind`` ("int", "float" or "number", either), a Python one, a NumPy scalar or
    an array of shape ``()``; never a bool. ``none``: None is allowed too (and returned).
    ``what``, ``why``, ``hint`` and ``returns`` as for :func:`require_array`.

    Raises:
        CheckFailed: "<what> should return an int (<why>); it returned <what got is>".
    """
    if none and got is None:
        return None
    if isinstance(got, (bool, np.bool_)) or (_is_array(got) and np.shape(got) != ()):
        value = None
    elif isinstance(got, (int, float)):
        value = got
    elif _is_array(got) and not _is_key(got) and not isinstance(got, jax.ShapeDtypeStruct):
        value = np.asarray(got).item()
    else:
        value = None
    wanted = {"int": (int,), "float": (float,), "number": (int, float)}[kind]
    if isinstance(value, bool) or not isinstance(value, wanted):
        words = {"int": "an int", "float": "a float", "number": "a number"}[kind]
        contract = words + (f" ({why})" if why else "") + (" or None" if none else "")
        extra = _hint(hint, got)
        should, did = ("should return", "it returned") if returns else ("should be", "it is")
        fail(
            f"{what} {should} {contract}; {did} {describe(got)}"
            + (f". {extra.rstrip('.')}" if extra else "")
        )
    return value
