"""Environment throughput: env steps per second, measured side by side in one run.

- gymnasium's CartPole-v1 in a Python loop, through gym.make (wrappers) and bare;
- the book's JAX CartPole under jit + vmap inside lax.scan, at several batch sizes;
- gymnax's CartPole-v1 the same way (if gymnax is installed: benchmarks/requirements.txt);
- jumanji's Maze, vmapped, with per-step resets (AutoResetWrapper) and pooled resets.

Every figure is the median of several runs, compile time apart; ratios compare
figures measured in this run. Writes JSON (default benchmarks/results/env_throughput.json).

    python benchmarks/env_throughput.py            # full sizes, a few minutes on 2 cores
    python benchmarks/env_throughput.py --quick    # tiny sizes, to keep the script working
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from measure import result_header

from companion.bench import throughput
from companion.envs import cartpole
from companion.envs.autoreset import make_reset_pool, pooled_autoreset_step, reset_with_next_obs
from companion.envs.maze import make_maze

from jumanji.wrappers import AutoResetWrapper

RESULTS = Path(__file__).resolve().parent / "results"


def gymnasium_loop(env, num_steps: int, seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    episodes = 0
    for _ in range(num_steps):
        _, _, terminated, truncated, _ = env.step(int(rng.integers(2)))
        if terminated or truncated:
            env.reset()
            episodes += 1
    return episodes


def measure_gymnasium(num_steps: int, repeats: int) -> dict:
    made = gym.make("CartPole-v1")
    bare = CartPoleEnv()
    out = {}
    for name, env in (("gym.make", made), ("bare CartPoleEnv", bare)):
        out[name] = throughput(lambda env=env: gymnasium_loop(env, num_steps), num_steps, repeats)
    return out


def jax_cartpole_fn(num_envs: int, num_steps: int):
    run = jax.jit(cartpole.random_rollout, static_argnums=(1, 2))
    keys = iter(jax.random.split(jax.random.key(0), 1000))
    return lambda: run(next(keys), num_envs, num_steps)[1]


def gymnax_cartpole_fn(num_envs: int, num_steps: int):
    import gymnax

    env, params = gymnax.make("CartPole-v1")

    @jax.jit
    def run(key):
        reset_key, key = jax.random.split(key)
        _, states = jax.vmap(env.reset, in_axes=(0, None))(
            jax.random.split(reset_key, num_envs), params
        )

        def body(states, step_key):
            action_key, env_key = jax.random.split(step_key)
            actions = jax.random.bernoulli(action_key, shape=(num_envs,)).astype(jnp.int32)
            _, states, _, done, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(env_key, num_envs), states, actions, params
            )
            return states, done.sum(dtype=jnp.int32)

        return jax.lax.scan(body, states, jax.random.split(key, num_steps))[1].sum()

    keys = iter(jax.random.split(jax.random.key(0), 1000))
    return lambda: run(next(keys))


def maze_fns(num_envs: int, num_steps: int, pool_size: int):
    env = make_maze()
    per_step = AutoResetWrapper(env, next_obs_in_extras=True)

    def policy(key, mask):
        return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf))

    def rollout(key, reset_fn, step_fn):
        reset_key, key = jax.random.split(key)
        states, timesteps = jax.vmap(reset_fn)(jax.random.split(reset_key, num_envs))

        def body(carry, step_key):
            states, timesteps = carry
            actions = jax.vmap(policy)(
                jax.random.split(step_key, num_envs), timesteps.observation.action_mask
            )
            states, timesteps = jax.vmap(step_fn)(states, actions)
            return (states, timesteps), timesteps.last().sum(dtype=jnp.int32)

        return jax.lax.scan(body, (states, timesteps), jax.random.split(key, num_steps))[1].sum()

    @jax.jit
    def run_per_step(key):
        return rollout(key, per_step.reset, per_step.step)

    @jax.jit
    def run_pooled(key):
        pool_key, key = jax.random.split(key)
        pool = make_reset_pool(env, pool_key, pool_size)  # a fresh pool every rollout
        return rollout(
            key,
            functools.partial(reset_with_next_obs, env),
            functools.partial(pooled_autoreset_step, env, pool),
        )

    keys = iter(jax.random.split(jax.random.key(0), 1000))
    return (lambda: run_per_step(next(keys))), (lambda: run_pooled(next(keys)))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument("--out", type=Path, default=RESULTS / "env_throughput.json")
    args = parser.parse_args(argv)

    repeats = 2 if args.quick else 5
    sizes = [1, 8] if args.quick else [1, 64, 1024, 4096]
    total_steps = {1: 200_000, 64: 2_000_000, 1024: 4_000_000, 4096: 8_000_000}
    gym_steps = 2_000 if args.quick else 50_000

    started = time.perf_counter()
    result = {
        **result_header("env_throughput", args.quick),
        "gymnasium": measure_gymnasium(gym_steps, repeats),
        "jax_cartpole": {},
        "gymnax_cartpole": {},
    }
    try:
        from importlib.metadata import version

        import gymnax

        result["gymnax_version"] = version("gymnax")
    except ImportError:
        gymnax = None
        result["gymnax_skipped"] = (
            "gymnax is not installed (pip install -r benchmarks/requirements.txt)"
        )

    for n in sizes:
        num_steps = 50 if args.quick else total_steps[n] // n
        result["jax_cartpole"][str(n)] = throughput(
            jax_cartpole_fn(n, num_steps), n * num_steps, repeats
        )
        if gymnax is not None:
            result["gymnax_cartpole"][str(n)] = throughput(
                gymnax_cartpole_fn(n, num_steps), n * num_steps, repeats
            )

    maze_envs, maze_steps = (8, 20) if args.quick else (256, 200)
    per_step_fn, pooled_fn = maze_fns(maze_envs, maze_steps, pool_size=maze_envs)
    result["maze"] = {
        "num_envs": maze_envs,
        "per_step_reset": throughput(per_step_fn, maze_envs * maze_steps, repeats),
        "pooled_reset": throughput(pooled_fn, maze_envs * maze_steps, repeats),
    }

    sps = lambda d: d["steps_per_s"]  # noqa: E731
    best_jax = max(result["jax_cartpole"].values(), key=sps)
    result["ratios"] = {
        "jax_best_vs_gym_make": sps(best_jax) / sps(result["gymnasium"]["gym.make"]),
        "jax_vs_gymnax": {
            n: sps(result["jax_cartpole"][n]) / sps(result["gymnax_cartpole"][n])
            for n in result["gymnax_cartpole"]
        },
        "maze_pooled_vs_per_step": sps(result["maze"]["pooled_reset"])
        / sps(result["maze"]["per_step_reset"]),
    }
    result["wall_s"] = time.perf_counter() - started
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(summary(result))
    return result


def summary(result: dict) -> str:
    lines = [
        f"env throughput on {result['hardware']['cpu']} ({result['hardware']['cpu_cores']} cores)"
    ]
    for name, r in result["gymnasium"].items():
        lines.append(f"  gymnasium {name:18s} {r['steps_per_s']:>14,.0f} steps/s")
    for n, r in result["jax_cartpole"].items():
        peer = result["gymnax_cartpole"].get(n)
        peer_txt = f"  gymnax {peer['steps_per_s']:>14,.0f}" if peer else ""
        lines.append(f"  JAX CartPole, {n:>5s} envs {r['steps_per_s']:>14,.0f} steps/s{peer_txt}")
    m = result["maze"]
    lines.append(
        f"  Maze {m['num_envs']} envs: per-step reset {m['per_step_reset']['steps_per_s']:,.0f}, "
        f"pooled {m['pooled_reset']['steps_per_s']:,.0f} steps/s"
    )
    lines.append("  ratios: " + json.dumps(result["ratios"], default=lambda x: round(x, 2)))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
