"""Where one PPO update spends its time as the number of environments grows.

For the fixed-maze chapter's agent (``ppo.FIXED_MAZE_CONFIG`` and ``FIXED_MAZE_NETWORK`` on
the medium maze) and each ``num_envs`` in ``--widths`` (default 64 to 16,384; to 4,096 on a CPU), the parts of
one update are compiled and timed alone, on the inputs training would give them:

- ``collect``: the rollout, GAE and the flattening into one batch (``collect_batch``);
- ``episode_stats``: the episode counters of the update (``episode_stats``);
- ``shuffle``: one epoch's permutation of the batch into minibatches
  (``shuffle_minibatches``), times ``num_epochs``; ``shuffle_unflattened`` (not part of an
  update) gathers every leaf as it is stored, the images as ``(B, 3, rows, cols)``, as the
  package did before a TPU run showed that gather growing about 6x faster than the batch;
- ``update``: a whole update inside training (``make_trainer``'s ``run`` over ``--updates``
  updates, divided by them); ``gradients`` is what the update spends beyond the three parts
  above (the gradient and Adam steps, and what XLA fuses across parts).

Each part records its compile time, median, min and max of the runs, XLA's cost analysis
(``flops``, ``bytes accessed``) and its memory analysis; ``steps_per_s`` is the batch
(``num_envs x num_steps``) over ``update``. A part whose share grows with ``num_envs`` while
the others stay flat per step is what limits width. Writes JSON (default
``benchmarks/results/ppo_width.json``).

    python benchmarks/ppo_width.py                    # the device's full sweep
    python benchmarks/ppo_width.py --widths 1024 16384
    python benchmarks/ppo_width.py --quick            # tiny sizes, to keep the script working
    python benchmarks/ppo_width.py --out benchmarks/results/ppo_width_tpu.json   # on a TPU
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import equinox as eqx
import jax
from measure import compile_and_time, result_header

from companion.agents import ppo
from companion.agents.ppo.train import collect_batch, episode_stats, shuffle_minibatches
from companion.envs import maze as maze_lib

RESULTS = Path(__file__).resolve().parent / "results"
#: num_envs swept: to 16,384 on an accelerator, to 4,096 on a CPU (where 16,384 takes minutes).
WIDTHS = {"cpu": (64, 256, 1024, 4096)}
ACCELERATOR_WIDTHS = (64, 256, 1024, 4096, 16384)


def _costs(fn, args) -> dict:
    """XLA's cost analysis of ``jax.jit(fn)`` for ``args``: flops and bytes accessed."""
    analysis = jax.jit(fn).lower(*args).compile().cost_analysis()
    if isinstance(analysis, list):  # older JAX: one dict per program
        analysis = analysis[0] if analysis else {}
    analysis = analysis or {}
    return {
        "flops": float(analysis.get("flops", 0.0)),
        "bytes_accessed": float(analysis.get("bytes accessed", 0.0)),
    }


def measure_width(config: ppo.PPOConfig, network, updates: int, repeats: int) -> dict:
    """Time the parts of one update of ``config`` (see the module's docstring)."""
    env = maze_lib.make_maze_task("medium")
    trainer = ppo.make_trainer(config, network, env)
    runner = trainer.init(jax.random.key(0))
    params, static = eqx.partition(ppo.trained_model(network, runner), eqx.is_inexact_array)
    pool_key, rollout_key, perm_key = jax.random.split(jax.random.key(1), 3)

    def collect(params, env_state, timestep, pool_key, rollout_key):
        model = eqx.combine(params, static)
        return collect_batch(config, env, model, env_state, timestep, pool_key, rollout_key)

    collect_args = (params, runner.env_state, runner.timestep, pool_key, rollout_key)
    rows = {}
    rows["collect"], (flat, _, _, traj) = compile_and_time(collect, collect_args, repeats)
    rows["collect"]["cost"] = _costs(collect, collect_args)

    def stats(runner, done, success):
        return episode_stats(runner, done, success)

    stats_args = (runner, traj.done, traj.reward > 0)
    rows["episode_stats"], _ = compile_and_time(stats, stats_args, repeats)
    rows["episode_stats"]["cost"] = _costs(stats, stats_args)

    def shuffle(key, flat):
        return shuffle_minibatches(key, flat, config.num_minibatches)

    rows["shuffle"], _ = compile_and_time(shuffle, (perm_key, flat), repeats)
    rows["shuffle"]["cost"] = _costs(shuffle, (perm_key, flat))

    def shuffle_unflattened(key, flat):
        size, m = config.batch_size, config.num_minibatches
        perm = jax.random.permutation(key, size)
        return jax.tree.map(lambda x: x[perm].reshape((m, size // m) + x.shape[1:]), flat)

    rows["shuffle_unflattened"], _ = compile_and_time(
        shuffle_unflattened, (perm_key, flat), repeats
    )
    rows["shuffle_unflattened"]["cost"] = _costs(shuffle_unflattened, (perm_key, flat))

    run = trainer.run
    whole, _ = compile_and_time(lambda r: run(r, updates), (runner,), repeats)
    update_s = whole["median_s"] / updates
    parts_s = (
        rows["collect"]["median_s"]
        + rows["episode_stats"]["median_s"]
        + config.num_epochs * rows["shuffle"]["median_s"]
    )
    return {
        "num_envs": config.num_envs,
        "batch_size": config.batch_size,
        "parts": rows,
        "train": whole,
        "update_s": update_s,
        "gradients_s": max(update_s - parts_s, 0.0),
        "steps_per_s": config.batch_size / update_s,
        "steps_per_s_low": config.batch_size * updates / whole["max_s"],
        "steps_per_s_high": config.batch_size * updates / whole["min_s"],
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument(
        "--widths", type=int, nargs="+", help=f"num_envs (default {ACCELERATOR_WIDTHS})"
    )
    parser.add_argument("--updates", type=int, default=4, help="updates in the timed run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "ppo_width.json")
    args = parser.parse_args(argv)

    config, network = ppo.FIXED_MAZE_CONFIG, ppo.FIXED_MAZE_NETWORK
    widths = args.widths or WIDTHS.get(jax.default_backend(), ACCELERATOR_WIDTHS)
    updates, repeats = args.updates, args.repeats
    if args.quick:
        config = config._replace(num_steps=8, num_minibatches=2)
        widths, updates, repeats = args.widths or (8, 16), 2, 2
    started = time.perf_counter()
    result = {**result_header("ppo_width", args.quick), "widths": []}
    result["config"] = config._asdict()
    result["network"] = ppo.networks.network_to_dict(network)
    for num_envs in widths:
        sized = config._replace(
            num_envs=num_envs, total_timesteps=updates * num_envs * config.num_steps
        )
        row = measure_width(sized, network, updates, repeats)
        result["widths"].append(row)
        parts = row["parts"]
        print(
            f"{num_envs:6d} envs: {row['steps_per_s']:>12,.0f} steps/s; update "
            f"{1e3 * row['update_s']:8.1f} ms = collect {1e3 * parts['collect']['median_s']:.1f}"
            f" + stats {1e3 * parts['episode_stats']['median_s']:.1f}"
            f" + shuffle {1e3 * config.num_epochs * parts['shuffle']['median_s']:.1f}"
            f" + gradients {1e3 * row['gradients_s']:.1f} ms",
            flush=True,
        )
    result["wall_s"] = time.perf_counter() - started
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=list) + "\n")
    return result


if __name__ == "__main__":
    main()
