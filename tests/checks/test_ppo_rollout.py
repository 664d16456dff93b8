"""check_gae_from_values and check_fill_one_loss (chapter 8): right answers and each check's
bank of wrong answers (``WRONG_*``: slip, answer, verdict).

What each check guards, and the case that breaks each plausible wrong answer:

check_gae_from_values (GAE with V(s_{t+1}) from the stored values)
- the cut: by terminated, never, named; forwards in time, named;
- the bootstrap: a truncation from value_final (not value[t + 1], not none), a terminated
  step none; value_last at the end (not 0, not jnp.roll's value[0]); truncations ignored;
- lambda and gamma: lambda 0 or 1, gamma missing from delta, advantage + value, named;
  delta discounted by lambda: the discount its TD errors use, named; the cut one step
  early (done_{t+1}), named;
- an unlisted slip is told the kind of step where its TD errors (the recursion undone)
  differ: value[-1] for V(s_T) or a carry started at value_last, the last step;
- rescaled: normalised advantages or an offset (a * A + b), half of them (a factor);
- value_final at every end (0 at a termination) is right;
- the contract: transposed.

check_fill_one_loss (PPO's loss with illegal logits filled with 1.0)
- the fill: the correct -inf loss, a fill of 0, named;
- the arguments: normalise_advantages and the coefficients used, passed by keyword;
- the gradient: cut through the ratio, named; the entropy of either logits passes;
- the terms: no 0.5 on the value loss, the entropy bonus's or the policy term's sign, the
  ratio unclipped, named (the entropy of either logits);
- the contract: the loss alone, a metric that is not a scalar; twice the loss is generic.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from checks.answers import (
    _fill_loss_masked_entropy,
    bank_params,
    fill_loss,
    gae_from_values_answer,
    generic,
    passes,
    rejects,
    right_params,
)
from companion.agents import ppo

# --- check_gae_from_values: gae_from_values(reward, value, value_last, ...) ----------


def gae_loop(reward, value, value_last, value_final, terminated, truncated, gamma, lam):
    """A Python loop over time (unrolled under jit, but right)."""
    value_tp1 = jnp.concatenate([value[1:], value_last[None]])
    value_tp1 = jnp.where(truncated, value_final, value_tp1)
    delta = reward + gamma * (1.0 - terminated) * value_tp1 - value
    not_done = 1.0 - (terminated | truncated)
    advantage, out = jnp.zeros_like(value_last), []
    for t in reversed(range(reward.shape[0])):
        advantage = delta[t] + gamma * lam * not_done[t] * advantage
        out.insert(0, advantage)
    return jnp.stack(out)


RIGHT_GAE = [
    gae_from_values_answer,  # a reverse scan
    gae_loop,  # a loop over time
]
WRONG_GAE = [
    (
        "advantage + value",
        lambda *a: gae_from_values_answer(*a) + a[1],
        "advantage \\+ value, the critic's targets",
    ),
    (
        "no gamma in delta",
        lambda *a: gae_from_values_answer(*a[:6], 1.0, a[6] * a[7]),
        "gamma is missing from the TD error",
    ),
]


def gae_with(**mistake):
    return lambda *a: gae_from_values_answer(*a, **mistake)


def _gae_roll(reward, value, value_last, value_final, terminated, truncated, gamma, lam):
    """V(s_{t+1}) from jnp.roll: wraps round at the last step."""
    wrapped = value[0]
    return gae_from_values_answer(
        reward, value, wrapped, value_final, terminated, truncated, gamma, lam
    )


def _gae_ignoring_truncations(
    reward, value, value_last, value_final, terminated, truncated, gamma, lam
):
    return gae_from_values_answer(
        reward, value, value_last, value_final, terminated, jnp.zeros_like(truncated), gamma, lam
    )


def _gae_via_companion(reward, value, value_last, value_final, terminated, truncated, gamma, lam):
    value_tp1 = jnp.concatenate([value[1:], value_last[None]])
    value_tp1 = jnp.where(truncated, value_final, value_tp1)
    return ppo.gae(reward, value, value_tp1, terminated, terminated | truncated, gamma, lam)[0]


RIGHT_GAE += [_gae_via_companion]
WRONG_GAE += [
    (
        "cut with terminated",
        gae_with(cut_with="terminated"),
        "cut with `terminated` instead of `done`",
    ),
    ("never cut", gae_with(cut_with="nothing"), "across episode boundaries"),
    (
        "a truncation bootstraps from the next episode",
        gae_with(boot_trunc="next_episode"),
        "bootstraps from value\\[t \\+ 1\\], the first",
    ),
    (
        "a truncation as a termination",
        gae_with(boot_trunc="none"),
        "a truncation is treated as a termination",
    ),
    ("a terminated step bootstraps", gae_with(term_boots=True), "a terminated step bootstraps"),
    ("value_last left out", gae_with(last_zero=True), "use value_last"),
    ("lambda 1", lambda *a: gae_from_values_answer(*a[:6], a[6], 1.0), "lambda is missing"),
    ("lambda 0", lambda *a: gae_from_values_answer(*a[:6], a[6], 0.0), "one-step TD error"),
    ("forwards in time", gae_with(forwards=True), "forwards in time"),
    (
        "transposed",
        lambda *a: gae_from_values_answer(*a).T,
        r"of shape \(7, 3\).*; it (returned|is) an? \w+ array of shape \(3, 7\)",
    ),
    ("an offset", lambda *a: gae_from_values_answer(*a) + 0.1, r"rescaled and shifted.*b = 0.1"),
    ("two arguments", lambda r, v: r, "raised TypeError"),
    ("jnp.roll for the next value", _gae_roll, "jnp.roll.*wraps round"),
    ("truncations ignored", _gae_ignoring_truncations, "truncations are ignored"),
]


def _gae_unrolled(
    reward, value, value_last, value_final, terminated, truncated, gamma, lam, slip=""
):
    """A Python loop over time, written as a student writes it; ``slip`` plants one mistake."""
    steps = reward.shape[0]
    advantage, out = jnp.zeros_like(value_last), [None] * steps
    if slip == "carry_value_last":
        advantage = value_last
    for t in reversed(range(steps)):
        following = value_last if t == steps - 1 else value[t + 1]
        if slip == "repeat_last" and t == steps - 1:
            following = value[-1]
        following = jnp.where(truncated[t], value_final[t], following)
        discount = lam if slip == "lam_for_gamma" else gamma
        delta = reward[t] + discount * jnp.where(terminated[t], 0.0, following) - value[t]
        done = terminated[t] | truncated[t]
        if slip == "cut_next" and t < steps - 1:
            done = terminated[t + 1] | truncated[t + 1]
        advantage = delta + gamma * lam * jnp.where(done, 0.0, advantage)
        out[t] = advantage
    advantages = jnp.stack(out)
    if slip == "normalised":
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    if slip == "halved":
        advantages = 0.5 * advantages
    return advantages


def _gae_final_for_every_end(
    reward, value, value_last, value_final, terminated, truncated, gamma, lam
):
    """value_final (0 where the episode terminated) at every end: no (1 - terminated) needed."""
    following = jnp.concatenate([value[1:], value_last[None]])
    following = jnp.where(terminated | truncated, value_final, following)
    delta = reward + gamma * following - value

    def step(carried, inputs):
        d, done = inputs
        carried = d + gamma * lam * jnp.where(done, 0.0, carried)
        return carried, carried

    return jax.lax.scan(
        step, jnp.zeros_like(value_last), (delta, terminated | truncated), reverse=True
    )[1]


def _gae_slip(slip):
    return lambda *a: _gae_unrolled(*a, slip=slip)


RIGHT_GAE += [_gae_unrolled, _gae_final_for_every_end]
WRONG_GAE += [
    (
        "value[-1] repeated for V(s_T)",
        _gae_slip("repeat_last"),
        r"TD errors differ only at the last step of the rollout.*t = 6",
    ),
    (
        "normalised advantages",
        _gae_slip("normalised"),
        r"rescaled and shifted, a \* A \+ b.*normalised\?",
    ),
    # new slips
    (
        "the carry starts at value_last",
        _gae_slip("carry_value_last"),
        r"TD errors differ only at the last step of the rollout",
    ),
    ("lam for gamma in delta", _gae_slip("lam_for_gamma"), r"discount V\(s_\{t\+1\}\) by 0.8"),
    ("cut by the next step's done", _gae_slip("cut_next"), r"cut one step early"),
    ("half the advantages", _gae_slip("halved"), r"off by a factor: .* 0.5 times"),
]


# --- check_fill_one_loss: loss_fn(model, batch, clip_eps, vf_coef, ent_coef, ...) -----


def _fill_loss_cut(model, batch, clip_eps, vf_coef, ent_coef, normalise_advantages):
    logits, value = jax.vmap(model)(batch.image)
    logits = jnp.where(batch.action_mask, logits, 1.0)
    log_prob = jax.lax.stop_gradient(ppo.log_prob(logits, batch.action))
    ratio = jnp.exp(log_prob - batch.log_prob)
    adv = ppo.normalise(batch.advantage) if normalise_advantages else batch.advantage
    policy_loss = -jnp.mean(ppo.clipped_surrogate(ratio, adv, clip_eps))
    value_loss = 0.5 * jnp.mean((value - batch.target) ** 2)
    return policy_loss + vf_coef * value_loss - ent_coef * jnp.mean(ppo.entropy(logits)), {}


RIGHT_FILL_ONE = [fill_loss, _fill_loss_masked_entropy]
WRONG_FILL_ONE = [
    ("the correct loss", ppo.ppo_loss, "this is the correct loss"),
    ("a fill of 0", lambda m, b, **k: fill_loss(m, b, **k, fill=0.0), "illegal logits get 0.0"),
    (
        "advantages always normalised",
        lambda m, b, **k: fill_loss(m, b, **k, normalise=True),
        "normalise_advantages is ign",
    ),
    (
        "coefficients fixed",
        lambda m, b, **k: fill_loss(m, b, **k, coefs=(0.2, 0.5, 0.01)),
        "are ignored: use",
    ),
    (
        "the loss alone",
        lambda m, b, **k: fill_loss(m, b, **k)[0],
        r"should return \(loss, metrics\)",
    ),
    (
        "a metric of shape (3,)",
        lambda m, b, **k: (fill_loss(m, b, **k)[0], {"x": jnp.zeros(3)}),
        r"metrics\['x'\]",
    ),
    ("twice the loss", lambda m, b, **k: (fill_loss(m, b, **k)[0] * 2, {}), generic("expected")),
    ("two arguments", lambda m, b: 0.0, "raised TypeError"),
    (
        "positional hyperparameters",
        lambda m, b, eps, vf, ent, norm: fill_loss(m, b, eps, vf, ent, norm),
        "raised TypeError",
    ),
    ("the policy gradient cut", _fill_loss_cut, "no policy gradient flows through the ratio"),
]


#: Each check's right answers and its bank of wrong ones.


def _fill_loss_slip(model, batch, clip_eps, vf_coef, ent_coef, normalise_advantages, slip=""):
    """The 1.0-filled loss written out, ``slip`` planting one mistake in its terms."""
    logits, value = jax.vmap(model)(batch.image)
    logits = jnp.where(batch.action_mask, logits, 1.0)
    ratio = jnp.exp(ppo.log_prob(logits, batch.action) - batch.log_prob)
    adv = ppo.normalise(batch.advantage) if normalise_advantages else batch.advantage
    surrogate = ratio * adv if slip == "no_clip" else ppo.clipped_surrogate(ratio, adv, clip_eps)
    policy_loss = jnp.mean(surrogate) if slip == "policy_sign" else -jnp.mean(surrogate)
    squared = jnp.mean((value - batch.target) ** 2)
    value_loss = squared if slip == "value_half" else 0.5 * squared
    entropy = jnp.mean(ppo.entropy(logits))
    bonus = -ent_coef * entropy if slip == "entropy_sign" else ent_coef * entropy
    return policy_loss + vf_coef * value_loss - bonus, {}


def _fill_slip(slip):
    return lambda m, b, **k: _fill_loss_slip(m, b, **k, slip=slip)


WRONG_FILL_ONE += [
    ("no 0.5 on the value loss", _fill_slip("value_half"), "the value loss lacks its 0.5"),
    ("the entropy bonus added", _fill_slip("entropy_sign"), "entropy bonus has the wrong sign"),
    ("the policy term's sign", _fill_slip("policy_sign"), "the policy term has the wrong sign"),
    ("the ratio unclipped", _fill_slip("no_clip"), "the ratio is not clipped"),
]
RIGHT_FILL_ONE += [_fill_slip("")]

RIGHTS = {
    "check_gae_from_values": RIGHT_GAE,
    "check_fill_one_loss": RIGHT_FILL_ONE,
}
BANKS = {
    "check_gae_from_values": WRONG_GAE,
    "check_fill_one_loss": WRONG_FILL_ONE,
}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)
