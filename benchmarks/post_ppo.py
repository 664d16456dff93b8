"""A faithful reimplementation of the PPO-on-Maze post (equinox), its bugs kept.

Written from the post's facts as issue 13 lists them (no code of the post is
used). What the post does, and what this module does by default:

- observation: the maze as a (3, 10, 10) image (walls, agent, target), as
  :func:`companion.envs.maze.observation_image` builds it;
- network (:class:`PostNetwork`): ``Conv2d(3 -> 1, kernel 3, no padding)``,
  ReLU, flatten (64), ``Linear(64, 64)``, ReLU, a value head ``Linear(64, 1)``
  and a policy head ``Linear(64, 4)`` whose weight is an orthogonal matrix
  times 0.01 (its bias and every other layer keep equinox's default
  initialisation);
- acting: logits of illegal actions set to ``-inf``, ``jax.random.categorical``;
- environments: jumanji's ``Maze-v0`` in ``AutoResetWrapper``,
  ``jax.vmap(env.step)`` over 16 environments, rollouts of 512 steps in
  ``lax.scan``; ``termination = 1 - discount``, so time-outs count as
  terminations; the value of the observation after the rollout bootstraps its
  last step;
- GAE with gamma 0.99 and lambda 0.95 in a backwards ``fori_loop``; value
  targets = advantages + values; advantages are not normalised;
- loss: clipped surrogate (epsilon 0.2, ``jnp.fmin``), value loss
  ``mean(0.5 * (v - target) ** 2)`` with coefficient 1, entropy bonus 0.01 times
  the mean over batch *and actions* of ``-p log p``;
- Adam (learning rate 3e-4, eps 1e-7), no gradient clipping, no schedule; 10
  epochs over each 8,192-transition batch in minibatches of 1,024, a fresh
  permutation per epoch;
- a Python ``for`` over updates that calls a jitted rollout and a jitted
  update (:func:`train`);
- budgets: 81,920 steps on the empty maze (start (0, 0), target (9, 9)),
  819,200 on the post's medium maze (:data:`post_maze.POST_MAZE`).

The post's three bugs, kept by default, each with a switch in
:class:`PostPPOConfig` to fix it alone (the ablations):

- ``mask_bug``: in the loss the mask is applied with a misplaced parenthesis,
  so illegal actions get logit **1.0** instead of ``-inf``
  (:func:`loss_logits`): the update's ratio and entropy are those of another
  distribution than the one that acted;
- ``value_broadcast_bug``: the value head's output has shape (B, 1) and the
  targets (B,), so ``v - target`` broadcasts to (B, B) and every value is
  pulled toward every target of the minibatch (:func:`value_loss`);
- ``draw_bug``: the post's maze generator draws the start and the target each
  with ``randint(0, 2)`` from 3 candidates, so only the first 2 of each ever
  appear (4 of the 9 pairs; :class:`post_maze.PostMazeGenerator`).

Environments are reset with :func:`companion.envs.autoreset.env_reset`, which
hands jumanji its keys as raw data, as the book's agents do: under ``vmap``,
``AutoResetWrapper`` selects between a key and its split, which JAX's key-reuse
checker would report although only one of the two survives.

Details the post's facts leave open, chosen here: PRNG keys are split once per
use (the post's key handling is not known); jumanji's default time limit of 100
steps; the orthogonal matrix of the policy head is drawn from its own key.
Nothing here is used by the book's agents.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from companion.envs import maze as maze_lib
from companion.envs.autoreset import env_reset
from companion.envs.jumanji_import import import_jumanji

import_jumanji()
from post_maze import (  # noqa: E402, F401  (the post's mazes, re-exported)
    BUDGETS,
    POST_MAZE,
    POST_STARTS,
    POST_TARGETS,
    TASKS,
    PostMazeGenerator,
    make_env,
)

from jumanji.wrappers import AutoResetWrapper  # noqa: E402

# --------------------------------------------------------------------------------------
# Network
# --------------------------------------------------------------------------------------


class PostNetwork(eqx.Module):
    """The post's actor-critic: one (3, 10, 10) image -> (logits (4,), value (1,)).

    Layers: ``conv`` Conv2d(3, 1, kernel 3, no padding) -> ReLU -> flatten
    (1 x 8 x 8 = 64) -> ``hidden`` Linear(64, 64) -> ReLU, then ``policy_head``
    Linear(64, 4) and ``value_head`` Linear(64, 1). The policy head's weight
    (4, 64) is ``jax.nn.initializers.orthogonal(0.01)``: orthogonal rows of
    norm 0.01; its bias and all other parameters have equinox's default
    initialisation. 4,513 parameters.

    The value has shape (1,), not (): vmapped over a minibatch it is (B, 1),
    which is what makes the post's value loss broadcast (:func:`value_loss`).
    """

    conv: eqx.nn.Conv2d
    hidden: eqx.nn.Linear
    value_head: eqx.nn.Linear
    policy_head: eqx.nn.Linear

    def __init__(self, key: jax.Array, policy_scale: float = 0.01):
        k_conv, k_hidden, k_value, k_policy, k_orth = jax.random.split(key, 5)
        self.conv = eqx.nn.Conv2d(3, 1, kernel_size=3, key=k_conv)
        self.hidden = eqx.nn.Linear(64, 64, key=k_hidden)
        self.value_head = eqx.nn.Linear(64, 1, key=k_value)
        policy = eqx.nn.Linear(64, 4, key=k_policy)
        weight = jax.nn.initializers.orthogonal(policy_scale)(k_orth, (4, 64), jnp.float32)
        self.policy_head = eqx.tree_at(lambda lin: lin.weight, policy, weight)

    def __call__(self, image: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Args: image float32 (3, 10, 10). Returns: logits float32 (4,), value float32 (1,).

        Raises:
            ValueError: if ``image`` is not (3, 10, 10) (use ``jax.vmap`` for batches).
        """
        if image.shape != (3, 10, 10):
            raise ValueError(f"image: expected shape (3, 10, 10), got {image.shape}")
        x = jax.nn.relu(self.conv(image)).reshape(-1)
        x = jax.nn.relu(self.hidden(x))
        return self.policy_head(x), self.value_head(x)


# --------------------------------------------------------------------------------------
# Configuration, rollout, GAE, loss
# --------------------------------------------------------------------------------------


class PostPPOConfig(NamedTuple):
    """The post's hyperparameters; the three ``*_bug`` switches fix one bug each."""

    task: str = "post-medium"
    total_timesteps: int = 819_200
    num_envs: int = 16
    num_steps: int = 512
    num_epochs: int = 10
    minibatch_size: int = 1_024
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    vf_coef: float = 1.0
    ent_coef: float = 0.01
    learning_rate: float = 3e-4
    adam_eps: float = 1e-7
    policy_scale: float = 0.01
    mask_bug: bool = True  # illegal logits 1.0 in the loss (fixed: -inf)
    value_broadcast_bug: bool = True  # (B, 1) - (B,) -> (B, B) (fixed: v squeezed to (B,))
    draw_bug: bool = True  # post maze: randint(0, 2) of 3 candidates (fixed: all 3)

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_minibatches(self) -> int:
        return self.batch_size // self.minibatch_size

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // self.batch_size

    @property
    def env_task(self) -> str:
        """The task trained on: ``"post-medium"`` with the draw fixed is ``"post-medium-9"``."""
        if self.task == "post-medium" and not self.draw_bug:
            return "post-medium-9"
        return self.task


def check_config(config: PostPPOConfig) -> None:
    """Raises ValueError for an unknown task or sizes that do not divide."""
    if config.task not in TASKS:
        raise ValueError(f"config.task: unknown task {config.task!r}; expected one of {TASKS}")
    if config.batch_size % config.minibatch_size:
        raise ValueError(
            f"config.minibatch_size: {config.minibatch_size} does not divide the batch of "
            f"{config.batch_size} transitions"
        )
    if config.num_updates < 1:
        raise ValueError(
            f"config.total_timesteps: {config.total_timesteps} is less than one batch "
            f"({config.batch_size})"
        )


class Transition(NamedTuple):
    """A rollout, leaves (num_steps, num_envs, ...): ``image`` float32 (3, 10, 10),
    ``action_mask`` bool (4,), ``action`` int32, ``log_prob`` float32 (acting
    policy), ``value`` float32, ``reward`` float32, ``termination`` float32
    (``1 - discount``: 1 after a terminal step or a time-out)."""

    image: jax.Array
    action_mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    termination: jax.Array


def gae(reward, value, termination, last_value, gamma: float, gae_lambda: float):
    """GAE (Schulman et al., 2016) in a backwards ``fori_loop``, as the post computes it.

    Args:
        reward, value, termination: float32 (T, N).
        last_value: float32 (N,), value of the observation after the rollout.
        gamma, gae_lambda: discount and GAE lambda.

    Returns:
        advantages float32 (T, N); ``delta_t = r_t + gamma (1 - term_t) V_{t+1} - V_t``,
        ``A_t = delta_t + gamma lambda (1 - term_t) A_{t+1}``.
    """
    num_steps = reward.shape[0]
    next_values = jnp.concatenate([value[1:], last_value[None]], axis=0)

    def body(i, carry):
        advantages, next_adv = carry
        t = num_steps - 1 - i
        not_done = 1.0 - termination[t]
        delta = reward[t] + gamma * not_done * next_values[t] - value[t]
        adv = delta + gamma * gae_lambda * not_done * next_adv
        return advantages.at[t].set(adv), adv

    advantages, _ = jax.lax.fori_loop(
        0, num_steps, body, (jnp.zeros_like(reward), jnp.zeros_like(last_value))
    )
    return advantages


def loss_logits(logits: jax.Array, action_mask: jax.Array, mask_bug: bool) -> jax.Array:
    """The logits the post's loss sees: illegal actions get 1.0 (the bug) or ``-inf`` (fixed).

    Args:
        logits: float32 (B, 4). action_mask: bool (B, 4). mask_bug: keep the post's bug.

    Returns:
        float32 (B, 4).
    """
    return jnp.where(action_mask, logits, 1.0 if mask_bug else -jnp.inf)


def value_loss(value: jax.Array, target: jax.Array, broadcast_bug: bool) -> jax.Array:
    """``mean(0.5 * (v - target) ** 2)``.

    Args:
        value: float32 (B, 1), the value head's output. target: float32 (B,).
        broadcast_bug: keep the post's (B, 1) - (B,) -> (B, B) broadcast (the
            mean runs over all B * B pairs); when False, ``value`` is squeezed to (B,).

    Returns:
        float32 ().
    """
    v = value if broadcast_bug else value[:, 0]
    return jnp.mean(0.5 * (v - target) ** 2)


def entropy_term(log_probs: jax.Array) -> jax.Array:
    """Mean over batch and actions of ``-p log p`` (float32 (B, 4) -> ()), with ``0 log 0 = 0``."""
    finite = jnp.isfinite(log_probs)
    safe = jnp.where(finite, log_probs, 0.0)
    return jnp.mean(jnp.where(finite, -jnp.exp(safe) * safe, 0.0))


class Batch(NamedTuple):
    """Flattened training batch, leading axis B: ``image`` (3, 10, 10), ``action_mask``
    (4,), ``action``, ``log_prob``, ``advantage``, ``target``."""

    image: jax.Array
    action_mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    advantage: jax.Array
    target: jax.Array


def loss_from_outputs(logits, value, batch: Batch, config: PostPPOConfig):
    """The post's loss from the network's outputs on a minibatch.

    Args:
        logits: float32 (B, 4). value: float32 (B, 1). batch: :class:`Batch`.
        config: the switches ``mask_bug`` and ``value_broadcast_bug``, the coefficients.

    Returns:
        ``(loss, aux)``; aux holds ``policy``, ``value`` and ``entropy`` terms.
    """
    log_probs = jax.nn.log_softmax(loss_logits(logits, batch.action_mask, config.mask_bug))
    log_prob = jnp.take_along_axis(log_probs, batch.action[:, None], axis=1)[:, 0]
    ratio = jnp.exp(log_prob - batch.log_prob)
    clipped = jnp.clip(ratio, 1.0 - config.clip_eps, 1.0 + config.clip_eps)
    policy = -jnp.mean(jnp.fmin(ratio * batch.advantage, clipped * batch.advantage))
    v_loss = value_loss(value, batch.target, config.value_broadcast_bug)
    entropy = entropy_term(log_probs)
    loss = policy + config.vf_coef * v_loss - config.ent_coef * entropy
    return loss, {"policy": policy, "value": v_loss, "entropy": entropy}


# --------------------------------------------------------------------------------------
# Jitted rollout and update, Python training loop
# --------------------------------------------------------------------------------------


class PostPPO(NamedTuple):
    """The pieces :func:`make_post_ppo` builds: ``env`` (auto-reset Maze), ``static``
    (the network's non-array part), ``optimizer``, and the pure functions
    ``init(key) -> (params, opt_state, env_state, timestep)``,
    ``rollout(params, env_state, timestep, key) -> (env_state, timestep, Transition,
    last_value)`` and ``update(params, opt_state, traj, last_value, key) ->
    (params, opt_state, metrics)``."""

    env: Any
    static: Any
    optimizer: Any
    init: Callable
    rollout: Callable
    update: Callable


def make_post_ppo(config: PostPPOConfig = PostPPOConfig()) -> PostPPO:
    """Build the post's environment, network and pure rollout and update functions.

    Raises:
        ValueError: for an invalid configuration (:func:`check_config`).
    """
    check_config(config)
    env = AutoResetWrapper(make_env(config.env_task))
    static = eqx.partition(PostNetwork(jax.random.key(0)), eqx.is_array)[1]
    optimizer = optax.adam(config.learning_rate, eps=config.adam_eps)
    n, nmb = config.num_envs, config.num_minibatches

    def init(key):
        k_net, k_env = jax.random.split(key)
        params = eqx.partition(PostNetwork(k_net, config.policy_scale), eqx.is_array)[0]
        env_state, timestep = jax.vmap(env_reset, in_axes=(None, 0))(
            env, jax.random.split(k_env, n)
        )
        return params, optimizer.init(params), env_state, timestep

    def rollout(params, env_state, timestep, key):
        model = eqx.combine(params, static)

        def step(carry, key_t):
            env_state, timestep = carry
            obs = timestep.observation
            image = jax.vmap(maze_lib.observation_image)(obs)
            logits, value = jax.vmap(model)(image)
            logits = jnp.where(obs.action_mask, logits, -jnp.inf)
            action = jax.random.categorical(key_t, logits)
            log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], 1)[:, 0]
            env_state, timestep = jax.vmap(env.step)(env_state, action)
            out = Transition(
                image,
                obs.action_mask,
                action,
                log_prob,
                value[:, 0],
                timestep.reward,
                1.0 - timestep.discount,
            )
            return (env_state, timestep), out

        (env_state, timestep), traj = jax.lax.scan(
            step, (env_state, timestep), jax.random.split(key, config.num_steps)
        )
        image = jax.vmap(maze_lib.observation_image)(timestep.observation)
        last_value = jax.vmap(model)(image)[1][:, 0]
        return env_state, timestep, traj, last_value

    def loss_fn(params, batch):
        logits, value = jax.vmap(eqx.combine(params, static))(batch.image)
        return loss_from_outputs(logits, value, batch, config)

    def update(params, opt_state, traj: Transition, last_value, key):
        adv = gae(
            traj.reward, traj.value, traj.termination, last_value, config.gamma, config.gae_lambda
        )
        batch = Batch(
            traj.image, traj.action_mask, traj.action, traj.log_prob, adv, adv + traj.value
        )
        batch = jax.tree.map(lambda a: a.reshape((config.batch_size,) + a.shape[2:]), batch)

        def epoch(carry, key_e):
            perm = jax.random.permutation(key_e, config.batch_size)
            mbs = jax.tree.map(lambda a: a[perm].reshape((nmb, -1) + a.shape[1:]), batch)

            def minibatch(carry, mb):
                params, opt_state = carry
                (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, mb)
                updates, opt_state = optimizer.update(grads, opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), {"loss": loss, **aux}

            return jax.lax.scan(minibatch, carry, mbs)

        (params, opt_state), stats = jax.lax.scan(
            epoch, (params, opt_state), jax.random.split(key, config.num_epochs)
        )
        metrics = jax.tree.map(jnp.mean, stats)
        metrics.update(episodes=jnp.sum(traj.termination), successes=jnp.sum(traj.reward))
        return params, opt_state, metrics

    return PostPPO(env, static, optimizer, init, rollout, update)


#: Compiled rollout and update per configuration, with their compile time.
_COMPILED: dict = {}


def train(
    config: PostPPOConfig,
    key: jax.Array,
    on_eval: Callable | None = None,
    eval_every: int = 0,
) -> tuple[Any, dict]:
    """Train as the post does: a Python ``for`` over updates of a jitted rollout and update.

    The rollout and the update are compiled ahead of time (``compile_s``),
    once per configuration in a process: a second seed reuses the programs
    and reports the first compile time (``compile_reused``); ``run_s`` is the
    time of the loop itself. Every ``eval_every`` updates
    (and after the last), ``on_eval(params, update)`` is called with the clock
    stopped; it returns a number (a success rate) recorded with the training
    time so far. It must not use ``key``: training does not depend on it.

    Args:
        config: :class:`PostPPOConfig`.
        key: PRNG key of the training run.
        on_eval: optional ``(params, updates_done) -> float``.
        eval_every: updates between calls of ``on_eval`` (0: only after the last).

    Returns:
        ``(params, record)``: the final parameters; ``record`` has ``compile_s``,
        ``run_s``, ``env_steps``, ``steps_per_s``, ``episodes`` and
        ``successes`` per update (episodes ended and targets reached during each
        rollout), and ``evals``: a list of ``{"updates", "env_steps",
        "train_s" (compile_s + run time so far), "value"}``.
    """
    parts = make_post_ppo(config)
    k_init, key = jax.random.split(key)
    params, opt_state, env_state, timestep = parts.init(k_init)
    reused = (config, key.dtype) in _COMPILED
    if not reused:
        k_example = jax.ShapeDtypeStruct(key.shape, key.dtype)  # to compile ahead of time
        start = time.perf_counter()
        rollout = jax.jit(parts.rollout).lower(params, env_state, timestep, k_example).compile()
        out_shape = jax.eval_shape(parts.rollout, params, env_state, timestep, k_example)
        update = (
            jax.jit(parts.update)
            .lower(params, opt_state, out_shape[2], out_shape[3], k_example)
            .compile()
        )
        _COMPILED[config, key.dtype] = (rollout, update, time.perf_counter() - start)
    rollout, update, compile_s = _COMPILED[config, key.dtype]
    run_s, episodes, successes, evals = 0.0, [], [], []
    start = time.perf_counter()
    for u in range(1, config.num_updates + 1):
        key, k_roll, k_update = jax.random.split(key, 3)
        env_state, timestep, traj, last_value = rollout(params, env_state, timestep, k_roll)
        params, opt_state, metrics = update(params, opt_state, traj, last_value, k_update)
        episodes.append(metrics["episodes"])
        successes.append(metrics["successes"])
        if on_eval is not None and (
            (eval_every and u % eval_every == 0) or u == config.num_updates
        ):
            jax.block_until_ready(params)
            run_s += time.perf_counter() - start
            value = float(on_eval(params, u))
            evals.append(
                {
                    "updates": u,
                    "env_steps": u * config.batch_size,
                    "train_s": compile_s + run_s,
                    "value": value,
                }
            )
            start = time.perf_counter()
    jax.block_until_ready(params)
    run_s += time.perf_counter() - start
    steps = config.num_updates * config.batch_size
    return params, {
        "compile_s": compile_s,
        "compile_reused": reused,
        "run_s": run_s,
        "env_steps": steps,
        "steps_per_s": steps / run_s,
        "episodes": [float(e) for e in np.asarray(jnp.stack(episodes))],
        "successes": [float(s) for s in np.asarray(jnp.stack(successes))],
        "evals": evals,
    }


_EVALUATORS: dict = {}


def success_rate(
    params, task: str, key: jax.Array, num_episodes: int = 1000, greedy: bool = False
) -> float:
    """Success on ``num_episodes`` fresh episodes of ``task``, as the book evaluates its agents.

    Runs :func:`companion.agents.ppo.evaluate` (sampled from the ``-inf``-masked
    policy, or its most likely legal action when ``greedy``); one compiled
    program per ``(task, num_episodes)``, reused for any parameters and for
    both policies.

    Returns:
        float in [0, 1].
    """
    from companion.agents import ppo

    cache_key = (task, num_episodes)
    if cache_key not in _EVALUATORS:
        env = make_env(task)
        static = eqx.partition(PostNetwork(jax.random.key(0)), eqx.is_array)[1]

        def rate(params, key, greedy):
            model = eqx.combine(params, static)
            return jnp.mean(ppo.evaluate(model, env, key, num_episodes, greedy=greedy).success)

        _EVALUATORS[cache_key] = jax.jit(rate)
    return float(_EVALUATORS[cache_key](params, key, jnp.asarray(bool(greedy))))
