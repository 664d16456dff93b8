"""Self-checks for the exercises of the chapter on JAX essentials."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.core import (
    check_shape,
    close,
    fail,
    name_mistake,
    passed,
    require_function,
    run_answer,
)


def check_softplus_grad(grad_g: Callable) -> None:
    """Check ``grad_g(w, x)``, the hand-derived gradient of ``g(w) = sum(log(1 + exp(w * x)))``.

    The answer is ``x * sigmoid(w * x)``, shape ``w.shape``.

    Raises:
        CheckFailed: naming the mistake (missing factor x, softplus instead of
            sigmoid, wrong sign, wrong shape).
    """
    require_function(grad_g, "grad_g")
    w, x = jnp.array([0.5, -1.0, 2.0]), jnp.array([1.0, 2.0, 3.0])
    got = run_answer(grad_g, w, x, call="grad_g(w, x)")
    got = check_shape(
        got,
        (3,),
        "grad_g(w, x) with w, x of shape (3,)",
        hint="One partial derivative per entry of w.",
    )
    expected = x * jax.nn.sigmoid(w * x)
    if close(got, expected):
        passed("grad_g matches x * sigmoid(w * x) (and jax.grad)")
        return
    name_mistake(
        got,
        {
            "the chain rule's factor x is missing": jax.nn.sigmoid(w * x),
            "that is softplus itself; its derivative is the sigmoid": x * jax.nn.softplus(w * x),
            "the sign is wrong": -expected,
            "the derivative is taken with respect to x, not w": w * jax.nn.sigmoid(w * x),
        },
        "grad_g",
    )
    fail(f"grad_g gives {np.asarray(got)}, jax.grad gives {np.asarray(expected)}")


def _returns_reference(rewards, gamma):
    """Discounted returns along axis 0 (time) by a Python loop."""
    out, g = [], 0.0
    for r in reversed(list(np.asarray(rewards, np.float64))):
        g = r + gamma * g
        out.append(g)
    return np.array(out[::-1])


def check_discounted_returns(discounted_returns: Callable) -> None:
    """Check ``discounted_returns(rewards, gamma)``: ``G_t = r_t + gamma * G_{t+1}``, ``G_T = 0``.

    ``rewards`` float32 ``(T,)`` for one episode or ``(T, N)`` for N
    environments, time first; the answer, float32 of the same shape, is
    computed with one ``jax.lax.scan(..., reverse=True)`` over time (a
    Python loop would be unrolled into the program, one copy per step).

    Raises:
        CheckFailed: naming the mistake (accumulated forwards instead of
            backwards, gamma on the current reward, the current reward left out,
            no discount, the (T, N) returns run along the environment axis, a
            scan that cannot take (T, N), a Python loop unrolled into the program).
    """
    require_function(discounted_returns, "discounted_returns")
    gamma = 0.9
    single = jnp.array([1.0, 0.0, 2.0, 1.0, 0.5])
    batched = jnp.stack([single, jnp.array([0.0, 0.0, 0.0, 0.0, 1.0]), single[::-1]], axis=1)
    for rewards, label in ((single, "5 rewards"), (batched, "rewards of shape (5, 3)")):
        call = f"discounted_returns(rewards, 0.9) for {label}"
        got = run_answer(
            discounted_returns,
            rewards,
            gamma,
            call=call,
            hint="rewards is (T,) or (T, N), time first: start the scan from "
            "jnp.zeros_like(rewards[0]), one return per environment",
        )
        got = check_shape(
            got, rewards.shape, call, hint="One return per time step (and environment)."
        )
        expected = _returns_reference(rewards, gamma)
        if close(got, expected):
            continue
        mistakes = {
            "the returns accumulate forwards in time; G_t sums the rewards from t on "
            "(use lax.scan with reverse=True)": _returns_reference(rewards[::-1], gamma)[::-1],
            "the current reward is discounted too: G_t = r_t + gamma * G_{t+1}, not "
            "gamma * r_t + ...": gamma * expected,
            "G_t leaves out r_t: it is r_t + gamma * G_{t+1}": expected - np.asarray(rewards),
            "the rewards are summed without discounting": np.cumsum(
                np.asarray(rewards)[::-1], axis=0
            )[::-1],
        }
        if rewards.ndim == 2:
            mistakes[
                "the returns run along the last axis (the environments); time is axis 0 of "
                "(T, N): scan over the rows"
            ] = _returns_reference(rewards.T, gamma).T
        name_mistake(got, mistakes, "discounted_returns")
        fail(f"{call} gives {np.round(got, 4)}, expected {np.round(expected, 4)}")
    sizes = [
        len(jax.make_jaxpr(discounted_returns, static_argnums=1)(jnp.ones(n), gamma).jaxpr.eqns)
        for n in (20, 40)
    ]
    if sizes[1] > sizes[0]:
        fail(
            f"discounted_returns: the program grows with the number of steps ({sizes[0]} "
            f"operations for 20 rewards, {sizes[1]} for 40): a Python loop is unrolled into "
            "it; use jax.lax.scan(..., reverse=True)"
        )
    passed("discounted_returns matches G_t = r_t + gamma * G_{t+1} for (T,) and (T, N)")


def check_noisy_batch(noisy_batch: Callable) -> None:
    """Check ``noisy_batch(key, n) -> (samples, next_key)``: ``n`` standard normals and a fresh key.

    Raises:
        CheckFailed: when the key passed in is used directly (and so reused by the
            caller), the returned key is the one passed in, calls repeat samples,
            or the shape is wrong.
    """
    require_function(noisy_batch, "noisy_batch")
    key = jax.random.key(0)
    try:
        first, key2 = noisy_batch(key, 4)
        second, _ = noisy_batch(key2, 4)
    except Exception as exc:
        fail(f"noisy_batch(key, 4) raised {type(exc).__name__}: {exc}. It returns (samples, key).")
    first = check_shape(first, (4,), "the samples of noisy_batch(key, 4)")
    second = check_shape(second, (4,), "the samples of noisy_batch(next_key, 4)")
    if np.array_equal(jax.random.key_data(key2), jax.random.key_data(key)):
        fail(
            "noisy_batch returns the key it was given: the next call would repeat its samples. "
            "Split the key and return one half"
        )
    if close(first, second):
        fail("two consecutive calls give the same samples: use the returned key for the next call")
    if close(first, jax.random.normal(jax.random.key(0), (4,))):  # the same key, made anew
        fail(
            "noisy_batch draws with the key it was given and may hand it back to be used again; "
            "split it first and draw with a subkey"
        )
    big, _ = noisy_batch(jax.random.key(1), 20_000)
    big = np.asarray(big)
    if abs(big.mean()) > 0.05 or abs(big.std() - 1) > 0.05:
        fail(f"the samples have mean {big.mean():.3f} and std {big.std():.3f}, expected 0 and 1")
    passed("noisy_batch draws fresh standard normals and returns a new key")
