"""PPO training on jumanji's Maze as one compiled program (:func:`make_train`), or in chunks
(:func:`make_trainer`). The structure follows PureJaxRL's PPO (Lu et al., 2022).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from companion._validate import maze_env, prng_key
from companion.agents.ppo.config import PPOConfig, check_config, default_loss, make_optimizer
from companion.agents.ppo.losses import Batch, gae
from companion.agents.ppo.networks import model_skeleton, static_part
from companion.agents.ppo.rollout import _rollout
from companion.envs.autoreset import _make_reset_pool, _reset_with_next_obs


class RunnerState(NamedTuple):
    """The carry of the training loop.

    Fields:
        params: the trained (floating-point) leaves of the model.
        opt_state: the optimiser's state.
        env_state, timestep: the batched environments (leading axis ``num_envs``).
        key: PRNG key.
        update: int32 (), updates done so far.
        episode_start: int32 ``(num_envs,)``, the update in which each current episode started.
        started, ended, succeeded: float32 ``(num_updates,)``, episodes started in each update,
            how many of those have ended, and how many reached the target.
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


class Trainer(NamedTuple):
    """The pieces of :func:`make_train`, for training in chunks.

    Fields:
        init: jitted ``init(key) -> RunnerState``: new model, optimiser and environments.
        run: jitted ``run(runner, num_updates) -> (runner, metrics)`` (``num_updates`` static);
            the learning-rate schedule and update counter continue across calls.
        train: ``train(key) -> (runner, metrics)``, the whole run, pure and not jitted.

    The model of a runner: :func:`~companion.agents.ppo.trained_model`.
    """

    init: Callable
    run: Callable
    train: Callable


def episode_stats(runner: RunnerState, done: jax.Array, success: jax.Array) -> RunnerState:
    """Count every episode that ended in an update's rollout under the update it started in.

    A helper of :func:`make_trainer` (whose arguments it trusts): ``done`` and ``success``
    bool ``(num_steps, num_envs)``, the rollout's episode ends and which of them reached the
    target. An environment's first end in the rollout closes the episode that started in
    ``runner.episode_start``; each later end, one that started in this update.

    Returns:
        ``runner`` with ``started``, ``ended``, ``succeeded`` (float32 counts per update) and
        ``episode_start`` advanced.
    """
    first = done & (jnp.cumsum(done, axis=0) == 1)  # each environment's first end
    first_ended = first.any(axis=0).astype(jnp.float32)  # (num_envs,)
    first_succeeded = (first & success).any(axis=0).astype(jnp.float32)
    num_ended = done.sum().astype(jnp.float32)
    num_succeeded = (done & success).sum().astype(jnp.float32)
    # One scatter of num_envs counts, not of every step's: on a TPU a scatter-add of
    # num_steps x num_envs values into a few slots took 5% of a wide update.
    ended = (
        runner.ended.at[runner.episode_start]
        .add(first_ended)
        .at[runner.update]
        .add(num_ended - first_ended.sum())
    )
    succeeded = (
        runner.succeeded.at[runner.episode_start]
        .add(first_succeeded)
        .at[runner.update]
        .add(num_succeeded - first_succeeded.sum())
    )
    started = runner.started.at[runner.update].add(num_ended)
    episode_start = jnp.where(done.any(axis=0), runner.update, runner.episode_start)
    return runner._replace(
        started=started, ended=ended, succeeded=succeeded, episode_start=episode_start
    )


def shuffle_minibatches(key: jax.Array, batch: Any, num_minibatches: int) -> Any:
    """One epoch's minibatches: ``batch``'s leaves (leading axis ``B``) in the order of one
    random permutation, split into ``(num_minibatches, B // num_minibatches, ...)``.

    A helper of :func:`make_trainer` (whose arguments it trusts: ``num_minibatches``
    divides ``B``).
    """
    size = jax.tree.leaves(batch)[0].shape[0]
    perm = jax.random.permutation(key, size)

    def shuffle(x):
        # A leaf with several trailing axes (the (3, rows, cols) images) is gathered as rows
        # of one axis: on a TPU, small trailing axes are padded to the chip's tiles, and
        # gathering the padded images cost 6x more than the flat rows at 4,096 environments.
        rows = x.reshape(size, -1) if x.ndim > 2 else x
        return rows[perm].reshape((num_minibatches, size // num_minibatches) + x.shape[1:])

    return jax.tree.map(shuffle, batch)


def make_trainer(
    config: PPOConfig,
    network: Any,
    env: Any,
    loss_fn: Callable | None = None,
    axis_name: str | None = None,
    progress_bar: bool = False,
) -> Trainer:
    """Build the training program of ``config``, ``network`` and ``env`` as a :class:`Trainer`.

    Args:
        network: ``network(key) -> model``, the network before its weights (e.g.
            :data:`FIXED_MAZE_NETWORK`, a ``functools.partial`` of :class:`ActorCritic`); the
            model maps one float32 image ``(3, rows, cols)`` to ``(logits (4,), value ())``.
        env: a jumanji Maze, e.g. from :func:`companion.envs.maze.make_maze_task`.
        loss_fn: ``loss_fn(model, batch: Batch) -> (loss, metrics: dict of scalars)``, metrics
            averaged per update; ``None``: :func:`default_loss`.
        axis_name: ``None`` on one device; in ``shard_map``, the mesh axis to ``pmean`` gradients
            over (:func:`companion.parallel.make_data_parallel_train`).

    Raises:
        TypeError, ValueError: as :func:`check_config` and
            :func:`~companion.agents.ppo.networks.model_skeleton` (a model that does not fit
            ``env``'s images); ValueError for a model with ``iterations=None`` (a
            ``while_loop``: no reverse-mode gradient); TypeError for a non-callable
            ``loss_fn``, a non-Maze ``env``, or ``axis_name`` not ``None`` or a str.
    """
    check_config(config)
    loss_fn = default_loss(config) if loss_fn is None else loss_fn
    if axis_name is not None and not isinstance(axis_name, str):
        raise TypeError(f"axis_name: expected None or a str, got {type(axis_name).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn: expected a function, got {type(loss_fn).__name__}")
    maze_env(env)
    # The model's structure without its weights: traced, not computed (nothing compiles here).
    skeleton = model_skeleton(network, (env.num_rows, env.num_cols))
    if getattr(skeleton, "iterations", 1) is None:
        raise ValueError(
            "network: builds a model with iterations=None (backups until the values settle, "
            "in a while_loop), which cannot be differentiated in reverse mode; train with a "
            "positive int, for example rows * cols - 1 = 99 on 10 x 10 mazes"
        )
    static_model = static_part(skeleton)
    optimizer = make_optimizer(config)
    n = config.num_envs

    def update(runner: RunnerState, _):
        key, pool_key, rollout_key, perm_key = jax.random.split(runner.key, 4)
        params = runner.params
        model = eqx.combine(params, static_model)
        flat, env_state, timestep, traj = collect_batch(
            config, env, model, runner.env_state, runner.timestep, pool_key, rollout_key
        )

        def minibatch_step(carry, batch):
            params, opt_state = carry
            batch = batch._replace(image=batch.image.astype(jnp.float32))  # stored as bool

            def loss_of(p):
                return loss_fn(eqx.combine(p, static_model), batch)

            (_, metrics), grads = jax.value_and_grad(loss_of, has_aux=True)(params)
            if axis_name is not None:  # data parallel: the devices' gradients meet here
                grads = jax.lax.pmean(grads, axis_name)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), metrics

        def epoch(carry, _):
            params, opt_state, key = carry
            key, perm_key = jax.random.split(key)
            shuffled = shuffle_minibatches(perm_key, flat, config.num_minibatches)
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
        model = network(model_key)
        params = eqx.filter(model, eqx.is_inexact_array)
        env_state, timestep = jax.vmap(_reset_with_next_obs, in_axes=(None, 0))(
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
        body = update
        if progress_bar:
            from jax_tqdm import scan_tqdm

            body = scan_tqdm(
                num_updates,
                print_rate=max(1, num_updates // 10),
                tqdm_type="std",
                desc="PPO",
            )(lambda r, i: update(r, i))
        first = runner.update
        runner, metrics = jax.lax.scan(body, runner, jnp.arange(num_updates))
        steps = (first + jnp.arange(1, num_updates + 1)) * config.batch_size
        metrics["env_steps"] = steps.astype(jnp.float32)
        return runner, metrics

    init_jit, run_jit = jax.jit(init), jax.jit(run, static_argnums=1)

    def train(key: jax.Array):
        prng_key(key)
        runner, metrics = run_jit(init_jit(key), config.num_updates)
        metrics["success_by_start"] = success_by_start(runner)
        return runner, metrics

    return Trainer(init=init_jit, run=run_jit, train=train)


def collect_batch(
    config: PPOConfig,
    env: Any,
    model: Any,
    env_state: Any,
    timestep: Any,
    pool_key: jax.Array,
    rollout_key: jax.Array,
) -> tuple[Batch, Any, Any, Any]:
    """One update's data: a rollout of ``config.num_steps`` steps, GAE, flattened to a batch.

    A helper of :func:`make_trainer` (whose arguments it trusts): ``env_state`` and ``timestep``
    batched over ``config.num_envs``; ``pool_key`` draws the reset pool (``reset="pooled"``),
    ``rollout_key`` the actions.

    Returns:
        ``(batch, env_state, timestep, traj)``: ``batch`` a :class:`Batch` of
        ``B = num_steps * num_envs`` transitions, step-major (``image`` bool ``(B, 3, rows,
        cols)``, cast to float32 before use); the environments after the rollout; ``traj`` the
        :class:`~companion.agents.ppo.rollout.Transition` s, leaves ``(num_steps, num_envs, ...)``.
    """
    pool = _make_reset_pool(env, pool_key, config.num_envs) if config.reset == "pooled" else None
    env_state, timestep, traj = _rollout(
        model, env, pool, env_state, timestep, rollout_key, config.num_steps
    )
    advantage, target = gae(
        traj.reward,
        traj.value,
        traj.next_value,
        traj.terminated,
        traj.done,
        config.gamma,
        config.gae_lambda,
    )
    names = ("image", "action_mask", "action", "log_prob", "value")
    batch = Batch(**{f: getattr(traj, f) for f in names}, advantage=advantage, target=target)
    flat = jax.tree.map(lambda x: x.reshape((config.batch_size,) + x.shape[2:]), batch)
    return flat, env_state, timestep, traj


def success_by_start(runner: RunnerState) -> jax.Array:
    """Success rate of the episodes that *started* in each update (no bias towards short episodes).

    ``runner``: the final :class:`RunnerState` (leading axes allowed, e.g. seeds). Returns float32
    ``(..., num_updates)``: successes / episodes started, nan where one of them was still
    running when training stopped (or none started).

    Raises:
        TypeError: if ``runner`` is not a :class:`RunnerState`.
    """
    if not isinstance(runner, RunnerState):
        raise TypeError(f"runner: expected a ppo.RunnerState, got {type(runner).__name__}")
    complete = (runner.ended == runner.started) & (runner.started > 0)
    return jnp.where(complete, runner.succeeded / jnp.maximum(runner.started, 1.0), jnp.nan)


def make_train(
    config: PPOConfig,
    network: Any,
    env: Any,
    loss_fn: Callable | None = None,
    progress_bar: bool = False,
) -> Callable:
    """Build the pure ``train(key) -> (runner, metrics)``, not jitted: jit it, vmap it over seeds.

    Each of ``config.num_updates`` updates: a rollout, GAE, ``num_epochs`` x ``num_minibatches``
    steps of ``loss_fn`` on the model's floating-point arrays. Trained model:
    ``trained_model(network, runner)``. Metrics, float32 ``(num_updates,)``:
    ``env_steps``; ``episodes``, ``success_rate``, ``episode_length`` of episodes that ended in
    the update (nan if none); :func:`success_by_start`; means of ``loss_fn``'s metrics.
    Arguments as :func:`make_trainer`; ``progress_bar``: a jax-tqdm bar over the updates.

    Raises:
        TypeError, ValueError: as :func:`make_trainer`, or a ``key`` that is not one PRNG key.
    """
    return make_trainer(config, network, env, loss_fn, progress_bar=progress_bar).train
