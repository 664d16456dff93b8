"""A faithful reimplementation of the DQN-on-CartPole post (haiku, its own JAX CartPole).

Written from the post's facts as issue 13 lists them (no code of the post is
used). What the post does, and what this module does by default:

- its CartPole (:func:`post_cartpole_step`): gymnasium's physics
  (:func:`companion.envs.cartpole.dynamics`), but reward ``not done``, so **0
  on the terminating step**, and **no 500-step limit**; rewards stored as int32;
- a haiku MLP with output sizes [64, 64, 64, 2] (ReLU); the online and the
  target network are initialised with different keys;
- discount gamma 0.9; 20,000 environment steps of one environment, one
  gradient step (Adam, learning rate 1e-3) on a batch of 32 after each; a
  replay buffer of 512 transitions, pre-filled with 512 steps of random
  actions (not counted in the 20,000); the target network copied from the
  online one every 10 steps; epsilon-greedy exploration with
  ``epsilon = 0.3 / (1 + 0.001 t)`` (t = training steps done), which decays
  toward 0; the loss is the mean squared TD error;
- it calls CartPole "solved" when one episode lasts more than 200 steps.

The post's CartPole differs from gymnasium's ``CartPole-v1`` in two ways:
the terminating step earns 0 instead of 1, and episodes never truncate. With
``env_fixed=True`` (the ablation) the environment is CartPole-v1's: reward 1
on every step, truncation at 500 steps, and a truncated transition
bootstraps (only termination stops the TD target).

Training runs in chunks of ``eval_every`` steps, each a compiled
``lax.scan``; between chunks (clock stopped) :func:`train` evaluates the online
network with keys of its own, so the evaluation never changes training: a
10-episode greedy evaluation for the book's keep-best selection (as
``companion.agents.dqn`` does with ``eval_every`` / ``eval_episodes`` /
``best_params``), and a 100-episode one for the time to a mean return of 475.
Both are on CartPole-v1 (:func:`companion.agents.dqn.greedy_returns`), whatever
the training environment.

Details the facts leave open, chosen here: the buffer is sampled uniformly with
replacement (:func:`companion.replay.replay_sample`); a random action is drawn
as in :func:`companion.agents.dqn.epsilon_greedy`; PRNG keys are split once per
use. Nothing here is used by the book's agents.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import optax

from companion.agents import dqn
from companion.envs import cartpole
from companion.replay import ReplayBuffer, replay_add, replay_init, replay_sample


class PostDQNConfig(NamedTuple):
    """The post's hyperparameters; ``env_fixed`` switches to CartPole-v1's rewards and limit."""

    total_steps: int = 20_000  # training steps = environment steps = gradient steps
    buffer_size: int = 512
    prefill_steps: int = 512  # random-action steps before training
    batch_size: int = 32
    gamma: float = 0.9
    learning_rate: float = 1e-3
    target_period: int = 10  # steps between copies of the online network into the target
    epsilon_start: float = 0.3
    epsilon_decay: float = 0.001  # epsilon = epsilon_start / (1 + epsilon_decay * t)
    hidden_sizes: tuple = (64, 64, 64)
    solved_length: int = 200  # the post's "solved": an episode longer than this
    env_fixed: bool = False  # ablation: CartPole-v1's reward and 500-step truncation


def epsilon(t, config: PostDQNConfig = PostDQNConfig()) -> jax.Array:
    """The post's exploration rate ``0.3 / (1 + 0.001 t)``, t = training steps done (float32)."""
    return config.epsilon_start / (1.0 + config.epsilon_decay * jnp.asarray(t, jnp.float32))


def make_q_network(config: PostDQNConfig = PostDQNConfig()) -> hk.Transformed:
    """haiku MLP obs float32 (..., 4) -> Q float32 (..., 2) with output sizes [64, 64, 64, 2]."""
    return dqn.make_q_network(2, config.hidden_sizes)


class PostStep(NamedTuple):
    """What :func:`post_cartpole_step` returns besides the state: ``obs`` float32 (4,)
    (the next episode's first observation after an end), ``reward`` int32 (),
    ``terminated`` bool (), ``truncated`` bool (), ``next_obs`` float32 (4,) (the
    true observation after the step)."""

    obs: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    next_obs: jax.Array


def post_cartpole_step(state: cartpole.CartPoleState, action, fixed: bool = False):
    """One step of the post's CartPole, restarting the episode when it ends.

    Args:
        state: a :class:`companion.envs.cartpole.CartPoleState` (from
            :func:`companion.envs.cartpole.reset`).
        action: int32 (), 0 (push left) or 1 (push right).
        fixed: False for the post's environment (reward ``not terminated``,
            int32, so 0 on the terminating step; no step limit); True for
            CartPole-v1's (reward 1 on every step; truncation at 500 steps).

    Returns:
        ``(state, PostStep)``.
    """
    params = cartpole.DEFAULT_PARAMS
    physics = cartpole.dynamics(state.physics, action, params)
    terminated = (jnp.abs(physics[0]) > params.x_threshold) | (
        jnp.abs(physics[2]) > params.theta_threshold
    )
    step_count = state.step_count + 1
    if fixed:
        truncated = step_count >= params.max_steps
        reward = jnp.ones((), jnp.int32)
    else:
        truncated = jnp.zeros((), bool)
        reward = (~terminated).astype(jnp.int32)
    done = terminated | truncated
    key, reset_key = jax.random.split(state.key)
    fresh = jax.random.uniform(
        reset_key, (4,), jnp.float32, -params.reset_bound, params.reset_bound
    )
    new_state = cartpole.CartPoleState(
        physics=jnp.where(done, fresh, physics),
        step_count=jnp.where(done, 0, step_count).astype(jnp.int32),
        key=key,
    )
    return new_state, PostStep(new_state.physics, reward, terminated, truncated, physics)


class Transition(NamedTuple):
    """A stored transition: ``obs`` float32 (4,), ``action`` int32 (), ``reward`` int32 (),
    ``next_obs`` float32 (4,), ``terminated`` bool () (stops the TD target)."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array
    terminated: jax.Array


class Runner(NamedTuple):
    """Training state: networks, optimiser, buffer, environment, counters.

    ``t`` int32 (): training steps done; ``episode_length`` int32 (): steps of the
    running episode; ``longest`` int32 (): the longest episode so far (running
    ones included, training steps only); ``solved_step`` int32 (): the training
    step at which an episode first lasted more than ``solved_length`` steps, -1
    before.
    """

    params: Any
    target_params: Any
    opt_state: Any
    buffer: ReplayBuffer
    env_state: cartpole.CartPoleState
    obs: jax.Array
    t: jax.Array
    episode_length: jax.Array
    longest: jax.Array
    solved_step: jax.Array
    key: jax.Array


def td_loss(params, target_params, batch: Transition, network, gamma: float) -> jax.Array:
    """Mean squared TD error ``(Q(s, a) - (r + gamma (1 - terminated) max_a' Q_target(s', a')))^2``.

    Args:
        batch: :class:`Transition` with a leading batch axis; int32 rewards are cast to float32.

    Returns:
        float32 ().
    """
    q = network.apply(params, batch.obs)
    q_taken = jnp.take_along_axis(q, batch.action[:, None], axis=1)[:, 0]
    q_next = network.apply(target_params, batch.next_obs).max(axis=1)
    not_done = 1.0 - batch.terminated.astype(jnp.float32)
    target = jax.lax.stop_gradient(batch.reward.astype(jnp.float32) + gamma * not_done * q_next)
    return jnp.mean((q_taken - target) ** 2)


def make_post_dqn(config: PostDQNConfig = PostDQNConfig()):
    """Build the post's pure functions ``init(key) -> Runner``, ``prefill(runner) -> Runner``
    (``prefill_steps`` random actions into the buffer) and ``run(runner, num_steps)
    -> (runner, metrics)`` (``num_steps`` static: training steps in one ``lax.scan``;
    metrics per step: ``loss``, ``epsilon``, ``episode_ended``).

    Raises:
        ValueError: if the buffer cannot hold the pre-fill or a batch.
    """
    if config.prefill_steps < config.batch_size:
        raise ValueError(
            f"config.prefill_steps: {config.prefill_steps} is less than batch_size "
            f"{config.batch_size}"
        )
    if config.buffer_size < 1:
        raise ValueError(f"config.buffer_size: expected a positive int, got {config.buffer_size}")
    network = make_q_network(config)
    optimizer = optax.adam(config.learning_rate)
    example = Transition(jnp.zeros(4), jnp.int32(0), jnp.int32(0), jnp.zeros(4), jnp.bool_(False))

    def init(key):
        k_online, k_target, k_env, key = jax.random.split(key, 4)
        obs = jnp.zeros((1, 4), jnp.float32)
        params = network.init(k_online, obs)
        env_state, obs = cartpole.reset(k_env)
        zero = jnp.zeros((), jnp.int32)
        return Runner(
            params,
            network.init(k_target, obs[None]),
            optimizer.init(params),
            replay_init(example, config.buffer_size),
            env_state,
            obs,
            zero,
            zero,
            zero,
            jnp.int32(-1),
            key,
        )

    def env_step(runner: Runner, action):
        env_state, ts = post_cartpole_step(runner.env_state, action, config.env_fixed)
        transition = Transition(runner.obs, action, ts.reward, ts.next_obs, ts.terminated)
        buffer = replay_add(runner.buffer, transition)
        done = ts.terminated | ts.truncated
        return runner._replace(buffer=buffer, env_state=env_state, obs=ts.obs), done

    def prefill(runner: Runner) -> Runner:
        def body(runner, _):
            key, k_act = jax.random.split(runner.key)
            action = jax.random.randint(k_act, (), 0, 2)
            runner, done = env_step(runner._replace(key=key), action)
            return runner, None

        runner, _ = jax.lax.scan(body, runner, length=config.prefill_steps)
        # Training's episode counter starts with a fresh episode.
        env_state, obs = cartpole.reset(runner.env_state.key)
        return runner._replace(env_state=env_state, obs=obs)

    def train_step(runner: Runner, _):
        key, k_act, k_sample = jax.random.split(runner.key, 3)
        eps = epsilon(runner.t, config)
        action = dqn.epsilon_greedy(k_act, network.apply(runner.params, runner.obs), eps)
        runner, done = env_step(runner._replace(key=key), action)
        batch = replay_sample(runner.buffer, k_sample, config.batch_size)
        loss, grads = jax.value_and_grad(td_loss)(
            runner.params, runner.target_params, batch, network, config.gamma
        )
        updates, opt_state = optimizer.update(grads, runner.opt_state, runner.params)
        params = optax.apply_updates(runner.params, updates)
        t = runner.t + 1
        copy = t % config.target_period == 0
        target = jax.tree.map(lambda p, q: jnp.where(copy, p, q), params, runner.target_params)
        length = runner.episode_length + 1
        solved = (runner.solved_step < 0) & (length > config.solved_length)
        runner = runner._replace(
            params=params,
            target_params=target,
            opt_state=opt_state,
            t=t,
            episode_length=jnp.where(done, 0, length),
            longest=jnp.maximum(runner.longest, length),
            solved_step=jnp.where(solved, t, runner.solved_step),
        )
        return runner, {"loss": loss, "epsilon": eps, "episode_ended": done}

    def run(runner: Runner, num_steps: int):
        return jax.lax.scan(train_step, runner, length=num_steps)

    return init, prefill, run


_EVALUATORS: dict = {}
#: Compiled pre-fill and chunk per (configuration, eval_every), with their compile time.
_COMPILED: dict = {}


def greedy_mean_return(
    params, key: jax.Array, num_episodes: int, config: PostDQNConfig = PostDQNConfig()
) -> float:
    """Mean return of ``num_episodes`` greedy episodes of CartPole-v1 (reward 1 per step,
    truncation at 500), by :func:`companion.agents.dqn.greedy_returns`; compiled once
    per ``(num_episodes, hidden_sizes)``."""
    cache_key = (num_episodes, config.hidden_sizes)
    if cache_key not in _EVALUATORS:
        network = make_q_network(config)
        _EVALUATORS[cache_key] = jax.jit(
            lambda p, k: jnp.mean(dqn.greedy_returns(p, k, num_episodes, network))
        )
    return float(_EVALUATORS[cache_key](params, key))


def train(
    config: PostDQNConfig,
    key: jax.Array,
    eval_key: jax.Array,
    eval_every: int = 1_000,
    select_episodes: int = 10,
    target_episodes: int = 100,
    target_return: float = 475.0,
) -> tuple[Any, Any, dict]:
    """Train the post's DQN in chunks of ``eval_every`` steps, evaluating between them.

    Compile time (the pre-fill and one chunk, compiled ahead of time, once
    per configuration in a process: later seeds reuse the programs and report
    the first compile time, ``compile_reused``) is measured apart
    (``compile_s``); ``run_s`` is the pre-fill and the chunks without the
    evaluations. After each chunk, with the clock stopped and keys
    from ``eval_key`` only: the mean greedy return of ``select_episodes``
    episodes picks the best parameters (the later on ties, as the book's DQN),
    and the mean of ``target_episodes`` episodes is checked against
    ``target_return``.

    Args:
        config: :class:`PostDQNConfig`.
        key: PRNG key of training. eval_key: PRNG key of the evaluations.
        eval_every: training steps per chunk; must divide ``config.total_steps``.

    Returns:
        ``(final_params, best_params, record)``; ``record`` has ``compile_s``,
        ``run_s``, ``steps_per_s``, ``evals`` (per chunk: ``env_steps``,
        ``select_return``, ``target_return``, ``train_s`` = compile_s + run
        time so far), ``time_to_target_s`` / ``steps_to_target`` (None if not
        reached), ``post_solved_step`` / ``post_solved_s`` (when an episode
        first lasted more than ``solved_length`` steps, the time interpolated
        within its chunk; None if never), ``longest_episode``, ``best_select_return``.

    Raises:
        ValueError: if ``eval_every`` does not divide ``config.total_steps``.
    """
    if eval_every < 1 or config.total_steps % eval_every:
        raise ValueError(
            f"eval_every: expected a divisor of total_steps ({config.total_steps}), "
            f"got {eval_every}"
        )
    init, prefill, run = make_post_dqn(config)
    runner = init(key)
    reused = (config, eval_every, key.dtype) in _COMPILED
    if not reused:
        start = time.perf_counter()
        prefill_c = jax.jit(prefill).lower(runner).compile()
        run_c = jax.jit(run, static_argnums=1).lower(runner, eval_every).compile()
        _COMPILED[config, eval_every, key.dtype] = (prefill_c, run_c, time.perf_counter() - start)
    prefill_c, run_c, compile_s = _COMPILED[config, eval_every, key.dtype]
    start = time.perf_counter()
    runner = jax.block_until_ready(prefill_c(runner))
    run_s = time.perf_counter() - start
    chunk_s, evals, best_params, best_score = [], [], runner.params, -np.inf
    steps_to_target = time_to_target = None
    for c in range(config.total_steps // eval_every):
        start = time.perf_counter()
        runner, _ = jax.block_until_ready(run_c(runner))
        chunk_s.append(time.perf_counter() - start)
        run_s += chunk_s[-1]
        eval_key, k_select, k_target = jax.random.split(eval_key, 3)
        select = greedy_mean_return(runner.params, k_select, select_episodes, config)
        if select >= best_score:
            best_params, best_score = runner.params, select
        target = greedy_mean_return(runner.params, k_target, target_episodes, config)
        steps = (c + 1) * eval_every
        evals.append(
            {
                "env_steps": steps,
                "select_return": select,
                "target_return": target,
                "train_s": compile_s + run_s,
            }
        )
        if time_to_target is None and target >= target_return:
            steps_to_target, time_to_target = steps, compile_s + run_s
    solved_step = int(runner.solved_step)
    solved_s = None
    if solved_step >= 0:
        c = (solved_step - 1) // eval_every
        done_before = run_s - sum(chunk_s[c:])
        into_chunk = (solved_step - c * eval_every) / eval_every
        solved_s = compile_s + done_before + chunk_s[c] * into_chunk
    train_s = sum(chunk_s)
    return (
        runner.params,
        best_params,
        {
            "compile_s": compile_s,
            "compile_reused": reused,
            "run_s": run_s,
            "env_steps": config.total_steps,
            "steps_per_s": config.total_steps / train_s,
            "evals": evals,
            "steps_to_target": steps_to_target,
            "time_to_target_s": time_to_target,
            "post_solved_step": solved_step if solved_step >= 0 else None,
            "post_solved_s": solved_s,
            "longest_episode": int(runner.longest),
            "best_select_return": float(best_score),
        },
    )
