"""The book's agents on many devices: a 1-D mesh (:func:`make_mesh`) and ``shard_map``.

Seeds split over the devices (:func:`shard_seeds`), or one PPO run's batch split with gradients
averaged by ``pmean`` (synchronous data parallelism: Goyal et al., 2017; JAX sharding tutorials).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from companion._validate import positive_int, prng_key
from companion.agents.ppo.config import PPOConfig, check_config, default_loss, make_optimizer
from companion.agents.ppo.networks import trained_model
from companion.agents.ppo.train import (
    RunnerState,
    collect_batch,
    make_trainer,
    success_by_start,
)


def make_mesh(num_devices: int | None = None, axis_name: str = "devices") -> Mesh:
    """A 1-D mesh of the first ``num_devices`` (default: all) of ``jax.devices()``.

    Returns:
        ``jax.sharding.Mesh`` of shape ``{axis_name: num_devices}``.

    Raises:
        TypeError: ``num_devices`` not an int, or ``axis_name`` not a non-empty str.
        ValueError: ``num_devices`` not positive, or more than there are devices.
    """
    devices = jax.devices()
    num_devices = len(devices) if num_devices is None else num_devices
    positive_int(num_devices, "num_devices")
    if num_devices > len(devices):
        raise ValueError(
            f"num_devices: {num_devices} requested, but JAX sees {len(devices)} "
            f"({devices[0].platform}); on a CPU, set "
            "XLA_FLAGS=--xla_force_host_platform_device_count=8 before JAX starts"
        )
    if not isinstance(axis_name, str) or not axis_name:
        raise TypeError(f"axis_name: expected a non-empty str, got {axis_name!r}")
    return Mesh(np.array(devices[:num_devices]), (axis_name,))


def _axis(mesh: Any) -> tuple[str, int]:
    if not isinstance(mesh, Mesh) or len(mesh.axis_names) != 1:
        raise TypeError(f"mesh: expected a 1-D jax.sharding.Mesh (make_mesh), got {mesh!r:.80}")
    name = mesh.axis_names[0]
    return name, mesh.shape[name]


def split_evenly(size: int, mesh: Mesh, name: str) -> int:
    """``size // D`` for a mesh of ``D`` devices: the part of ``size`` on each device.

    Raises:
        TypeError: if ``mesh`` is not a 1-D mesh.
        ValueError: naming ``name``, when ``D`` does not divide ``size``.
    """
    axis, num = _axis(mesh)
    if size % num:
        raise ValueError(
            f"{name}: {size} does not split evenly over the mesh's {num} devices "
            f"(axis {axis!r}); use a multiple of {num}"
        )
    return size // num


def shard_map(f: Callable, mesh: Mesh, in_specs: Any, out_specs: Any) -> Callable:
    """``jax.shard_map`` (JAX >= 0.6.1) or ``jax.experimental.shard_map`` (older), with
    the replication check off: collectives are explicit, and ``jax.grad`` inside
    ``f`` returns each device's own gradient (with the check on, JAX would sum the
    gradients of replicated inputs over the devices by itself)."""
    if hasattr(jax, "shard_map"):
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)
    from jax.experimental.shard_map import shard_map as legacy  # pragma: no cover

    return legacy(f, mesh, in_specs, out_specs, check_rep=False)  # pragma: no cover


def shard_seeds(train: Callable, mesh: Mesh) -> Callable:
    """``jax.vmap(train)``, ``train`` a function of one PRNG key, its seeds split over ``mesh``.

    Returns:
        jitted ``train_seeds(keys)``, ``keys`` typed ``(S,)`` or uint32 ``(S, 2)``, ``S / D`` on
        each of ``D`` devices, no communication: ``jax.vmap(train)(keys)``, leading axis ``S``.

    Raises:
        TypeError: ``train`` not callable, ``mesh`` not 1-D; from ``train_seeds``: non-key ``keys``.
        ValueError: from ``train_seeds``, for unbatched ``keys`` or ``D`` not dividing ``S``.
    """
    if not callable(train):
        raise TypeError(f"train: expected a function of a key, got {type(train).__name__}")
    axis, num_devices = _axis(mesh)
    if not _CONV_GRAD_VMAP_BROKEN_IN_SHARD_MAP:
        mapped = jax.jit(shard_map(jax.vmap(train), mesh, P(axis), P(axis)))
    else:  # pragma: no cover (JAX 0.7.2 only)
        mapped = _shard_pretraced(jax.vmap(train), mesh, axis, num_devices)

    def train_seeds(keys: jax.Array):
        shape = getattr(keys, "shape", ())
        if len(shape) == 0:
            raise ValueError(f"keys: expected a batch of keys (S,) or (S, 2), got {keys!r:.60}")
        prng_key(jax.ShapeDtypeStruct(shape[1:], keys.dtype), "keys[i]")  # reads no key
        split_evenly(keys.shape[0], mesh, "keys (the number of seeds)")
        return mapped(keys)

    return train_seeds


# In JAX 0.7.2 (only), the batching rule of a convolution raises NotImplementedError
# inside shard_map when it meets the convolution's own gradient, so
# shard_map(vmap(grad(conv))) fails (jax-ml/jax#32157, fixed in 0.8.0). Tracing
# the vmapped function outside the mesh first, and evaluating its jaxpr on each
# device, gives the same program.
_CONV_GRAD_VMAP_BROKEN_IN_SHARD_MAP = tuple(jax.__version_info__[:3]) == (0, 7, 2)


def _shard_pretraced(f: Callable, mesh: Mesh, axis: str, num_devices: int) -> Callable:
    """``jax.jit(shard_map(f, mesh, P(axis), P(axis)))`` with ``f`` traced outside the mesh and its
    jaxpr run on each device (JAX 0.7.2 workaround, jax-ml/jax#32157)."""
    compiled: dict = {}

    def mapped(keys):
        signature = (keys.shape, keys.dtype)
        if signature not in compiled:
            local = jax.ShapeDtypeStruct(
                (keys.shape[0] // num_devices, *keys.shape[1:]), keys.dtype
            )
            closed, out_shape = jax.make_jaxpr(f, return_shape=True)(local)
            out_tree = jax.tree.structure(out_shape)

            def body(local_keys):
                leaves = jax.core.eval_jaxpr(closed.jaxpr, closed.consts, local_keys)
                return jax.tree.unflatten(out_tree, leaves)

            compiled[signature] = jax.jit(shard_map(body, mesh, P(axis), P(axis)))
        return compiled[signature](keys)

    return mapped


def _global_normalise(config: PPOConfig, loss_fn: Callable | None, axis: str) -> Callable:
    """The loss of one device's part of a minibatch (``loss_fn``, default ``default_loss`` without
    standardisation); with ``config.normalise_advantages``, advantages are first standardised with
    the whole minibatch's mean and std across devices (``pmean``)."""
    if loss_fn is None:
        loss_fn = default_loss(config._replace(normalise_advantages=False))

    def loss(model, batch):
        if config.normalise_advantages:
            a = batch.advantage
            mean = jax.lax.pmean(a.mean(), axis)
            std = jnp.sqrt(jax.lax.pmean(jnp.mean((a - mean) ** 2), axis))
            batch = batch._replace(advantage=(a - mean) / (std + 1e-8))
        return loss_fn(model, batch)

    return loss


def make_data_parallel_step(
    config: PPOConfig, mesh: Mesh, loss_fn: Callable | None = None
) -> Callable:
    """One PPO minibatch step on the ``D`` devices of ``mesh``: minibatch split, gradients averaged.

    Args:
        loss_fn: ``loss_fn(model, batch) -> (loss, metrics)``, a minibatch mean that does not
            standardise advantages (done across devices); ``None``: ``default_loss(config)``.

    Returns:
        ``step(model, opt_state, batch) -> (model, opt_state, loss, metrics)``, ``batch`` of ``B``
        transitions; ``loss``, ``metrics`` float32 ``()``, device means; ``step.lower`` lowers it.

    Raises:
        TypeError, ValueError: a config :func:`check_config` rejects; TypeError for a mesh that is
            not 1-D; ValueError from ``step`` when ``D`` does not divide ``B``.
    """
    check_config(config)
    axis, _ = _axis(mesh)
    optimizer = make_optimizer(config)
    loss_of_part = _global_normalise(config, loss_fn, axis)

    def on_each_device(params, static, opt_state, batch):
        def loss(p):
            return loss_of_part(eqx.combine(p, static), batch)

        (value, metrics), grads = jax.value_and_grad(loss, has_aux=True)(params)
        grads = jax.lax.pmean(grads, axis)  # the all-reduce: each device gets the mean
        value, metrics = jax.lax.pmean((value, metrics), axis)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value, metrics

    @eqx.filter_jit
    def step(model, opt_state, batch):
        params, static = eqx.partition(model, eqx.is_inexact_array)
        sharded = shard_map(
            lambda p, o, b: on_each_device(p, static, o, b),
            mesh,
            in_specs=(P(), P(), P(axis)),
            out_specs=P(),
        )
        params, opt_state, value, metrics = sharded(params, opt_state, batch)
        return eqx.combine(params, static), opt_state, value, metrics

    def checked_step(model, opt_state, batch):
        size = jax.tree.leaves(batch)[0].shape[0]
        split_evenly(size, mesh, "batch (the minibatch size)")
        return step(model, opt_state, batch)

    checked_step.lower = step.lower  # step.lower(...).compile().as_text(): the program
    return checked_step


#: Metrics of one update that are counts (summed over devices) or rates weighted by them.
_COUNTED = ("success_rate", "episode_length")


def _combine_metrics(metrics: dict, axis: str, num_devices: int) -> dict:
    """Per-device metrics of each update -> the whole batch's (inside ``shard_map``)."""
    episodes = metrics["episodes"]
    total = jax.lax.psum(episodes, axis)
    out = {}
    for name, value in metrics.items():
        if name in _COUNTED:  # rates over episodes: weight each device by its episodes
            weighted = jax.lax.psum(jnp.nan_to_num(value) * episodes, axis)
            out[name] = jnp.where(total > 0, weighted / jnp.maximum(total, 1.0), jnp.nan)
        elif name == "episodes":
            out[name] = total
        elif name == "env_steps":
            out[name] = value * num_devices
        else:  # means over equal parts: the mean of the devices' means
            out[name] = jax.lax.pmean(value, axis)
    return out


def make_data_parallel_train(
    config: PPOConfig,
    network: Any,
    env: Any,
    mesh: Mesh,
    loss_fn: Callable | None = None,
) -> Callable:
    """PPO training, environments split over the ``D`` devices of ``mesh``, each with its own keys.

    Args:
        config: ``num_envs`` is the total over all devices.
        network, env, loss_fn: as in ``ppo.make_train`` and :func:`make_data_parallel_step`.

    Returns:
        ``train(key) -> (runner, metrics)``, not jitted (it calls a jitted ``shard_map``; jit
        it, or call it). ``runner``: a ``ppo.RunnerState`` whose model is
        ``ppo.trained_model(network, runner)``. ``params``, ``opt_state`` and
        ``update`` are the devices' common copies; ``env_state``, ``timestep`` and
        ``episode_start`` the devices' parts joined along the environment axis, ``num_envs``
        in all (device ``i`` holds rows ``i * num_envs / D`` onwards), split over the mesh;
        ``key``: the devices' own keys, ``(D,)``; ``started``, ``ended``, ``succeeded``: float32
        ``(num_updates,)``, summed over the devices, so ``ppo.success_by_start(runner)`` is the
        whole run's. ``metrics``: ``make_train``'s over all devices, plus ``replica_spread``,
        float32 ``()``, the largest gap between devices' copies of a parameter at the end.

    Raises:
        TypeError, ValueError: a config, network, env, mesh or key that cannot run; ValueError
            naming ``config.num_envs`` or ``config.num_minibatches`` when the batch does not split.
    """
    check_config(config)
    axis, num = _axis(mesh)
    local_envs = split_evenly(config.num_envs, mesh, "config.num_envs")
    local_batch = local_envs * config.num_steps
    if local_batch % config.num_minibatches:
        raise ValueError(
            f"config.num_minibatches: {config.num_minibatches} does not divide each device's "
            f"batch of num_envs / {num} * num_steps = {local_batch} transitions"
        )
    local = config._replace(
        num_envs=local_envs,
        total_timesteps=config.num_updates * local_batch,
    )
    trainer = make_trainer(
        local, network, env, _global_normalise(local, loss_fn, axis), axis_name=axis
    )
    counted = ("started", "ended", "succeeded")

    def on_each_device(key):
        model_key, env_key = jax.random.split(key)
        shared = trainer.init(model_key)  # the same model and optimiser on every device
        own_key = jax.random.fold_in(env_key, jax.lax.axis_index(axis))
        runner = trainer.init(own_key)._replace(params=shared.params, opt_state=shared.opt_state)
        runner, metrics = trainer.run(runner, local.num_updates)
        metrics = _combine_metrics(metrics, axis, num)
        spreads = [
            jnp.max(jax.lax.pmax(p, axis) - jax.lax.pmin(p, axis))
            for p in jax.tree.leaves(runner.params)
        ]
        metrics["replica_spread"] = jnp.max(jnp.stack(spreads))
        counts = {f: jax.lax.psum(getattr(runner, f), axis) for f in counted}
        return runner._replace(key=runner.key[None], **counts), metrics

    replicated = ("params", "opt_state", "update", *counted)
    runner_specs = RunnerState(
        **{f: P() if f in replicated else P(axis) for f in RunnerState._fields}
    )
    sharded = jax.jit(shard_map(on_each_device, mesh, in_specs=P(), out_specs=(runner_specs, P())))

    def train(key: jax.Array):
        prng_key(key)
        runner, metrics = sharded(key)
        metrics["success_by_start"] = success_by_start(runner)
        return runner, metrics

    return train


def first_batch(config: PPOConfig, network: Any, env: Any, key: jax.Array) -> tuple[Any, Any]:
    """The initial model of ``ppo.make_train(config, network, env)(key)`` and the batch of its
    first update (rollout, GAE), on one device.

    Returns:
        ``(model, batch)``: ``batch`` a :class:`~companion.agents.ppo.Batch` of
        ``num_envs * num_steps`` transitions, flattened as the trainer does, ``image`` float32.

    Raises:
        TypeError, ValueError: for a config or network that cannot run or a bad key.
    """
    prng_key(key)
    trainer = make_trainer(config, network, env)

    @eqx.filter_jit
    def collect(key):
        runner = trainer.init(key)
        model = trained_model(network, runner)
        _, pool_key, rollout_key, _ = jax.random.split(runner.key, 4)  # as the first update's
        batch, *_ = collect_batch(
            config, env, model, runner.env_state, runner.timestep, pool_key, rollout_key
        )
        return model, batch._replace(image=batch.image.astype(jnp.float32))

    return collect(key)
