"""The PPO self-checks pass correct answers and name the mistake in wrong ones."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from companion.agents import ppo
from companion.checks import (
    CheckFailed,
    check_clipped_objective,
    check_gae,
    check_masked_probs,
)


def gae_answer(reward, value, value_tp1, terminated, done, gamma, lam):
    return ppo.gae(reward, value, value_tp1, terminated, done, gamma, lam)[0]


def gae_variant(cut=True, boot=True, lam_override=None, forwards=False):
    def answer(reward, value, value_tp1, terminated, done, gamma, lam):
        lam = lam if lam_override is None else lam_override
        r, v, v1, te, d = (
            np.asarray(a, np.float64) for a in (reward, value, value_tp1, terminated, done)
        )
        order = range(len(r)) if forwards else reversed(range(len(r)))
        out, nxt = np.zeros(len(r)), 0.0
        for t in order:
            not_term = 1 - (te[t] if boot else d[t])
            delta = r[t] + gamma * not_term * v1[t] - v[t]
            nxt = delta + gamma * lam * ((1 - d[t]) if cut else 1) * nxt
            out[t] = nxt
        return jnp.asarray(out)

    return answer


def test_gae_reference_passes(capsys):
    check_gae(gae_answer)
    assert "check passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, message",
    [
        (gae_variant(cut=False), "across episode boundaries"),
        (gae_variant(boot=False), "truncated step does not bootstrap"),
        (gae_variant(lam_override=1.0), "lambda is missing"),
        (gae_variant(lam_override=0.0), "one-step TD error"),
        (gae_variant(forwards=True), "forwards in time"),
        (lambda *a: gae_answer(*a)[:3], r"shape \(3,\), expected \(6,\)"),
        (lambda *a: gae_answer(*a) + 0.1, "expected"),
        (lambda r, v: r, "raised"),
    ],
)
def test_gae_mistakes_are_named(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_gae(wrong)


def test_clipped_objective_reference_passes(capsys):
    check_clipped_objective(ppo.clipped_surrogate)
    assert "check passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda r, a, e: jnp.maximum(r * a, jnp.clip(r, 1 - e, 1 + e) * a), "max of the two"),
        (lambda r, a, e: jnp.clip(r, 1 - e, 1 + e) * a, "clipped term alone"),
        (lambda r, a, e: r * a, "nothing is clipped"),
        (lambda r, a, e: jnp.minimum(r * a, r * jnp.clip(a, 1 - e, 1 + e)), "advantage is clipped"),
        (lambda r, a, e: jnp.mean(r * a), r"shape \(\)"),
    ],
)
def test_clipped_objective_mistakes_are_named(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_clipped_objective(wrong)


def test_masked_probs_reference_passes(capsys):
    check_masked_probs(lambda x, m: jax.nn.softmax(ppo.masked_logits(x, m)))
    assert "check passed" in capsys.readouterr().out


def nan_gradient_probs(logits, mask):
    # Right values, but the -inf enters after an exp: p * 0 with p from exp(-inf - ...) is fine,
    # log(0) inside the softmax is not.
    p = jnp.exp(logits) * mask
    return jnp.exp(jnp.log(p) - jnp.log(p.sum()))


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda x, m: jax.nn.softmax(jnp.where(m, x, 1.0)), "misplaced"),
        (lambda x, m: jax.nn.softmax(jnp.where(m, x, 0.0)), "logit 0.0"),
        (lambda x, m: jax.nn.softmax(x) * m, "not renormalised"),
        (nan_gradient_probs, "must be finite"),
        (lambda x, m: jax.nn.softmax(x), "expected"),
    ],
)
def test_masked_probs_mistakes_are_named(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_masked_probs(wrong)
