"""Self-checks for the exercises of the chapter on JAX essentials."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import require_array
from companion.checks._messages import _
from companion.checks.core import (
    Case,
    close,
    fail,
    passed,
    require_pair,
    run_answer,
    self_check,
    unrolled,
    verdict,
)


def _softplus_case(w, x) -> Case:
    expected = x * jax.nn.sigmoid(w * x)
    return Case(
        _("w and x of shape {shape}").format(shape=w.shape),
        {"w": w, "x": x},
        expected,
        {
            _("the chain rule's factor x is missing"): jax.nn.sigmoid(w * x),
            _("that is softplus itself; its derivative is the sigmoid"): x * jax.nn.softplus(w * x),
            _("the sign is wrong"): -expected,
            _("the derivative is taken with respect to x, not w"): w * jax.nn.sigmoid(w * x),
            _(
                "x / (1 + exp(w * x)) is x * sigmoid(-w * x): the derivative of log(1 + e^u) "
                "is e^u / (1 + e^u), e^u on top"
            ): x * jax.nn.sigmoid(-w * x),
            _(
                "the denominator is missing: the derivative of log(1 + e^u) is e^u / "
                "(1 + e^u), not e^u"
            ): x * jnp.exp(w * x),
        },
    )


@self_check
def check_softplus_grad(grad_g: Callable) -> None:
    """Check ``grad_g(w, x)``, the hand-derived gradient of ``g(w) = sum(log(1 + exp(w * x)))``.

    The answer is ``x * sigmoid(w * x)``, float32 of ``w.shape`` (here ``(3,)`` and ``(2, 3)``).

    Raises:
        CheckFailed: naming the mistake (missing factor x, softplus instead of
            sigmoid, wrong sign, derivative in x, sigmoid(-w x), e^(w x) without its
            denominator), or a result that is not float32 of ``w.shape``.
    """
    cases = [
        _softplus_case(jnp.array([0.5, -1.0, 2.0]), jnp.array([1.0, 2.0, 3.0])),
        _softplus_case(
            jnp.array([[0.3, -0.7, 1.5], [-2.0, 0.0, 0.8]]),
            jnp.array([[-1.0, 0.5, 2.0], [1.5, -0.5, -2.5]]),
        ),
    ]
    outputs = []
    for case in cases:
        w, x = case.inputs["w"], case.inputs["x"]
        call = _("grad_g(w, x) with w = {w}, x = {x}").format(
            w=np.asarray(w).tolist(), x=np.asarray(x).tolist()
        )
        got = run_answer(grad_g, w, x, call=call)
        why = _("one partial derivative per entry of w")
        outputs.append(require_array(got, call, w.shape, np.float32, why=why))
    verdict("grad_g", cases, outputs)
    passed(_("grad_g matches x * sigmoid(w * x) (and jax.grad)"))


def _returns_reference(rewards, gamma):
    """Discounted returns along axis 0 (time) by a Python loop."""
    out, g = [], 0.0
    for r in reversed(list(np.asarray(rewards, np.float64))):
        g = r + gamma * g
        out.append(g)
    return np.array(out[::-1])


def _returns_case(rewards, gamma, label) -> Case:
    expected = _returns_reference(rewards, gamma)
    r = np.asarray(rewards, np.float64)
    powers = (gamma ** np.arange(r.shape[0])).reshape((-1,) + (1,) * (r.ndim - 1))
    mistakes = {
        _(
            "the returns accumulate forwards in time; G_t sums the rewards from t on "
            "(use lax.scan with reverse=True)"
        ): _returns_reference(r[::-1], gamma)[::-1],
        _(
            "the current reward is discounted too (gamma**(k + 1) where gamma**k belongs): "
            "G_t = r_t + gamma * G_{t+1}, not gamma * r_t + ..."
        ): gamma * expected,
        _("G_t leaves out r_t: it is r_t + gamma * G_{t+1}"): expected - r,
        _("the rewards are summed without discounting"): np.cumsum(r[::-1], axis=0)[::-1],
        _("gamma is squared: G_t = r_t + gamma * G_{t+1}"): _returns_reference(r, gamma**2),
        _(
            "G_t is one step off: it is G_{t+1}. Emit the carry after adding r_t (the "
            "scan's body returns (g, g) with g = r + gamma * g)"
        ): np.concatenate([expected[1:], np.zeros_like(expected[:1])]),
        _(
            "the rewards are discounted from the episode's start (gamma**j for step j): G_t "
            "discounts r_{t+k} by gamma**k, counting from t"
        ): np.cumsum((powers * r)[::-1], axis=0)[::-1],
    }
    if r.ndim == 2:
        mistakes[
            _(
                "the returns run along the last axis (the environments); time is axis 0 of "
                "(T, N): scan over the rows"
            )
        ] = _returns_reference(r.T, gamma).T
    return Case(label, {"rewards": rewards, "gamma": gamma}, expected, mistakes)


@self_check
def check_discounted_returns(discounted_returns: Callable) -> None:
    """Check ``discounted_returns(rewards, gamma)``: ``G_t = r_t + gamma * G_{t+1}``, ``G_T = 0``.

    ``rewards`` float32 ``(T,)`` or ``(T, N)``, time first; returns float32 of the same shape,
    computed with one ``jax.lax.scan(..., reverse=True)`` (no Python loop over time). Runs the
    answer under ``jax.jit`` (``gamma`` a Python float, static).

    Raises:
        CheckFailed: naming the mistake (accumulated forwards, gamma on the current reward, the
            current reward left out, no discount, gamma squared, one step late, discounted from
            the episode's start, returns along the environment axis, a scan that cannot take
            (T, N), not float32, a Python loop unrolled, even under an inner jit).
    """
    single = jnp.array([1.0, 0.0, 2.0, 1.0, 0.5])
    batched = jnp.stack([single, jnp.array([0.0, 0.0, 0.0, 0.0, 1.0]), single[::-1]], axis=1)
    cases = [
        _returns_case(
            single, 0.9, _("{count} rewards and gamma {gamma}").format(count=5, gamma=0.9)
        ),
        _returns_case(
            batched,
            0.9,
            _("rewards of shape {shape} and gamma {gamma}").format(shape=(5, 3), gamma=0.9),
        ),
        _returns_case(
            -batched[:4],
            0.5,
            _("rewards of shape {shape} and gamma {gamma}").format(shape=(4, 3), gamma=0.5),
        ),
    ]
    outputs = []
    for case in cases:
        rewards = case.inputs["rewards"]
        call = _("discounted_returns(rewards, gamma) for {case}").format(case=case.label)
        got = run_answer(
            discounted_returns,
            rewards,
            case.inputs["gamma"],
            call=call,
            hint=_(
                "rewards is (T,) or (T, N), time first: start the scan from "
                "jnp.zeros_like(rewards[0]), one return per environment"
            ),
        )
        outputs.append(
            require_array(
                got,
                call,
                rewards.shape,
                np.float32,
                why=_("one return per step and environment, like rewards"),
                hint=lambda got, shape=rewards.shape: (
                    _(
                        "The scan's carry holds one return per environment: start it from "
                        "jnp.zeros_like(rewards[0])"
                    )
                    if np.shape(got) != shape
                    else ""
                ),
            )
        )
    verdict("discounted_returns", cases, outputs)
    sizes = unrolled(discounted_returns, *[(jnp.ones(n), 0.9) for n in (20, 40)])
    if sizes is not None:
        growth = (
            _(" (scan's unroll)")
            if sizes[1] < 0
            else _(" ({short} operations for 20 rewards, {long} for 40)").format(
                short=sizes[0], long=sizes[1]
            )
        )
        fail(
            _(
                "discounted_returns: the program grows with the number of steps{growth}: a "
                "Python loop is unrolled into it (even under an inner jax.jit); use "
                "jax.lax.scan(..., reverse=True)"
            ).format(growth=growth)
        )
    passed(_("discounted_returns matches G_t = r_t + gamma * G_{t+1} for (T,) and (T, N)"))


def _copy_key(key):
    """A new key object with ``key``'s bits: the check's own comparisons use no key twice."""
    return jax.random.wrap_key_data(jax.random.key_data(key))


def _same_key(a, b) -> bool:
    return bool(np.array_equal(jax.random.key_data(a), jax.random.key_data(b)))


def _noisy_call(noisy_batch, key, n, call):
    """``(samples, next_key)`` of one call, checked for type, shape and dtype."""
    out = run_answer(noisy_batch, key, n, call=call, hint=_("It returns (samples, key)"))
    require_pair(out, call, "samples, next_key")
    samples, next_key = out
    samples = require_array(
        samples,
        _("the samples of {call}").format(call=call),
        (n,),
        np.float32,
        why=_("n standard normals, jax.random.normal's default dtype"),
        returns=False,
    )
    next_key = require_array(
        next_key,
        _("the second result of {call}").format(call=call),
        (),
        "key",
        why=_("a half of jax.random.split(key)"),
        returns=False,
    )
    return samples, next_key


@self_check
def check_noisy_batch(noisy_batch: Callable) -> None:
    """Check ``noisy_batch(key, n) -> (samples, next_key)``: ``n`` standard normals, float32
    ``(n,)``, and a fresh key. Runs the answer under ``jax.jit`` (``n`` static) three times in
    a row, each call with the key the last one returned, and once with another key.

    Raises:
        CheckFailed: when the key passed in is returned, or used to draw and also split; when
            the samples are drawn with the returned key, ignore the key passed in, or repeat
            over three calls; when the next key is the same whatever the key passed in; when
            the samples are not standard normal; or a wrong type, shape or dtype.
    """
    seed, other_seed = 2024, 7  # not 0 or 1: an answer that makes its own key(0) differs
    call = "noisy_batch(key, 4)"
    first, key2 = _noisy_call(noisy_batch, jax.random.key(seed), 4, call)
    if _same_key(key2, jax.random.key(seed)):
        fail(
            _(
                "noisy_batch returns the key it was given: the next call would repeat its "
                "samples. Split the key and return one half"
            )
        )
    second, key3 = _noisy_call(noisy_batch, _copy_key(key2), 4, "noisy_batch(next_key, 4)")
    third, _third_key = _noisy_call(
        noisy_batch, _copy_key(key3), 4, _("a third call, with the key the second returned")
    )
    other, other_next = _noisy_call(
        noisy_batch, jax.random.key(other_seed), 4, "noisy_batch(another_key, 4)"
    )
    if close(first, jax.random.normal(_copy_key(key2), (4,))):
        fail(
            _(
                "noisy_batch returns the key it drew the samples with: the caller's next draw "
                "repeats them. Split the key, draw with one half and return the other"
            )
        )
    if close(first, jax.random.normal(jax.random.key(seed), (4,))):  # the same key, made anew
        fail(
            _(
                "noisy_batch draws with the key it was given, which its caller still holds "
                "(and may split or draw with again): split it first, draw with one half and "
                "return the other"
            )
        )
    if close(first, other):
        fail(
            _(
                "noisy_batch gives the same samples whatever key it is given: it draws with a "
                "key of its own, not with one split from the key argument"
            )
        )
    if _same_key(key2, other_next):
        fail(
            _(
                "noisy_batch returns the same next key whatever key it is given (a key made "
                "inside the function): the third call repeats the second's samples. Return "
                "a half of jax.random.split(key)"
            )
        )
    for (a, b), (i, j) in (
        ((first, second), (1, 2)),
        ((second, third), (2, 3)),
        ((first, third), (1, 3)),
    ):
        if close(a, b):
            fail(
                _(
                    "calls {i} and {j} give the same samples, each call with the key the one "
                    "before returned: the returned key must be a new one at every call"
                ).format(i=i, j=j)
            )
    big, _big_key = run_answer(
        noisy_batch, jax.random.key(1), 20_000, call="noisy_batch(key, 20_000)"
    )
    big = np.sort(np.asarray(big, np.float64))
    kurtosis = float(np.mean(big**4) / np.mean(big**2) ** 2)
    # Kolmogorov-Smirnov distance to the standard normal's distribution function
    cdf = 0.5 * (1 + np.vectorize(math.erf)(big / math.sqrt(2)))
    ks = float(np.max(np.abs(cdf - (np.arange(big.size) + 0.5) / big.size)))
    moments = abs(big.mean()), abs(big.std() - 1), abs(kurtosis - 3)
    if moments[0] > 0.05 or moments[1] > 0.05 or moments[2] > 0.15 or ks > 0.015:
        fail(
            _(
                "the 20,000 samples have mean {mean}, std {std} and kurtosis {kurtosis}, "
                "where standard normal ones have 0, 1 and 3: draw them with jax.random.normal"
            ).format(mean=f"{big.mean():.3f}", std=f"{big.std():.3f}", kurtosis=f"{kurtosis:.2f}")
        )
    passed(_("noisy_batch draws fresh standard normals and returns a new key"))
