"""Self-checks for the find-the-bug exercises.

Each exercise gives a short function with one planted fault from a family the book
discusses; the reader runs it, sees the symptom, and fixes the line. The check runs the
*fixed* function on cases of its own and, when something is still wrong, names the symptom
it measured and the kind of fault that produces it:

- :func:`check_decayed_training` (networks chapter): a training loop that compiles a new
  program at every step, because a Python float reaches ``eqx.filter_jit`` as static data;
- :func:`check_collector` (DQN chapter): transitions whose ``terminated`` flag is one step
  late, so the TD target bootstraps past the end of an episode;
- :func:`check_q_learning` (foundations chapter, in :mod:`companion.checks.foundations`):
  Q-learning whose TD target bootstraps past the target cell;
- :func:`check_rollout_keys` (PPO chapter): a rollout that samples every step with the same
  PRNG key, so an agent's "random" choices repeat.
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Any, Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.core import (
    check_shape,
    close,
    fail,
    passed,
    require_function,
    run_answer,
    self_check,
)
from companion.envs import cartpole

#: The learning-rate schedule of the networks chapter's exercise: 0.1 * 0.97**step.
LEARNING_RATE = 0.1
DECAY = 0.97

_model_calls = [0]  # how often _CountingMLP's Python code ran: once per trace under jit
_runs = itertools.count(1)


class _CountingMLP(eqx.Module):
    """An MLP from float32 ``(1,)`` to ``(1,)`` that counts the runs of its Python code.

    Under ``jax.jit`` (or ``eqx.filter_jit``) a function's Python code runs when it is
    traced, not when the compiled program runs, so the count is the number of traces.
    """

    mlp: eqx.nn.MLP
    run: int = eqx.field(static=True, default=0)  # new for each check, so nothing is cached

    def __call__(self, x):
        _model_calls[0] += 1
        return self.mlp(x)


def _sgd_losses(model: eqx.Module, x, y, num_steps: int, decay: float) -> np.ndarray:
    """The losses of ``num_steps`` SGD steps with learning rate ``0.1 * decay**step``."""

    def loss_fn(model):
        return jnp.mean((jax.vmap(model)(x) - y) ** 2)

    @eqx.filter_jit
    def step(model, learning_rate):
        loss, grads = eqx.filter_value_and_grad(loss_fn)(model)
        updates = jax.tree.map(lambda g: -learning_rate * g, grads)
        return eqx.apply_updates(model, updates), loss

    losses = []
    for t in range(num_steps):
        model, loss = step(model, jnp.asarray(LEARNING_RATE * decay**t, jnp.float32))
        losses.append(float(loss))
    return np.array(losses)


@self_check
def check_decayed_training(train_decayed: Callable) -> None:
    """Check ``train_decayed(model, x, y, num_steps)``: SGD with a decaying learning rate that
    compiles its step once.

    ``model`` is an equinox module from float32 ``(1,)`` to ``(1,)``; ``x`` and ``y`` are
    float32 ``(batch, 1)``; the answer is ``(model, losses)``, the trained model and the
    ``num_steps`` losses (Python floats), each step a plain gradient step on the mean
    squared error with learning rate ``0.1 * 0.97**step``. The check counts how often the
    model's Python code runs, which under ``jax.jit`` is once per trace (JAX's documentation,
    "How JIT works"): a step that takes the learning rate as a Python float is traced again
    for every new value, because ``eqx.filter_jit`` treats non-array arguments as static.

    Raises:
        CheckFailed: naming the mistake (a program traced at every step, or more than once;
            a learning rate that does not decay; losses that are not the schedule's; a
            wrong number of losses, or an answer that is not ``(model, losses)``).
    """
    require_function(train_decayed, "train_decayed")
    x = jnp.linspace(-1.0, 1.0, 16, dtype=jnp.float32)[:, None]
    y = jnp.sin(2.0 * x)
    mlp = eqx.nn.MLP(1, 1, 8, 1, activation=jnp.tanh, key=jax.random.key(0))
    num_steps = 8
    expected = _sgd_losses(mlp, x, y, num_steps, DECAY)
    _model_calls[0] = 0
    answer = run_answer(
        train_decayed,
        _CountingMLP(mlp, run=next(_runs)),
        x,
        y,
        num_steps,
        call="train_decayed(model, x, y, 8)",
        jit=False,
        hint="Arguments: an equinox model, x and y float32 (16, 1), num_steps",
    )
    traces = _model_calls[0]
    if not (isinstance(answer, tuple) and len(answer) == 2):
        fail(f"train_decayed should return (model, losses), got {type(answer).__name__}")
    losses = check_shape(
        np.asarray(answer[1], np.float32),
        (num_steps,),
        "the losses of train_decayed(model, x, y, 8)",
        hint="One loss per step.",
    )
    if not close(losses, expected, rtol=1e-4, atol=1e-6):
        if close(losses, _sgd_losses(mlp, x, y, num_steps, 1.0), rtol=1e-4, atol=1e-6):
            fail(
                "train_decayed: the learning rate does not decay; keep the schedule "
                f"{LEARNING_RATE} * {DECAY}**step and change only how it reaches the step"
            )
        fail(
            f"train_decayed: losses {np.round(losses, 5)}, expected {np.round(expected, 5)} "
            f"(plain SGD on the mean squared error, learning rate {LEARNING_RATE} * "
            f"{DECAY}**step)"
        )
    if traces >= num_steps:
        fail(
            f"train_decayed: the model's Python code ran {traces} times in {num_steps} steps: "
            "every step was traced anew, or the step is not compiled at all. "
            "eqx.filter_jit treats an argument that is not an array (a Python float) as "
            "static, and every new learning rate is a new static value; pass it as an array "
            "(jnp.asarray) so that one compiled program serves every step"
        )
    if traces > 2:
        fail(
            f"train_decayed: the step was traced {traces} times in {num_steps} steps; with "
            "the learning rate as an array, one trace serves every step"
        )
    passed(f"train_decayed follows the schedule and traced its step {traces} time(s)")


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
    the block runs; each trace of it appends to ``traces``."""
    original = cartpole.step_autoreset
    params = cartpole.DEFAULT_PARAMS._replace(max_steps=_COLLECTOR_MAX_STEPS)

    def step_autoreset(state, action, given=None):
        traces.append(1)
        default = given is None or given == cartpole.DEFAULT_PARAMS
        return original(state, action, params if default else given)

    cartpole.step_autoreset = step_autoreset
    try:
        yield
    finally:
        cartpole.step_autoreset = original


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
    """Check ``collect(key, num_steps)``: the transitions of one auto-resetting CartPole
    under a uniformly random policy.

    The answer is a :class:`companion.agents.dqn.Transition` whose leaves have a leading
    axis of ``num_steps`` in time order: ``obs`` and ``next_obs`` float32 ``(T, 4)``,
    ``action`` int32 ``(T,)``, ``reward`` float32 ``(T,)`` and ``terminated`` bool
    ``(T,)``. The check runs 300 steps with a time limit of 30 steps (it gives
    ``cartpole.step_autoreset`` that limit while it runs, so that episodes also end by
    truncation) and tests every transition against CartPole's own physics
    (:func:`companion.envs.cartpole.dynamics`, gymnasium's CartPole-v1): ``next_obs`` is the
    state after ``action`` from ``obs``, also on the step that ends an episode;
    ``terminated`` is True exactly where that state is past the limits (pole beyond 12
    degrees, cart beyond 2.4 m), not at a truncation; and each episode's next ``obs``
    continues from ``next_obs``, or starts afresh after a termination or a truncation.

    Raises:
        CheckFailed: naming the mistake (``terminated`` one step late, missing, or set at
            truncations too (``done``); ``next_obs`` taken from the next episode; ``obs``
            that does not continue from ``next_obs``; illegal actions or rewards; wrong
            shapes).
    """
    num_steps = 300
    traces: list = []
    with _short_episodes(traces):
        call = f"collect(key, {num_steps})"
        answer = run_answer(collect, jax.random.key(11), num_steps, call=call)
    if not traces:
        fail(
            "collect never calls cartpole.step_autoreset (or it was compiled before this "
            "check ran): step the environment with cartpole.step_autoreset, as the chapter's "
            "collector does, and pass the function itself, not a jitted copy"
        )
    limit = _COLLECTOR_MAX_STEPS
    fields = ("obs", "action", "reward", "next_obs", "terminated")
    if not all(hasattr(answer, f) for f in fields):
        fail(f"collect should return a dqn.Transition (fields {fields}), got {type(answer)}")
    shapes = {"obs": (num_steps, 4), "next_obs": (num_steps, 4)}
    obs, action, reward, next_obs, terminated = (
        check_shape(getattr(answer, f), shapes.get(f, (num_steps,)), f"transitions.{f}")
        for f in fields
    )
    if terminated.dtype != bool:
        fail(f"transitions.terminated should be bool, got {terminated.dtype}")
    if not np.isin(action, (0, 1)).all() or not (reward == 1.0).all():
        fail("every action should be 0 or 1 and every reward 1.0")
    ones = float(action.mean())
    repeats = float(np.mean(action[1:] == action[:-1]))
    if abs(ones - 0.5) > 0.15 or abs(repeats - 0.5) > 0.15:
        fail(
            f"collect's actions are not uniformly random: {ones:.0%} are 1 and {repeats:.0%} "
            "repeat the previous one, where fair coin flips give about 50% each. Draw each "
            "step's action with its own key"
        )
    after = np.asarray(jax.vmap(cartpole.dynamics)(jnp.asarray(obs), jnp.asarray(action)))
    fell = _fallen(after)
    truncated = _truncations(fell, limit)
    if not fell.any():
        fail(f"no episode ended in {num_steps} steps of random actions (about 14 should)")
    # float32 rounding differs between compiled programs: compare to a tolerance
    wrong = ~np.all(np.isclose(next_obs, after, rtol=1e-5, atol=1e-6), axis=1)
    if wrong.any():
        if wrong[fell | truncated].all() and not wrong[~(fell | truncated)].any():
            fail(
                "collect: at every episode end next_obs is the first observation of the next "
                "episode, not the state the episode ended in; store timestep.next_obs, which "
                "step_autoreset keeps, not timestep.obs"
            )
        fail(
            f"collect: next_obs is not the state after obs and action at steps "
            f"{np.flatnonzero(wrong)[:5].tolist()}"
        )
    if not np.array_equal(terminated, fell):
        late = np.concatenate([[False], fell[:-1]])
        if np.array_equal(terminated, late):
            fail(
                f"collect: terminated is one step late. The {int(fell.sum())} transitions "
                "whose next_obs has the pole past 12 degrees or the cart off the track are "
                "marked False, and the first transition of each new episode is marked True, "
                "so the TD target bootstraps from a fallen pole and cuts a healthy step. "
                "Take terminated from this step's timestep, not from the previous one"
            )
        if truncated.any() and np.array_equal(terminated, fell | truncated):
            fail(
                f"collect: terminated is also True at the {int(truncated.sum())} truncations "
                f"(the time limit, {limit} steps here): that is timestep.done. A truncated "
                "episode could have gone on, so its TD target must still bootstrap: store "
                "timestep.terminated"
            )
        ended = fell | truncated
        if truncated.any() and np.array_equal(terminated, np.concatenate([[False], ended[:-1]])):
            fail(
                "collect: terminated is one step late, and it is set at truncations too "
                "(timestep.done): take timestep.terminated of this step"
            )
        if not terminated.any():
            fail(
                f"collect: no transition is marked terminated, though {int(fell.sum())} end "
                "with the pole past 12 degrees or the cart off the track"
            )
        fail(
            "collect: terminated should be True exactly where next_obs is past the limits; "
            f"it disagrees at steps {np.flatnonzero(terminated != fell)[:5].tolist()}"
        )
    continues = np.all(np.isclose(obs[1:], next_obs[:-1], rtol=1e-5, atol=1e-6), axis=1)
    fresh = np.all(np.abs(obs[1:]) <= cartpole.DEFAULT_PARAMS.reset_bound, axis=1)
    ended = (fell | truncated)[:-1]
    if not np.all(np.where(ended, fresh, continues)):
        bad = np.flatnonzero(~np.where(ended, fresh, continues))[:5] + 1
        fail(
            f"collect: obs at steps {bad.tolist()} neither continues from the previous "
            "next_obs nor starts a new episode after a termination or truncation; carry "
            "timestep.obs"
        )
    passed(f"collect flags its {int(fell.sum())} terminations, not its {int(truncated.sum())} "
           "truncations")  # fmt: skip


class _Sharpened(eqx.Module):
    """An actor-critic whose logits are scaled and shifted per action, so that its policy is
    far from uniform and a sampler that is not the policy's shows in the statistics."""

    model: eqx.Module
    scale: float = eqx.field(static=True)

    def __call__(self, image):
        logits, value = self.model(image)
        return self.scale * logits + jnp.array([1.5, 0.0, -1.5, 0.5]), value


def _sampled_and_carried(jaxpr) -> bool:
    """Whether a ``scan`` in ``jaxpr`` samples with a key (``random_bits``) that it also
    carries to the next step, where it is split or sampled again: a key used twice that
    ``jax.debug_key_reuse`` does not follow through the loop."""
    from companion.checks.core import _sub_jaxprs

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
            carried = body.outvars[: eqn.params["num_carry"]]
            if set(carried) & sampled(body):
                return True
        if any(_sampled_and_carried(inner) for inner in _sub_jaxprs(eqn)):
            return True
    return False


def _rollout_case(num_envs: int) -> tuple:
    """An untrained actor-critic on the medium maze, a reset pool and a batch of starts."""
    from companion.agents import ppo
    from companion.envs import maze as maze_lib
    from companion.envs.autoreset import make_reset_pool, reset_with_next_obs

    env = maze_lib.make_maze_task("medium")
    model = _Sharpened(ppo.make_model(ppo.FIXED_MAZE_CONFIG, jax.random.key(0)), 4.0)
    pool = make_reset_pool(env, jax.random.key(1), num_envs)
    starts = jax.random.split(jax.random.key(2), num_envs)
    env_state, timestep = jax.vmap(reset_with_next_obs, in_axes=(None, 0))(env, starts)
    return model, env, pool, env_state, timestep


def _z_score(observed: float, expected: float, variance: float) -> float:
    return (observed - expected) / np.sqrt(max(variance, 1e-12))


@self_check
def check_rollout_keys(rollout: Callable) -> None:
    """Check ``rollout(model, env, pool, env_state, timestep, key, num_steps)``: a rollout of
    the PPO chapter (section 4's ``rollout_in_view``) that draws every action with a fresh
    key.

    The answer is ``(env_state, timestep, transitions)``, ``transitions`` a
    :class:`companion.agents.ppo.Transition` with leaves of shape ``(num_steps, num_envs,
    ...)``. The check runs 32 steps of 64 environments of the medium maze with an untrained
    network, first under JAX's key-reuse checker (``jax.debug_key_reuse``), then tests the
    actions against the policy that chose them: each action is legal and its stored
    ``log_prob`` is the policy's; how often each action is taken, and how often an
    environment repeats its previous action, must agree with the policy's own
    probabilities, as independent samples do, within 5 standard deviations.

    Raises:
        CheckFailed: naming the mistake (a key used twice, which the key-reuse checker
            reports; actions that repeat or avoid the previous one more than independent
            samples would; action frequencies that are not the policy's, as from an argmax;
            illegal actions; wrong log-probabilities; wrong shapes).
    """
    from companion.agents import ppo

    require_function(rollout, "rollout")
    num_envs, num_steps = 64, 32
    model, env, pool, env_state, timestep = _rollout_case(num_envs)
    run = jax.jit(rollout, static_argnums=(1, 6))
    args = (model, env, pool, env_state, timestep, jax.random.key(3), num_steps)
    call = "rollout(model, env, pool, env_state, timestep, key, 32)"
    try:
        with jax.debug_key_reuse(True):
            answer = run_answer(run, *args, call=call, jit=False, reraise=jax.errors.KeyReuseError)
    except jax.errors.KeyReuseError as err:
        fail(
            "rollout: JAX's key-reuse checker finds a key used twice ("
            f"{str(err).splitlines()[0].rstrip(':')}). A key that is consumed at one step and "
            "carried to the next draws the same noise again: split it, and carry the new key"
        )
    if not (isinstance(answer, tuple) and len(answer) == 3 and hasattr(answer[2], "action")):
        fail("rollout should return (env_state, timestep, transitions), as rollout_in_view does")
    with jax.debug_key_reuse(False):
        program = jax.make_jaxpr(rollout, static_argnums=(1, 6))(*args)
    if _sampled_and_carried(program):
        fail(
            "rollout samples an action with a key and carries that same key to the next step, "
            "where it is split again: a key used twice, which jax.debug_key_reuse does not "
            "follow through lax.scan. Split, sample with one half, carry the other"
        )
    transitions = answer[2]
    action = check_shape(transitions.action, (num_steps, num_envs), "transitions.action")
    mask = np.asarray(transitions.action_mask)
    done = np.asarray(transitions.done)
    logits = jax.vmap(jax.vmap(model))(transitions.image)[0]
    logits = ppo.masked_logits(logits, transitions.action_mask)
    probs = np.asarray(jax.nn.softmax(logits), np.float64)  # (T, N, 4)
    if not np.take_along_axis(mask, action[..., None].astype(int), -1).all():
        fail("rollout: some actions are illegal under the action mask they were chosen with")
    expected_log_prob = np.asarray(ppo.log_prob(logits, jnp.asarray(action, jnp.int32)))
    if not close(transitions.log_prob, expected_log_prob, rtol=1e-4, atol=1e-5):
        fail("rollout: log_prob is not the log-probability of the action under the policy")

    if np.array_equal(action, np.argmax(probs, -1)):
        fail(
            "rollout: every action is the policy's most probable one (an argmax): the agent "
            "does not explore, and its log_prob is not that of a sample. Draw each action "
            "with jax.random.categorical(key_t, logits_t), a fresh key_t at every step"
        )
    with jax.debug_key_reuse(False):
        other = run(*args[:5], jax.random.key(4), num_steps)[2]
    if np.array_equal(np.asarray(other.action), action):
        fail("rollout ignores its key: another key gave the same actions")
    # environments side by side: independent samples agree as often as sum_a p_i(a) p_j(a)
    p_same = np.sum(probs[:, :-1] * probs[:, 1:], axis=-1)
    same = action[:, :-1] == action[:, 1:]
    same_z = _z_score(same.sum(), p_same.sum(), (p_same * (1 - p_same)).sum())
    if same_z > 5:
        fail(
            f"rollout: neighbouring environments take the same action in {same.mean():.0%} of "
            f"steps, where independent samples would in {p_same.mean():.0%}: they share "
            "their random noise (one key for every environment, as a jax.vmap of "
            "categorical over the environments with one key gives). "
            "jax.random.categorical(key_t, logits_t) on the batch draws each row apart"
        )
    # how probable the taken actions were: samples of the policy average sum_a p(a)^2
    p_taken = np.take_along_axis(probs, action[..., None].astype(int), -1)[..., 0]
    second, third = np.sum(probs**2, -1), np.sum(probs**3, -1)
    taken_z = _z_score(p_taken.sum(), second.sum(), (third - second**2).sum())
    if abs(taken_z) > 5:
        fail(
            f"rollout: the actions are not samples of the policy: the probability the policy "
            f"gave the action taken averages {p_taken.mean():.3f}, where samples of it would "
            f"average {second.mean():.3f} ({abs(taken_z):.0f} standard deviations apart). "
            "Sample from the logits the log_prob is computed from (no temperature, noise or "
            "argmax), with jax.random.categorical"
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
            f"rollout: an environment takes its previous action again in {repeats.mean():.0%} "
            f"of steps, where independent samples from the same policy would in "
            f"{p_repeat.mean():.0%} ({abs(repeat_z):.0f} standard deviations apart): the "
            "steps' random choices are not independent. Does every step get a fresh key?"
        )
    if max(map(abs, counts_z)) > 5:
        fail(
            "rollout: the actions are not samples of the policy: action counts "
            f"{taken.sum(axis=(0, 1)).astype(int).tolist()} where the policy expects "
            f"{np.round(probs.sum(axis=(0, 1))).astype(int).tolist()}"
        )
    passed(
        f"rollout: fresh, independent actions in {num_steps} steps of {num_envs} environments, "
        "no key reused"
    )
