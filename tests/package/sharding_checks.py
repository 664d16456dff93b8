"""Multi-device checks of companion.parallel, run in a process of its own.

``tests/package/test_sharding.py`` runs ``python tests/package/sharding_checks.py OUT.json``
with ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` (JAX reads it when it starts,
so the test process, already started with one device, cannot) and asserts on the
figures written to ``OUT.json``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

jax.config.update("jax_debug_key_reuse", True)

from companion import parallel  # noqa: E402
from companion.agents import dqn, ppo  # noqa: E402
from companion.envs import cartpole  # noqa: E402
from companion.envs import maze as maze_lib  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for tiny.py
from tiny import TINY_CONV_NET, TINY_DQN, TINY_PPO, TINY_Q_NETWORK  # noqa: E402

# The tests' tiny configurations (tests/tiny.py), resized for this process: its programs are
# compiled for 8 devices, so none is shared with the one-device test session's anyway, and
# the figures test_sharding.py asserts (16 environments, their step counts) are of these
# sizes. PPO: 16 environments, which 2, 4 and 8 devices split evenly, 2 updates of 2 epochs
# at the fixed-maze learning rate; DQN: 4 seeds on 4 devices, a tenth of the steps.
PPO_TINY = TINY_PPO._replace(num_envs=16, num_epochs=2, learning_rate=0.002)
PPO_TINY_NET = TINY_CONV_NET
EMPTY = maze_lib.make_maze_task("empty")
DQN_TINY = TINY_DQN._replace(
    total_steps=120,
    learning_starts=40,
    buffer_capacity=100,
    batch_size=8,
    eval_every=40,
    eval_episodes=1,
    epsilon_decay_steps=100,
)
DQN_TINY_NET = TINY_Q_NETWORK


def max_difference(a, b) -> dict:
    """Largest |a - b| over float leaves, and how many integer/bool leaves differ anywhere."""
    floats, ints = 0.0, 0
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape, (x.shape, y.shape)
        if np.issubdtype(x.dtype, np.floating):
            both_nan = np.isnan(x) & np.isnan(y)
            floats = max(floats, float(np.max(np.where(both_nan, 0.0, np.abs(x - y)), initial=0)))
        else:
            ints += int(np.any(x != y))
    return {"float": floats, "int_leaves_differing": ints}


def random_batch(network, size):
    """A model of ``network`` and ``size`` transitions of random observations: legal
    actions under random masks, log-probabilities far from the model's (so that the
    clipped surrogate clips), random values, advantages and targets."""
    keys = iter(jax.random.split(jax.random.key(0), 8))
    model = network(next(keys))
    mask = jax.random.bernoulli(next(keys), 0.6, (size, 4)).at[:, 0].set(True)
    logits = jnp.where(mask, 0.0, -jnp.inf)
    normal = lambda shape: jax.random.normal(next(keys), shape)  # noqa: E731
    batch = ppo.Batch(
        image=jax.random.uniform(next(keys), (size, 3, 10, 10)),
        action_mask=mask,
        action=jax.random.categorical(next(keys), logits).astype(jnp.int32),
        log_prob=-1.0 + 0.5 * normal((size,)),
        value=normal((size,)),
        advantage=1.0 + normal((size,)),
        target=normal((size,)),
    )
    return model, batch


def reference_steps(config, model, batch, num_steps):
    """PPO minibatch steps on one device, written out: the loss of the whole batch, its
    gradient, the optimiser's update."""
    params, static = eqx.partition(model, eqx.is_inexact_array)
    optimizer = ppo.make_optimizer(config)
    opt_state = optimizer.init(params)
    coefs = (config.clip_eps, config.vf_coef, config.ent_coef, config.normalise_advantages)
    losses = []
    loss_and_grad = jax.jit(
        jax.value_and_grad(
            lambda p: ppo.ppo_loss(eqx.combine(p, static), batch, *coefs), has_aux=True
        )
    )
    for _ in range(num_steps):
        (loss, _), grads = loss_and_grad(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        losses.append(float(loss))
    return params, losses


def error_of(fn) -> str:
    try:
        fn()
    except ValueError as exc:
        return str(exc)
    return "no error"


def main(out: str) -> None:
    start = time.perf_counter()
    results = {"devices": len(jax.devices())}
    # 1. One data-parallel step against the single-device step, on a batch of random
    # observations whose log-probabilities make clipping active.
    model, batch = random_batch(PPO_TINY_NET, 64)
    ref_params, ref_losses = reference_steps(PPO_TINY, model, batch, num_steps=2)
    params0 = eqx.filter(model, eqx.is_inexact_array)
    results["step"] = {}
    for d in (2, 8):
        step = parallel.make_data_parallel_step(PPO_TINY, parallel.make_mesh(d))
        opt_state = ppo.make_optimizer(PPO_TINY).init(params0)
        m, losses = model, []
        for _ in range(2):
            m, opt_state, loss, metrics = step(m, opt_state, batch)
            losses.append(float(loss))
        p = eqx.filter(m, eqx.is_inexact_array)
        results["step"][d] = {
            "params": max_difference(p, ref_params)["float"],
            "moved": max_difference(p, params0)["float"],
            "loss": max(abs(a - b) for a, b in zip(losses, ref_losses)),
            "clip_fraction": float(metrics["clip_fraction"]),
        }
        if d == 8:
            compiled = step.lower(m, opt_state, batch).compile().compiled.as_text()
            results["all_reduce_in_program"] = "all-reduce" in compiled
            step8 = step
    results["timing_step_s"] = time.perf_counter() - start

    # 2. Seeds over devices against jax.vmap over the same keys on one device.
    mesh4 = parallel.make_mesh(4)
    keys = lambda: jax.random.split(jax.random.key(2), 4)  # noqa: E731  (fresh keys per use)
    ppo_train = ppo.make_train(
        PPO_TINY._replace(num_epochs=1, total_timesteps=16 * 8), PPO_TINY_NET, EMPTY
    )

    def train(key):
        runner, metrics = ppo_train(key)
        return runner.params, metrics

    results["ppo_seeds"] = max_difference(
        parallel.shard_seeds(train, mesh4)(keys()), jax.jit(jax.vmap(train))(keys())
    )
    # The path shard_seeds takes on JAX 0.7.2, whose shard_map cannot batch a convolution's
    # gradient (jax-ml/jax#32157): the same result from the jaxpr traced outside the mesh.
    pretraced = parallel._shard_pretraced(jax.vmap(train), mesh4, "devices", 4)
    results["ppo_seeds_pretraced"] = max_difference(
        pretraced(keys()), jax.jit(jax.vmap(train))(keys())
    )
    dqn_train = dqn.make_train(DQN_TINY, DQN_TINY_NET, cartpole.CartPole())
    sharded = parallel.shard_seeds(dqn_train, mesh4)(keys())
    results["dqn_seeds"] = max_difference(sharded, jax.jit(jax.vmap(dqn_train))(keys()))
    results["dqn_seeds_sharding"] = str(jax.tree.leaves(sharded)[0].sharding.spec)
    results["timing_seeds_s"] = time.perf_counter() - start

    # 3. Data-parallel training: the devices' copies of the parameters stay identical; the
    # runner holds every device's environments and the episodes of all of them (episodes of
    # at most 5 steps, so that 16 steps per environment end several).
    short = maze_lib.make_maze_task("empty", time_limit=5)
    dp_train = parallel.make_data_parallel_train(PPO_TINY, PPO_TINY_NET, short, mesh4)
    runner, metrics = dp_train(jax.random.key(3))
    jitted = jax.jit(dp_train)(jax.random.key(3))
    model = ppo.trained_model(PPO_TINY_NET, runner)
    _, batch16 = parallel.first_batch(PPO_TINY, PPO_TINY_NET, short, jax.random.key(5))
    logits, _ = jax.vmap(model)(batch16.image)
    started = np.asarray(runner.started)
    results["dp_train"] = {
        "replica_spread": float(metrics["replica_spread"]),
        "env_steps": np.asarray(metrics["env_steps"]).tolist(),
        "loss_finite": bool(np.all(np.isfinite(np.asarray(metrics["value_loss"])))),
        "is_runner": isinstance(runner, ppo.RunnerState),
        "jit_against_call": max_difference(jitted, (runner, metrics)),
        "environments": int(runner.env_state.walls.shape[0]),
        "env_state_sharding": str(runner.env_state.walls.sharding.spec),
        "positions_agree": bool(
            np.array_equal(
                runner.env_state.agent_position.row, runner.timestep.observation.agent_position.row
            )
        ),
        "episode_starts": list(runner.episode_start.shape),
        "distinct_keys": len({tuple(k) for k in np.asarray(jax.random.key_data(runner.key))}),
        "started": float(started.sum()),
        "episodes": float(np.sum(metrics["episodes"])),
        "ended_within_started": bool(np.all(np.asarray(runner.ended) <= started)),
        "success_by_start": max_difference(
            ppo.success_by_start(runner), metrics["success_by_start"]
        ),
        "model_logits_shape": list(logits.shape),
    }
    results["timing_train_s"] = time.perf_counter() - start

    # 4. Sizes that do not split over the devices.
    results["errors"] = {
        "seeds": error_of(
            lambda: parallel.shard_seeds(train, mesh4)(jax.random.split(jax.random.key(4), 6))
        ),
        "num_envs": error_of(
            lambda: parallel.make_data_parallel_train(
                PPO_TINY._replace(num_envs=6, total_timesteps=6 * 8), PPO_TINY_NET, EMPTY, mesh4
            )
        ),
        "minibatches": error_of(
            lambda: parallel.make_data_parallel_train(
                PPO_TINY._replace(num_envs=4, num_steps=3, num_minibatches=4, total_timesteps=12),
                PPO_TINY_NET,
                EMPTY,
                mesh4,
            )
        ),
        "batch": error_of(
            lambda: step8(
                model,
                ppo.make_optimizer(PPO_TINY).init(params0),
                jax.tree.map(lambda x: x[:6], batch),
            )
        ),
    }
    # 5. The exercise check on 8 devices names a sum and a missing all-reduce.
    from companion.checks import check_data_parallel_grad

    def mean_gradient(w, x, y, mesh, collective=jax.lax.pmean, check_vma=False):
        def on_each_device(w, x, y):
            return collective(jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w), "devices")

        specs = (parallel.P(), parallel.P("devices"), parallel.P("devices"))
        f = jax.shard_map(
            on_each_device, mesh=mesh, in_specs=specs, out_specs=parallel.P(), check_vma=check_vma
        )
        return jax.jit(f)(w, x, y)

    answers = {
        "right": mean_gradient,
        "psum": lambda *a: mean_gradient(*a, collective=jax.lax.psum),
        "check_vma": lambda *a: mean_gradient(*a, check_vma=True),
        "no_all_reduce": lambda *a: mean_gradient(*a, collective=lambda g, axis: g),
    }
    results["check_messages"] = {}
    for name, answer in answers.items():
        try:
            check_data_parallel_grad(answer)
            results["check_messages"][name] = "passed"
        except AssertionError as exc:
            results["check_messages"][name] = str(exc)
    with open(out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
