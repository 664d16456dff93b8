"""The PPO self-checks pass correct answers and name the mistake in wrong ones."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from companion.agents import ppo
from companion.checks import (
    CheckFailed,
    check_dual_clip_objective,
    check_epsilon_masked_probs,
    check_fill_one_loss,
    check_gae_from_values,
)


def gae_answer(reward, value, value_tp1, terminated, done, gamma, lam):
    return ppo.gae(reward, value, value_tp1, terminated, done, gamma, lam)[0]


def gae_variant(cut=True, boot=True, lam_override=None, forwards=False, cut_terminated=False):
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
            ends = te[t] if cut_terminated else d[t]
            nxt = delta + gamma * lam * ((1 - ends) if cut else 1) * nxt
            out[t] = nxt
        return jnp.asarray(out)

    return answer


def nan_gradient_probs(logits, mask):
    # Right values, but the -inf enters after an exp: p * 0 with p from exp(-inf - ...) is fine,
    # log(0) inside the softmax is not.
    p = jnp.exp(logits) * mask
    return jnp.exp(jnp.log(p) - jnp.log(p.sum()))


# --- GAE from stored values ----------------------------------------------------------------


def gae_from_values_answer(
    reward,
    value,
    value_last,
    value_final,
    terminated,
    truncated,
    gamma,
    lam,
    cut_with=None,
    boot_trunc="final",
    last_zero=False,
    term_boots=False,
    forwards=False,
):
    """A scan over time; the keyword arguments plant one mistake each."""
    value_tp1 = jnp.concatenate([value[1:], (0.0 if last_zero else 1.0) * value_last[None]])
    if boot_trunc == "final":
        value_tp1 = jnp.where(truncated, value_final, value_tp1)
    done = terminated | truncated
    no_boot = done if boot_trunc == "none" else terminated
    not_term = 1.0 if term_boots else 1.0 - no_boot.astype(jnp.float32)
    cut = {"terminated": terminated, "nothing": jnp.zeros_like(done)}.get(cut_with, done)
    delta = reward + gamma * not_term * value_tp1 - value

    def step(a_next, inputs):
        d, c = inputs
        a = d + gamma * lam * (1.0 - c) * a_next
        return a, a

    inputs = (delta, cut.astype(jnp.float32))
    return jax.lax.scan(step, jnp.zeros_like(value_last), inputs, reverse=not forwards)[1]


def test_gae_from_values_reference_passes(capsys):
    check_gae_from_values(gae_from_values_answer)

    def via_companion(reward, value, value_last, value_final, terminated, truncated, gamma, lam):
        value_tp1 = jnp.concatenate([value[1:], value_last[None]])
        value_tp1 = jnp.where(truncated, value_final, value_tp1)
        return ppo.gae(reward, value, value_tp1, terminated, terminated | truncated, gamma, lam)[0]

    check_gae_from_values(via_companion)
    assert capsys.readouterr().out.count("check passed") == 2


def gae_with(**mistake):
    return lambda *a: gae_from_values_answer(*a, **mistake)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (gae_with(cut_with="terminated"), "cut with `terminated` instead of `done`"),
        (gae_with(cut_with="nothing"), "across episode boundaries"),
        (gae_with(boot_trunc="next_episode"), "bootstraps from value\\[t \\+ 1\\], the first"),
        (gae_with(boot_trunc="none"), "a truncation is treated as a termination"),
        (gae_with(term_boots=True), "a terminated step bootstraps"),
        (gae_with(last_zero=True), "use value_last"),
        (lambda *a: gae_from_values_answer(*a[:6], a[6], 1.0), "lambda is missing"),
        (lambda *a: gae_from_values_answer(*a[:6], a[6], 0.0), "one-step TD error"),
        (gae_with(forwards=True), "forwards in time"),
        (
            lambda *a: gae_from_values_answer(*a).T,
            r"of shape \(7, 3\).*; it (returned|is) an? \w+ array of shape \(3, 7\)",
        ),
        (lambda *a: gae_from_values_answer(*a) + 0.1, "expected"),
        (lambda r, v: r, "raised TypeError"),
    ],
)
def test_gae_from_values_mistakes_are_named(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_gae_from_values(wrong)


# --- dual-clip objective -----------------------------------------------------------------


def dual_clip(ratio, adv, eps, c, low=None, pick=jnp.minimum, floor=jnp.maximum, everywhere=False):
    low = 1 - eps if low is None else low
    standard = pick(ratio * adv, jnp.clip(ratio, low, 1 + eps) * adv)
    return jnp.where((adv < 0) | everywhere, floor(standard, c * adv), standard)


def test_dual_clip_objective_reference_passes(capsys):
    check_dual_clip_objective(dual_clip)
    assert "check passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda r, a, e, c: -dual_clip(r, a, e, c), "sign is flipped"),
        (lambda r, a, e, c: dual_clip(r, a, e, c, low=e), r"clipped to \[eps, 1 \+ eps\]"),
        (lambda r, a, e, c: dual_clip(r, a, e, c, pick=jnp.maximum), "PPO takes the min"),
        (lambda r, a, e, c: ppo.clipped_surrogate(r, a, e), "without the dual clip"),
        (lambda r, a, e, c: dual_clip(r, a, e, c, everywhere=True), "positive advantages too"),
        (lambda r, a, e, c: dual_clip(r, a, e, c, floor=jnp.minimum), "it is a floor"),
        (lambda r, a, e, c: r * a, "nothing is clipped"),
        (
            lambda r, a, e, c: dual_clip(r, a, e, c).mean(),
            r"of shape \(3, 4\).*; it (returned|is) an? \w+ array of shape \(\)",
        ),
        (lambda r, a, e, c: dual_clip(r, a, e, c) + 0.01, "expected"),
    ],
)
def test_dual_clip_objective_mistakes_are_named(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_dual_clip_objective(wrong)


# --- ε-mixture over legal actions ----------------------------------------------------------


def eps_probs(logits, mask, eps, axis=-1, fill=-jnp.inf, spread="legal"):
    p = jax.nn.softmax(jnp.where(mask, logits, fill), axis=axis)
    legal = {"legal": mask.sum(-1, keepdims=True), "all": mask.shape[-1], "batch": mask.sum()}
    return (1 - eps) * p + eps * mask / legal[spread]


def test_epsilon_masked_probs_reference_passes(capsys):
    check_epsilon_masked_probs(eps_probs)
    assert "check passed" in capsys.readouterr().out


def nan_gradient_eps_probs(logits, mask, eps):
    p = jnp.exp(logits) * mask  # log(0) below: right values, nan gradient
    p = jnp.exp(jnp.log(p) - jnp.log(p.sum(-1, keepdims=True)))
    return (1 - eps) * p + eps * mask / mask.sum(-1, keepdims=True)


def one_row_only(logits, mask, eps):
    if logits.ndim == 1:
        return eps_probs(logits[::-1], mask[::-1], eps)[::-1] * 0.5 + 0.125
    return eps_probs(logits, mask, eps)


@pytest.mark.parametrize(
    "wrong, message",
    [
        (lambda x, m, e: eps_probs(x, m, e, axis=0), "runs over axis 0"),
        (lambda x, m, e: eps_probs(x, m, e, fill=1.0), "misplaced"),
        (lambda x, m, e: eps_probs(x, m, e, fill=0.0), "logit 0.0"),
        (
            lambda x, m, e: (1 - e) * jax.nn.softmax(jnp.where(m, x, -jnp.inf)) + e / 4,
            "illegal ones too",
        ),
        (lambda x, m, e: eps_probs(x, m, e, spread="all"), "divided by the number of actions"),
        (lambda x, m, e: eps_probs(x, m, e, spread="batch"), "counted over the whole batch"),
        (lambda x, m, e: eps_probs(x, m, 0.0), "epsilon is ignored"),
        (lambda x, m, e: eps_probs(x, m, 1 - e), "swapped"),
        (
            lambda x, m, e: (1 - e) * jax.nn.softmax(x) * m + e * m / m.sum(-1, keepdims=True),
            "not renormalised",
        ),
        (lambda x, m, e: eps_probs(x, m, e, axis=1), "sum to"),
        (
            lambda x, m, e: eps_probs(x, m, e).reshape(6, 4),
            r"of shape \(2, 3, 4\).*; it (returned|is) an? \w+ array of shape \(6, 4\)",
        ),
        (one_row_only, "one row"),
        (nan_gradient_eps_probs, "not finite"),
        (lambda x, m: x, "raised TypeError"),
    ],
)
def test_epsilon_masked_probs_mistakes_are_named(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_epsilon_masked_probs(wrong)


# --- a loss for make_train's loss_fn hook ----------------------------------------------------


def fill_loss(
    model,
    batch,
    clip_eps,
    vf_coef,
    ent_coef,
    normalise_advantages,
    fill=1.0,
    normalise=None,
    coefs=None,
):
    """ppo_loss_in_view with another fill; keyword arguments plant mistakes."""
    clip_eps, vf_coef, ent_coef = coefs or (clip_eps, vf_coef, ent_coef)
    normalise = normalise_advantages if normalise is None else normalise
    logits, value = jax.vmap(model)(batch.image)
    logits = jnp.where(batch.action_mask, logits, fill)
    ratio = jnp.exp(ppo.log_prob(logits, batch.action) - batch.log_prob)
    adv = ppo.normalise(batch.advantage) if normalise else batch.advantage
    policy_loss = -jnp.mean(ppo.clipped_surrogate(ratio, adv, clip_eps))
    value_loss = 0.5 * jnp.mean((value - batch.target) ** 2)
    loss = policy_loss + vf_coef * value_loss - ent_coef * jnp.mean(ppo.entropy(logits))
    return loss, {"policy_loss": policy_loss, "value_loss": value_loss}


def test_fill_one_loss_reference_passes(capsys):
    check_fill_one_loss(fill_loss)

    def masked_entropy(model, batch, **args):  # the entropy of the correct policy: accepted
        loss, metrics = fill_loss(model, batch, **args)
        logits, _ = jax.vmap(model)(batch.image)
        ent_coef = args["ent_coef"]
        filled = jnp.where(batch.action_mask, logits, 1.0)
        correct = ppo.masked_logits(logits, batch.action_mask)
        delta = jnp.mean(ppo.entropy(filled)) - jnp.mean(ppo.entropy(correct))
        return loss + ent_coef * delta, metrics

    check_fill_one_loss(masked_entropy)
    assert capsys.readouterr().out.count("check passed") == 2


#: Planted mistakes of the fill-one loss, (wrong answer, message): the messages' Japanese is
#: tested on them too (test_checks_language.py).
WRONG_FILL_ONE = [
    (ppo.ppo_loss, "this is the correct loss"),
    (lambda m, b, **k: fill_loss(m, b, **k, fill=0.0), "illegal logits get 0.0"),
    (lambda m, b, **k: fill_loss(m, b, **k, normalise=True), "normalise_advantages is ign"),
    (lambda m, b, **k: fill_loss(m, b, **k, coefs=(0.2, 0.5, 0.01)), "are ignored: use"),
    (lambda m, b, **k: fill_loss(m, b, **k)[0], r"should return \(loss, metrics\)"),
    (lambda m, b, **k: (fill_loss(m, b, **k)[0], {"x": jnp.zeros(3)}), r"metrics\['x'\]"),
    (lambda m, b, **k: (fill_loss(m, b, **k)[0] * 2, {}), "expected"),
    (lambda m, b: 0.0, "raised TypeError"),
    (lambda m, b, eps, vf, ent, norm: fill_loss(m, b, eps, vf, ent, norm), "raised TypeError"),
]


@pytest.mark.parametrize("wrong, message", WRONG_FILL_ONE)
def test_fill_one_loss_mistakes_are_named(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_fill_one_loss(wrong)
