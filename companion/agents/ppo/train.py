"""PPO training on jumanji's Maze as one compiled program.

:func:`make_train` builds ``train(key) -> (model, metrics)``: rollouts
(:func:`~companion.agents.ppo.rollout`), GAE and minibatch epochs of the PPO
loss, all inside ``jax.lax.scan``, compiled once per configuration and
``jax.vmap``-able over seeds. :func:`make_trainer` exposes the same program
in two pieces, ``init`` and ``run``, for training in chunks (to evaluate or
save between them). The structure follows PureJaxRL's PPO (Lu et al., 2022).
"""

from __future__ import annotations

import collections
from typing import Any, Callable, NamedTuple

import equinox as eqx
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
from companion.agents.ppo.losses import Batch, gae, ppo_loss
from companion.agents.ppo.networks import NETWORKS, make_model, model_skeleton
from companion.agents.ppo.rollout import rollout
from companion.envs import maze as maze_lib
from companion.envs.autoreset import make_reset_pool, reset_with_next_obs

#: How many times the training program of each (configuration, loss) was traced
#: (compiled); :func:`make_train` and :func:`make_trainer` increment it. A second
#: call of the same ``train`` with a new key must not add to it.
TRACE_COUNTS: collections.Counter = collections.Counter()

#: Names accepted by ``PPOConfig.reset``.
RESETS = ("pooled", "per_step")


class PPOConfig(NamedTuple):
    """Hyperparameters of :func:`make_train` (hashable, so one compile per config).

    Attributes:
        task: ``"empty"``, ``"medium"`` or ``"random"``
            (:func:`companion.envs.maze.make_maze_task`).
        num_envs: parallel environments.
        num_steps: rollout length per environment and update.
        total_timesteps: environment steps in all (rounded down to whole updates).
        num_epochs, num_minibatches: passes over each rollout, and minibatches per pass.
        gamma, gae_lambda: discount and GAE lambda.
        clip_eps, vf_coef, ent_coef: PPO loss coefficients.
        learning_rate: Adam step size, decayed linearly to 0 when ``anneal_lr``.
        normalise_advantages: standardise advantages per minibatch (:func:`normalise`).
        max_grad_norm: global gradient-norm clip.
        network: ``"conv"`` (:class:`ActorCritic`), ``"propagation"``
            (:class:`PropagationActorCritic`) or ``"value_iteration"``
            (:class:`ValueIterationActorCritic`).
        channels, hidden_sizes: for ``"conv"``, the convolutions' channels and
            the fully connected widths; for ``"propagation"``, ``channels[0]``
            is the feature width per cell and ``hidden_sizes`` the widths after it.
        iterations: propagation steps of ``"propagation"``; value-iteration backups of
            ``"value_iteration"``.
        reset: how episodes restart within a rollout: ``"pooled"`` (from a pool
            of ``num_envs`` resets drawn once per rollout,
            :mod:`companion.envs.autoreset`) or ``"per_step"`` (jumanji's
            ``AutoResetWrapper``, a fresh reset computed on every step).
        progress_bar: show a jax-tqdm progress bar over updates.

    :func:`check_config` (called by :func:`make_train`) says which values are
    accepted; every size must be a positive int.
    """

    task: str = "medium"
    num_envs: int = 64
    num_steps: int = 32
    total_timesteps: int = 200_000
    num_epochs: int = 4
    num_minibatches: int = 4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    learning_rate: float = 1e-3
    anneal_lr: bool = True
    normalise_advantages: bool = True
    max_grad_norm: float = 0.5
    channels: tuple = (16,)
    hidden_sizes: tuple = (128, 128)
    network: str = "conv"
    iterations: int = 32
    reset: str = "pooled"
    progress_bar: bool = False

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // self.batch_size

    @property
    def env_steps_run(self) -> int:
        return self.num_updates * self.batch_size


#: The PPO chapter's configuration for the fixed mazes ("empty", "medium"); set
#: ``task`` and ``total_timesteps`` with ``_replace``.
FIXED_MAZE_CONFIG = PPOConfig(
    normalise_advantages=False,
    num_envs=64,
    num_steps=32,
    num_epochs=2,
    num_minibatches=4,
    learning_rate=2e-3,
    channels=(8,),
    hidden_sizes=(64, 64),
)

#: The configuration of the chapter's random-maze agent (``tools/train_random_maze.py``).
RANDOM_MAZE_CONFIG = PPOConfig(
    task="random",
    normalise_advantages=True,
    network="propagation",
    channels=(8,),
    hidden_sizes=(64,),
    iterations=32,
    num_envs=128,
    num_steps=32,
    total_timesteps=1_048_576,
    num_epochs=2,
    num_minibatches=4,
    learning_rate=1e-3,
)

#: The configuration of the chapter's planning agent on random mazes
#: (``tools/train_random_maze.py --agent value_iteration``): 99 backups (rows * cols - 1,
#: enough to converge on any 10 x 10 maze), 4 value channels, a value head of 64 units,
#: an eighth of the budget above.
VALUE_ITERATION_MAZE_CONFIG = RANDOM_MAZE_CONFIG._replace(
    network="value_iteration",
    channels=(4,),
    hidden_sizes=(64,),
    iterations=99,
    total_timesteps=131_072,
)


class RunnerState(NamedTuple):
    """The carry of the training loop.

    Fields:
        params: the trained (floating-point) leaves of the model.
        opt_state: the optimiser's state.
        env_state, timestep: the batched environments (leading axis ``num_envs``).
        key: PRNG key.
        update: int32 (), updates done so far.
        episode_start: int32 ``(num_envs,)``, the update in which each
            environment's current episode started.
        started, ended, succeeded: float32 ``(num_updates,)``: how many episodes
            started in each update, how many of those have ended, and how many
            of those reached the target.
    """

    params: Any
    opt_state: Any
    env_state: Any
    timestep: Any
    key: jax.Array
    update: jax.Array
    episode_start: jax.Array
    started: jax.Array
    ended: jax.Array
    succeeded: jax.Array


def make_optimizer(config: PPOConfig) -> optax.GradientTransformation:
    """Adam (eps 1e-5) with global-norm gradient clipping; the step size decays
    linearly to 0 over all minibatch updates when ``config.anneal_lr``.

    Raises:
        TypeError: if ``config`` is not a :class:`PPOConfig`.
    """
    if not isinstance(config, PPOConfig):
        raise TypeError(f"config: expected a PPOConfig, got {type(config).__name__}")
    steps = max(1, config.num_updates * config.num_epochs * config.num_minibatches)
    lr = (
        optax.linear_schedule(config.learning_rate, 0.0, steps)
        if config.anneal_lr
        else config.learning_rate
    )
    return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(lr, eps=1e-5))


def check_config(config: PPOConfig) -> PPOConfig:
    """Return ``config`` if :func:`make_train` can run it.

    Raises:
        TypeError: if ``config`` is not a :class:`PPOConfig` or a size is not an int.
        ValueError: naming the field, for a size that is not positive, an unknown
            ``task``, ``network`` or ``reset``, ``gamma`` or ``gae_lambda``
            outside [0, 1], ``clip_eps`` outside (0, 1], a negative coefficient,
            a budget below one update, or ``num_minibatches`` that does not
            divide the batch.
    """
    if not isinstance(config, PPOConfig):
        raise TypeError(f"config: expected a PPOConfig, got {type(config).__name__}")
    one_of(config.task, maze_lib.TASKS, "config.task")
    one_of(config.network, NETWORKS, "config.network")
    one_of(config.reset, RESETS, "config.reset")
    for field in (
        "num_envs",
        "num_steps",
        "total_timesteps",
        "num_epochs",
        "num_minibatches",
    ):
        positive_int(getattr(config, field), f"config.{field}")
    if config.iterations is None:
        raise ValueError(
            "config.iterations: None (backups until the values settle, in a while_loop) "
            "cannot be differentiated in reverse mode; train with a positive int, for "
            "example rows * cols - 1 = 99 on 10 x 10 mazes"
        )
    positive_int(config.iterations, "config.iterations")
    positive_ints(config.hidden_sizes, "config.hidden_sizes")
    if config.network == "propagation" or len(config.channels):
        positive_ints(config.channels, "config.channels")
    number_in(config.gamma, "config.gamma", 0.0, 1.0)
    number_in(config.gae_lambda, "config.gae_lambda", 0.0, 1.0)
    number_in(config.clip_eps, "config.clip_eps", 0.0, 1.0, low_open=True)
    number_in(config.vf_coef, "config.vf_coef", 0.0, float("inf"))
    number_in(config.ent_coef, "config.ent_coef", 0.0, float("inf"))
    positive_number(config.learning_rate, "config.learning_rate")
    positive_number(config.max_grad_norm, "config.max_grad_norm")
    if config.num_updates < 1:
        raise ValueError(
            f"config.total_timesteps: {config.total_timesteps} is less than one update "
            f"(num_envs * num_steps = {config.batch_size})"
        )
    if config.batch_size % config.num_minibatches:
        raise ValueError(
            f"config.num_minibatches: {config.num_minibatches} does not divide the batch of "
            f"num_envs * num_steps = {config.batch_size} transitions"
        )
    return config


class Trainer(NamedTuple):
    """The pieces of :func:`make_train`, for training in chunks.

    Fields:
        init: ``init(key) -> RunnerState``, jitted: a new model, optimiser and
            batch of environments.
        run: ``run(runner, num_updates) -> (runner, metrics)``, jitted with
            ``num_updates`` static: that many updates (the learning-rate
            schedule and the update counter continue across calls).
        model: ``model(runner)``: the current model of a runner.
        config: the configuration.
    """

    init: Callable
    run: Callable
    model: Callable
    config: PPOConfig


def make_trainer(
    config: PPOConfig = PPOConfig(),
    loss_fn: Callable = ppo_loss,
    env: Any = None,
    axis_name: str | None = None,
) -> Trainer:
    """Build the training program of ``config`` in pieces (see :class:`Trainer`).

    ``make_train(config)(key)`` equals ``run(init(key), config.num_updates)``
    followed by ``model``.

    Args:
        config: the hyperparameters (:class:`PPOConfig`).
        loss_fn: the loss of one minibatch, with :func:`~companion.agents.ppo.ppo_loss`'s
            signature ``loss_fn(model, batch, clip_eps, vf_coef, ent_coef,
            normalise_advantages) -> (loss, metrics)``; ``metrics`` is a dict of
            scalars, averaged over each update's minibatches in the training
            metrics. Pass your own to train with a different loss.
        env: ``None`` for the Maze of ``config.task``, or a jumanji Maze of your own
            (a layout from :class:`companion.envs.maze.FixedMazeGenerator`, another
            size, another time limit); ``config.task`` is then not used.
        axis_name: ``None`` on one device. Inside ``shard_map`` over a device
            mesh, the name of the mesh axis that splits the environments: each
            minibatch gradient is then averaged over that axis
            (``jax.lax.pmean``) before the optimiser step
            (:func:`companion.parallel.make_data_parallel_train`).

    Raises:
        TypeError, ValueError: see :func:`check_config`; ``TypeError`` if
            ``loss_fn`` is not callable, ``env`` is not a Maze or ``axis_name``
            is not ``None`` or a string.
    """
    check_config(config)
    if axis_name is not None and not isinstance(axis_name, str):
        raise TypeError(f"axis_name: expected None or a str, got {type(axis_name).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn: expected a function, got {type(loss_fn).__name__}")
    if env is None:
        env = maze_lib.make_maze_task(config.task)
    elif not all(hasattr(env, a) for a in ("reset", "step", "num_rows", "num_cols")):
        raise TypeError(f"env: expected a jumanji Maze, got {type(env).__name__}")
    grid_shape = (env.num_rows, env.num_cols)
    optimizer = make_optimizer(config)
    n = config.num_envs
    minibatch = config.batch_size // config.num_minibatches
    # The model's structure without its weights: traced, not computed (nothing compiles here).
    skeleton = model_skeleton(config, grid_shape)
    static_model = eqx.filter(skeleton, lambda x: isinstance(x, jax.ShapeDtypeStruct), inverse=True)

    def episode_stats(runner: RunnerState, done, success):
        """Count every episode that ended under the update in which it started."""
        earlier = jnp.cumsum(done, axis=0) - done  # episodes ended before step t, per env
        start = jnp.where(earlier == 0, runner.episode_start[None, :], runner.update)
        ended = runner.ended.at[start].add(done.astype(jnp.float32))
        succeeded = runner.succeeded.at[start].add((done & success).astype(jnp.float32))
        started = runner.started.at[runner.update].add(done.sum().astype(jnp.float32))
        episode_start = jnp.where(done.any(axis=0), runner.update, runner.episode_start)
        return runner._replace(
            started=started, ended=ended, succeeded=succeeded, episode_start=episode_start
        )

    def update(runner: RunnerState, _):
        key, pool_key, rollout_key, perm_key = jax.random.split(runner.key, 4)
        params = runner.params
        model = eqx.combine(params, static_model)
        pool = make_reset_pool(env, pool_key, n) if config.reset == "pooled" else None
        env_state, timestep, traj = rollout(
            model, env, pool, runner.env_state, runner.timestep, rollout_key, config.num_steps
        )
        _, value_tp1 = jax.vmap(jax.vmap(model))(traj.next_image)
        advantages, targets = gae(
            traj.reward,
            traj.value,
            value_tp1,
            traj.terminated,
            traj.done,
            config.gamma,
            config.gae_lambda,
        )
        flat = jax.tree.map(
            lambda x: x.reshape((config.batch_size,) + x.shape[2:]),
            Batch(
                image=traj.image,
                action_mask=traj.action_mask,
                action=traj.action,
                log_prob=traj.log_prob,
                value=traj.value,
                advantage=advantages,
                target=targets,
            ),
        )

        def minibatch_step(carry, batch):
            params, opt_state = carry

            def loss_of(p):
                model = eqx.combine(p, static_model)
                coefs = (config.clip_eps, config.vf_coef, config.ent_coef)
                return loss_fn(model, batch, *coefs, config.normalise_advantages)

            (_, metrics), grads = jax.value_and_grad(loss_of, has_aux=True)(params)
            if axis_name is not None:  # data parallel: the devices' gradients meet here
                grads = jax.lax.pmean(grads, axis_name)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), metrics

        def epoch(carry, _):
            params, opt_state, key = carry
            key, perm_key = jax.random.split(key)
            perm = jax.random.permutation(perm_key, config.batch_size)
            shuffled = jax.tree.map(
                lambda x: x[perm].reshape((config.num_minibatches, minibatch) + x.shape[1:]),
                flat,
            )
            (params, opt_state), metrics = jax.lax.scan(
                minibatch_step, (params, opt_state), shuffled
            )
            return (params, opt_state, key), metrics

        (params, opt_state, _), loss_metrics = jax.lax.scan(
            epoch, (params, runner.opt_state, perm_key), None, length=config.num_epochs
        )
        success = traj.reward > 0  # Maze rewards only the step that reaches the target
        episodes = traj.done.sum()
        lengths = jnp.where(traj.done, traj.step_count, 0)
        metrics = {k: v.mean() for k, v in loss_metrics.items()}
        metrics.update(
            episodes=episodes.astype(jnp.float32),
            success_rate=jnp.where(
                episodes > 0, (traj.done & success).sum() / jnp.maximum(episodes, 1), jnp.nan
            ),
            episode_length=jnp.where(
                episodes > 0, lengths.sum() / jnp.maximum(episodes, 1), jnp.nan
            ),
        )
        runner = episode_stats(runner, traj.done, success)
        runner = runner._replace(
            params=params,
            opt_state=opt_state,
            env_state=env_state,
            timestep=timestep,
            key=key,
            update=runner.update + 1,
        )
        return runner, metrics

    def init(key: jax.Array) -> RunnerState:
        key, model_key, env_key = jax.random.split(key, 3)
        model = make_model(config, model_key, grid_shape)
        params = eqx.filter(model, eqx.is_inexact_array)
        env_state, timestep = jax.vmap(reset_with_next_obs, in_axes=(None, 0))(
            env, jax.random.split(env_key, n)
        )
        zeros = jnp.zeros((config.num_updates,), jnp.float32)
        return RunnerState(
            params=params,
            opt_state=optimizer.init(params),
            env_state=env_state,
            timestep=timestep,
            key=key,
            update=jnp.zeros((), jnp.int32),
            episode_start=jnp.zeros((n,), jnp.int32),
            started=zeros.at[0].set(n),
            ended=zeros,
            succeeded=zeros,
        )

    def run(runner: RunnerState, num_updates: int):
        TRACE_COUNTS[(config, loss_fn)] += 1  # per configuration and loss
        body = update
        if config.progress_bar:
            from jax_tqdm import scan_tqdm

            body = scan_tqdm(
                num_updates,
                print_rate=max(1, num_updates // 10),
                tqdm_type="std",
                desc=f"PPO {config.task}",
            )(lambda r, i: update(r, i))
        first = runner.update
        runner, metrics = jax.lax.scan(body, runner, jnp.arange(num_updates))
        steps = (first + jnp.arange(1, num_updates + 1)) * config.batch_size
        metrics["env_steps"] = steps.astype(jnp.float32)
        return runner, metrics

    def model_of(runner: RunnerState):
        return eqx.combine(runner.params, static_model)

    return Trainer(
        init=jax.jit(init),
        run=jax.jit(run, static_argnums=1),
        model=model_of,
        config=config,
    )


def success_by_start(runner: RunnerState) -> jax.Array:
    """Success rate of the episodes that *started* in each update.

    Episodes that end early are mostly those that reach the target, so the
    success rate of the episodes that *ended* in an update is biased upwards
    while many episodes are still running (in the first updates, only
    successes can have ended). Counting every episode under the update in
    which it started, once all of them have ended, has no such bias.

    Args:
        runner: the final :class:`RunnerState` (leading axes allowed, e.g. seeds).

    Returns:
        float32 ``(..., num_updates)``: successes / episodes started in each
        update, nan where an episode started in that update was still running
        when training stopped (or none started).

    Raises:
        TypeError: if ``runner`` is not a :class:`RunnerState`.
    """
    if not isinstance(runner, RunnerState):
        raise TypeError(f"runner: expected a ppo.RunnerState, got {type(runner).__name__}")
    complete = (runner.ended == runner.started) & (runner.started > 0)
    return jnp.where(complete, runner.succeeded / jnp.maximum(runner.started, 1.0), jnp.nan)


def make_train(config: PPOConfig = PPOConfig(), loss_fn: Callable = ppo_loss, env: Any = None):
    """Build ``train(key) -> (model, metrics)`` for ``config``, jitted.

    ``train`` runs the whole experiment in one compiled program: an outer
    ``lax.scan`` over ``config.num_updates`` updates, each a rollout
    (:func:`~companion.agents.ppo.rollout`), :func:`~companion.agents.ppo.gae`,
    and ``num_epochs`` passes of ``num_minibatches`` minibatch steps of
    ``loss_fn`` (both inside ``lax.scan``). Only the floating-point arrays of
    the model are trained (``eqx.partition(model, eqx.is_inexact_array)``).
    ``jax.vmap(train)`` runs several seeds at once.

    Metrics (float32, one entry per update, shape ``(num_updates,)``):
    ``env_steps``; ``episodes``, ``success_rate`` and ``episode_length`` of
    the episodes that *ended* in the update's rollout (nan when none ended);
    ``success_by_start``, the success rate of the episodes that *started* in
    the update (:func:`success_by_start`: no survivor bias, nan for the last
    updates whose episodes were still running); and the means over the
    update's minibatches of ``loss_fn``'s metrics (for :func:`ppo_loss`:
    ``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl``,
    ``clip_fraction``).

    Args:
        config: the hyperparameters (:class:`PPOConfig`).
        loss_fn: the minibatch loss (see :func:`make_trainer`); the default is
            :func:`~companion.agents.ppo.ppo_loss`.
        env: ``None`` for the Maze of ``config.task``, or a Maze of your own
            (see :func:`make_trainer`).

    Raises:
        TypeError, ValueError: for a config that cannot run (:func:`check_config`),
            or a ``key`` that is not one PRNG key.
    """
    trainer = make_trainer(config, loss_fn, env)

    def train(key: jax.Array):
        prng_key(key)
        runner = trainer.init(key)
        runner, metrics = trainer.run(runner, config.num_updates)
        metrics["success_by_start"] = success_by_start(runner)
        return trainer.model(runner), metrics

    return jax.jit(train)
