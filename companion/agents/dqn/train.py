"""DQN training on CartPole as one compiled program: ``make_train(config, network, env)``.

The structure follows PureJaxRL's DQN (Lu et al., 2022).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import haiku as hk
import jax
import jax.numpy as jnp
import optax

from companion._validate import (
    number_in,
    one_of,
    positive_int,
    positive_number,
    prng_key,
)
from companion.agents.dqn.evaluate import _greedy_returns
from companion.agents.dqn.losses import Transition, _dqn_loss, _update_target
from companion.agents.dqn.networks import epsilon_greedy
from companion.envs import cartpole
from companion.replay import ReplayBuffer, _replay_add_batch, _replay_init, _replay_sample


class DQNConfig(NamedTuple):
    """The algorithm's settings (the network and the environment are passed to
    :func:`make_train` beside it).

    Units: ``total_steps``, ``learning_starts`` and ``epsilon_decay_steps`` count environment
    steps over all environments; ``eval_every`` counts iterations (one vectorised step of
    ``num_envs`` environments); ``target_update_period`` counts gradient steps. Training runs
    ``warmup_iterations + num_blocks * block_iterations`` iterations (``env_steps_run``), so up
    to one block less than ``total_steps``.
    """

    num_envs: int = 4
    total_steps: int = 40_000
    learning_starts: int = 1_000  # random actions, no updates, until then
    buffer_capacity: int = 40_000  # holds the whole run: early falls are never overwritten
    batch_size: int = 128
    updates_per_iteration: int = 2  # gradient steps per vectorised env step (of num_envs steps)
    gamma: float = 0.99
    learning_rate: float = 1e-3
    lr_schedule: str = "linear"  # "linear" or "cosine": how the learning rate decays
    lr_final_fraction: float = 0.0  # the learning rate decays to this fraction of itself
    max_grad_norm: float = 10.0
    loss: str = "squared"  # "squared" or "huber"
    huber_delta: float = 1.0  # used by the Huber loss
    target_update_period: int = 10  # gradient steps between target updates
    target_tau: float = 1.0  # 1.0: copy the online network; below 1: Polyak averaging
    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    epsilon_decay_steps: int = 8_000
    eval_every: int = 250  # iterations between greedy evaluations during training
    eval_episodes: int = 10  # greedy episodes per evaluation; 0: no evaluation during training

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
    """Adam after global-norm clipping, with a learning rate that decays over the run.

    The rate falls from ``learning_rate`` to ``learning_rate * lr_final_fraction`` along a
    cosine (Loshchilov and Hutter, 2017) or a line, as ``lr_schedule`` says.

    Raises:
        TypeError, ValueError: as :func:`check_config`.
    """
    return _optimizer(check_config(config))


def _optimizer(config: DQNConfig) -> optax.GradientTransformation:
    num_updates = max(1, config.num_blocks * config.block_iterations * config.updates_per_iteration)
    if config.lr_schedule == "cosine":
        schedule = optax.cosine_decay_schedule(
            config.learning_rate, num_updates, alpha=config.lr_final_fraction
        )
    else:
        schedule = optax.linear_schedule(
            config.learning_rate, config.learning_rate * config.lr_final_fraction, num_updates
        )
    return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(schedule))


def check_config(config: DQNConfig) -> DQNConfig:
    """Return ``config`` if :func:`make_train` can run it.

    Raises:
        TypeError: if ``config`` is not a :class:`DQNConfig`, a size is not an int, or a rate,
            probability or discount is not a number.
        ValueError: naming the field: a non-positive size, rate or ``huber_delta``, a probability,
            discount or ``target_tau`` out of range, an unknown ``loss`` or ``lr_schedule``,
            ``learning_starts < batch_size``, ``buffer_capacity < num_envs``, or no iterations
            after the warm-up.
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
    ):
        positive_int(getattr(config, field), f"config.{field}")
    episodes = config.eval_episodes  # 0 turns the evaluations off
    if isinstance(episodes, bool) or not isinstance(episodes, numbers.Integral):
        raise TypeError(f"config.eval_episodes: expected an int >= 0, got {episodes!r}")
    if episodes < 0:
        raise ValueError(
            f"config.eval_episodes: expected an int >= 0 (0: no evaluation), got {episodes!r}"
        )
    for field in ("gamma", "lr_final_fraction", "epsilon_start", "epsilon_end"):
        number_in(getattr(config, field), f"config.{field}", 0.0, 1.0)
    number_in(config.target_tau, "config.target_tau", 0.0, 1.0, low_open=True)
    for field in ("learning_rate", "max_grad_norm", "huber_delta"):
        positive_number(getattr(config, field), f"config.{field}")
    one_of(config.loss, ("squared", "huber"), "config.loss")
    one_of(config.lr_schedule, ("cosine", "linear"), "config.lr_schedule")
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


def make_train(
    config: DQNConfig,
    network: hk.Transformed,
    env: cartpole.CartPole,
    target_fn: Callable | None = None,
    progress_bar: bool = False,
) -> Callable:
    """Build the pure ``train(key) -> (runner, metrics)``, not jitted: jit it, vmap it over seeds.

    Args:
        config: the algorithm's settings, a :class:`DQNConfig`.
        network: the Q-network, a haiku ``hk.Transformed`` without an apply key, mapping
            observations float32 ``(batch, 4)`` to Q-values ``(batch, 2)``
            (:func:`~companion.agents.dqn.make_q_network`).
        env: the environment, a :class:`~companion.envs.cartpole.CartPole`.
        target_fn: ``None`` for the DQN target, or another target as in :func:`dqn_loss`.
        progress_bar: a jax-tqdm bar over the blocks (a host callback in the program).

    ``runner`` is the final :class:`RunnerState`: ``params`` are the trained parameters,
    ``best_params`` and ``best_score`` those of the best greedy evaluation (the later on ties);
    with ``eval_episodes = 0`` no evaluation runs, ``best_params`` are the final parameters,
    ``best_score`` stays -inf and ``metrics`` has no ``eval_*`` entries. Evaluations draw their
    own keys: the same ``key`` trains the same parameters whatever ``eval_episodes`` is.
    ``metrics``, per iteration: ``env_steps`` int32, ``returns_sum``, ``returns_max``,
    ``episodes`` (of the episodes completed in it; 0 if none), ``epsilon``, ``loss``, ``q_mean``
    (mean Q(s, a) of the batch), ``td_abs`` (mean absolute TD error of the batch) (the last
    gradient step's; 0 in the warm-up); per block: ``eval_return`` (mean greedy return), ``eval_env_steps``.

    Raises:
        TypeError, ValueError: naming the argument: a bad ``config`` (:func:`check_config`),
            a ``network`` that is not an ``hk.Transformed`` or does not map ``(batch, 4)`` to
            ``(batch, 2)``, an ``env`` that is not a ``CartPole``, a ``target_fn`` that is not
            callable, or (when ``train`` is called) a ``key`` that is not one PRNG key.
    """
    # validated once, here: the pieces below are the unchecked cores of the public functions
    check_config(config)
    _check_network(network)
    cartpole.check_env(env)
    if target_fn is not None and not callable(target_fn):
        raise TypeError(f"target_fn: expected a function or None, got {type(target_fn).__name__}")
    optimizer = _optimizer(config)
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
        env_state, timestep = jax.vmap(env.step_autoreset)(runner.env_state, actions)
        transitions = Transition(
            obs=runner.obs,
            action=actions,
            reward=timestep.reward,
            next_obs=timestep.next_obs,  # the true next observation, not the reset one
            terminated=timestep.terminated,  # truncation is not termination
        )
        buffer = _replay_add_batch(runner.buffer, transitions)
        episode_return = runner.episode_return + timestep.reward
        done = timestep.done
        metrics = {
            "returns_sum": jnp.sum(jnp.where(done, episode_return, 0.0)),
            "returns_max": jnp.max(jnp.where(done, episode_return, 0.0)),
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

    def update(learner: tuple, key: jax.Array, buffer: ReplayBuffer):
        """One gradient step; ``learner`` is (params, target_params, opt_state, updates)."""
        params, target_params, opt_state, count = learner
        batch = _replay_sample(buffer, key, config.batch_size)
        (loss, aux), grads = jax.value_and_grad(_dqn_loss, has_aux=True)(
            params,
            target_params,
            batch,
            network.apply,
            config.gamma,
            config.loss,
            config.huber_delta,
            target_fn,
        )
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        count = count + 1
        target_params = _update_target(
            params, target_params, count, config.target_update_period, config.target_tau
        )
        return (params, target_params, opt_state, count), (loss, aux["q_mean"], aux["td_abs"])

    def iteration(runner: RunnerState, learn: bool):
        key, act_key, update_key = jax.random.split(runner.key, 3)
        runner = runner._replace(key=key)
        epsilon = epsilon_schedule(runner.env_steps) if learn else jnp.float32(1.0)
        runner, metrics = env_step(runner, epsilon, act_key)
        loss = q_mean = td_abs = jnp.float32(0.0)
        if learn:  # updates_per_iteration gradient steps, a scan (not unrolled)

            def gradient_step(carry, _):
                learner, key = carry
                key, sample_key = jax.random.split(key)
                learner, out = update(learner, sample_key, runner.buffer)
                return (learner, key), out

            learner = (runner.params, runner.target_params, runner.opt_state, runner.updates)
            (learner, _), (losses, q_means, td_abss) = jax.lax.scan(
                gradient_step, (learner, update_key), length=config.updates_per_iteration
            )
            params, target_params, opt_state, count = learner
            runner = runner._replace(
                params=params, target_params=target_params, opt_state=opt_state, updates=count
            )
            loss, q_mean, td_abs = losses[-1], q_means[-1], td_abss[-1]
        metrics.update(
            env_steps=runner.env_steps, epsilon=epsilon, loss=loss, q_mean=q_mean, td_abs=td_abs
        )
        return runner, metrics

    def init(key: jax.Array):
        key, net_key, env_key = jax.random.split(key, 3)
        obs_example = jnp.zeros((4,), jnp.float32)
        params = network.init(net_key, obs_example[None])
        env_state, obs = jax.vmap(env.reset)(jax.random.split(env_key, n))
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
            buffer=_replay_init(example, config.buffer_capacity),
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

        return jax.lax.scan(warmup_body, runner, length=config.warmup_iterations)

    def learn_body(runner, _):
        return iteration(runner, learn=True)

    def block(runner, _):
        runner, metrics = jax.lax.scan(learn_body, runner, length=config.block_iterations)
        key, eval_key = jax.random.split(runner.key)  # split either way: the same training
        if config.eval_episodes == 0:
            return runner._replace(key=key, best_params=runner.params), (metrics, {})
        returns = _greedy_returns(runner.params, eval_key, config.eval_episodes, network, env)
        score = jnp.mean(returns)
        better = score >= runner.best_score
        best = jax.tree.map(lambda p, b: jnp.where(better, p, b), runner.params, runner.best_params)
        runner = runner._replace(
            key=key, best_params=best, best_score=jnp.maximum(score, runner.best_score)
        )
        return runner, (metrics, {"eval_return": score, "eval_env_steps": runner.env_steps})

    def run(runner: RunnerState, num_blocks: int):
        body = block
        if progress_bar:
            from jax_tqdm import scan_tqdm

            updates = max(1, num_blocks // 4)  # a handful of updates keeps logs short
            body = scan_tqdm(num_blocks, print_rate=updates, tqdm_type="std", desc="DQN")(block)
        runner, (learn_metrics, evals) = jax.lax.scan(body, runner, jnp.arange(num_blocks))
        learn_metrics = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), learn_metrics)
        return runner, {**learn_metrics, **evals}

    init_jit, run_jit = jax.jit(init), jax.jit(run, static_argnums=1)

    def train(key: jax.Array):
        prng_key(key)
        runner, warm_metrics = init_jit(key)
        runner, learned = run_jit(runner, config.num_blocks)
        evals = {k: learned.pop(k) for k in ("eval_return", "eval_env_steps") if k in learned}
        metrics = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), warm_metrics, learned)
        metrics.update(evals)
        return runner, metrics

    return train


def _check_network(network: Any) -> None:
    """Raise naming ``network`` unless it maps observations (batch, 4) to Q-values (batch, 2)."""
    if not isinstance(network, hk.Transformed):
        raise TypeError(
            f"network: expected a haiku hk.Transformed (e.g. dqn.make_q_network()), "
            f"got {type(network).__name__}"
        )
    obs = jax.ShapeDtypeStruct((1, 4), jnp.float32)
    try:
        params = jax.eval_shape(network.init, jax.random.key(0), obs)
        q_values = jax.eval_shape(network.apply, params, obs)
    except Exception as error:  # the network's own error, named
        raise TypeError(
            f"network: cannot map CartPole observations float32 (batch, 4) to Q-values: "
            f"{type(error).__name__}: {error}"
        ) from None
    if getattr(q_values, "shape", None) != (1, 2):
        raise ValueError(
            f"network: expected Q-values of shape (batch, 2), one per CartPole action, for "
            f"observations (batch, 4); got {getattr(q_values, 'shape', q_values)}"
        )
