"""check_softplus_grad, check_discounted_returns, check_noisy_batch (chapter 1): right answers,
each check's bank of wrong answers (``WRONG_*``: slip, answer, verdict) and its hardest cases.

What each check guards, and the case that breaks each plausible wrong answer:

check_softplus_grad (``x * sigmoid(w * x)``, float32 of ``w.shape``)
- the factor x: ``sigmoid(w x)`` differs wherever x != 1 (x of both signs in each case);
- softplus, not its derivative: ``x * softplus(w x)`` is named by its values;
- the sign and the argument: ``-x sigmoid``, ``x sigmoid(-w x)`` and ``x e^(wx)`` each named;
- the shape: a second case of shape (2, 3) breaks an answer right on (3,) only (generic);
- the contract: a sum to a scalar, float16 are told their shape or dtype.

check_discounted_returns (``G_t = r_t + gamma G_{t+1}`` by a reverse scan)
- the direction: a forward scan, discounting from the episode's start, flipped rows;
- the current reward undiscounted: ``gamma * G``, ``gamma**(k + 1)``, ``G - r`` named;
- the discount itself: a plain reverse cumsum is named;
- the time axis: a (T, N) case breaks a scan along the last axis and a carry of the wrong
  shape (``jnp.zeros(())``, ``jnp.zeros(r.shape[-1])``), told to use ``zeros_like(r[0])``;
- no Python loop: two lengths' programs are compared, so an unrolled loop, even under an
  inner jit, and scan's ``unroll`` are named;
- the contract: one step short, float16.

check_noisy_batch (``n`` standard normals and a fresh key; three chained calls, another key)
- the key passed in is neither returned nor both drawn with and split: named;
- the samples follow the key: a key of its own (key(0), key(9)) gives the same samples for
  every key; the check's key is not key(0), so a hard-coded key(0) is not told otherwise;
- the next key is fresh: a fixed next key or one toggling between two repeats by the third
  call; returning the subkey drawn with is named;
- standard normal: 20,000 samples' mean, std and kurtosis break uniform samples, even with
  variance 1 (kurtosis 1.8, not 3);
- the contract: float16 samples.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest

import companion.checks as checks
from checks.answers import (
    _loop_returns,
    _reverse_scan_returns,
    bank_params,
    generic,
    passes,
    rejects,
    right_params,
)
from companion.checks import CheckFailed

# --- check_softplus_grad: grad_g(w, x) --------------------------------------------------


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
        generic(r"differs from the reference on w and x of shape \(2, 3\)"),
    ),
]


WRONG_SOFTPLUS += [
    ("sigmoid without the factor x", lambda w, x: jax.nn.sigmoid(w * x), "factor x is missing"),
    ("softplus itself", lambda w, x: x * jax.nn.softplus(w * x), "softplus itself"),
    ("the sign flipped", lambda w, x: -x * jax.nn.sigmoid(w * x), "sign is wrong"),
    (
        "summed to a scalar",
        lambda w, x: jnp.sum(x * jax.nn.sigmoid(w * x)),
        r"of shape \(3,\).*; it (returned|is) an? \w+ array of shape \(\)",
    ),
]


# --- check_discounted_returns: discounted_returns(rewards, gamma) ------------------------------


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


def _returns_wrong_carry(r, g):
    def body(c, x):
        return x + g * c, x + g * c

    return jax.lax.scan(body, jnp.zeros(r.shape[-1]), r, reverse=True)[1]


WRONG_RETURNS += [
    (
        "a forward scan",
        lambda r, g: _reverse_scan_returns(r, g, reverse=False),
        "accumulate forwards",
    ),
    (
        "gamma on the current reward",
        lambda r, g: g * _reverse_scan_returns(r, g),
        "current reward is discounted",
    ),
    ("r_t left out", lambda r, g: _reverse_scan_returns(r, g) - r, "leaves out r_t"),
    ("no discount", lambda r, g: jnp.cumsum(r[::-1], axis=0)[::-1], "without discounting"),
    (
        "along the last axis",
        lambda r, g: _reverse_scan_returns(r.T, g).T,
        "run along the last axis",
    ),
    (
        "a scalar carry",
        lambda r, g: _reverse_scan_returns(r, g, init=lambda x: jnp.zeros(())),
        "(?s)raised TypeError.*jnp.zeros_like",
    ),
    ("a Python loop", _loop_returns, "a Python loop is unrolled"),
    (
        "one step short",
        lambda r, g: _reverse_scan_returns(r, g)[:-1],
        r"of shape \(5,\).*; it (returned|is) an? \w+ array of shape \(4,\)",
    ),
    ("a carry of the last axis's size", _returns_wrong_carry, r"jnp.zeros_like\(rewards\[0\]\)"),
]


# --- check_noisy_batch: noisy_batch(key, n) --------------------------------------------------


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


def _noisy_returns_subkey(key, n):
    key, sub = jax.random.split(key)
    return jax.random.normal(sub, (n,)), sub


WRONG_NOISY += [
    (
        "the key given returned",
        lambda key, n: (jax.random.normal(key, (n,)), key),
        "returns the key it was given",
    ),
    (
        "draws with the key given",
        lambda key, n: (jax.random.normal(key, (n,)), jax.random.split(key)[0]),
        "draws with the key",
    ),
    (
        "its own key(9)",
        lambda key, n: (jax.random.normal(jax.random.key(9), (n,)), jax.random.split(key)[0]),
        "same samples",
    ),
    (
        "uniform samples",
        lambda key, n: (
            jax.random.uniform(jax.random.split(key)[1], (n,)),
            jax.random.split(key)[0],
        ),
        "mean",
    ),
    ("the subkey returned", _noisy_returns_subkey, "returns the key it drew the samples with"),
    (
        "uniform samples of variance 1",
        lambda k, n: (
            jax.random.uniform(jax.random.split(k)[1], (n,), minval=-(3**0.5), maxval=3**0.5),
            jax.random.split(k)[0],
        ),
        "kurtosis",
    ),
]


#: Each check's right answers and its bank of wrong ones.
RIGHTS = {
    "check_softplus_grad": RIGHT_SOFTPLUS,
    "check_discounted_returns": RIGHT_RETURNS,
    "check_noisy_batch": RIGHT_NOISY,
}
BANKS = {
    "check_softplus_grad": WRONG_SOFTPLUS,
    "check_discounted_returns": WRONG_RETURNS,
    "check_noisy_batch": WRONG_NOISY,
}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)


def test_a_hard_coded_key_0_is_not_told_it_draws_with_the_key_given():
    """The check's key is not key(0): an answer that makes its own key(0) is told that its
    samples ignore the key, not that it draws with the key it was given."""
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed) as failure:
        checks.check_noisy_batch(
            lambda key, n: (jax.random.normal(jax.random.key(0), (n,)), jax.random.split(key)[0])
        )
    assert "key it was given" not in str(failure.value)
