"""Self-checks for the PPO chapter's exercises on rollout data: GAE from stored values, and
a loss for ``make_train``'s ``loss_fn`` hook."""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import describe, require_array
from companion.checks._messages import N_, _
from companion.checks.core import (
    Case,
    _Differs,
    close,
    fail,
    passed,
    require_function,
    run_answer,
    self_check,
    verdict,
)


def _gae_from_values_reference(
    reward, value, value_last, value_final, terminated, truncated, gamma, lam, mistakes=()
):
    """GAE by a plain loop over time, vectorised over environments; ``mistakes`` plant errors."""
    value_tp1 = np.concatenate([value[1:], value_last[None]], axis=0)
    if "roll" in mistakes:
        value_tp1 = np.roll(value, -1, axis=0)
    if "last_zero" in mistakes:
        value_tp1[-1] = 0.0
    if "through_truncation" not in mistakes:
        value_tp1 = np.where(truncated, value_final, value_tp1)
    done = terminated | truncated
    not_terminated = 1.0 - terminated
    if "truncation_as_termination" in mistakes:
        not_terminated = 1.0 - done
    if "termination_bootstraps" in mistakes:
        not_terminated = np.ones_like(not_terminated)
    cut = terminated if "cut_terminated" in mistakes else done
    if "cut_next" in mistakes:
        cut = np.concatenate([cut[1:], cut[-1:]])
    cut = 0 * done if "no_cut" in mistakes else cut
    lam = 1.0 if "lam_one" in mistakes else 0.0 if "lam_zero" in mistakes else lam
    decay = lam if "no_gamma" in mistakes else gamma * lam
    discount = 1.0 if "no_gamma_delta" in mistakes else gamma
    delta = reward + discount * not_terminated * value_tp1 - value
    advantages, carried = np.zeros_like(delta), np.zeros(delta.shape[1])
    steps = range(len(delta)) if "forwards" in mistakes else reversed(range(len(delta)))
    for t in steps:
        carried = delta[t] + decay * (1.0 - cut[t]) * carried
        advantages[t] = carried
    return advantages + value if "plus_value" in mistakes else advantages


_GAE_MISTAKES = {
    ("cut_terminated", "through_truncation"): N_(
        "truncations are ignored: a truncated step bootstraps from value_final[t], not from value[t + 1] of the next episode, and the recursion is cut there too (done = terminated | truncated)"
    ),
    ("no_cut", "termination_bootstraps", "through_truncation"): N_(
        "the episode ends are ignored: the recursion runs across them and every step bootstraps from value[t + 1]"
    ),
    ("cut_terminated",): N_(
        "the recursion is cut with `terminated` instead of `done`: a truncation ends the episode too, so multiply gamma * lam * A_{t+1} by (1 - done_t), done = terminated | truncated"
    ),
    ("no_cut",): N_(
        "the sum runs across episode boundaries: multiply gamma * lam * A_{t+1} by (1 - done_t)"
    ),
    ("through_truncation",): N_(
        "a truncated step bootstraps from value[t + 1], the first observation of the next episode; use value_final[t], its true final observation"
    ),
    ("truncation_as_termination",): N_(
        "a truncation is treated as a termination: a truncated step still bootstraps, from value_final[t]"
    ),
    ("termination_bootstraps",): N_(
        "a terminated step bootstraps: after a termination V(s_{t+1}) is 0"
    ),
    ("roll",): N_(
        "V(s_{t+1}) is jnp.roll(value, -1, axis=0), which wraps round: the last step bootstraps from value[0]; it should use value_last"
    ),
    ("last_zero",): N_(
        "the last step does not bootstrap: the rollout's end is not an episode's end, use value_last for V(s_T)"
    ),
    ("cut_next",): N_(
        "the recursion is cut one step early, by done_{t+1}: a step's own end cuts what follows it, so multiply gamma * lam * A_{t+1} by (1 - done_t)"
    ),
    ("lam_one",): N_("lambda is missing from the recursion A_t = delta_t + gamma * lam * A_{t+1}"),
    ("lam_zero",): N_(
        "with lam = 0 you get the one-step TD error; lam must weight the later terms"
    ),
    ("no_gamma",): N_("gamma is missing from the recursion: A_t = delta_t + gamma * lam * A_{t+1}"),
    ("forwards",): N_("the advantages accumulate forwards in time; run the recursion backwards"),
    ("plus_value",): N_(
        "this is advantage + value, the critic's targets (the lambda-returns): return the advantages alone"
    ),
    ("no_gamma_delta",): N_(
        "gamma is missing from the TD error: delta_t = r_t + gamma * (1 - terminated_t) * V(s_{t+1}) - V(s_t)"
    ),
}

_GAE_NAMES = ("reward", "value", "value_last", "value_final", "terminated", "truncated")


def _gae_case(T, N, ends, gamma, lam, seed) -> Case:
    """A rollout of ``T`` steps of ``N`` environments; ``ends`` maps (t, n) to "term" or
    "trunc"."""
    rng = np.random.default_rng(seed)
    reward = (rng.uniform(size=(T, N)) < 0.3).astype(np.float32)
    value = rng.uniform(-0.9, 0.9, (T, N)).astype(np.float32)
    value_last = rng.uniform(-0.9, 0.9, N).astype(np.float32)
    terminated, truncated = np.zeros((T, N), bool), np.zeros((T, N), bool)
    for (t, n), kind in ends.items():
        (terminated if kind == "term" else truncated)[t, n] = True
    value_final = np.where(truncated, rng.uniform(-0.9, 0.9, (T, N)), 0.0).astype(np.float32)
    arrays = (reward, value, value_last, value_final, terminated, truncated)
    mistakes = {
        _(message): _gae_from_values_reference(*arrays, gamma, lam, names)
        for names, message in _GAE_MISTAKES.items()
    }
    return Case(
        _("{steps} steps of {envs} environments, gamma {gamma}, lam {lam}").format(
            steps=T, envs=N, gamma=gamma, lam=lam
        ),
        {**dict(zip(_GAE_NAMES, arrays)), "gamma": gamma, "lam": lam},
        _gae_from_values_reference(*arrays, gamma, lam),
        mistakes,
    )


#: The kinds of step whose TD error delta_t differs, and delta_t there.
_GAE_STEPS = {
    "last": N_(
        "at the last step of the rollout, t = T - 1, where V(s_T) is value_last: delta_t = "
        "r_t + gamma * value_last - value[t]"
    ),
    "terminated": N_(
        "where an episode terminated, where nothing follows: delta_t = r_t - value[t]"
    ),
    "truncated": N_(
        "where an episode was truncated, which bootstraps from its true final observation: "
        "delta_t = r_t + gamma * value_final[t] - value[t]"
    ),
    "inside": N_("on steps inside an episode: delta_t = r_t + gamma * value[t + 1] - value[t]"),
}


def _implied_deltas(advantages, terminated, truncated, gamma, lam) -> np.ndarray:
    """The delta_t that give ``advantages`` by the right recursion, undone:
    A_t - gamma * lam * (1 - done_t) * A_{t+1}."""
    advantages = np.asarray(advantages, np.float64)
    following = np.concatenate([advantages[1:], np.zeros_like(advantages[:1])])
    return advantages - gamma * lam * (1.0 - (terminated | truncated)) * following


def _gae_diagnosis(cases: list, outputs: list) -> None:
    """Name an unlisted mistake: advantages rescaled or shifted, or the kind of step (the
    rollout's last, an episode's end, inside an episode) where its TD errors differ."""
    differing = sum(
        not np.allclose(got, case.expected, rtol=1e-4, atol=1e-5)
        for case, got in zip(cases, outputs)
    )
    if differing < 2:  # one case alone may bring out anything
        return
    fits = []
    for case, got in zip(cases, outputs):
        expected = np.asarray(case.expected, np.float64).ravel()
        design = np.stack([expected, np.ones_like(expected)], axis=1)
        (scale, shift), *_rest = np.linalg.lstsq(design, np.ravel(got), rcond=None)
        fits.append((scale, shift, np.allclose(design @ (scale, shift), np.ravel(got), 1e-4, 1e-4)))
    if all(fit[2] for fit in fits):
        scale, shift, _fits = fits[0]
        if all(abs(fit[1]) < 1e-4 for fit in fits):
            fail(
                _(
                    "gae_from_values is off by a factor: on {case} it gives {scale} times the "
                    "right advantages"
                ).format(case=cases[0].label, scale=f"{scale:.4g}")
            )
        fail(
            _(
                "gae_from_values gives the right advantages A rescaled and shifted, a * A + b "
                "with a = {scale} and b = {shift} on {case}: normalised? Return the advantages "
                "themselves; the loss standardises them where it is asked to"
            ).format(case=cases[0].label, scale=f"{scale:.4g}", shift=f"{shift:.4g}")
        )
    discounts = []
    for case, got in zip(cases, outputs):
        reward, value, value_last, value_final, terminated, truncated = (
            np.asarray(case.inputs[k], np.float64) for k in _GAE_NAMES
        )
        gamma, lam = case.inputs["gamma"], case.inputs["lam"]
        following = np.concatenate([value[1:], value_last[None]])
        following = np.where(truncated, value_final, following)
        boots = ~terminated.astype(bool)
        implied = _implied_deltas(got, terminated.astype(bool), truncated.astype(bool), gamma, lam)
        rest = implied - reward + value
        if not np.allclose(rest[~boots], 0.0, atol=1e-4):
            break
        k = np.sum(rest[boots] * following[boots]) / np.sum(following[boots] ** 2)
        if not np.allclose(rest[boots], k * following[boots], atol=1e-4):
            break
        discounts.append((case, k))
    else:
        case, k = discounts[0]
        fail(
            _(
                "gae_from_values: its TD errors discount V(s_{{t+1}}) by {k}, not by gamma = "
                "{gamma} (on {case}): delta_t = r_t + gamma * (1 - terminated_t) * V(s_{{t+1}}) "
                "- V(s_t)"
            ).format(k=f"{k:.4g}", gamma=case.inputs["gamma"], case=case.label)
        )
    kinds, first = set(), None
    for case, got in zip(cases, outputs):
        terminated, truncated = case.inputs["terminated"], case.inputs["truncated"]
        gamma, lam = case.inputs["gamma"], case.inputs["lam"]
        implied = _implied_deltas(got, terminated, truncated, gamma, lam)
        deltas = _implied_deltas(case.expected, terminated, truncated, gamma, lam)
        kind = np.where(terminated, "terminated", np.where(truncated, "truncated", "inside"))
        kind[-1] = np.where(terminated[-1] | truncated[-1], kind[-1], "last")
        wrong = ~np.isclose(implied, deltas, rtol=1e-4, atol=1e-4)
        kinds |= set(kind[wrong].tolist())
        if first is None and wrong.any():
            t, n = (int(i) for i in np.argwhere(wrong)[-1])
            first = (case, t, n, implied[t, n], deltas[t, n], kind[t, n])
    if len(kinds) != 1:
        return
    case, t, n, got, expected, kind = first
    fail(
        _(
            "gae_from_values: its TD errors differ only {where}. Undoing the recursion "
            "A_t = delta_t + gamma * lam * (1 - done_t) * A_{{t+1}} on its advantages for {case} "
            "gives delta_t = {got} at t = {t}, environment {n}; expected {expected}"
        ).format(
            where=_(_GAE_STEPS[kind]),
            case=case.label,
            got=f"{got:.4f}",
            t=t,
            n=n,
            expected=f"{expected:.4f}",
        )
    )


@self_check
def check_gae_from_values(gae_from_values: Callable) -> None:
    """Check ``gae_from_values(reward, value, value_last, value_final, terminated, truncated,
    gamma, lam)``: GAE over a rollout that stores values, not next values.

    ``reward``, ``value`` (V at each step's start) float32, ``terminated``, ``truncated`` bool
    (never both): ``(T, N)``; ``value_last`` float32 ``(N,)``, V after the last step;
    ``value_final`` float32 ``(T, N)``, V of a truncated step's true final observation (else 0).
    Returns float32 ``(T, N)``: :func:`companion.agents.ppo.gae` (Schulman et al., 2016) with
    ``V(s_{t+1})`` = ``value_final[t]`` at a truncation, else ``value[t + 1]`` (``value_last``
    at ``T - 1``), and ``done = terminated | truncated``. Runs the answer under ``jax.jit``
    (``gamma`` and ``lam`` static).

    Raises:
        CheckFailed: naming the mistake (cut by ``terminated`` or not cut, a wrong bootstrap at an
            end, ``value_last`` ignored or rolled round, lambda 0 or 1, no gamma in the recursion
            or in delta, forwards, advantage + value returned, shape or dtype).
    """
    cases = [
        # env 0: a termination at t=1 and a truncation at t=4; env 1: a truncation at t=2
        # and a termination at t=5; env 2: truncations at t=0 and at the last step, t=6
        _gae_case(
            7,
            3,
            {
                (1, 0): "term",
                (4, 0): "trunc",
                (2, 1): "trunc",
                (5, 1): "term",
                (0, 2): "trunc",
                (6, 2): "trunc",
            },
            0.9,
            0.8,
            20,
        ),
        # a termination at the last step, back-to-back episode ends, an env with none
        _gae_case(
            5,
            4,
            {(4, 0): "term", (1, 1): "term", (2, 1): "trunc", (3, 1): "term", (2, 3): "trunc"},
            0.5,
            0.95,
            21,
        ),
    ]
    outputs = []
    for case in cases:
        arrays = [jnp.asarray(case.inputs[k]) for k in _GAE_NAMES]
        call = _("gae_from_values(...) for {case}").format(case=case.label)
        got = run_answer(
            gae_from_values,
            *arrays,
            case.inputs["gamma"],
            case.inputs["lam"],
            call=call,
        )
        outputs.append(
            require_array(
                got,
                call,
                arrays[0].shape,
                np.float32,
                why=_("one advantage per step and environment, time first, like reward"),
            )
        )
    try:
        verdict("gae_from_values", cases, outputs, rtol=1e-4, atol=1e-5)
    except _Differs:
        _gae_diagnosis(cases, outputs)
        raise
    passed(_("gae_from_values cuts at every episode end and bootstraps truncations correctly"))


class _LinearActorCritic(eqx.Module):
    """A linear actor-critic on the flattened image: cheap to build, enough for a loss."""

    weight: jax.Array  # (5, 3 * rows * cols): 4 logits, then the value

    def __call__(self, image):
        out = self.weight @ image.reshape(-1)
        return out[:4], out[4]


def _fill_one_batch():
    from companion.agents import ppo

    rng = np.random.default_rng(30)
    size = 16
    model = _LinearActorCritic(jnp.asarray(rng.normal(0, 0.1, (5, 300)), jnp.float32))
    image = rng.uniform(size=(size, 3, 10, 10)).astype(np.float32)
    mask = rng.uniform(size=(size, 4)) < 0.6
    mask[:, 0] = True
    logits = np.einsum("ij,bj->bi", np.asarray(model.weight[:4]), image.reshape(size, -1))
    shifted = np.where(mask, logits, -np.inf)
    shifted -= shifted.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    action = np.array([rng.choice(np.flatnonzero(row)) for row in mask], np.int32)
    old_log_prob = log_p[np.arange(size), action] + rng.normal(0, 0.2, size)  # ratios != 1
    batch = ppo.Batch(
        image=jnp.asarray(image),
        action_mask=jnp.asarray(mask),
        action=jnp.asarray(action),
        log_prob=jnp.asarray(old_log_prob, jnp.float32),
        value=jnp.asarray(rng.normal(size=size), jnp.float32),
        advantage=jnp.asarray(rng.normal(size=size), jnp.float32),
        target=jnp.asarray(rng.normal(size=size), jnp.float32),
    )
    return model, batch


def _loss_with_fill(model, batch, coefs, normalise, fill, entropy_masked=False, cut=False, slip=""):
    """ppo.ppo_loss with the illegal logits filled with ``fill`` in the ratio; ``cut`` stops
    the gradient of the ratio, ``slip`` plants another mistake ("value_half": no 0.5 on the
    value loss, "entropy_sign", "policy_sign": a term's sign flipped, "no_clip")."""
    from companion.agents import ppo

    clip_eps, vf_coef, ent_coef = coefs
    logits, value = jax.vmap(model)(batch.image)
    filled = jnp.where(batch.action_mask, logits, fill)
    ratio = jnp.exp(ppo.log_prob(filled, batch.action) - batch.log_prob)
    ratio = jax.lax.stop_gradient(ratio) if cut else ratio
    advantage = ppo.normalise(batch.advantage) if normalise else batch.advantage
    surrogate = ratio * advantage if slip == "no_clip" else None
    if surrogate is None:
        surrogate = ppo.clipped_surrogate(ratio, advantage, clip_eps)
    policy_loss = (1.0 if slip == "policy_sign" else -1.0) * jnp.mean(surrogate)
    value_loss = (1.0 if slip == "value_half" else 0.5) * jnp.mean((value - batch.target) ** 2)
    for_entropy = ppo.masked_logits(logits, batch.action_mask) if entropy_masked else filled
    entropy_term = ent_coef * jnp.mean(ppo.entropy(for_entropy))
    sign = -1.0 if slip == "entropy_sign" else 1.0
    return policy_loss + vf_coef * value_loss - sign * entropy_term


def _flat_grad(loss, model) -> np.ndarray:
    grads = eqx.filter_grad(loss)(model)
    return np.concatenate([np.ravel(g) for g in jax.tree.leaves(grads)])


#: Slips in ppo_loss's terms, by the name _loss_with_fill plants them with.
_FILL_SLIPS = {
    "value_half": N_(
        "the value loss lacks its 0.5: ppo_loss's value loss is 0.5 * mean((value - target) ** 2)"
    ),
    "entropy_sign": N_(
        "the entropy bonus has the wrong sign: the loss subtracts ent_coef * entropy, so that "
        "minimising it keeps the policy exploring"
    ),
    "policy_sign": N_(
        "the policy term has the wrong sign: the loss is minus the clipped surrogate's mean"
    ),
    "no_clip": N_(
        "the ratio is not clipped: the policy term is minus the mean of "
        "ppo.clipped_surrogate(ratio, advantage, clip_eps), not of ratio * advantage"
    ),
}


@self_check
def check_fill_one_loss(loss_fn: Callable) -> None:
    """Check ``loss_fn(model, batch, clip_eps, vf_coef, ent_coef, normalise_advantages)``.

    :func:`companion.agents.ppo.ppo_loss` with illegal logits filled with 1.0 (the blog's mask
    bug), same keywords, for ``ppo.default_loss(config, loss_fn)``. ``batch``: a
    :class:`companion.agents.ppo.Batch` of 16. Returns ``(loss, metrics)``, float32 scalar and dict
    of float32 scalars, under ``jit``; the entropy may use the 1.0-filled or the masked logits.

    Raises:
        CheckFailed: for a result that is not ``(loss, metrics)`` of float32 scalars (a bare
            loss, metrics that are not scalars), or naming the mistake (the correct -inf mask, a
            0.0 fill, ``normalise_advantages`` or coefficients ignored, a gradient that is cut by
            ``stop_gradient``, differs or is not finite).
    """
    from companion.agents import ppo

    require_function(loss_fn, "loss_fn")
    model, batch = _fill_one_batch()
    names = ("clip_eps", "vf_coef", "ent_coef")
    cases, outputs = [], []
    for coefs, normalise in (((0.2, 0.5, 0.01), True), ((0.1, 1.0, 0.05), False)):
        kwargs = {**dict(zip(names, coefs)), "normalise_advantages": normalise}
        call = "loss_fn(model, batch, " + ", ".join(f"{k}={v}" for k, v in kwargs.items()) + ")"
        out = run_answer(
            lambda model, batch, kwargs=kwargs: loss_fn(model, batch, **kwargs),
            model,
            batch,
            call=call,
            hint=_(
                "ppo.default_loss(config, loss_fn) binds ppo_loss's keyword "
                "arguments clip_eps, vf_coef, ent_coef and normalise_advantages; make_train then "
                "calls it inside jit"
            ),
        )
        if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict)):
            fail(
                _(
                    "{call} should return (loss, metrics), a float32 scalar and a dict of "
                    "float32 scalars, like ppo.ppo_loss: make_train needs the metrics dict too "
                    "(return {{}} if you have none); it returned {got}"
                ).format(call=call, got=describe(out))
            )
        loss, metrics = out
        what = _("the loss of {call}").format(call=call)
        loss = float(require_array(loss, what, (), np.float32, returns=False))
        for name, value in metrics.items():
            require_array(
                value,
                _("metrics[{name}] of {call}").format(name=repr(name), call=call),
                (),
                np.float32,
                why=_("make_train averages scalars"),
                returns=False,
            )
        refs = [
            float(_loss_with_fill(model, batch, coefs, normalise, 1.0, masked))
            for masked in (False, True)
        ]
        expected = next((r for r in refs if close(loss, r, 1e-4, 1e-6)), refs[0])
        cases.append(
            Case(
                call,
                kwargs,
                expected,
                {
                    _(
                        "this is the correct loss (illegal logits -inf); the bug to reproduce fills "
                        "them with 1.0"
                    ): float(ppo.ppo_loss(model, batch, *coefs, normalise)[0]),
                    _("illegal logits get 0.0; the bug to reproduce fills them with 1.0"): float(
                        _loss_with_fill(model, batch, coefs, normalise, 0.0)
                    ),
                    _(
                        "normalise_advantages is ignored: the advantages are always standardised; do "
                        "it only when it is True (the fixed-maze configuration sets it False)"
                    ): float(_loss_with_fill(model, batch, coefs, True, 1.0)),
                    _(
                        "normalise_advantages is ignored: the advantages are never standardised; do it "
                        "when it is True"
                    ): float(_loss_with_fill(model, batch, coefs, False, 1.0)),
                    _(
                        "normalise_advantages works the wrong way round: standardise the advantages "
                        "when it is True"
                    ): float(_loss_with_fill(model, batch, coefs, not normalise, 1.0)),
                    _(
                        "the arguments clip_eps, vf_coef and ent_coef are ignored: use the values "
                        "make_train passes"
                    ): float(_loss_with_fill(model, batch, (0.2, 0.5, 0.01), normalise, 1.0)),
                    **{
                        _(message): [
                            float(_loss_with_fill(model, batch, coefs, normalise, 1.0, e, slip=s))
                            for e in (False, True)
                        ]
                        for s, message in _FILL_SLIPS.items()
                    },
                },
            )
        )
        outputs.append(loss)
    verdict("loss_fn", cases, outputs, rtol=1e-4)
    kwargs = {"clip_eps": 0.2, "vf_coef": 0.5, "ent_coef": 0.01, "normalise_advantages": True}
    got = run_answer(
        lambda m: _flat_grad(lambda m: loss_fn(m, batch, **kwargs)[0], m),
        model,
        call=_("jax.grad of loss_fn(model, batch, ...)[0]"),
        jit=False,
    )
    if not np.all(np.isfinite(got)):
        fail(_("loss_fn: its gradient with respect to the model is not finite"))
    coefs = (0.2, 0.5, 0.01)
    refs = [
        _flat_grad(lambda m, e=e: _loss_with_fill(m, batch, coefs, True, 1.0, e), model)
        for e in (False, True)
    ]
    if any(close(got, ref, 1e-4, 1e-6) for ref in refs):
        passed(
            _("loss_fn is ppo_loss with the 1.0 fill, ready for ppo.default_loss(config, loss_fn)")
        )
        return
    cut = [
        _flat_grad(lambda m, e=e: _loss_with_fill(m, batch, coefs, True, 1.0, e, True), model)
        for e in (False, True)
    ]
    if any(close(got, ref, 1e-4, 1e-6) for ref in cut):
        fail(
            _(
                "loss_fn has the right value, but no policy gradient flows through the ratio: a "
                "jax.lax.stop_gradient (or log-probabilities computed outside the loss) cuts it. "
                "Only batch.log_prob, the old policy's, is a constant"
            )
        )
    fail(
        _(
            "loss_fn has the right value but the wrong gradient with respect to the model "
            "(largest difference {difference}): something in the loss is held constant or "
            "computed from the wrong logits"
        ).format(difference=f"{np.abs(got - refs[0]).max():.3g}")
    )
