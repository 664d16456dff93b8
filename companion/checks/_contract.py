"""What an answer must return, checked before any of its values is compared.

Each exercise states its answer's contract: an array of a dtype and a shape, a Python number,
a pair, a pytree. :func:`require_array` and :func:`require_number` check one output against
it and fail with a message that names the output, the contract and what came instead:
"legal_fraction(masks) for 5 masks should return a float32 array of shape (4,) (one fraction
per action); it returned a tuple of 4 arrays". :func:`describe` says what a value is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._messages import N_, _
from companion.checks.core import _broadcast, _broadcast_note, _not_finite, _then, fail

#: The dtypes a contract names: an exact dtype (``np.float32``), or one of these kinds.
_KINDS = {"float": N_("float"), "int": N_("integer"), "bool": N_("bool"), "key": N_("PRNG key")}


def _a(words: str) -> str:
    """``words`` with the indefinite article of their first word: "an int32 array", "a
    float32 scalar" (in a language without articles, the words alone)."""
    article = _("an {thing}") if words[:1] in "aeio" else _("a {thing}")
    return article.format(thing=words)


def _is_key(value: Any) -> bool:
    return hasattr(value, "dtype") and jnp.issubdtype(value.dtype, jax.dtypes.prng_key)


def _is_array(value: Any) -> bool:
    """A JAX or NumPy array, a NumPy scalar (a 0-d array) or a shape-and-dtype description."""
    return isinstance(value, (jax.Array, np.ndarray, np.generic, jax.ShapeDtypeStruct))


def _brief(value: Any) -> str:
    """A few words for one item of a tuple or list: "float32 (6,)", "0.5", "dict"."""
    if _is_key(value):
        return _("key {shape}").format(shape=tuple(value.shape))
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


#: The nouns of :func:`_noun`, for one item and for several.
_NOUNS = {
    "arrays": (N_("array"), N_("arrays")),
    "floats": (N_("float"), N_("floats")),
    "ints": (N_("int"), N_("ints")),
    "items": (N_("item"), N_("items")),
}


def describe(value: Any) -> str:
    """What ``value`` is, as a message says what an answer returned: "None", "the Python
    float 0.5", "an int32 array of shape (3,)", "a tuple of 2 arrays (float32 (6,), int32
    ())", "a dict with keys 't', 'obs'", "an equinox module (MLP)"."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return _("the bool {value}").format(value=value)
    if isinstance(value, np.generic):  # before float: np.float64 is a Python float too
        return _a(_("{dtype} NumPy scalar").format(dtype=value.dtype))
    if isinstance(value, (int, float)):
        return _("the Python {type} {value}").format(type=type(value).__name__, value=repr(value))
    if isinstance(value, str):
        text = repr(value)
        return _("the str {text}").format(text=text if len(text) <= 48 else text[:47] + "…")
    if _is_key(value):
        return _("a PRNG key array of shape {shape}").format(shape=tuple(value.shape))
    if _is_array(value):
        return _a(_("{dtype} array of shape {shape}").format(dtype=value.dtype, shape=value.shape))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return _a(
            _("{type} (fields {fields})").format(
                type=type(value).__name__, fields=", ".join(value._fields)
            )
        )
    if isinstance(value, (tuple, list)) and not value:
        return _("an empty {type}").format(type=type(value).__name__)
    if isinstance(value, (tuple, list)):
        items = list(value)
        noun = _(_NOUNS[_noun(items)][len(items) != 1])
        detail = f" ({', '.join(_brief(v) for v in items)})" if 0 < len(items) <= 4 else ""
        words = _("{type} of {count} {noun}").format(
            type=type(value).__name__, count=len(items), noun=noun
        )
        return _a(words) + detail
    if isinstance(value, dict):
        keys = ", ".join(repr(k) for k in list(value)[:6])
        return _("a dict with keys {keys}").format(keys=keys) if value else _("an empty dict")
    if isinstance(value, type):
        return _("the class {name}").format(name=value.__name__)
    import equinox as eqx

    if isinstance(value, eqx.Module):
        return _("an equinox module ({type})").format(type=type(value).__name__)
    if callable(value):
        name = getattr(value, "__name__", type(value).__name__)
        return _("a function ({name})").format(name=name)
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
        if shape == ():
            return _("one PRNG key (shape ())")
        return _("PRNG keys of shape {shape}").format(shape=shape)
    words = _(_KINDS[dtype]) if dtype in _KINDS else str(np.dtype(dtype))
    if shape == ():
        return _a(_("{dtype} scalar (shape ())").format(dtype=words))
    return _a(_("{dtype} array of shape {shape}").format(dtype=words, shape=shape))


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
        contract = _with_why(array_contract(shape, dtype), why)
        notes = []
        if _is_array(got) and _broadcast(tuple(got.shape), shape):
            notes.append(_broadcast_note(shape))
        if dtype_hint and _is_array(got) and not _dtype_matches(got.dtype, dtype):
            notes.append(dtype_hint.rstrip("."))
        extra = _hint(hint, got)
        if extra:
            notes.append(extra.rstrip("."))
        message = _contract_failed(what, contract, got, returns)
        fail(functools.reduce(_then, notes, message))
    if _is_key(got) or isinstance(got, jax.ShapeDtypeStruct):
        return got
    arr = np.asarray(got)
    if finite and arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        fail(_not_finite(what, arr))
    return arr


def _with_why(contract: str, why: str) -> str:
    """ "<contract> (<why>)", or the contract alone when ``why`` is empty."""
    return _("{contract} ({why})").format(contract=contract, why=why) if why else contract


def _contract_failed(what: str, contract: str, got: Any, returns: bool) -> str:
    """ "<what> should return <contract>; it returned <what got is>" (``returns`` False:
    "should be", "it is")."""
    if returns:
        message = _("{what} should return {contract}; it returned {got}")
    else:
        message = _("{what} should be {contract}; it is {got}")
    return message.format(what=what, contract=contract, got=describe(got))


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
        words = {"int": _("an int"), "float": _("a float"), "number": _("a number")}[kind]
        contract = _with_why(words, why)
        if none:
            contract = _("{contract} or None").format(contract=contract)
        extra = _hint(hint, got)
        fail(_then(_contract_failed(what, contract, got, returns), extra.rstrip(".")))
    return value
