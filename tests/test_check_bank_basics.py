"""The exercise checks of chapters 1, 2, 9, 11 and 12 against the answers students write: a
catalogue.

One table per check. Each wrong answer is one a student writes, with the message the check
must answer it with (a regex of the named mistake, or of the generic difference where no
mistake fits); the right answers, written in different styles, must pass. The mistakes the
chapter test files already plant (``test_checks_chapters.py``, ``test_checks_networks.py``,
``test_checks_bugs.py``, ``test_checks_performance.py``, ``test_checks_parallel.py``) are not
repeated; these are the ones this pass made the checks name, and the cases that break the
weaknesses found in them:

- a case set that never exercises the property (a third call of a key-returning function, a
  maze whose target is walled in, sizes given out of order as a dict may be);
- a named mistake matched by a symptom another shares (reversed layers told to loop, a step
  run without jit told to pass an array, a 4-byte field told to be next_value);
- generic where the docstring promises a name (``gamma**(k + 1)``, discounting from the
  episode's start, ``stop_gradient`` on a constant, a checkpoint around the whole scan);
- a message true only because of the check's own input (``key(0)``).

Chapters 1-2: ``check_softplus_grad``, ``check_discounted_returns``, ``check_noisy_batch``,
``check_mlp_apply``, ``check_frozen_constant``, ``check_per_example_grad_norms``,
``check_decayed_training``. Chapter 9: ``check_settle``, ``check_success_by_reach``. Chapter
11: ``check_batched_rollout``, ``check_rollout_bytes``, ``check_bend``,
``check_checkpointed_propagation``. Chapter 12: ``check_allreduce_bytes``,
``check_data_parallel_grad``, ``check_pays_from``.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from notebook_runner import ROOT
from test_checks_bugs import NETWORKS, _cell, _definitions, _one_line_fix
from test_checks_chapters import _loop_returns, _reverse_scan_returns
from test_checks_networks import FloatScale, StaticScale, any_depth_mlp, grad_norms
from test_checks_parallel import mean_gradient, ring  # noqa: F401 (the subprocess imports it)
from test_checks_performance import batched_scan

import companion.checks as checks
from companion.agents import ppo
from companion.checks import CheckFailed
from companion.envs import cartpole


def _passes(check, answer, capsys):
    check(answer)
    assert "check passed" in capsys.readouterr().out


def _fails(check, answer, message):
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed, match=message):
        check(answer)


# --- chapter 1, exercise 1: grad_g(w, x) ---------------------------------------------------

RIGHT_SOFTPLUS = [
    lambda w, x: x * jax.nn.sigmoid(w * x),
    lambda w, x: x / (1.0 + jnp.exp(-w * x)),
    jax.grad(lambda w, x: jnp.sum(jnp.log1p(jnp.exp(w * x)))),
]
WRONG_SOFTPLUS = [
    (
        "x / (1 + e^(wx)): e^u missing on top",
        lambda w, x: x / (1.0 + jnp.exp(w * x)),
        r"x \* sigmoid\(-w \* x\).*e\^u on top",
    ),
    (
        "e^(wx) without its denominator",
        lambda w, x: x * jnp.exp(w * x),
        r"the denominator is missing",
    ),
    (
        "the mistake on one shape only",
        lambda w, x: x * jax.nn.sigmoid(w * x) * (1.0 if w.ndim == 1 else -1.0),
        r"differs from the reference on w and x of shape \(2, 3\)",
    ),
]


@pytest.mark.parametrize("answer", RIGHT_SOFTPLUS)
def test_softplus_right_answers_pass(answer, capsys):
    _passes(checks.check_softplus_grad, answer, capsys)


@pytest.mark.parametrize("what, wrong, message", WRONG_SOFTPLUS, ids=[w[0] for w in WRONG_SOFTPLUS])
def test_softplus_wrong_answers_are_named(what, wrong, message):
    _fails(checks.check_softplus_grad, wrong, message)


# --- chapter 1, exercise 2: discounted_returns(rewards, gamma) ------------------------------


def _returns_by_powers(rewards, gamma, shift=0, start=False):
    """Vectorised: G_t = sum_k gamma**(k + shift) r_{t+k} (an upper-triangular matrix of
    powers); ``start`` counts the powers from the episode's start instead."""
    t = jnp.arange(rewards.shape[0])
    k = t[None, :] - (0 if start else t[:, None])
    weights = jnp.where(t[None, :] >= t[:, None], gamma ** (k + shift), 0.0)
    return jnp.tensordot(weights, rewards, axes=1)


RIGHT_RETURNS = [
    _reverse_scan_returns,
    _returns_by_powers,  # no loop at all: a (T, T) matrix of powers
    lambda r, g: jax.lax.scan(
        lambda c, x: (x + g * c, x + g * c), jnp.zeros(r.shape[1:]), r, reverse=True
    )[1],
]
WRONG_RETURNS = [
    (
        "gamma**(k + 1)",
        functools.partial(_returns_by_powers, shift=1),
        r"the current reward is discounted too \(gamma\*\*\(k \+ 1\)",
    ),
    (
        "powers counted from the episode's start",
        functools.partial(_returns_by_powers, start=True),
        r"discounted from the episode's start",
    ),
    (
        "a Python loop under an inner jax.jit",
        lambda r, g: jax.jit(_loop_returns)(r, g),
        r"a Python loop is unrolled into it \(even under an inner jax.jit\)",
    ),
    (
        "scan's unroll",
        lambda r, g: jax.lax.scan(
            lambda c, x: (x + g * c, x + g * c), jnp.zeros_like(r[0]), r, reverse=True, unroll=True
        )[1],
        r"scan's unroll",
    ),
    (
        "returns in float16",
        lambda r, g: _reverse_scan_returns(r, g).astype(jnp.float16),
        r"should return a float32 array .*; it returned a float16 array",
    ),
]


@pytest.mark.parametrize("answer", RIGHT_RETURNS)
def test_returns_right_answers_pass(answer, capsys):
    _passes(checks.check_discounted_returns, answer, capsys)


@pytest.mark.parametrize("what, wrong, message", WRONG_RETURNS, ids=[w[0] for w in WRONG_RETURNS])
def test_returns_wrong_answers_are_named(what, wrong, message):
    _fails(checks.check_discounted_returns, wrong, message)


# --- chapter 1, exercise 3: noisy_batch(key, n) ---------------------------------------------


def _noisy_split(key, n):
    key, sub = jax.random.split(key)
    return jax.random.normal(sub, (n,)), key


def _noisy_three(key, n):
    keys = jax.random.split(key, 3)
    return jax.random.normal(keys[1], (n,)), keys[2]


def _noisy_unpacked(key, n):
    sub, next_key = jax.random.split(key)  # the other half drawn with
    return jax.random.normal(sub, (n,), jnp.float32), next_key


RIGHT_NOISY = [_noisy_split, _noisy_three, _noisy_unpacked]


def _toggling(key, n):
    """A next key that alternates between two keys: the third call repeats the first."""
    data = jax.random.key_data(key)
    return jax.random.normal(jax.random.split(key)[0], (n,)), jax.random.wrap_key_data(data ^ 1)


WRONG_NOISY = [
    (
        "a fixed next key",
        lambda key, n: (jax.random.normal(jax.random.split(key)[1], (n,)), jax.random.key(1)),
        r"returns the same next key whatever key it is given.*third call repeats",
    ),
    (
        "draws with its own key(0)",
        lambda key, n: (jax.random.normal(jax.random.key(0), (n,)), jax.random.split(key)[0]),
        r"the same samples whatever key it is given",
    ),
    (
        "draws with the key given, returns a key of its own",
        lambda key, n: (jax.random.normal(key, (n,)), jax.random.key(7)),
        r"draws with the key it was given, which its caller still holds",
    ),
    ("a next key that alternates between two", _toggling, r"calls 1 and 3 give the same samples"),
    (
        "float16 samples",
        lambda key, n: (
            jax.random.normal(jax.random.split(key)[1], (n,), jnp.float16),
            jax.random.split(key)[0],
        ),
        r"(it returned|it is) an? float16 array",
    ),
]


@pytest.mark.parametrize("answer", RIGHT_NOISY)
def test_noisy_right_answers_pass(answer, capsys):
    _passes(checks.check_noisy_batch, answer, capsys)


@pytest.mark.parametrize("what, wrong, message", WRONG_NOISY, ids=[w[0] for w in WRONG_NOISY])
def test_noisy_wrong_answers_are_named(what, wrong, message):
    _fails(checks.check_noisy_batch, wrong, message)


def test_a_hard_coded_key_0_is_not_told_it_draws_with_the_key_given():
    """The check's key is not key(0): an answer that makes its own key(0) is told that its
    samples ignore the key, not that it draws with the key it was given."""
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed) as failure:
        checks.check_noisy_batch(
            lambda key, n: (jax.random.normal(jax.random.key(0), (n,)), jax.random.split(key)[0])
        )
    assert "key it was given" not in str(failure.value)


# --- chapter 2, exercise 1: mlp_apply(params, x) --------------------------------------------


def _mlp_reduce(params, x):
    *hidden, (w, b) = params
    return functools.reduce(lambda h, layer: jnp.tanh(h @ layer[0] + layer[1]), hidden, x) @ w + b


def _mlp_index(params, x):
    for i in range(len(params)):
        x = x @ params[i][0] + params[i][1]
        x = jnp.tanh(x) if i < len(params) - 1 else x
    return x


RIGHT_MLP = [any_depth_mlp, _mlp_reduce, _mlp_index]
WRONG_MLP = [
    (
        "the layers reversed",
        lambda p, x: any_depth_mlp(p[::-1], x),
        r"the layers are applied in reverse order.*three square layers",
    ),
    (
        "each W transposed (PyTorch's convention)",
        lambda p, x: any_depth_mlp([(w.T, b) for w, b in p], x),
        r"each W is \(in, out\)",
    ),
    (
        "the first two pairs only",
        lambda p, x: any_depth_mlp(p[:2], x),
        r"only the first two \(W, b\) pairs are applied",
    ),
    (
        "W @ x: raises, told the shapes, not to loop",
        lambda p, x: any_depth_mlp([(w, b) for w, b in p], x.T),
        r"(?s)raised TypeError.*each layer is x @ W \+ b",
    ),
]


@pytest.mark.parametrize("answer", RIGHT_MLP)
def test_mlp_right_answers_pass(answer, capsys):
    _passes(checks.check_mlp_apply, answer, capsys)


@pytest.mark.parametrize("what, wrong, message", WRONG_MLP, ids=[w[0] for w in WRONG_MLP])
def test_mlp_wrong_answers_are_named(what, wrong, message):
    _fails(checks.check_mlp_apply, wrong, message)


def test_reversed_layers_are_not_told_to_loop():
    with pytest.raises(CheckFailed) as failure:
        checks.check_mlp_apply(lambda p, x: any_depth_mlp(p[::-1], x))
    assert "loop over them" not in str(failure.value)


# --- chapter 2, exercise 3: make_module(key) -------------------------------------------------


class _Stopped(eqx.Module):
    weight: jax.Array
    scale: jax.Array

    def __call__(self, x):
        return jax.lax.stop_gradient(self.scale) * jnp.sum(self.weight * x)


class _DefaultStatic(eqx.Module):
    weight: jax.Array
    scale: float = eqx.field(static=True, default=2.0)

    def __call__(self, x):
        return self.scale * jnp.sum(self.weight * x)


RIGHT_FROZEN = [
    lambda key: StaticScale(jax.random.normal(key, (4,)), 2.0),
    lambda key: FloatScale(jnp.ones(4), 2.0),
    lambda key: _DefaultStatic(jax.random.uniform(key, (4,))),
]
WRONG_FROZEN = [
    (
        "stop_gradient on an array constant",
        lambda key: _Stopped(jnp.ones(4), jnp.array(2.0)),
        r"gradient of 0 \(jax.lax.stop_gradient",
    ),
    (
        "an integer weight",
        lambda key: FloatScale(jnp.arange(4), 2.0),
        r"module.weight should be a float32 array .*; it is an int32 array.*eqx.filter_grad "
        r"trains only floating-point arrays",
    ),
]


@pytest.mark.parametrize("answer", RIGHT_FROZEN)
def test_frozen_right_answers_pass(answer, capsys):
    _passes(checks.check_frozen_constant, answer, capsys)


@pytest.mark.parametrize("what, wrong, message", WRONG_FROZEN, ids=[w[0] for w in WRONG_FROZEN])
def test_frozen_wrong_answers_are_named(what, wrong, message):
    _fails(checks.check_frozen_constant, wrong, message)


# --- chapter 2, exercise 2: per_example_grad_norms(model, x, y) -----------------------------


def _norms_loop(model, x, y):
    rows = []
    for x_i, y_i in zip(x, y):  # a loop over the 6 examples, unrolled: allowed here
        grads = eqx.filter_grad(lambda m, x_i=x_i, y_i=y_i: jnp.sum((m(x_i) - y_i) ** 2))(model)
        rows.append(jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree.leaves(grads))))
    return jnp.stack(rows)


def _input_gradient_norms(model, x, y):
    return jax.vmap(
        lambda x_i, y_i: jnp.linalg.norm(
            jax.grad(lambda x_i: jnp.sum((model(x_i) - y_i) ** 2))(x_i)
        )
    )(x, y)


RIGHT_NORMS = [grad_norms, _norms_loop]
WRONG_NORMS = [
    (
        "the loss divided by the batch size",
        lambda m, x, y: grad_norms(m, x, y, loss_of=lambda e: jnp.sum(e) / x.shape[0]),
        r"divided by the batch size",
    ),
    ("the gradient by the input", _input_gradient_norms, r"with respect to the input x_i"),
]


@pytest.mark.parametrize("answer", RIGHT_NORMS)
def test_norms_right_answers_pass(answer, capsys):
    _passes(checks.check_per_example_grad_norms, answer, capsys)


@pytest.mark.parametrize("what, wrong, message", WRONG_NORMS, ids=[w[0] for w in WRONG_NORMS])
def test_norms_wrong_answers_are_named(what, wrong, message):
    _fails(checks.check_per_example_grad_norms, wrong, message)


# --- chapter 2, exercise 4 (find the bug): train_decayed(model, x, y, num_steps) -------------

_DECAYED = _cell("02_neural_networks", "train_decayed")
_STEP_LINE = "learning_rate = 0.1 * 0.97**step"


def _decayed(new_line):
    return _definitions(_one_line_fix(_DECAYED, _STEP_LINE, new_line), NETWORKS)["train_decayed"]


def _decayed_in_one_scan(model, x, y, num_steps):
    """The whole loop in one compiled program: a scan over the steps."""
    params, static = eqx.partition(model, eqx.is_array)

    @jax.jit
    def run(params):
        def body(params, step):
            m = eqx.combine(params, static)
            loss, grads = eqx.filter_value_and_grad(NETWORKS["eqx_loss"])(m, x, y)
            rate = 0.1 * 0.97**step
            return jax.tree.map(lambda p, g: p - rate * g, params, grads), loss

        return jax.lax.scan(body, params, jnp.arange(num_steps, dtype=jnp.float32))

    params, losses = run(params)
    return eqx.combine(params, static), list(np.asarray(losses))


def _decayed_without_jit(model, x, y, num_steps):
    """The step of the chapter, not compiled: the learning rate already an array."""
    losses = []
    for step in range(num_steps):
        loss, grads = eqx.filter_value_and_grad(NETWORKS["eqx_loss"])(model, x, y)
        rate = jnp.asarray(0.1 * 0.97**step)
        model = eqx.apply_updates(model, jax.tree.map(lambda g, rate=rate: -rate * g, grads))
        losses.append(float(loss))
    return model, losses


def _decayed_new_jit_each_step(model, x, y, num_steps):
    """A closure jitted anew at every step: traced anew, whatever the learning rate."""
    losses = []
    for step in range(num_steps):
        rate = jnp.asarray(0.1 * 0.97**step)

        @eqx.filter_jit
        def step_fn(model, x, y, rate=rate):
            loss, grads = eqx.filter_value_and_grad(NETWORKS["eqx_loss"])(model, x, y)
            return eqx.apply_updates(model, jax.tree.map(lambda g: -rate * g, grads)), loss

        model, loss = step_fn(model, x, y)
        losses.append(float(loss))
    return model, losses


RIGHT_DECAYED = [
    lambda: _decayed("learning_rate = jnp.asarray(0.1 * 0.97**step)"),
    lambda: _decayed("learning_rate = 0.1 * jnp.float32(0.97) ** step"),
    lambda: _decayed_in_one_scan,
]
WRONG_DECAYED = [
    (
        "the chapter's loop: a Python float",
        lambda: _decayed(_STEP_LINE),
        r"ran 8 times in 8 steps, under jit.*Python float",
    ),
    ("no jit, the rate an array", lambda: _decayed_without_jit, r"the step runs without jit"),
    (
        "a closure jitted at every step",
        lambda: _decayed_new_jit_each_step,
        r"traced anew at every step.*a function jitted anew inside the loop",
    ),
    (
        "the schedule one step late",
        lambda: _decayed("learning_rate = jnp.asarray(0.1 * 0.97 ** (step + 1))"),
        r"the schedule is one step late",
    ),
]


@pytest.mark.parametrize("make", RIGHT_DECAYED)
def test_decayed_right_answers_pass(make, capsys):
    _passes(checks.check_decayed_training, make(), capsys)


@pytest.mark.parametrize("what, make, message", WRONG_DECAYED, ids=[w[0] for w in WRONG_DECAYED])
def test_decayed_wrong_answers_are_named(what, make, message):
    _fails(checks.check_decayed_training, make(), message)


def test_an_answer_that_passes_an_array_is_not_told_to_pass_one():
    with pytest.raises(CheckFailed) as failure:
        checks.check_decayed_training(_decayed_without_jit)
    assert "pass it as an array" not in str(failure.value)


# --- chapter 9, exercise 1: settle(v_0, can_move, cost) -------------------------------------


def _backup(v, can_move, cost, keep=True, mask=True, shift=ppo.neighbour):
    v_next = v if keep else jnp.full_like(v, -jnp.inf)
    for d in range(4):
        shifted = shift(v, d) - cost
        v_next = jnp.maximum(v_next, jnp.where(can_move[d], shifted, -jnp.inf) if mask else shifted)
    return v_next


def settle_answer(
    v_0,
    can_move,
    cost,
    backup=_backup,
    changed=lambda new, old: jnp.any(new != old),
    count_every=False,
):
    """The chapter's solution; keyword arguments plant mistakes."""

    def body(carry):
        v, _, n = carry
        v_next = backup(v, can_move, cost)
        moved = changed(v_next, v)
        return v_next, moved, n + (1 if count_every else moved.astype(jnp.int32))

    v, _, n = jax.lax.while_loop(lambda c: c[1], body, (v_0, jnp.bool_(True), jnp.int32(0)))
    return v, n


def _settle_test_in_condition(v_0, can_move, cost):
    """The change tested in the loop's condition: one backup fewer."""

    def changes(carry):
        v, _ = carry
        return jnp.any(_backup(v, can_move, cost) != v)

    def body(carry):
        v, n = carry
        return _backup(v, can_move, cost), n + 1

    return jax.lax.while_loop(changes, body, (v_0, jnp.int32(0)))


def _settle_stacked(v_0, can_move, cost):
    """The four directions stacked, one maximum over them."""

    def body(carry):
        v, _, n = carry
        shifted = jnp.stack([ppo.neighbour(v, d) for d in range(4)]) - cost
        v_next = jnp.maximum(v, jnp.max(jnp.where(can_move, shifted, -jnp.inf), axis=0))
        moved = jnp.any(v_next != v)
        return v_next, moved, n + moved.astype(jnp.int32)

    v, _, n = jax.lax.while_loop(lambda c: c[1], body, (v_0, True, jnp.int32(0)))
    return v, n


def _roll(v, d, sign=1):
    dr, dc = ((-1, 0), (0, 1), (1, 0), (0, -1))[d]
    return jnp.roll(v, (-sign * dr, -sign * dc), (0, 1))


def _settle_fixed_while(v_0, can_move, cost):
    def body(carry):
        i, v, n = carry
        v_next = _backup(v, can_move, cost)
        return i + 1, v_next, n + jnp.any(v_next != v).astype(jnp.int32)

    return jax.lax.while_loop(lambda c: c[0] < v_0.size, body, (0, v_0, jnp.int32(0)))[1:]


RIGHT_SETTLE = [
    settle_answer,
    _settle_test_in_condition,
    _settle_stacked,
    functools.partial(settle_answer, backup=functools.partial(_backup, shift=_roll)),  # jnp.roll
]
WRONG_SETTLE = [
    (
        "the last backup counted",
        functools.partial(settle_answer, count_every=True),
        r"the count includes the last backup",
    ),
    (
        "jnp.all for jnp.any",
        functools.partial(settle_answer, changed=lambda new, old: jnp.all(new != old)),
        r"stops after one backup",
    ),
    (
        "a difference of -inf cells (nan)",
        functools.partial(settle_answer, changed=lambda new, old: jnp.max(jnp.abs(new - old)) > 0),
        r"stops after one backup.*nan",
    ),
    ("cost taken as 1", lambda v, m, c: settle_answer(v, m, 1.0), r"subtracts 1, not cost"),
    (
        "no mask",
        functools.partial(settle_answer, backup=functools.partial(_backup, mask=False)),
        r"moves go through walls",
    ),
    (
        "jnp.roll the wrong way",
        functools.partial(
            settle_answer,
            backup=functools.partial(_backup, shift=functools.partial(_roll, sign=-1)),
        ),
        r"paired with the neighbour in the opposite direction",
    ),
    (
        "max(v, ...) left out",
        functools.partial(settle_answer, backup=functools.partial(_backup, keep=False)),
        r"forgets what a cell already has, so the values never settle",
    ),
    (
        "a fori_loop of rows x cols backups",
        lambda v_0, m, c: (
            jax.lax.fori_loop(0, v_0.size, lambda i, v: _backup(v, m, c), v_0),
            jnp.int32(0),
        ),
        r"runs a fixed number of backups",
    ),
    (
        "a while_loop of rows x cols backups",
        _settle_fixed_while,
        r"values and count are right, but .* ran \d+ backups",
    ),
    (
        "a float count",
        lambda *a: (settle_answer(*a)[0], settle_answer(*a)[1] * 1.0),
        r"(it returned|it is) an? float32 array",
    ),
    ("the values only", lambda *a: settle_answer(*a)[0], r"should return a pair"),
    (
        "an `if` on a traced value",
        lambda v, m, c: settle_answer(v, m, c) if c > 0 else v,
        r"turns a traced array into a Python value",
    ),
]


@pytest.mark.parametrize("answer", RIGHT_SETTLE)
def test_settle_right_answers_pass(answer, capsys):
    _passes(checks.check_settle, answer, capsys)


@pytest.mark.parametrize("what, wrong, message", WRONG_SETTLE, ids=[w[0] for w in WRONG_SETTLE])
def test_settle_wrong_answers_are_named(what, wrong, message):
    _fails(checks.check_settle, wrong, message)


def test_settle_restores_while_loop():
    _fails(checks.check_settle, WRONG_SETTLE[6][1], "never settle")
    assert jax.lax.while_loop.__module__.startswith("jax")


# --- chapter 9, exercise 2: success_by_reach(success, shortest, iterations) -----------------


def reach_answer(success, shortest, iterations, reach=lambda k: k + 1):
    near = shortest <= reach(iterations)
    return jnp.stack([jnp.mean(success, where=near), jnp.mean(success, where=~near)])


def _reach_sums(success, shortest, iterations):
    near = (shortest <= iterations + 1).astype(jnp.float32)
    won = success.astype(jnp.float32)
    return jnp.array([won @ near / near.sum(), won @ (1 - near) / (1 - near).sum()])


RIGHT_REACH = [
    reach_answer,
    _reach_sums,
    lambda s, d, k: reach_answer(s, d, k, reach=lambda k: k + 1.5),
]
WRONG_REACH = [
    (
        "split at K",
        functools.partial(reach_answer, reach=lambda k: k),
        r"the split is at K = iterations moves",
    ),
    ("reach fixed at 9", functools.partial(reach_answer, reach=lambda k: 9), r"fixed at 9 moves"),
    ("swapped", lambda *a: reach_answer(*a)[::-1], r"the two rates are swapped"),
    (
        "divided by all",
        lambda s, d, k: jnp.stack([jnp.sum(s & (d <= k + 1)), jnp.sum(s & (d > k + 1))]) / s.size,
        r"divided by all the episodes",
    ),
    ("failure rates", lambda *a: 1.0 - reach_answer(*a), r"failure rates"),
    (
        "split at K + 2",
        functools.partial(reach_answer, reach=lambda k: k + 2),
        r"differs from the reference on 12 episodes",
    ),
]


@pytest.mark.parametrize("answer", RIGHT_REACH)
def test_reach_right_answers_pass(answer, capsys):
    _passes(checks.check_success_by_reach, answer, capsys)


@pytest.mark.parametrize("what, wrong, message", WRONG_REACH, ids=[w[0] for w in WRONG_REACH])
def test_reach_wrong_answers_are_named(what, wrong, message):
    _fails(checks.check_success_by_reach, wrong, message)


# --- chapter 11, exercise 1: batched_rollout(states, actions) -------------------------------


def _batched_late(states, actions):
    """Emits the done flag carried from the step before."""

    def body(carry, actions_t):
        states, done = carry
        states, timestep = jax.vmap(cartpole.step_autoreset)(states, actions_t)
        return (states, timestep.done), done

    (states, _), dones = jax.lax.scan(body, (states, jnp.zeros(actions.shape[1], bool)), actions)
    return states, dones


WRONG_BATCHED = [
    (
        "done as int32",
        lambda s, a: (batched_scan(s, a)[0], batched_scan(s, a)[1].astype(jnp.int32)),
        r"done_t .* should be a bool array .*; it is an int32 array",
    ),
    ("done one step late", _batched_late, r"one step late"),
]


@pytest.mark.parametrize("what, wrong, message", WRONG_BATCHED, ids=[w[0] for w in WRONG_BATCHED])
def test_batched_wrong_answers_are_named(what, wrong, message):
    _fails(checks.check_batched_rollout, wrong, message)


# --- chapter 11, exercise 2: rollout_bytes(num_steps, num_envs) -----------------------------

WRONG_BYTES = [
    ("4 bytes missing (step_count)", 326, r"4 bytes a step are missing.*step_count"),
    ("ints as int64", 338, r"int32 \(4 bytes\), not int64"),
    ("64-bit ints and floats", 354, r"32-bit \(4 bytes\) by default"),
    ("a next image as well", 630, r"no next image is stored"),
    ("bits", 2640, r"these are bits"),
    ("one bool missing", 329, r"1 byte a step is missing"),
]


@pytest.mark.parametrize("what, per_step, message", WRONG_BYTES, ids=[w[0] for w in WRONG_BYTES])
def test_bytes_wrong_answers_are_named(what, per_step, message):
    _fails(checks.check_rollout_bytes, lambda t, n: per_step * t * n, message)


def test_a_missing_field_is_not_told_it_is_next_value():
    with pytest.raises(CheckFailed) as failure:
        checks.check_rollout_bytes(lambda t, n: 326 * t * n)
    assert "next_value" in str(failure.value) and "is stored too" not in str(failure.value)


# --- chapter 11, exercise 3: bend(sweep, slope) ---------------------------------------------


def bend_answer(sweep, slope=0.5, order=lambda s: sorted(s, key=int)):
    sizes = order(sweep)
    for a, b in zip(sizes, sizes[1:]):
        gain = sweep[b]["steps_per_s"] / sweep[a]["steps_per_s"]
        if np.log(gain) / np.log(int(b) / int(a)) < slope:
            return int(a)
    return int(sizes[-1])


def _bend_numpy(sweep, slope=0.5):
    sizes = np.array(sorted(int(k) for k in sweep))
    rates = np.array([sweep[str(n)]["steps_per_s"] for n in sizes])
    flat = np.flatnonzero(np.diff(np.log(rates)) / np.diff(np.log(sizes)) < slope)
    return int(sizes[flat[0]]) if flat.size else int(sizes[-1])


def _bend_past(sweep, slope=0.5):
    sizes = sorted(sweep, key=int)
    for a, b in zip(sizes, sizes[1:]):
        if (
            np.log(sweep[b]["steps_per_s"] / sweep[a]["steps_per_s"]) / np.log(int(b) / int(a))
            < slope
        ):
            return int(b)
    return int(sizes[-1])


def _bend_linear(sweep, slope=0.5):
    sizes = sorted(sweep, key=int)
    for a, b in zip(sizes, sizes[1:]):
        if sweep[b]["steps_per_s"] / sweep[a]["steps_per_s"] / (int(b) / int(a)) < slope:
            return int(a)
    return int(sizes[-1])


RIGHT_BEND = [bend_answer, _bend_numpy]
WRONG_BEND = [
    ("sorted as strings", functools.partial(bend_answer, order=sorted), r"sorted as strings"),
    ("the dict's order", functools.partial(bend_answer, order=list), r"the dict's order"),
    ("the size past the bend", _bend_past, r"the size after the bend"),
    (
        "the peak",
        lambda s, slope: int(max(s, key=lambda k: s[k]["steps_per_s"])),
        r"the size with the most steps per second",
    ),
    ("gain / growth", _bend_linear, r"gain over the size's growth"),
    ("slope ignored", lambda s, slope: bend_answer(s), r"slope is ignored"),
    (
        "a str",
        lambda s, slope: str(bend_answer(s, slope)),
        r"should return an int \(a size\); it returned the str '512'",
    ),
]


@pytest.mark.parametrize("answer", RIGHT_BEND)
def test_bend_right_answers_pass(answer, capsys):
    _passes(checks.check_bend, answer, capsys)


@pytest.mark.parametrize("what, wrong, message", WRONG_BEND, ids=[w[0] for w in WRONG_BEND])
def test_bend_wrong_answers_are_named(what, wrong, message):
    _fails(checks.check_bend, wrong, message)


def test_bend_of_the_committed_sweeps():
    """The chapter's solution runs bend on the committed sweeps: each gives a size; DQN's
    environments, whose steps per second grow with them for a while, bend past one."""
    from companion.bench import load_result

    scaling = load_result("scaling")
    assert bend_answer(scaling["dqn_envs"]) > 1
    assert all(isinstance(bend_answer(scaling[k]), int) for k in ("ppo_envs", "dqn_seeds"))


# --- chapter 11, exercise 4: a checkpointed copy of ppo.PropagationActorCritic ---------------


def checkpointed_class(where="body", policy=None, activation=jnp.tanh):
    """A subclass of ppo.PropagationActorCritic with jax.checkpoint ``where``: around the
    scan's ``body`` (right), the whole ``scan``, the whole ``call``, or ``none``."""

    class Copy(ppo.PropagationActorCritic):
        def __call__(self, image):
            x = jnp.moveaxis(image, 0, -1)
            free = 1.0 - x[..., :1]
            open_to = [ppo.neighbour(free, d) * free for d in range(4)]
            injected = x @ self.w_in + self.bias

            def propagate(h, _):
                messages = sum(ppo.neighbour(h, d) * open_to[d] for d in range(4))
                return activation(h @ self.w_self + messages @ self.w_nbr + injected), None

            body = jax.checkpoint(propagate, policy=policy) if where == "body" else propagate

            def run(h):
                return jax.lax.scan(body, h, length=self.iterations)[0]

            h = (jax.checkpoint(run) if where == "scan" else run)(jnp.tanh(x @ self.embed))
            cols = image.shape[2]
            agent = jnp.argmax(image[1].reshape(-1))
            row, col = agent // cols, agent % cols
            around = [h[row, col]] + [
                ppo.neighbour(h, d)[row, col] * open_to[d][row, col] for d in range(4)
            ]
            z = jnp.concatenate(around)
            for layer in self.dense:
                z = jax.nn.relu(layer(z))
            return self.policy_head(z), self.value_head(z)

    if where == "call":
        Copy.__call__ = jax.checkpoint(Copy.__call__)
    return Copy


RIGHT_CHECKPOINT = [
    checkpointed_class(),
    checkpointed_class(policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable),
]
WRONG_CHECKPOINT = [
    ("around the whole scan", checkpointed_class("scan"), r"wraps the whole scan"),
    ("around the whole call", checkpointed_class("call"), r"wraps the whole scan \(or the whole"),
    ("no checkpoint", checkpointed_class("none"), r"there is no jax.checkpoint"),
    (
        "a policy that saves everything",
        checkpointed_class(policy=jax.checkpoint_policies.everything_saveable),
        r"saves everything",
    ),
    ("relu in the body", checkpointed_class(activation=jax.nn.relu), r"\(logits, value\) differ"),
    ("a model, not the class", checkpointed_class()(jax.random.key(0)), r"pass the class itself"),
    ("another network's class", ppo.ValueIterationActorCritic, r"holds other arrays"),
]


@pytest.mark.parametrize("answer", RIGHT_CHECKPOINT)
def test_checkpoint_right_answers_pass(answer, capsys):
    _passes(checks.check_checkpointed_propagation, answer, capsys)


@pytest.mark.parametrize(
    "what, wrong, message", WRONG_CHECKPOINT, ids=[w[0] for w in WRONG_CHECKPOINT]
)
def test_checkpoint_wrong_answers_are_named(what, wrong, message):
    _fails(checks.check_checkpointed_propagation, wrong, message)


# --- chapter 12, exercise 1: allreduce_bytes(num_params, num_devices) -----------------------

WRONG_ALLREDUCE = [
    (
        "every device's traffic together",
        lambda p, n: n * ring(p, n),
        r"multiplies by n - 1 .*all n devices send together",
    ),
    ("bits", lambda p, n: 8 * ring(p, n), r"counts bits"),
]


@pytest.mark.parametrize(
    "what, wrong, message", WRONG_ALLREDUCE, ids=[w[0] for w in WRONG_ALLREDUCE]
)
def test_allreduce_wrong_answers_are_named(what, wrong, message):
    _fails(checks.check_allreduce_bytes, wrong, message)


# --- chapter 12, exercise 2: mean_gradient(w, x, y, mesh) -----------------------------------


def _rows_summed(w, x, y, mesh):
    from jax.sharding import PartitionSpec as P

    from companion import parallel

    def on_each_device(w, x, y):
        return jax.lax.pmean(jax.grad(lambda w: jnp.sum((x @ w - y) ** 2))(w), "devices")

    return parallel.shard_map(on_each_device, mesh, (P(), P("devices"), P("devices")), P())(w, x, y)


def test_data_parallel_loss_summed_over_rows_is_named():
    """On this process's one device: the rows per device are the whole batch."""
    _fails(checks.check_data_parallel_grad, _rows_summed, r"a sum over its rows, not a mean")


_EIGHT_DEVICES = """
import json, sys
import jax, jax.numpy as jnp
from jax.sharding import PartitionSpec as P
from companion import parallel
from companion.checks import CheckFailed, check_data_parallel_grad
from test_check_bank_basics import mean_gradient, _rows_summed

def sharded(collective=jax.lax.pmean, out=P()):
    def answer(w, x, y, mesh):
        def on_each_device(w, x, y):
            return collective(jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w), "devices")
        return parallel.shard_map(on_each_device, mesh, (P(), P("devices"), P("devices")), out)(
            w, x, y)
    return answer

answers = {"right": mean_gradient, "psum": sharded(jax.lax.psum),
           "no all-reduce": sharded(lambda g, axis: g), "stacked": sharded(out=P("devices")),
           "rows summed": _rows_summed}
out = {"devices": len(jax.devices())}
for name, answer in answers.items():
    try:
        check_data_parallel_grad(answer)
        out[name] = "passed"
    except CheckFailed as exc:
        out[name] = str(exc)
print(json.dumps(out))
"""


@pytest.mark.subprocess
@pytest.mark.devices
def test_data_parallel_mistakes_on_eight_devices():
    env = dict(
        os.environ,
        XLA_FLAGS="--xla_force_host_platform_device_count=8",
        PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
    )
    run = subprocess.run(
        [sys.executable, "-c", _EIGHT_DEVICES],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    messages = json.loads(run.stdout.strip().splitlines()[-1])
    assert messages["devices"] == 8
    assert messages["right"] == "passed"
    assert "summed, not averaged" in messages["psum"]
    assert "the first device's rows only" in messages["no all-reduce"]
    assert "gradients are stacked" in messages["stacked"]
    assert "a sum over its rows, not a mean" in messages["rows summed"]


# --- chapter 12, exercise 3: pays_from(ratios, above) ---------------------------------------


def pays_answer(ratios, above=1.0):
    start = None
    for n in sorted(ratios):
        start = (n if start is None else start) if ratios[n] > above else None
    return start


def _pays_suffix(ratios, above=1.0):
    sizes = sorted(ratios)
    return next((n for i, n in enumerate(sizes) if all(ratios[m] > above for m in sizes[i:])), None)


RIGHT_PAYS = [pays_answer, _pays_suffix]
WRONG_PAYS = [
    (
        "the first that pays",
        lambda r, a: next((n for n in sorted(r) if r[n] > a), None),
        r"the first num_envs whose ratio exceeds above, though a larger one falls back",
    ),
    (
        "the largest that pays",
        lambda r, a: max((n for n in r if r[n] > a), default=None),
        r"the largest num_envs that pays",
    ),
    ("the dict's order", lambda r, a: _pays_unsorted(r, a), r"the dict's order"),
    (">= for >", lambda r, a: pays_answer(r, a - 1e-12), r"a ratio equal to above counts"),
    ("above ignored", lambda r, a: pays_answer(r), r"above is ignored"),
    (
        "the ratio returned",
        lambda r, a: None if pays_answer(r, a) is None else r[pays_answer(r, a)],
        r"returned the Python float 1.08\. That is a ratio, not the number of environments",
    ),
    ("-1 for none", lambda r, a: pays_answer(r, a) or -1, r"= -1, where no num_envs pays"),
]


def _pays_unsorted(ratios, above):
    start = None
    for n in ratios:
        start = (n if start is None else start) if ratios[n] > above else None
    return start


@pytest.mark.parametrize("answer", RIGHT_PAYS)
def test_pays_right_answers_pass(answer, capsys):
    _passes(checks.check_pays_from, answer, capsys)


@pytest.mark.parametrize("what, wrong, message", WRONG_PAYS, ids=[w[0] for w in WRONG_PAYS])
def test_pays_wrong_answers_are_named(what, wrong, message):
    _fails(checks.check_pays_from, wrong, message)
