"""PPO training throughput against the number of devices (``companion.parallel``).

For meshes of 1, 2, 4 and 8 devices (as many as JAX sees), it measures the
environment steps per second of

- ``data_parallel``: one PPO run, its ``num_envs`` environments split over the
  devices, gradients averaged across them before every optimiser step
  (:func:`companion.parallel.make_data_parallel_train`);
- ``seeds``: ``num_seeds`` independent runs split over the devices
  (:func:`companion.parallel.shard_seeds` of ``ppo.make_train``);

and, as the baseline of the same run, ``ppo.make_train`` on one device with no
mesh (``single_device``, and ``vmap_seeds`` for the seeds). On a CPU the devices
are simulated (``--xla_force_host_platform_device_count=8``, set here before JAX
starts): they share the machine's cores, so the figures show the cost of the
split, not a speed-up. On a GPU or TPU host the same script measures the real
devices; give it another output name
(``--out benchmarks/results/sharding_gpu.json``). Compile time is measured
apart; figures are medians of ``repeats`` runs with min and max. The JSON also
holds the model's parameter count, from which the chapter computes the bytes
that the all-reduce moves.

    python benchmarks/sharding.py           # about 2 minutes on 2 cores
    python benchmarks/sharding.py --quick   # tiny sizes, to keep the script working
"""

from __future__ import annotations

import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    ).strip()

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
from measure import compile_and_time, result_header, step_rates  # noqa: E402

from companion import parallel  # noqa: E402
from companion.agents import ppo  # noqa: E402
from companion.envs import maze as maze_lib  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"

CONFIG = ppo.FIXED_MAZE_CONFIG
NETWORK = ppo.FIXED_MAZE_NETWORK
ENV = maze_lib.make_maze_task("medium")


def rate(timing: dict, steps: int) -> dict:
    """A timing with steps per second added: median, and the spread from the slowest and
    fastest runs (as in ``benchmarks/scaling.py``)."""
    return {**timing, "env_steps": steps, **step_rates(timing, steps)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument("--out", type=Path, default=RESULTS / "sharding.json")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    if args.quick:
        config = CONFIG._replace(num_envs=16, num_steps=8, num_minibatches=2)
        updates, num_seeds, repeats, sizes = 1, 2, 1, (1, 2)
    else:
        config = CONFIG
        updates, num_seeds, repeats, sizes = 2, 8, 3, (1, 2, 4, 8)
    config = config._replace(total_timesteps=updates * config.batch_size)
    sizes = [d for d in sizes if d <= len(jax.devices())]
    model = NETWORK(jax.random.key(0))
    num_params = sum(x.size for x in jax.tree.leaves(eqx.filter(model, eqx.is_inexact_array)))
    result = {
        **result_header("sharding", args.quick),
        "config": config._asdict(),
        "network": ppo.networks.network_to_dict(NETWORK),
        "updates": updates,
        "num_seeds": num_seeds,
        "parameters": int(num_params),
        "gradient_steps_per_update": config.num_epochs * config.num_minibatches,
    }
    steps = config.env_steps_run
    train = ppo.make_train(config, NETWORK, ENV)
    timing, _ = compile_and_time(train, (jax.random.key(1),), repeats)
    result["single_device"] = rate(timing, steps)
    seed_keys = jax.random.split(jax.random.key(2), num_seeds)
    timing, _ = compile_and_time(jax.vmap(train), (seed_keys,), repeats)
    result["vmap_seeds"] = rate(timing, steps * num_seeds)
    result["data_parallel"], result["seeds"] = {}, {}
    for d in sizes:
        mesh = parallel.make_mesh(d)
        timing, _ = compile_and_time(
            parallel.make_data_parallel_train(config, NETWORK, ENV, mesh),
            (jax.random.key(3),),
            repeats,
        )
        result["data_parallel"][str(d)] = rate(timing, steps)
        timing, _ = compile_and_time(
            parallel.shard_seeds(train, mesh),
            (jax.random.split(jax.random.key(4), num_seeds),),
            repeats,
        )
        result["seeds"][str(d)] = rate(timing, steps * num_seeds)
        print(
            f"{d} device(s): data parallel "
            f"{result['data_parallel'][str(d)]['steps_per_s']:>9,.0f} steps/s, "
            f"{num_seeds} seeds {result['seeds'][str(d)]['steps_per_s']:>9,.0f} steps/s",
            flush=True,
        )
    base = result["single_device"]["steps_per_s"]
    result["ratios"] = {
        "data_parallel_over_single_device": {
            d: r["steps_per_s"] / base for d, r in result["data_parallel"].items()
        },
        "seeds_over_vmap": {
            d: r["steps_per_s"] / result["vmap_seeds"]["steps_per_s"]
            for d, r in result["seeds"].items()
        },
    }
    result["wall_s"] = time.perf_counter() - started
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=list) + "\n")
    print(f"single device {base:,.0f} steps/s; wall {result['wall_s']:.0f} s")
    return result


if __name__ == "__main__":
    main()
