"""DQN (Mnih et al., 2015) on the JAX CartPole, with dm-haiku and optax.

The pieces, each a pure function:

- :func:`make_q_network`: an MLP from observations to one Q-value per action,
  through ``hk.without_apply_rng(hk.transform(...))``;
- :func:`epsilon_greedy`: exploration, with epsilon from an optax schedule;
- :func:`td_target`: ``r + gamma * (1 - terminated) * max_a Q_target(s', a)``;
  truncation is *not* termination, so a truncated transition bootstraps from
  its true final observation;
- :func:`dqn_loss`: squared (or Huber) loss between Q(s, a) and the TD
  target, with ``jax.lax.stop_gradient`` on the target;
- the target network follows the online parameters every
  ``target_update_period`` gradient steps, by a hard copy or by Polyak
  averaging (:func:`update_target`, with ``optax.incremental_update``).

:func:`make_train` puts them together into one function ``train(key)`` that
runs a whole experiment inside ``jax.lax.scan`` and can be ``jax.vmap``-ed
over seeds. The structure follows PureJaxRL's DQN (Lu et al., 2022).
"""

from __future__ import annotations

import collections
import functools
from typing import Any, Callable, NamedTuple

import equinox as eqx
import haiku as hk
import jax
import jax.numpy as jnp
import optax

from companion._validate import (
    number_in,
    one_of,
    positive_int,
    positive_ints,
    positive_number,
    prng_key,
)
from companion.envs import cartpole
from companion.replay import ReplayBuffer, replay_add_batch, replay_init, replay_sample


class Transition(NamedTuple):
    """One step of experience.

    Fields: ``obs`` float32 (4,), ``action`` int32 (), ``reward`` float32 (),
    ``next_obs`` float32 (4,) (the true next observation, also at the end of an
    episode), ``terminated`` bool () (True only for a real termination).
    """

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array
    terminated: jax.Array


class DQNConfig(NamedTuple):
    """Hyperparameters.

    Units: ``total_steps``, ``learning_starts`` and ``epsilon_decay_steps`` count
    environment steps over all environments; ``eval_every`` counts iterations
    (one vectorised step of ``num_envs`` environments); ``target_update_period``
    counts gradient steps. Training runs ``warmup_iterations`` plus
    ``num_blocks * block_iterations`` iterations, so up to one block less than
    ``total_steps`` when they do not divide evenly (``env_steps_run``).

    The DQN chapter measures what the defaults achieve on CartPole-v1.
    """

    num_envs: int = 4
    total_steps: int = 80_000
    learning_starts: int = 2_000  # random actions, no updates, until then
    buffer_capacity: int = 50_000
    batch_size: int = 128
    updates_per_iteration: int = 2  # gradient steps per vectorised env step (of num_envs steps)
    gamma: float = 0.99
    learning_rate: float = 2e-3
    lr_final_fraction: float = 0.0  # the learning rate decays linearly to this fraction
    max_grad_norm: float = 10.0
    loss: str = "squared"  # "squared" or "huber"
    huber_delta: float = 1.0  # used by the Huber loss
    target_update_period: int = 100  # gradient steps between target updates
    target_tau: float = 1.0  # 1.0: copy the online network; below 1: Polyak averaging
    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    epsilon_decay_steps: int = 20_000
    hidden_sizes: tuple = (64, 64)
    eval_every: int = 1_000  # iterations between greedy evaluations during training
    eval_episodes: int = 10  # greedy episodes per evaluation
    progress_bar: bool = False

    @property
    def num_iterations(self) -> int:
        return self.total_steps // self.num_envs

    @property
    def warmup_iterations(self) -> int:
        return self.learning_starts // self.num_envs

    @property
    def num_blocks(self) -> int:
        """Training is split into blocks of ``eval_every`` iterations, each followed
        by an evaluation; a remainder shorter than a block is not run."""
        return max(1, (self.num_iterations - self.warmup_iterations) // self.eval_every)

    @property
    def block_iterations(self) -> int:
        return min(self.eval_every, self.num_iterations - self.warmup_iterations)

    @property
    def env_steps_run(self) -> int:
        """Environment steps that training actually runs (per seed)."""
        return (self.warmup_iterations + self.num_blocks * self.block_iterations) * self.num_envs


#: How many times :func:`greedy_returns`' program was traced, per number of episodes.
EVAL_TRACE_COUNTS: collections.Counter = collections.Counter()


def make_q_network(num_actions: int = 2, hidden_sizes: tuple = (64, 64)) -> hk.Transformed:
    """Q-network: obs float32 (..., 4) -> Q-values float32 (..., num_actions), ReLU MLP.

    The same arguments return the same ``hk.Transformed`` object, so functions
    compiled for it (:func:`greedy_returns`) are compiled once.

    Raises:
        TypeError, ValueError: if ``num_actions`` is not a positive int or
            ``hidden_sizes`` not a non-empty tuple of positive ints.
    """
    return _q_network(
        positive_int(num_actions, "num_actions"), positive_ints(hidden_sizes, "hidden_sizes")
    )


@functools.lru_cache(maxsize=None)
def _q_network(num_actions: int, hidden_sizes: tuple) -> hk.Transformed:
    def forward(obs):
        return hk.nets.MLP([*hidden_sizes, num_actions])(obs)

    return hk.without_apply_rng(hk.transform(forward))


def epsilon_greedy(key: jax.Array, q_values: jax.Array, epsilon: jax.Array) -> jax.Array:
    """With probability ``epsilon`` a uniform random action, else ``argmax q_values``.

    Args:
        key: PRNG key.
        q_values: float (num_actions,).
        epsilon: float scalar in [0, 1].

    Returns:
        int32 () action.

    Raises:
        ValueError: if ``q_values`` is not 1-D; at run time (also under ``jit``)
            if ``epsilon`` is outside [0, 1].
    """
    q_values = jnp.asarray(q_values)
    if q_values.ndim != 1 or q_values.shape[0] == 0:
        raise ValueError(
            f"q_values: expected shape (num_actions,), got {q_values.shape}; "
            "use jax.vmap(epsilon_greedy) for a batch"
        )
    epsilon = eqx.error_if(
        jnp.asarray(epsilon, jnp.float32),
        (epsilon < 0) | (epsilon > 1),
        "epsilon: expected a probability in [0, 1]",
    )
    explore_key, action_key = jax.random.split(key)
    random_action = jax.random.randint(action_key, (), 0, q_values.shape[-1])
    greedy_action = jnp.argmax(q_values, axis=-1).astype(jnp.int32)
    return jnp.where(jax.random.uniform(explore_key) < epsilon, random_action, greedy_action)


def td_target(
    reward: jax.Array, terminated: jax.Array, q_next_target: jax.Array, gamma: float
) -> jax.Array:
    """The one-step TD target ``r + gamma * (1 - terminated) * max_a Q_target(s', a)``.

    Args:
        reward: float (batch,).
        terminated: bool (batch,); True only when the episode really ended
            (a truncation must be False here, so that the target bootstraps).
        q_next_target: float (batch, num_actions), target-network Q-values of
            the true next observations.
        gamma: discount in [0, 1].

    Returns:
        float (batch,).

    Raises:
        ValueError: if the shapes do not fit (batch,), (batch,), (batch,
            num_actions), or ``gamma`` is outside [0, 1].
    """
    number_in(gamma, "gamma", 0.0, 1.0)
    reward, terminated = jnp.asarray(reward), jnp.asarray(terminated)
    q_next_target = jnp.asarray(q_next_target)
    if q_next_target.ndim != 2:
        raise ValueError(
            f"q_next_target: expected shape (batch, num_actions), got {q_next_target.shape}"
        )
    batch = q_next_target.shape[:1]
    for name, a in (("reward", reward), ("terminated", terminated)):
        if a.shape != batch:
            raise ValueError(
                f"{name}: expected shape {batch} (one per row of q_next_target), got {a.shape}"
            )
    bootstrap = 1.0 - terminated.astype(q_next_target.dtype)
    return reward + gamma * bootstrap * jnp.max(q_next_target, axis=-1)


def dqn_loss(
    params: Any,
    target_params: Any,
    batch: Transition,
    apply_fn,
    gamma: float,
    loss: str = "squared",
    huber_delta: float = 1.0,
    target_fn: Callable | None = None,
) -> tuple[jax.Array, dict]:
    """Loss between Q(s, a) and the TD target; no gradient flows through the target.

    Args:
        params, target_params: online and target network parameters.
        batch: :class:`Transition` with a leading batch axis.
        apply_fn: the Q-network's ``apply(params, obs)``.
        gamma: discount.
        loss: ``"squared"`` for ``mean(td_error ** 2) / 2`` or ``"huber"`` for
            ``mean(huber(td_error, huber_delta))``; they agree for errors below
            ``huber_delta``. Huber bounds each sample's gradient by
            ``huber_delta``, which also weakens the rare, large corrections
            that terminal transitions make.
        huber_delta: the Huber loss's threshold.
        target_fn: ``None`` for the DQN target (:func:`td_target`), or a function
            ``target_fn(reward, terminated, q_next_online, q_next_target, gamma)
            -> (batch,)`` that computes another one from the online and the
            target network's Q-values of the next observations (both
            ``(batch, num_actions)``), for example double DQN's.

    Returns:
        ``(loss, aux)`` with ``aux = {"q_mean": ..., "td_abs": ...}`` for diagnostics.

    Raises:
        ValueError: for an unknown ``loss``.
    """
    one_of(loss, ("squared", "huber"), "loss")
    q = apply_fn(params, batch.obs)  # (batch, num_actions)
    q_taken = jnp.take_along_axis(q, batch.action[:, None], axis=-1)[:, 0]
    q_next_target = apply_fn(target_params, batch.next_obs)
    if target_fn is None:
        target = td_target(batch.reward, batch.terminated, q_next_target, gamma)
    else:
        q_next_online = apply_fn(params, batch.next_obs)
        target = target_fn(batch.reward, batch.terminated, q_next_online, q_next_target, gamma)
        if jnp.shape(target) != q_taken.shape:
            raise ValueError(
                f"target_fn: returned shape {jnp.shape(target)}, expected {q_taken.shape} "
                "(one target per transition)"
            )
    target = jax.lax.stop_gradient(target)
    td_error = q_taken - target
    if loss == "squared":
        value = jnp.mean(optax.l2_loss(td_error))  # 0.5 * td_error ** 2
    else:
        value = jnp.mean(optax.huber_loss(td_error, delta=huber_delta))
    return value, {"q_mean": jnp.mean(q_taken), "td_abs": jnp.mean(jnp.abs(td_error))}


def update_target(params: Any, target_params: Any, updates: jax.Array, period: int, tau: float):
    """Target network after ``updates`` gradient steps.

    Every ``period`` steps the target moves to ``tau * params + (1 - tau) * target``:
    with ``tau = 1`` that is the periodic hard copy of Mnih et al. (2015), with
    ``period = 1`` and a small ``tau`` it is Polyak averaging. Between those steps
    the target does not change.

    Args:
        params, target_params: pytrees of the same structure.
        updates: int32 (), gradient steps done so far.
        period: gradient steps between target updates, a positive int.
        tau: in (0, 1].

    Raises:
        TypeError, ValueError: if ``period`` is not a positive int or ``tau`` is
            outside (0, 1].
    """
    positive_int(period, "period")
    number_in(tau, "tau", 0.0, 1.0, low_open=True)
    sync = jnp.mod(updates, period) == 0
    moved = optax.incremental_update(params, target_params, tau)
    return jax.tree.map(lambda m, t: jnp.where(sync, m, t), moved, target_params)


class RunnerState(NamedTuple):
    """Everything ``train`` carries from one iteration to the next."""

    params: Any
    target_params: Any
    opt_state: Any
    buffer: ReplayBuffer
    env_state: cartpole.CartPoleState  # batched over environments
    obs: jax.Array  # (num_envs, 4)
    episode_return: jax.Array  # (num_envs,), return so far of the running episodes
    env_steps: jax.Array  # int32 ()
    updates: jax.Array  # int32 ()
    best_params: Any  # parameters with the best greedy evaluation so far
    best_score: jax.Array  # float32 (), that evaluation's mean return
    key: jax.Array


def make_optimizer(config: DQNConfig) -> optax.GradientTransformation:
    """Adam with gradient clipping and a linearly decaying learning rate.

    Raises:
        TypeError: if ``config`` is not a :class:`DQNConfig`.
    """
    if not isinstance(config, DQNConfig):
        raise TypeError(f"config: expected a DQNConfig, got {type(config).__name__}")
    num_updates = max(1, config.num_blocks * config.block_iterations * config.updates_per_iteration)
    schedule = optax.linear_schedule(
        config.learning_rate, config.learning_rate * config.lr_final_fraction, num_updates
    )
    return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(schedule))


def check_config(config: DQNConfig) -> DQNConfig:
    """Return ``config`` if :func:`make_train` can run it.

    Raises:
        TypeError: if ``config`` is not a :class:`DQNConfig` or a size is not an int.
        ValueError: naming the field, for a size that is not positive, a
            probability or discount outside [0, 1], an unknown ``loss``,
            ``learning_starts`` below ``batch_size``, a buffer smaller than one
            vectorised step, or no training iterations after the warm-up.
    """
    if not isinstance(config, DQNConfig):
        raise TypeError(f"config: expected a DQNConfig, got {type(config).__name__}")
    for field in (
        "num_envs",
        "total_steps",
        "learning_starts",
        "buffer_capacity",
        "batch_size",
        "updates_per_iteration",
        "target_update_period",
        "epsilon_decay_steps",
        "eval_every",
        "eval_episodes",
    ):
        positive_int(getattr(config, field), f"config.{field}")
    positive_ints(config.hidden_sizes, "config.hidden_sizes")
    for field in ("gamma", "lr_final_fraction", "epsilon_start", "epsilon_end"):
        number_in(getattr(config, field), f"config.{field}", 0.0, 1.0)
    number_in(config.target_tau, "config.target_tau", 0.0, 1.0, low_open=True)
    for field in ("learning_rate", "max_grad_norm", "huber_delta"):
        positive_number(getattr(config, field), f"config.{field}")
    one_of(config.loss, ("squared", "huber"), "config.loss")
    if config.learning_starts < config.batch_size:
        raise ValueError(
            f"config.learning_starts: {config.learning_starts} must be at least batch_size "
            f"({config.batch_size}), so that the first batch can be sampled"
        )
    if config.buffer_capacity < config.num_envs:
        raise ValueError(
            f"config.buffer_capacity: {config.buffer_capacity} cannot hold one step of "
            f"num_envs = {config.num_envs} environments"
        )
    if config.num_iterations <= config.warmup_iterations:
        raise ValueError(
            f"config.total_steps: {config.total_steps} must exceed learning_starts "
            f"({config.learning_starts})"
        )
    return config


def make_train(config: DQNConfig = DQNConfig(), target_fn: Callable | None = None):
    """Build ``train(key) -> (runner_state, metrics)`` for CartPole.

    ``metrics`` has one entry per iteration (one vectorised env step), stacked:
    ``env_steps`` int32, ``returns_sum`` and ``episodes`` (completed episodes'
    returns and their count in that iteration), ``epsilon``, ``loss``,
    ``q_mean``. The first ``warmup_iterations`` entries (random actions, no
    updates) report ``loss = q_mean = 0``. It also has one entry per block of
    ``eval_every`` iterations: ``eval_return`` (mean greedy return over
    ``eval_episodes`` episodes) and ``eval_env_steps``.

    ``runner_state.params`` are the final parameters; ``runner_state.best_params``
    those with the best evaluation during training (the later ones on ties), and
    ``best_score`` that evaluation. Selecting by a 10-episode evaluation is
    model selection: confirm the choice on fresh episodes (:func:`greedy_returns`).

    The function is pure: ``jax.jit(train)`` compiles it once and
    ``jax.vmap(train)`` runs several seeds at once.

    Args:
        config: the hyperparameters (:class:`DQNConfig`).
        target_fn: ``None`` for the DQN target, or a function of
            ``(reward, terminated, q_next_online, q_next_target, gamma)`` that
            returns another target, one per transition (see :func:`dqn_loss`):
            the way to train double DQN, say, with this loop.

    Raises:
        TypeError, ValueError: for a configuration that cannot run
            (:func:`check_config`), a ``target_fn`` that is not callable, or a
            ``key`` that is not one PRNG key.
    """
    check_config(config)
    if target_fn is not None and not callable(target_fn):
        raise TypeError(f"target_fn: expected a function or None, got {type(target_fn).__name__}")
    network = make_q_network(2, config.hidden_sizes)
    optimizer = make_optimizer(config)
    epsilon_schedule = optax.linear_schedule(
        config.epsilon_start, config.epsilon_end, config.epsilon_decay_steps
    )
    n = config.num_envs

    def env_step(runner: RunnerState, epsilon: jax.Array, key: jax.Array):
        """Act epsilon-greedily in every environment and store the transitions."""
        q_values = network.apply(runner.params, runner.obs)
        actions = jax.vmap(epsilon_greedy, in_axes=(0, 0, None))(
            jax.random.split(key, n), q_values, epsilon
        )
        env_state, timestep = jax.vmap(cartpole.step_autoreset)(runner.env_state, actions)
        transitions = Transition(
            obs=runner.obs,
            action=actions,
            reward=timestep.reward,
            next_obs=timestep.next_obs,  # the true next observation, not the reset one
            terminated=timestep.terminated,  # truncation is not termination
        )
        buffer = replay_add_batch(runner.buffer, transitions)
        episode_return = runner.episode_return + timestep.reward
        done = timestep.done
        metrics = {
            "returns_sum": jnp.sum(jnp.where(done, episode_return, 0.0)),
            "episodes": jnp.sum(done).astype(jnp.int32),
        }
        runner = runner._replace(
            buffer=buffer,
            env_state=env_state,
            obs=timestep.obs,
            episode_return=jnp.where(done, 0.0, episode_return),
            env_steps=runner.env_steps + n,
        )
        return runner, metrics

    def update(runner: RunnerState, key: jax.Array):
        batch = replay_sample(runner.buffer, key, config.batch_size)
        (loss, aux), grads = jax.value_and_grad(dqn_loss, has_aux=True)(
            runner.params,
            runner.target_params,
            batch,
            network.apply,
            config.gamma,
            config.loss,
            config.huber_delta,
            target_fn,
        )
        updates, opt_state = optimizer.update(grads, runner.opt_state, runner.params)
        params = optax.apply_updates(runner.params, updates)
        count = runner.updates + 1
        target_params = update_target(
            params, runner.target_params, count, config.target_update_period, config.target_tau
        )
        runner = runner._replace(
            params=params, target_params=target_params, opt_state=opt_state, updates=count
        )
        return runner, loss, aux["q_mean"]

    def iteration(runner: RunnerState, learn: bool):
        key, act_key, update_key = jax.random.split(runner.key, 3)
        runner = runner._replace(key=key)
        epsilon = epsilon_schedule(runner.env_steps) if learn else jnp.float32(1.0)
        runner, metrics = env_step(runner, epsilon, act_key)
        loss = q_mean = jnp.float32(0.0)
        if learn:
            for k in jax.random.split(update_key, config.updates_per_iteration):
                runner, loss, q_mean = update(runner, k)
        metrics.update(env_steps=runner.env_steps, epsilon=epsilon, loss=loss, q_mean=q_mean)
        return runner, metrics

    def train(key: jax.Array):
        prng_key(key)
        key, net_key, env_key = jax.random.split(key, 3)
        obs_example = jnp.zeros((4,), jnp.float32)
        params = network.init(net_key, obs_example[None])
        env_state, obs = jax.vmap(cartpole.reset)(jax.random.split(env_key, n))
        example = Transition(
            obs=obs_example,
            action=jnp.zeros((), jnp.int32),
            reward=jnp.zeros((), jnp.float32),
            next_obs=obs_example,
            terminated=jnp.zeros((), bool),
        )
        runner = RunnerState(
            params=params,
            target_params=params,
            opt_state=optimizer.init(params),
            buffer=replay_init(example, config.buffer_capacity),
            env_state=env_state,
            obs=obs,
            episode_return=jnp.zeros((n,), jnp.float32),
            env_steps=jnp.zeros((), jnp.int32),
            updates=jnp.zeros((), jnp.int32),
            best_params=params,
            best_score=jnp.float32(-jnp.inf),
            key=key,
        )

        def warmup_body(runner, _):
            return iteration(runner, learn=False)

        def learn_body(runner, _):
            return iteration(runner, learn=True)

        def block(runner, _):
            runner, metrics = jax.lax.scan(learn_body, runner, length=config.block_iterations)
            key, eval_key = jax.random.split(runner.key)
            score = jnp.mean(greedy_returns(runner.params, eval_key, config.eval_episodes, network))
            better = score >= runner.best_score
            best = jax.tree.map(
                lambda p, b: jnp.where(better, p, b), runner.params, runner.best_params
            )
            runner = runner._replace(
                key=key, best_params=best, best_score=jnp.maximum(score, runner.best_score)
            )
            return runner, (metrics, {"eval_return": score, "eval_env_steps": runner.env_steps})

        if config.progress_bar:
            from jax_tqdm import scan_tqdm

            updates = max(1, config.num_blocks // 4)  # a handful of updates keeps logs short
            block = scan_tqdm(config.num_blocks, print_rate=updates, tqdm_type="std", desc="DQN")(
                block
            )
        runner, warm_metrics = jax.lax.scan(warmup_body, runner, length=config.warmup_iterations)
        runner, (learn_metrics, evals) = jax.lax.scan(block, runner, jnp.arange(config.num_blocks))
        learn_metrics = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), learn_metrics)
        metrics = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), warm_metrics, learn_metrics)
        metrics.update(evals)
        return runner, metrics

    return train


def greedy_returns(
    params: Any, key: jax.Array, num_episodes: int = 100, network: hk.Transformed | None = None
) -> jax.Array:
    """Returns of ``num_episodes`` greedy episodes (argmax Q, no exploration).

    Episodes start from independent resets and last until termination or the
    500-step truncation of CartPole-v1. Compiled once per network and
    ``num_episodes``.

    Args:
        params: Q-network parameters.
        key: PRNG key.
        num_episodes: number of episodes (static), a positive int.
        network: the Q-network; the default is ``make_q_network()`` (64, 64).

    Returns:
        float32 (num_episodes,).

    Raises:
        TypeError, ValueError: if ``num_episodes`` is not a positive int or ``key``
            is not one PRNG key.
    """
    positive_int(num_episodes, "num_episodes")
    prng_key(key)
    network = network if network is not None else make_q_network()
    return _greedy_returns(params, key, int(num_episodes), network)


@functools.partial(jax.jit, static_argnums=(2, 3))
def _greedy_returns(params, key, num_episodes: int, network: hk.Transformed) -> jax.Array:
    EVAL_TRACE_COUNTS[num_episodes] += 1
    max_steps = cartpole.DEFAULT_PARAMS.max_steps

    def episode(key):
        state, obs = cartpole.reset(key)

        def body(carry, _):
            state, obs, alive, total = carry
            action = jnp.argmax(network.apply(params, obs)).astype(jnp.int32)
            state, ts = cartpole.step(state, action)
            total = total + ts.reward * alive
            return (state, ts.obs, alive & ~ts.done, total), None

        init = (state, obs, jnp.array(True), jnp.float32(0.0))
        (_, _, _, total), _ = jax.lax.scan(body, init, length=max_steps)
        return total

    return jax.vmap(episode)(jax.random.split(key, num_episodes))
