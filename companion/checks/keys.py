"""The PPO chapter's find-the-bug self-check: a rollout that must draw every action with a
fresh PRNG key (:func:`check_rollout_keys`)."""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import describe, require_array
from companion.checks._messages import _
from companion.checks.core import (
    _sub_jaxprs,
    close,
    fail,
    passed,
    require_function,
    require_pair,
    run_answer,
    self_check,
)


class _Sharpened(eqx.Module):
    """An actor-critic whose logits are scaled and shifted per action, so that its policy is
    far from uniform and a sampler that is not the policy's shows in the statistics."""

    model: eqx.Module
    scale: float = eqx.field(static=True)

    def __call__(self, image):
        logits, value = self.model(image)
        return self.scale * logits + jnp.array([1.5, 0.0, -1.5, 0.5]), value


def _num_carry(params: dict) -> int:
    """The number of carried values of a ``scan`` equation (its body returns them first):
    ``num_carry`` up to jax 0.11, the carry's part of ``ft_out`` from 0.12."""
    if "num_carry" in params:
        return params["num_carry"]
    if "ft_out" in params:
        carry, _ = params["ft_out"].unpack()  # a tree of (carry, ys)
        return len(carry)
    raise NotImplementedError(f"a scan whose parameters ({sorted(params)}) name no carry")


def _sampled_and_carried(jaxpr) -> bool:
    """Whether a ``scan`` in ``jaxpr`` samples with a key (``random_bits``) that it also
    carries to the next step, where it is split or sampled again: a key used twice that
    ``jax.debug_key_reuse`` does not follow through the loop."""

    def sampled(jaxpr) -> set:
        """The variables of ``jaxpr`` that reach a random_bits, directly or through a call."""
        out = set()
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "random_bits":
                out.add(eqn.invars[0])
            for inner in _sub_jaxprs(eqn):
                if len(inner.invars) == len(eqn.invars):
                    inner_sampled = sampled(inner)
                    out |= {v for v, w in zip(eqn.invars, inner.invars) if w in inner_sampled}
        return out

    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "scan":
            body = eqn.params["jaxpr"].jaxpr
            carried = body.outvars[: _num_carry(eqn.params)]
            if set(carried) & sampled(body):
                return True
        if any(_sampled_and_carried(inner) for inner in _sub_jaxprs(eqn)):
            return True
    return False


#: The time limit of the check's maze: 32 steps hold four episodes of every environment, so
#: the step count restarts within the rollout (a key made from it would repeat).
_TIME_LIMIT = 8


def _rollout_case(num_envs: int) -> tuple:
    """An untrained actor-critic on the medium maze with a short time limit, a reset pool and
    a batch of starts."""
    from companion.agents import ppo
    from companion.envs import maze as maze_lib
    from companion.envs.autoreset import make_reset_pool, reset_with_next_obs

    env = maze_lib.make_maze_task("medium", time_limit=_TIME_LIMIT)
    model = _Sharpened(ppo.FIXED_MAZE_NETWORK(jax.random.key(0)), 4.0)
    pool = make_reset_pool(env, jax.random.key(1), num_envs)
    starts = jax.random.split(jax.random.key(2), num_envs)
    env_state, timestep = jax.vmap(reset_with_next_obs, in_axes=(None, 0))(env, starts)
    return model, env, pool, env_state, timestep


def _z_score(observed: float, expected: float, variance: float) -> float:
    return (observed - expected) / np.sqrt(max(variance, 1e-12))


def _require_transitions(answer, args: tuple, call: str):
    """The transitions of ``rollout``'s ``(env_state, timestep, transitions)``, after checking
    them against their contract: a :class:`companion.agents.ppo.Transition` whose every field
    has the dtype and shape of :func:`companion.agents.ppo.rollout`'s on the same arguments."""
    from companion.agents import ppo

    require_pair(answer, call, _("env_state, timestep, transitions, as rollout_in_view's"), size=3)
    transitions = answer[2]
    if not isinstance(transitions, ppo.Transition):
        fail(
            _(
                "the third result of {call} should be the transitions, a ppo.Transition (as "
                "rollout_in_view's); it is {got}"
            ).format(call=call, got=describe(transitions))
        )
    model, env, pool, env_state, timestep, key, num_steps = args
    reference = jax.eval_shape(
        lambda m, p, s, t, k: ppo.rollout(m, env, p, s, t, k, num_steps)[2],
        model,
        pool,
        env_state,
        timestep,
        key,
    )
    action, mask = np.asarray(transitions.action), np.asarray(transitions.action_mask)
    if (
        action.shape == reference.action.shape
        and mask.shape == reference.action_mask.shape
        and np.issubdtype(action.dtype, np.integer)
        and ((action < 0) | (action >= mask.shape[-1])).sum() == 0
        and not np.take_along_axis(mask, action[..., None].astype(int), -1).all()
    ):  # before log_prob's -inf, which an illegal action gives under the mask
        fail(
            _(
                "rollout: some actions are illegal under the action mask they were chosen "
                "with: sample from the masked logits (ppo.masked_logits), not the raw ones"
            )
        )
    for name in ppo.Transition._fields:
        want = getattr(reference, name)
        require_array(
            getattr(transitions, name),
            _("transitions.{name} of {call}").format(name=name, call=call),
            want.shape,
            want.dtype,
            why=_("as ppo.rollout's: (num_steps, num_envs, ...)"),
            returns=False,
        )
    return transitions


@self_check
def check_rollout_keys(rollout: Callable) -> None:
    """Check ``rollout(model, env, pool, env_state, timestep, key, num_steps)``: fresh keys.

    Like the PPO chapter's ``rollout_in_view``: returns ``(env_state, timestep, transitions)``,
    a :class:`companion.agents.ppo.Transition` with leaves ``(num_steps, num_envs, ...)``.
    Runs 32 steps of 64 medium-maze environments with a time limit of 8 (so every environment
    ends episodes within the rollout), under ``jax.jit`` and ``jax.debug_key_reuse``.

    Raises:
        CheckFailed: naming the mistake (a key reused or ignored; actions shared across envs,
            repeated from step to step or from episode to episode at the same step count,
            illegal or not the policy's samples; wrong log-probabilities), or a result that
            is not ``(env_state, timestep, transitions)`` with every field of the transitions of
            the dtype and shape of :func:`companion.agents.ppo.rollout`'s.
    """
    from companion.agents import ppo

    require_function(rollout, "rollout")
    num_envs, num_steps = 64, 32
    model, env, pool, env_state, timestep = _rollout_case(num_envs)
    run = jax.jit(rollout, static_argnums=(1, 6))
    args = (model, env, pool, env_state, timestep, jax.random.key(3), num_steps)
    call = "rollout(model, env, pool, env_state, timestep, key, 32)"
    reused = None
    try:
        with jax.debug_key_reuse(True):
            answer = run_answer(run, *args, call=call, jit=False, reraise=jax.errors.KeyReuseError)
    except jax.errors.KeyReuseError as err:
        reused = err
    if reused is None:
        transitions = _require_transitions(answer, args, call)
    with jax.debug_key_reuse(False):
        make_program = jax.make_jaxpr(rollout, static_argnums=(1, 6))
        program = run_answer(make_program, *args, call=call, jit=False)
    if _sampled_and_carried(program):  # the commonest reuse: named whichever JAX reports it
        fail(
            _(
                "rollout samples an action with a key and carries that same key to the next step, "
                "where it is split or sampled again: a key used twice, so the steps share their "
                "random noise. Split, sample with one half, carry the other"
            )
        )
    if reused is not None:
        fail(
            _(
                "rollout: JAX's key-reuse checker finds a key used twice ({error}): every "
                "step of the scan consumes the same key again, one carried unchanged from step "
                "to step or one made before the scan and used inside it, and draws the same "
                "noise. Give every step a fresh key: split the carried key, sample with one "
                "half and carry the other"
            ).format(error=str(reused).splitlines()[0].rstrip(":"))
        )
    action = np.asarray(transitions.action)
    mask = np.asarray(transitions.action_mask)
    done = np.asarray(transitions.done)
    logits = jax.vmap(jax.vmap(model))(jnp.asarray(transitions.image, jnp.float32))[0]
    logits = ppo.masked_logits(logits, transitions.action_mask)
    probs = np.asarray(jax.nn.softmax(logits), np.float64)  # (T, N, 4)
    if not np.take_along_axis(mask, action[..., None].astype(int), -1).all():
        fail(_("rollout: some actions are illegal under the action mask they were chosen with"))
    expected_log_prob = np.asarray(ppo.log_prob(logits, jnp.asarray(action, jnp.int32)))
    if not close(transitions.log_prob, expected_log_prob, rtol=1e-4, atol=1e-5):
        fail(_("rollout: log_prob is not the log-probability of the action under the policy"))

    if np.array_equal(action, np.argmax(probs, -1)):
        fail(
            _(
                "rollout: every action is the policy's most probable one (an argmax): the agent "
                "does not explore, and its log_prob is not that of a sample. Draw each action "
                "with jax.random.categorical(key_t, logits_t), a fresh key_t at every step"
            )
        )
    with jax.debug_key_reuse(False):
        other = run_answer(
            run,
            *args[:5],
            jax.random.key(4),
            num_steps,
            jit=False,
            call=call.replace("key, 32", "another key, 32"),
        )[2]
    if np.array_equal(np.asarray(other.action), action):
        fail(_("rollout ignores its key: another key gave the same actions"))
    # environments side by side: independent samples agree as often as sum_a p_i(a) p_j(a)
    p_same = np.sum(probs[:, :-1] * probs[:, 1:], axis=-1)
    same = action[:, :-1] == action[:, 1:]
    same_z = _z_score(same.sum(), p_same.sum(), (p_same * (1 - p_same)).sum())
    if same_z > 5:
        fail(
            _(
                "rollout: neighbouring environments take the same action in {share} of steps, "
                "where independent samples would in {independent}: they share their random "
                "noise, drawing with the same key (as a jax.vmap of categorical with one key "
                "over the environments does, or keys made from something the environments "
                "share, such as the step count). jax.random.categorical(key_t, logits_t) on "
                "the whole batch draws each row apart"
            ).format(share=f"{same.mean():.0%}", independent=f"{p_same.mean():.0%}")
        )
    # how probable the taken actions were: samples of the policy average sum_a p(a)^2
    p_taken = np.take_along_axis(probs, action[..., None].astype(int), -1)[..., 0]
    second, third = np.sum(probs**2, -1), np.sum(probs**3, -1)
    taken_z = _z_score(p_taken.sum(), second.sum(), (third - second**2).sum())
    if abs(taken_z) > 5:
        fail(
            _(
                "rollout: the actions are not samples of the policy: the probability the "
                "policy gave the action taken averages {taken}, where samples of it would "
                "average {expected} ({z} standard deviations apart). Sample from the logits "
                "the log_prob is computed from (no temperature, noise or argmax), with "
                "jax.random.categorical"
            ).format(
                taken=f"{p_taken.mean():.3f}",
                expected=f"{second.mean():.3f}",
                z=f"{abs(taken_z):.0f}",
            )
        )
    taken = np.eye(4)[action.astype(int)]  # (T, N, 4) one-hot
    counts_z = [
        _z_score(taken[..., a].sum(), p.sum(), (p * (1 - p)).sum())
        for a, p in enumerate(np.moveaxis(probs, -1, 0))
    ]
    # repeats: at step t, the chance of the previous action, within an episode
    same_episode = ~done[:-1]
    p_repeat = np.take_along_axis(probs[1:], action[:-1, :, None].astype(int), -1)[..., 0]
    p_repeat = p_repeat[same_episode]
    repeats = (action[1:] == action[:-1])[same_episode]
    repeat_z = _z_score(repeats.sum(), p_repeat.sum(), (p_repeat * (1 - p_repeat)).sum())
    if abs(repeat_z) > 5:
        fail(
            _(
                "rollout: an environment takes its previous action again in {share} of steps, "
                "where independent samples from the same policy would in {independent} ({z} "
                "standard deviations apart): the steps' random choices are not independent. "
                "Does every step get a fresh key?"
            ).format(
                share=f"{repeats.mean():.0%}",
                independent=f"{p_repeat.mean():.0%}",
                z=f"{abs(repeat_z):.0f}",
            )
        )
    # the clock: an environment in the same state at the same step count of two of its
    # episodes (the count restarts at every reset, often from the same start) draws two
    # independent samples of one distribution there, which agree with probability sum_a p(a)^2
    clock = np.asarray(transitions.step_count)
    image = np.asarray(transitions.image).reshape(num_steps, num_envs, -1)
    pairs = [
        (t1, t2, n)
        for n in range(num_envs)
        for t1 in range(num_steps)
        for t2 in range(t1 + 1, num_steps)
        if clock[t1, n] == clock[t2, n] and np.array_equal(image[t1, n], image[t2, n])
    ]
    if pairs:
        t1, t2, n = np.asarray(pairs).T
        p_match = np.sum(probs[t1, n] ** 2, axis=-1)
        matches = action[t1, n] == action[t2, n]
        clock_z = _z_score(matches.sum(), p_match.sum(), (p_match * (1 - p_match)).sum())
        if clock_z > 5:
            fail(
                _(
                    "rollout: an environment back in the same state at the same step count of "
                    "another episode takes the same action again in {share} of {cases} cases, "
                    "where independent samples would in {independent} ({z} standard deviations "
                    "apart): its keys repeat from episode to episode, as keys made from the "
                    "step count do (it restarts at every reset). Give every step of the "
                    "rollout its own key, from the key you carry"
                ).format(
                    share=f"{matches.mean():.0%}",
                    cases=len(pairs),
                    independent=f"{p_match.mean():.0%}",
                    z=f"{clock_z:.0f}",
                )
            )
    if max(map(abs, counts_z)) > 5:
        fail(
            _(
                "rollout: the actions are not samples of the policy: action counts {counts} "
                "where the policy expects {expected}"
            ).format(
                counts=taken.sum(axis=(0, 1)).astype(int).tolist(),
                expected=np.round(probs.sum(axis=(0, 1))).astype(int).tolist(),
            )
        )
    passed(
        _(
            "rollout: fresh, independent actions in {steps} steps of {envs} environments, no "
            "key reused"
        ).format(steps=num_steps, envs=num_envs)
    )
