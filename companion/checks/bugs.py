"""Self-checks for the find-the-bug exercises: each runs the reader's *fixed* function.

:func:`check_decayed_training` (a new trace every step), :func:`check_collector` (``terminated``
late); also ``foundations.check_q_learning`` and ``keys.check_rollout_keys``.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import _is_array, describe, require_array
from companion.checks._messages import _
from companion.checks.core import (
    close,
    fail,
    passed,
    require_function,
    require_pair,
    run_answer,
    self_check,
)
from companion.envs import cartpole

#: The learning-rate schedule of the networks chapter's exercise: 0.1 * 0.97**step.
LEARNING_RATE = 0.1
DECAY = 0.97

_model_calls = [0]  # how often _CountingMLP's Python code ran: once per trace under jit
_under_jit: list = []  # for each of those runs, whether it ran under jit (None: unknown)


def _am_i_under_a_jit(x) -> bool:
    """Whether ``x``, an input of the model, is traced by ``jax.jit``: a jaxpr tracer, maybe
    inside ``vmap``'s or ``grad``'s tracers (under jit every input is one)."""
    tracer = x
    while isinstance(tracer, jax.core.Tracer):
        if type(tracer).__name__ == "DynamicJaxprTracer":
            return True
        tracer = getattr(tracer, "val", getattr(tracer, "primal", None))
    return False


_runs = itertools.count(1)


class _CountingMLP(eqx.Module):
    """An MLP float32 ``(1,)`` -> ``(1,)`` counting runs of its Python code (= traces under jit)."""

    mlp: eqx.nn.MLP
    run: int = eqx.field(static=True, default=0)  # new for each check, so nothing is cached

    def __call__(self, x):
        _model_calls[0] += 1
        _under_jit.append(_am_i_under_a_jit(x))
        return self.mlp(x)


def _sgd_losses(
    model: eqx.Module, x, y, num_steps: int, decay: float, start: int = 0, rate: Any = None
) -> np.ndarray:
    """The losses of ``num_steps`` SGD steps with learning rate ``0.1 * decay**(step + start)``,
    or ``rate(step)``."""

    def loss_fn(model):
        return jnp.mean((jax.vmap(model)(x) - y) ** 2)

    @eqx.filter_jit
    def step(model, learning_rate):
        loss, grads = eqx.filter_value_and_grad(loss_fn)(model)
        updates = jax.tree.map(lambda g: -learning_rate * g, grads)
        return eqx.apply_updates(model, updates), loss

    losses = []
    for t in range(num_steps):
        value = LEARNING_RATE * decay ** (t + start) if rate is None else rate(t)
        model, loss = step(model, jnp.asarray(value, jnp.float32))
        losses.append(float(loss))
    return np.array(losses)


def _require_losses(answer: tuple, num_steps: int) -> np.ndarray:
    """The losses of ``train_decayed``'s ``(model, losses)``, float32 ``(num_steps,)``, after
    checking the pair against its contract: an equinox model, and one float loss per step, a
    list of floats or a float array."""
    call = f"train_decayed(model, x, y, {num_steps})"
    model, losses = answer
    if not isinstance(model, eqx.Module):
        fail(
            _(
                "the first result of {call} should be the trained model, an equinox module; it "
                "is {got}"
            ).format(call=call, got=describe(model))
        )

    def is_float(value) -> bool:
        return isinstance(value, float) or (
            _is_array(value) and value.shape == () and jnp.issubdtype(value.dtype, jnp.floating)
        )

    if isinstance(losses, (list, tuple)):
        right = len(losses) == num_steps and all(is_float(v) for v in losses)
    else:
        right = _is_array(losses) and jnp.issubdtype(losses.dtype, jnp.floating)
        right = right and losses.shape == (num_steps,)
    if not right:
        fail(
            _(
                "the losses of {call} should be {steps} float losses, one per step (a list of "
                "floats, or a float array of shape ({steps},)); they are {got}"
            ).format(call=call, steps=num_steps, got=describe(losses))
        )
    return np.asarray([float(v) for v in losses], np.float32)


@self_check
def check_decayed_training(train_decayed: Callable) -> None:
    """Check ``train_decayed(model, x, y, num_steps) -> (model, losses)``: SGD compiled once.

    ``model`` an equinox module, float32 ``(1,)`` -> ``(1,)``; ``x``, ``y`` float32 ``(batch, 1)``;
    ``losses``: ``num_steps`` floats of plain SGD on the MSE, learning rate ``0.1 * 0.97**step``.
    Traces are counted through the model's Python code (it runs once per trace under ``jit``).

    Raises:
        CheckFailed: naming the mistake (traced anew at every step, run without jit, traced more
            than twice, a rate that does not decay or grows, a schedule one step late or early,
            the base rate left out, a product for the power, losses off the schedule), or a result that is not ``(model, losses)``, an equinox model and
            ``num_steps`` float losses (a list of floats or a float array).
    """
    require_function(train_decayed, "train_decayed")
    x = jnp.linspace(-1.0, 1.0, 16, dtype=jnp.float32)[:, None]
    y = jnp.sin(2.0 * x)
    mlp = eqx.nn.MLP(1, 1, 8, 1, activation=jnp.tanh, key=jax.random.key(0))
    num_steps = 8
    expected = _sgd_losses(mlp, x, y, num_steps, DECAY)
    _model_calls[0] = 0
    _under_jit.clear()
    answer = run_answer(
        train_decayed,
        _CountingMLP(mlp, run=next(_runs)),
        x,
        y,
        num_steps,
        call=_("train_decayed(model, x, y, 8)"),
        jit=False,
    )
    traces = _model_calls[0]
    require_pair(answer, _("train_decayed(model, x, y, 8)"), _("model, losses"))
    losses = _require_losses(answer, num_steps)
    if not close(losses, expected, rtol=1e-4, atol=1e-6):
        if close(losses, _sgd_losses(mlp, x, y, num_steps, 1.0), rtol=1e-4, atol=1e-6):
            fail(
                _(
                    "train_decayed: the learning rate does not decay; keep the schedule "
                    "{rate} * {decay}**step and change only how it reaches the step"
                ).format(rate=LEARNING_RATE, decay=DECAY)
            )
        if close(losses, _sgd_losses(mlp, x, y, num_steps, DECAY, start=1), rtol=1e-4, atol=1e-6):
            fail(
                _(
                    "train_decayed: the schedule is one step late, {rate} * {decay}**(step + "
                    "1); the first step's rate is {rate} * {decay}**0"
                ).format(rate=LEARNING_RATE, decay=DECAY)
            )
        schedules = {
            _(
                "train_decayed: the schedule is one step early, {rate} * {decay}**(step - 1); "
                "the first step's rate is {rate} * {decay}**0"
            ): lambda t: LEARNING_RATE * DECAY ** (t - 1),
            _(
                "train_decayed: the rate leaves out {rate}: it is {decay}**step, not {rate} * "
                "{decay}**step"
            ): lambda t: DECAY**t,
            _(
                "train_decayed: the rate is {rate} * {decay} * step, a product: the schedule "
                "raises {decay} to the power step, {rate} * {decay}**step"
            ): lambda t: LEARNING_RATE * DECAY * t,
            _(
                "train_decayed: the rate grows, {rate} / {decay}**step: it decays, {rate} * "
                "{decay}**step"
            ): lambda t: LEARNING_RATE / DECAY**t,
        }
        for message, schedule in schedules.items():
            if close(losses, _sgd_losses(mlp, x, y, num_steps, DECAY, rate=schedule), 1e-4, 1e-6):
                fail(message.format(rate=LEARNING_RATE, decay=DECAY))
        fail(
            _(
                "train_decayed: losses {losses}, expected {expected} (plain SGD on the mean "
                "squared error, learning rate {rate} * {decay}**step)"
            ).format(
                losses=np.round(losses, 5),
                expected=np.round(expected, 5),
                rate=LEARNING_RATE,
                decay=DECAY,
            )
        )
    if traces >= num_steps and not any(_under_jit) and None not in _under_jit:
        fail(
            _(
                "train_decayed: the step runs without jit: the model's Python code ran at each "
                "of the {steps} steps, operation by operation. Compile the step once with "
                "eqx.filter_jit (as sgd_step is), with the learning rate passed as an array"
            ).format(steps=num_steps)
        )
    if traces >= num_steps and None in _under_jit:  # this JAX cannot tell jit from eager
        fail(
            _(
                "train_decayed: the model's Python code ran {traces} times in {steps} steps: "
                "every step was traced anew (a Python float learning rate is static under "
                "eqx.filter_jit: pass it as an array, jnp.asarray), or the step is not "
                "compiled at all (compile it once with eqx.filter_jit)"
            ).format(traces=traces, steps=num_steps)
        )
    if traces >= num_steps:
        fail(
            _(
                "train_decayed: the model's Python code ran {traces} times in {steps} steps, "
                "under jit: the step was traced anew at every step. eqx.filter_jit treats an "
                "argument that is not an array (a Python float) as static, and every new "
                "learning rate is a new static value: pass it as an array (jnp.asarray); a "
                "function jitted anew inside the loop (a new lambda or closure each step) is "
                "traced anew too"
            ).format(traces=traces, steps=num_steps)
        )
    if traces > 2:
        fail(
            _(
                "train_decayed: the step was traced {traces} times in {steps} steps, where one "
                "trace serves every step: some argument changes its type, dtype or a static "
                "value between steps (a learning rate that is an array in some steps and a "
                "Python float in others, say)"
            ).format(traces=traces, steps=num_steps)
        )
    passed(
        _("train_decayed follows the schedule and traced its step {traces} time(s)").format(
            traces=traces
        )
    )


def _fallen(next_obs: np.ndarray, params: Any = cartpole.DEFAULT_PARAMS) -> np.ndarray:
    """Whether each observation float32 ``(T, 4)`` is past CartPole's limits (float64, as
    gymnasium compares)."""
    next_obs = next_obs.astype(np.float64)
    return (np.abs(next_obs[:, 0]) > params.x_threshold) | (
        np.abs(next_obs[:, 2]) > params.theta_threshold
    )


#: The time limit check_collector gives CartPole, so that random episodes also truncate.
_COLLECTOR_MAX_STEPS = 30


@contextlib.contextmanager
def _short_episodes(traces: list):
    """``cartpole.step_autoreset`` with a time limit of ``_COLLECTOR_MAX_STEPS`` steps while
    the block runs; each trace of it appends to ``traces``.

    JAX's caches are cleared on the way in and out: an answer compiled before (a check run
    again, an answer under its own ``jax.jit``) is traced again with the short limit, and the
    program compiled with it is not reused by the student's own calls afterwards.
    """
    original = cartpole.step_autoreset
    params = cartpole.DEFAULT_PARAMS._replace(max_steps=_COLLECTOR_MAX_STEPS)

    def step_autoreset(state, action, given=None):
        traces.append(1)
        default = given is None or given == cartpole.DEFAULT_PARAMS
        return original(state, action, params if default else given)

    jax.clear_caches()
    cartpole.step_autoreset = step_autoreset
    try:
        yield
    finally:
        cartpole.step_autoreset = original
        jax.clear_caches()


def _truncations(fell: np.ndarray, max_steps: int) -> np.ndarray:
    """Where the time limit ends an episode, given where the pole fell (bool (T,))."""
    out, length = np.zeros_like(fell), 0
    for t, f in enumerate(fell):
        length += 1
        out[t] = length >= max_steps and not f
        length = 0 if (f or out[t]) else length
    return out


@self_check
def check_collector(collect: Callable) -> None:
    """Check ``collect(key, num_steps)``: auto-resetting CartPole transitions, random policy.

    Returns a :class:`companion.agents.dqn.Transition`, time first: ``obs``, ``next_obs`` float32
    ``(T, 4)``; ``action`` int32, ``reward`` float32, ``terminated`` bool ``(T,)``. Runs 300
    steps, time limit 30, against :func:`companion.envs.cartpole.dynamics` (gymnasium CartPole-v1).

    Runs the answer under ``jax.jit`` (``num_steps`` static).

    Raises:
        CheckFailed: naming the mistake (``terminated`` late, missing, inverted, set at
            truncations or holding them, ``next_obs`` of the next episode or equal to ``obs``,
            the two swapped, ``obs`` stale or not reset after an episode end, an action
            recorded that is not the one stepped, one action throughout, actions dependent
            from step to step or not a fair coin), or
            a result that is not a ``Transition`` of those dtypes and shapes.
    """
    require_function(collect, "collect")
    num_steps = 300
    traces: list = []
    with _short_episodes(traces):
        call = f"collect(key, {num_steps})"
        answer = run_answer(  # a new function: traced here, whatever JAX compiled before
            lambda key, num_steps: collect(key, num_steps),
            jax.random.key(11),
            num_steps,
            call=call,
        )
    if not traces:
        fail(
            _(
                "collect never calls cartpole.step_autoreset (or it was compiled before this "
                "check ran): step the environment with cartpole.step_autoreset, as the chapter's "
                "collector does, and pass the function itself, not a jitted copy"
            )
        )
    limit = _COLLECTOR_MAX_STEPS
    fields = ("obs", "action", "reward", "next_obs", "terminated")
    if not all(hasattr(answer, f) for f in fields):
        fail(
            _(
                "{call} should return a dqn.Transition (fields {fields}), time first; it "
                "returned {got}"
            ).format(call=call, fields=", ".join(fields), got=describe(answer))
        )
    contract = {
        "obs": ((num_steps, 4), np.float32),
        "action": ((num_steps,), np.int32),
        "reward": ((num_steps,), np.float32),
        "next_obs": ((num_steps, 4), np.float32),
        "terminated": ((num_steps,), bool),
    }
    obs, action, reward, next_obs, terminated = (
        require_array(
            getattr(answer, f),
            _("transitions.{name} of {call}").format(name=f, call=call),
            *contract[f],
            why=_("one per step, time first"),
            returns=False,
        )
        for f in fields
    )
    if not np.isin(action, (0, 1)).all() or not (reward == 1.0).all():
        fail(_("every action should be 0 or 1 and every reward 1.0"))
    ones = float(action.mean())
    repeats = float(np.mean(action[1:] == action[:-1]))
    independent = ones**2 + (1 - ones) ** 2  # repeats of independent draws with these odds
    if ones in (0.0, 1.0):
        fail(
            _(
                "collect takes action {action} at every step: the steps share one key, or the "
                "action ignores its key. Draw each step's action with its own key"
            ).format(action=int(ones))
        )
    if abs(repeats - independent) > 0.15:
        fail(
            _(
                "collect's actions are not independent from step to step: {repeats} repeat the "
                "previous one, where independent draws with {ones} of 1s would repeat in "
                "{independent}. Draw each step's action with its own key"
            ).format(repeats=f"{repeats:.0%}", ones=f"{ones:.0%}", independent=f"{independent:.0%}")
        )
    if abs(ones - 0.5) > 0.15:
        fail(
            _(
                "collect's actions are 1 in {ones} of the steps, where a fair coin gives 50%: "
                "draw 0 and 1 with probability 1/2 each (jax.random.bernoulli(key_t) or "
                "jax.random.randint(key_t, (), 0, 2))"
            ).format(ones=f"{ones:.0%}")
        )
    after = np.asarray(jax.vmap(cartpole.dynamics)(jnp.asarray(obs), jnp.asarray(action)))
    fell = _fallen(after)
    truncated = _truncations(fell, limit)
    # float32 rounding differs between compiled programs: compare to a tolerance
    wrong = ~np.all(np.isclose(next_obs, after, rtol=1e-5, atol=1e-6), axis=1)
    reset_bound = cartpole.DEFAULT_PARAMS.reset_bound
    fresh_next = np.all(np.abs(next_obs) <= reset_bound, axis=1)
    ends = fell | truncated
    if wrong.any() and wrong[ends].all() and not wrong[~ends].any() and fresh_next[wrong].all():
        fail(
            _(
                "collect: at every episode end next_obs is the first observation of the next "
                "episode, not the state the episode ended in; store timestep.next_obs, which "
                "step_autoreset keeps, not timestep.obs"
            )
        )
    same = np.all(np.isclose(next_obs, obs, rtol=1e-5, atol=1e-6), axis=1)
    if same.mean() > 0.5:
        fail(
            _(
                "collect: next_obs equals obs at {count} of {steps} steps: it is the observation "
                "the step started from, not the one it produced. Store timestep.next_obs"
            ).format(count=int(same.sum()), steps=num_steps)
        )
    back = np.asarray(jax.vmap(cartpole.dynamics)(jnp.asarray(next_obs), jnp.asarray(action)))
    if np.mean(np.all(np.isclose(back, obs, rtol=1e-5, atol=1e-6), axis=1)) > 0.5:
        fail(
            _(
                "collect: obs and next_obs are swapped: obs is the state after next_obs and the "
                "action. obs is the observation the step starts from (the carry), next_obs "
                "timestep.next_obs"
            )
        )
    # obs, judged by the answer's own next_obs: it continues where that shows no episode end,
    # and starts afresh where it does
    fell_next = _fallen(next_obs)
    ended_next = (fell_next | _truncations(fell_next, limit))[:-1]
    continues = np.all(np.isclose(obs[1:], next_obs[:-1], rtol=1e-5, atol=1e-6), axis=1)
    fresh = np.all(np.abs(obs[1:]) <= reset_bound, axis=1)
    stale = ~continues & ~ended_next
    if stale.any():
        fail(
            _(
                "collect: obs at steps {steps} is not the previous transition's next_obs, "
                "though that transition ended no episode (its next_obs is within the limits, "
                "before the time limit): the obs stored is stale. Each step acts from the "
                "observation the step before produced: carry timestep.obs in the scan's carry"
            ).format(steps=(np.flatnonzero(stale)[:5] + 1).tolist())
        )
    if not fresh[ended_next].all():
        bad = np.flatnonzero(ended_next & ~fresh)[:5] + 1
        if continues[ended_next].all():
            fail(
                _(
                    "collect: after an episode ends, obs (steps {steps}) is the state it ended "
                    "in, the previous next_obs, not the first observation of the new episode: "
                    "carry timestep.obs, which step_autoreset resets, not timestep.next_obs"
                ).format(steps=bad.tolist())
            )
        fail(
            _(
                "collect: obs at steps {steps}, after an episode end, is neither a fresh start "
                "nor the previous next_obs; carry timestep.obs"
            ).format(steps=bad.tolist())
        )
    if not fell.any():
        fail(
            _("no episode ended in {steps} steps of random actions (about 14 should)").format(
                steps=num_steps
            )
        )
    other = np.asarray(jax.vmap(cartpole.dynamics)(jnp.asarray(obs), jnp.asarray(1 - action)))
    if wrong.any() and np.all(np.isclose(next_obs, other, rtol=1e-5, atol=1e-6)[wrong]):
        stepped = np.where(wrong, 1 - action, action)
        late = np.array_equal(action[1:], stepped[:-1])
        fail(
            (
                _(
                    "collect: the action recorded is the previous step's: at steps {steps} "
                    "next_obs is the state after obs and the other action. Record action_t, "
                    "the action this step passes to step_autoreset"
                )
                if late
                else _(
                    "collect: the action recorded is not the action stepped: at steps {steps} "
                    "next_obs is the state after obs and the other action. Record action_t, "
                    "the action passed to step_autoreset, and draw it once"
                )
            ).format(steps=np.flatnonzero(wrong)[:5].tolist())
        )
    if wrong.any():
        fail(
            _("collect: next_obs is not the state after obs and action at steps {steps}").format(
                steps=np.flatnonzero(wrong)[:5].tolist()
            )
        )
    if not np.array_equal(terminated, fell):
        late = np.concatenate([[False], fell[:-1]])
        if np.array_equal(terminated, late):
            fail(
                _(
                    "collect: terminated is one step late. The {count} transitions whose "
                    "next_obs has the pole past 12 degrees or the cart off the track are "
                    "marked False, and the first transition of each new episode is marked "
                    "True, so the TD target bootstraps from a fallen pole and cuts a healthy "
                    "step. Take terminated from this step's timestep, not from the previous one"
                ).format(count=int(fell.sum()))
            )
        if truncated.any() and np.array_equal(terminated, fell | truncated):
            fail(
                _(
                    "collect: terminated is also True at the {count} truncations (the time "
                    "limit, {limit} steps here): that is timestep.done. A truncated episode "
                    "could have gone on, so its TD target must still bootstrap: store "
                    "timestep.terminated"
                ).format(count=int(truncated.sum()), limit=limit)
            )
        ended = fell | truncated
        if truncated.any() and np.array_equal(terminated, np.concatenate([[False], ended[:-1]])):
            fail(
                _(
                    "collect: terminated is one step late, and it is set at truncations too "
                    "(timestep.done): take timestep.terminated of this step"
                )
            )
        if truncated.any() and np.array_equal(terminated, truncated):
            fail(
                _(
                    "collect: terminated is True exactly at the {count} truncations (the time "
                    "limit, {limit} steps here) and never where the pole fell: it holds "
                    "timestep.truncated. Store timestep.terminated"
                ).format(count=int(truncated.sum()), limit=limit)
            )
        if np.array_equal(terminated, ~fell):
            fail(
                _(
                    "collect: terminated is inverted: True at the steps where the episode goes "
                    "on and False at the {count} where the pole fell or the cart left the track"
                ).format(count=int(fell.sum()))
            )
        if not terminated.any():
            fail(
                _(
                    "collect: no transition is marked terminated, though {count} end with the "
                    "pole past 12 degrees or the cart off the track"
                ).format(count=int(fell.sum()))
            )
        fail(
            _(
                "collect: terminated should be True exactly where next_obs is past the limits; "
                "it disagrees at steps {steps}"
            ).format(steps=np.flatnonzero(terminated != fell)[:5].tolist())
        )
    passed(
        _(
            "collect flags its {terminations} terminations, not its {truncations} truncations"
        ).format(terminations=int(fell.sum()), truncations=int(truncated.sum()))
    )
