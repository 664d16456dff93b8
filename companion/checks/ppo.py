"""Self-checks for the exercises of the PPO chapter."""

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


def _gae_reference(reward, value, value_tp1, terminated, done, gamma, lam, cut=True, boot=True):
    adv, next_adv = np.zeros(len(reward)), 0.0
    for t in reversed(range(len(reward))):
        not_term = 1.0 - float(terminated[t]) if boot else 1.0 - float(done[t])
        delta = reward[t] + gamma * not_term * value_tp1[t] - value[t]
        next_adv = delta + gamma * lam * ((1.0 - float(done[t])) if cut else 1.0) * next_adv
        adv[t] = next_adv
    return adv


def check_gae(gae: Callable) -> None:
    """Check ``gae(reward_t, value_t, value_tp1, terminated_t, done_t, gamma, lam)``.

    All inputs are (T,) arrays for one environment (``terminated_t`` and
    ``done_t`` bool); the answer is the advantages, float (T,), of
    :func:`companion.agents.ppo.gae`.

    Raises:
        CheckFailed: naming the mistake (the sum runs across episode
            boundaries, a terminated step bootstraps, a truncated step does not
            bootstrap, lambda or gamma missing from the recursion, wrong shape).
    """
    require_function(gae, "gae")
    reward = np.array([0.0, 1.0, 0.0, 0.0, 0.0, 0.5], np.float32)
    value = np.array([0.5, 0.8, 0.3, 0.4, 0.6, 0.2], np.float32)
    value_tp1 = np.array([0.8, 0.9, 0.4, 0.7, 0.2, 0.3], np.float32)
    terminated = np.array([False, True, False, False, False, False])
    done = np.array([False, True, False, True, False, False])  # step 3: truncated
    gamma, lam = 0.9, 0.8
    args = (reward, value, value_tp1, terminated, done, gamma, lam)
    got = run_answer(
        gae,
        *map(jnp.asarray, args[:5]),
        gamma,
        lam,
        call="gae",
        hint="Arguments: reward_t, value_t, value_tp1, terminated_t, done_t (all (6,)), gamma, lam",
    )
    got = check_shape(got, (6,), "gae(...) over 6 steps", hint="One advantage per step.")
    expected = _gae_reference(*args)
    if close(got, expected, rtol=1e-4, atol=1e-5):
        passed("gae matches a plain-Python loop, across a termination and a truncation")
        return
    name_mistake(
        got,
        {
            "the sum runs across episode boundaries: multiply gamma * lam * A_{t+1} by "
            "(1 - done_t)": _gae_reference(*args, cut=False),
            "a truncated step does not bootstrap: only termination sets V(s_{t+1}) to 0, "
            "truncation (done but not terminated) still uses value_tp1": _gae_reference(
                *args, boot=False
            ),
            "lambda is missing from the recursion A_t = delta_t + gamma * lam * A_{t+1}": (
                _gae_reference(*args[:6], 1.0)
            ),
            "with lam = 0 you get the one-step TD error; lam must weight the later terms": (
                _gae_reference(*args[:6], 0.0)
            ),
            "the advantages accumulate forwards in time; run the recursion backwards": (
                _gae_reference(*(a[::-1] for a in args[:5]), gamma, lam)[::-1]
            ),
        },
        "gae",
    )
    fail(f"gae gives {np.round(got, 4)}, expected {np.round(expected, 4)}")


def check_clipped_objective(clipped_objective: Callable) -> None:
    """Check ``clipped_objective(ratio, advantage, clip_eps)`` (per sample, to maximise).

    The answer is ``min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A)``, float (B,).

    Raises:
        CheckFailed: naming the mistake (max instead of min, the clipped term
            alone, no clipping, clipping the advantage).
    """
    require_function(clipped_objective, "clipped_objective")
    ratio = jnp.array([1.5, 0.5, 0.5, 1.5, 1.1, 0.9])
    adv = jnp.array([1.0, 1.0, -1.0, -1.0, 2.0, -2.0])
    eps = 0.2
    got = run_answer(
        clipped_objective, ratio, adv, eps, call="clipped_objective(ratio, advantage, 0.2)"
    )
    got = check_shape(got, (6,), "clipped_objective(...) for 6 samples", hint="Per sample.")
    clipped = jnp.clip(ratio, 1 - eps, 1 + eps) * adv
    expected = jnp.minimum(ratio * adv, clipped)
    if close(got, expected):
        passed("clipped_objective is the pessimistic minimum of the clipped and unclipped terms")
        return
    name_mistake(
        got,
        {
            "it takes the max of the two terms; PPO takes the min (a pessimistic bound)": (
                jnp.maximum(ratio * adv, clipped)
            ),
            "it returns the clipped term alone; take its min with ratio * advantage": clipped,
            "nothing is clipped: clip the ratio to [1 - eps, 1 + eps]": ratio * adv,
            "the advantage is clipped; clip the ratio": jnp.minimum(
                ratio * adv, ratio * jnp.clip(adv, 1 - eps, 1 + eps)
            ),
        },
        "clipped_objective",
    )
    fail(f"clipped_objective gives {np.round(got, 4)}, expected {np.round(expected, 4)}")


def check_masked_probs(masked_probs: Callable) -> None:
    """Check ``masked_probs(logits, mask)``: the policy over legal actions only.

    ``logits`` float (4,), ``mask`` bool (4,); the answer is float (4,),
    ``softmax`` over the legal actions and exactly 0 for illegal ones, with a
    finite gradient with respect to ``logits``.

    Raises:
        CheckFailed: naming the mistake (illegal logits set to 1.0 or 0.0
            instead of -inf, probabilities zeroed without renormalising, a nan
            gradient).
    """
    require_function(masked_probs, "masked_probs")
    logits = jnp.array([2.0, -1.0, 0.5, 3.0])
    mask = jnp.array([True, False, True, False])
    got = run_answer(masked_probs, logits, mask, call="masked_probs(logits, mask)")
    got = check_shape(got, (4,), "masked_probs(logits, mask) for 4 actions")
    expected = jax.nn.softmax(jnp.where(mask, logits, -jnp.inf))
    if not close(got, expected):
        name_mistake(
            got,
            {
                "illegal actions get logit 1.0, so they keep probability (the misplaced "
                "parenthesis bug): use -inf": jax.nn.softmax(jnp.where(mask, logits, 1.0)),
                "illegal actions get logit 0.0, which still has probability exp(0) / Z: "
                "use -inf": jax.nn.softmax(jnp.where(mask, logits, 0.0)),
                "the probabilities are multiplied by the mask but not renormalised; they "
                "must sum to 1": jax.nn.softmax(logits) * mask,
            },
            "masked_probs",
        )
        fail(f"masked_probs gives {np.round(got, 4)}, expected {np.round(expected, 4)}")
    grad = jax.grad(lambda x: jnp.log(masked_probs(x, mask)[0]))(logits)
    if not np.all(np.isfinite(np.asarray(grad))):
        fail(
            f"masked_probs: the gradient of log p(action 0) is {np.asarray(grad)}; it must "
            "be finite. Mask the logits with jnp.where before the softmax, not after"
        )
    passed("masked_probs gives illegal actions probability 0 with a finite gradient")
