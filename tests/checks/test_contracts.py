"""Every self-check validates its answer's contract first.

An exercise states what its answer returns: an array of a dtype and a shape (float32
``(batch,)``), a Python number, a pair, a pytree. For every check of ``companion.checks``
the check's first right answer (``answers.RIGHT``) is wrapped three ways, each
breaking one part of the contract: the type (a tuple or list for an array, one array for a
pair, a str or a list for a number), the dtype (int32 for float32, a float for an int) and the
shape (an extra leading axis). Each wrapped answer must fail with a message that names the
output, the contract and what came instead ("... should return a float32 array of shape (6,)
(one norm per example); it returned a tuple of 6 arrays"), before any value is compared; the
right answer itself must still pass. Where a part of the contract cannot be broken by
wrapping, the parametrisation says why.

An answer that raises is reported as the answer raising: its exception's type and message,
and the arguments it was called with, never the check's own traceback.
"""

from __future__ import annotations

import contextlib
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import companion.checks as checks
from checks.answers import RIGHT
from companion.checks import CheckFailed

#: A contract message: "<output> should return|be|yield|hold <contract>; ... it|they
#: returned|is|are|yields|holds <what came>".
CONTRACT = re.compile(
    r"should (return|be|yield|hold)\b.*; (.* )?(it|they) (returned|is|are|yields|holds) ", re.S
)


def _wrapped(transform):
    """An answer factory: the right answer with ``transform`` applied to what it returns."""

    def wrap(answer):
        def wrong(*args, **kwargs):
            return transform(answer(*args, **kwargs))

        return wrong

    return wrap


def _array(given_dtype="int32"):
    """The three wrappings of an answer that returns one float array: a tuple of its rows,
    int32, an extra leading axis."""
    return {
        "type": (_wrapped(tuple), r"it returned a tuple of \d+ arrays"),
        "dtype": (_wrapped(lambda out: out.astype(given_dtype)), f"{given_dtype} array"),
        "shape": (_wrapped(lambda out: out[None]), r"array of shape \(1, "),
    }


def _action():
    """The wrappings of a policy that returns one int32 action of shape ()."""
    return {
        "type": (_wrapped(lambda a: [a]), r"it returned a list of 1 array"),
        "dtype": (_wrapped(lambda a: a.astype(jnp.float32)), r"it returned a float32 array"),
        "shape": (_wrapped(lambda a: a[None]), r"array of shape \(1,\)"),
    }


def _first_of_pair(dtype_of_first, given):
    """Pair answers: the first item alone; the first item's dtype changed; an extra axis on
    the first item."""
    return {
        "type": (_wrapped(lambda out: out[0]), r"should return a pair .*; it returned an? "),
        "dtype": (
            _wrapped(lambda out: (out[0].astype(dtype_of_first), *out[1:])),
            f"is {given}",
        ),
        "shape": (_wrapped(lambda out: (out[0][None], *out[1:])), r"is an? \w+ array of shape \(1"),
    }


def _second_of_pair(dtype, given):
    """Pair answers whose second item is the array the check reads: it alone, its dtype
    changed, an extra axis on it."""
    return {
        "type": (_wrapped(lambda out: out[1]), r"should return a pair .*; it returned "),
        "dtype": (_wrapped(lambda out: (out[0], out[1].astype(dtype))), f"is {given}"),
        "shape": (_wrapped(lambda out: (out[0], out[1][None])), r"array of shape \(1[,)]"),
    }


def _number(kind):
    """Answers that return a Python number: in a list, as the other kind, in an array."""
    dtype = (
        (_wrapped(float), r"it returned the Python float")
        if kind == "int"
        else (_wrapped(lambda v: int(v)), r"it returned the Python int")
    )
    return {
        "type": (_wrapped(lambda v: [v]), r"it returned a list of 1"),
        "dtype": dtype,
        "shape": (_wrapped(lambda v: np.array([v])), r"array of shape \(1,\)"),
    }


def _rollout_triple():
    def retype(out):
        return out[2]

    def redtype(out):
        state, timestep, tr = out
        return state, timestep, tr._replace(action=tr.action.astype(jnp.float32))

    def reshape(out):
        state, timestep, tr = out
        return state, timestep, tr._replace(action=tr.action[None])

    return {
        "type": (_wrapped(retype), r"should return a triple .*; it returned a Transition"),
        "dtype": (_wrapped(redtype), r"transitions.action .*; it is a float32 array"),
        "shape": (_wrapped(reshape), r"transitions.action .*; it is an int32 array of shape \(1,"),
    }


def _transition():
    return {
        "type": (_wrapped(tuple), r"should return a dqn.Transition .*; it returned a tuple"),
        "dtype": (
            _wrapped(lambda tr: tr._replace(action=tr.action.astype(jnp.float32))),
            r"transitions.action .*; it is a float32 array",
        ),
        "shape": (
            _wrapped(lambda tr: tr._replace(reward=tr.reward[None])),
            r"transitions.reward .*; it is a float32 array of shape \(1, 300\)",
        ),
    }


def _windows():
    return {
        "type": (_wrapped(lambda out: tuple(out.values())), r"it returned a tuple of 2 arrays"),
        "dtype": (
            _wrapped(lambda out: {**out, "t": out["t"].astype(jnp.float32)}),
            r"\['t'\] should be an int32 array .*; it is a float32 array",
        ),
        "shape": (
            _wrapped(lambda out: {k: v[None] for k, v in out.items()}),
            r"array of shape \(1, 4000, 3",
        ),
    }


def _module():
    def weight(transform):
        return lambda m: eqx.tree_at(lambda m: m.weight, m, transform(m.weight))

    return {
        "type": (_wrapped(lambda m: (m,)), r"should return an eqx.Module .*; it returned a tuple"),
        "dtype": (
            _wrapped(weight(lambda w: w.astype(jnp.int32))),
            r"module.weight should be a float32 array .*; it is an int32 array",
        ),
        "shape": (
            _wrapped(weight(lambda w: w[None])),
            r"module.weight should be a float32 array of shape \(4,\).*; it is a float32 array "
            r"of shape \(1, 4\)",
        ),
    }


def _losses():
    def as_array(transform):
        return lambda out: (out[0], transform(np.asarray(out[1])))

    return {
        "type": (_wrapped(lambda out: out[1]), r"should return a pair .*; it returned a list"),
        "dtype": (
            _wrapped(as_array(lambda losses: losses.astype(np.int32))),
            r"8 float losses.*; they are an int32 array",
        ),
        "shape": (_wrapped(as_array(lambda losses: losses[None])), r"array of shape \(1, 8\)"),
    }


def _loss_and_metrics():
    return {
        "type": (_wrapped(lambda out: out[0]), r"should return \(loss, metrics\).*; it returned"),
        "dtype": (
            _wrapped(lambda out: (out[0].astype(jnp.bfloat16), out[1])),
            r"the loss .* should be a float32 scalar .*; it is a bfloat16 array",
        ),
        "shape": (
            _wrapped(lambda out: (out[0][None], out[1])),
            r"the loss .*; it is a float32 array of shape \(1,\)",
        ),
    }


def _subclass(transform):
    """check_checkpointed_propagation's answer is a class: a subclass of the right one whose
    call returns ``transform`` of the right (logits, value)."""

    def wrap(answer):
        return type(
            "Wrapped",
            (answer,),
            {"__call__": lambda self, image: transform(answer.__call__(self, image))},
        )

    return wrap


def _checkpoint():
    return {
        "type": (
            _subclass(lambda out: out[0]),
            r"should return a pair \(logits, value.*; it returned a float32 array",
        ),
        "dtype": (
            _subclass(lambda out: (out[0].astype(jnp.bfloat16), out[1])),
            r"the logits .* should be a float32 array .*; it is a bfloat16 array",
        ),
        "shape": (
            _subclass(lambda out: (out[0], out[1][None])),
            r"the value .* should be a float32 scalar .*; it is a float32 array of shape \(1,\)",
        ),
    }


def _compilations():
    """check_compilations' answer is a function that makes a context manager: wrapped around
    the right one, the manager yields a tuple, or turns the durations into ints."""

    def yields_tuple(answer):
        @contextlib.contextmanager
        def compilations():
            with answer():
                yield ()

        return compilations

    def int_durations(answer):
        @contextlib.contextmanager
        def compilations():
            with answer() as seen:
                yield seen
            seen[:] = [int(d * 1e9) for d in seen]  # nanoseconds, as ints

        return compilations

    return {
        "type": (yields_tuple, r"should yield a list .*; around .* it yields an empty tuple"),
        "dtype": (int_durations, r"should hold floats.*; it holds the Python int"),
        "shape": pytest.mark.skip(
            reason="the contract is a list of floats, whose length is the count the check "
            "compares: no shape to break"
        ),
    }


#: For each check: its three wrappings (answer factory, regex of what the message says came),
#: or a skip mark with the reason wrapping does not apply.
WRONG = {
    "check_softplus_grad": _array(),
    "check_discounted_returns": _array(),
    "check_noisy_batch": _first_of_pair(jnp.int32, "an int32 array"),
    "check_mlp_apply": _array(),
    "check_frozen_constant": _module(),
    "check_per_example_grad_norms": _array(),
    "check_decayed_training": _losses(),
    "check_legal_fraction": _array(),
    "check_up_first_policy": _action(),
    "check_termination_and_truncation": _first_of_pair(jnp.int32, "an int32 array"),
    "check_count_endings": _first_of_pair(jnp.float32, r"a float32 array of shape \(\)"),
    "check_semi_implicit_step": _array(),
    "check_balancing_policy": _action(),
    "check_action_values": _array(),
    "check_reinforce_weights": _array(),
    "check_q_learning": _array(),
    "check_double_dqn_target": _array(),
    "check_n_step_target": _array(),
    "check_sample_windows": _windows(),
    "check_collector": _transition(),
    "check_epsilon_masked_probs": _array(),
    "check_dual_clip_objective": _array(),
    "check_gae_from_values": _array(),
    "check_fill_one_loss": _loss_and_metrics(),
    "check_rollout_keys": _rollout_triple(),
    "check_q_overshoot": _array(),
    "check_late_success": _array(),
    "check_batched_rollout": _second_of_pair(jnp.int32, "an int32 array"),
    "check_rollout_bytes": _number("int"),
    "check_allreduce_bytes": {
        **_number("number"),
        "dtype": pytest.mark.skip(
            reason="the exercise asks for a number of bytes, an int or a float alike: no "
            "dtype to break"
        ),
    },
    "check_data_parallel_grad": _array(),
    "check_settle": _second_of_pair(jnp.float32, "a float32 array"),
    "check_success_by_reach": _array(),
    "check_bend": {**_number("int"), "type": (_wrapped(str), r"it returned the str")},
    "check_checkpointed_propagation": _checkpoint(),
    "check_pays_from": _number("int"),
    "check_cross_talk": _number("float"),
    "check_compilations": _compilations(),
}


def test_every_check_has_its_wrappings():
    public = {name for name in checks.__all__ if name.startswith("check_")}
    assert set(WRONG) == public
    assert all(set(parts) == {"type", "dtype", "shape"} for parts in WRONG.values())


def _params():
    for name in sorted(WRONG):
        yield pytest.param(name, "right", None, id=f"{name}-right")
        for part, entry in WRONG[name].items():
            marks = [entry] if isinstance(entry, pytest.MarkDecorator) else []
            yield pytest.param(
                name, part, None if marks else entry, marks=marks, id=f"{name}-{part}"
            )


@pytest.mark.parametrize("name, part, wrong", _params())
def test_a_check_validates_the_contract_first(name, part, wrong, capsys):
    check, right = getattr(checks, name), RIGHT[name][0]
    if part == "right":
        check(right)
        assert "check passed" in capsys.readouterr().out
        return
    make, given = wrong
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed) as failure:
        check(make(right))
    message = str(failure.value)
    assert CONTRACT.search(message), message
    assert re.search(given, message, re.S), message


class _Raised(Exception):
    """What the raising answer raises."""


def _raises(*args, **kwargs):
    raise _Raised("raised by the answer itself")


@pytest.mark.parametrize("name", sorted(WRONG))
def test_an_answer_that_raises_is_reported_as_raising(name):
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed) as failure:
        getattr(checks, name)(_raises)
    message = str(failure.value)
    assert "raised _Raised" in message and "raised by the answer itself" in message, message
    if name != "check_compilations":  # compilations() takes no arguments
        assert "Its arguments: " in message, message
    exc = failure.value
    assert exc.__cause__ is None and exc.__suppress_context__


def test_the_arguments_are_named_as_the_answer_names_them():
    def grad_g(w, x):
        raise ValueError("no gradient today")

    with pytest.raises(CheckFailed) as failure:
        checks.check_softplus_grad(grad_g)
    assert "Its arguments: w float32 (3,), x float32 (3,)" in str(failure.value)
