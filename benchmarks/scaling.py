"""How cost grows: the book's DQN and PPO against the number of environments and of seeds,
and the memory their compiled programs need against buffer size and batch size.

- ``dqn_envs``, ``ppo_envs``: one seed, ``num_envs`` from 1 to 4096 parallel
  environments. DQN keeps its gradient steps per iteration fixed (2), so more
  environments mean more environment steps per gradient step; PPO keeps its
  rollout length (32) and number of minibatches (4), so its batch grows with
  ``num_envs``.
- ``dqn_seeds``, ``ppo_seeds``: ``jax.vmap(train)`` over 1 to 64 seeds, each
  seed with the chapter's number of environments (DQN 4, PPO 64).
- ``memory``: DQN (4 environments) against ``buffer_capacity`` and
  ``batch_size``, timed like the others. Every point records XLA's memory
  analysis of its compiled training program (``compiled.memory_analysis()``):
  bytes of arguments, outputs and temporaries that the device must hold while
  it runs. It is the program's footprint, not the process's resident memory.

Every point is compiled apart (``jit(...).lower(...).compile()``, timed as
``compile_s``), then run ``repeats`` times (2 where those take over 20 s in
all); the figures are the median with min and max. Writes JSON (default ``benchmarks/results/scaling.json``).

    python benchmarks/scaling.py            # a few minutes on 2 cores
    python benchmarks/scaling.py --quick    # tiny sizes, to keep the script working
    python benchmarks/scaling.py --sections dqn_envs ppo_envs --out part.json

The file is rewritten after every point, so a run stopped part-way keeps the points it
measured; ``--sections`` measures some sections only (a machine whose calls are time-limited
runs the rest in a second call, and the two files are merged by section).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
from measure import compile_and_time, result_header, step_rates

from companion.agents import dqn, ppo
from companion.envs import cartpole
from companion.envs import maze as maze_lib

RESULTS = Path(__file__).resolve().parent / "results"
#: After two runs of a point, no more once its runs have taken this long (the largest sizes).
MAX_TOTAL_S = 20.0
SECTIONS = ("dqn_envs", "ppo_envs", "dqn_seeds", "ppo_seeds", "memory")


def dqn_config(num_envs: int, iterations: int) -> dqn.DQNConfig:
    """DQN with ``num_envs`` environments: a short warm-up, then ``iterations``
    learning iterations (2 gradient steps each) and one small evaluation."""
    learning_starts = max(256, num_envs)
    return dqn.DQNConfig(
        num_envs=num_envs,
        learning_starts=learning_starts,
        total_steps=learning_starts + num_envs * iterations,
        eval_every=iterations,
        eval_episodes=8,
    )


def train_point(train, env_steps_run: int, num_seeds: int | None, repeats: int) -> dict:
    """Time ``train(key)``, or ``vmap(train)`` over ``num_seeds`` keys; ``env_steps_run``
    is the environment steps of one seed."""
    if num_seeds is None:
        timing, _ = compile_and_time(train, (jax.random.key(0),), repeats, MAX_TOTAL_S)
        seeds = 1
    else:
        keys = jax.random.split(jax.random.key(0), num_seeds)
        timing, _ = compile_and_time(jax.vmap(train), (keys,), repeats, MAX_TOTAL_S)
        seeds = num_seeds
    steps = seeds * env_steps_run
    return {**timing, "env_steps": steps, **step_rates(timing, steps)}


def dqn_point(config: dqn.DQNConfig, num_seeds: int | None, repeats: int) -> dict:
    return train_point(
        dqn.make_train(config, dqn.make_q_network(), cartpole.CartPole()),
        config.env_steps_run,
        num_seeds,
        repeats,
    )


def ppo_point(config: ppo.PPOConfig, num_seeds: int | None, repeats: int) -> dict:
    train = ppo.make_train(config, ppo.FIXED_MAZE_NETWORK, maze_lib.make_maze_task("medium"))
    return train_point(train, config.env_steps_run, num_seeds, repeats)


def ppo_config(num_envs: int, updates: int) -> ppo.PPOConfig:
    """The PPO chapter's medium-maze configuration with ``num_envs`` environments."""
    config = ppo.FIXED_MAZE_CONFIG._replace(num_envs=num_envs)
    return config._replace(total_timesteps=updates * config.batch_size)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument("--out", type=Path, default=RESULTS / "scaling.json")
    parser.add_argument(
        "--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS), help="what to measure"
    )
    args = parser.parse_args(argv)

    if args.quick:
        env_sizes, seed_counts, repeats = [1, 4], [1, 2], 2
        dqn_iterations, ppo_env_steps, ppo_seed_updates = 20, 256, 1
        buffers, batches = [1_000, 10_000], [32, 64]
    else:
        env_sizes, seed_counts, repeats = [1, 8, 64, 512, 4096], [1, 8, 64], 3
        dqn_iterations, ppo_env_steps, ppo_seed_updates = 500, 16_384, 1
        buffers, batches = [10_000, 100_000, 1_000_000], [32, 256, 2048]

    started = time.perf_counter()
    result = {
        **result_header("scaling", args.quick),
        "repeats": repeats,
        "sections": args.sections,
        "dqn_iterations": dqn_iterations,
        "dqn_envs": {},
        "ppo_envs": {},
        "dqn_seeds": {},
        "ppo_seeds": {},
        "memory": {"dqn_buffer_capacity": {}, "dqn_batch_size": {}},
    }

    def save():
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, default=list) + "\n")

    def log(section, key, r):
        save()
        print(
            f"{section:10s} {key:>8}: {r['steps_per_s']:>12,.0f} steps/s  run {r['median_s']:.3f} s"
            f"  compile {r['compile_s']:.1f} s  memory {r['memory']['total_bytes'] / 1e6:.1f} MB",
            flush=True,
        )

    for n in env_sizes if "dqn_envs" in args.sections else ():
        r = dqn_point(dqn_config(n, dqn_iterations), None, repeats)
        result["dqn_envs"][str(n)] = r
        log("dqn_envs", n, r)
    for n in env_sizes if "ppo_envs" in args.sections else ():
        # Each run does at least one update and about ppo_env_steps environment steps.
        updates = max(1, ppo_env_steps // (n * ppo.FIXED_MAZE_CONFIG.num_steps))
        r = ppo_point(ppo_config(n, updates), None, repeats)
        r["updates"] = updates
        result["ppo_envs"][str(n)] = r
        log("ppo_envs", n, r)
    for s in seed_counts if "dqn_seeds" in args.sections else ():
        config = dqn_config(dqn.DQNConfig().num_envs, dqn_iterations)
        r = dqn_point(config, s, repeats)
        result["dqn_seeds"][str(s)] = r
        log("dqn_seeds", s, r)
    for s in seed_counts if "ppo_seeds" in args.sections else ():
        config = ppo_config(ppo.FIXED_MAZE_CONFIG.num_envs, ppo_seed_updates)
        r = ppo_point(config, s, repeats)
        result["ppo_seeds"][str(s)] = r
        log("ppo_seeds", s, r)

    # DQN (4 environments, as in its chapter) against buffer capacity and batch size.
    base = dqn_config(dqn.DQNConfig().num_envs, dqn_iterations)
    for capacity in buffers if "memory" in args.sections else ():
        r = dqn_point(base._replace(buffer_capacity=capacity), None, repeats)
        result["memory"]["dqn_buffer_capacity"][str(capacity)] = r
        log("buffer", capacity, r)
    for batch in batches if "memory" in args.sections else ():
        config = base._replace(batch_size=batch, learning_starts=max(base.learning_starts, batch))
        config = config._replace(
            total_steps=config.learning_starts + config.num_envs * dqn_iterations
        )
        r = dqn_point(config, None, repeats)
        result["memory"]["dqn_batch_size"][str(batch)] = r
        log("batch", batch, r)

    result["configs"] = {
        "dqn": {k: list(v) if isinstance(v, tuple) else v for k, v in base._asdict().items()},
        "ppo": ppo.FIXED_MAZE_CONFIG._asdict(),
        "ppo_task": "medium",
        "ppo_network": ppo.networks.network_to_dict(ppo.FIXED_MAZE_NETWORK),
    }
    result["wall_s"] = time.perf_counter() - started
    save()
    print(f"scaling: {result['wall_s']:.0f} s in all")
    return result


if __name__ == "__main__":
    main()
