"""PPO on jumanji's Maze: the book's agent against a minimal port of the blog approach.

Both agents run in one process on one machine, one PRNG key at a time (keys 0,
1, 2), compile time measured apart:

- **medium maze** (all 9 start/target pairs): each agent's own configuration
  (the book's from the PPO chapter; the port's the blog's: 32 x 128 steps,
  819,200 in all). The port also runs its full budget on the medium maze as
  the blog's generator drew it (``"medium-blog"``, 4 pairs): that run's wall
  time is the baseline the book's time to 0.99 on all 9 pairs is compared with.
  A third port run has the mask bug fixed (``-inf``), to isolate its effect.
  These two variants run on key 0 only, to keep ``make bench`` short.
  "Time to 0.99" is compile time plus the training time up to
  the first update after which the success rate of the episodes that ended in
  the last 5 rollouts (at least 100 of them) is at least 0.99, taking training time as proportional
  to updates. The final model of each run is then evaluated on 1,000 fresh
  episodes (sampled policy).
- **random maze** (a new maze every episode): throughput and success after the
  same number of steps for both (122,880, half the blog's random-maze run), each
  evaluated on 1,000 mazes from a key training never used; the book's agent is
  the chapter's random-maze configuration (``ppo.RANDOM_MAZE_CONFIG``). The
  chapter's full random-maze training is ``tools/train_random_maze.py``, which
  records its own time.

    python benchmarks/ppo_maze.py           # about 6 minutes on 2 cores
    python benchmarks/ppo_maze.py --quick   # tiny budgets, to keep the script working
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import equinox as eqx
import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import blog_ppo  # noqa: E402

from companion.agents import ppo  # noqa: E402
from companion.bench import result_header  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TARGET = 0.99
WINDOW = 5
MIN_EPISODES = 100
EVAL_SEED = 10_000

#: The PPO chapter's configuration for the fixed mazes, with the chapter's budget.
BOOK = ppo.FIXED_MAZE_CONFIG._replace(total_timesteps=262_144)
BLOG = blog_ppo.BlogConfig()


def _time_to_target(episodes, successes, compile_s, run_s):
    episodes, successes = np.asarray(episodes, float), np.asarray(successes, float)
    num = np.convolve(successes, np.ones(WINDOW), "valid")
    den = np.convolve(episodes, np.ones(WINDOW), "valid")
    rate = np.where(den >= MIN_EPISODES, num / np.maximum(den, 1), 0.0)
    hit = np.flatnonzero(rate >= TARGET)
    if not hit.size:
        return None, None
    update = int(hit[0]) + WINDOW  # updates done when the window is complete
    return update, compile_s + run_s * update / len(episodes)


def _run(train, key):
    start = time.perf_counter()
    compiled = jax.jit(train).lower(key).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    model, metrics = jax.block_until_ready(compiled(key))
    return model, metrics, compile_s, time.perf_counter() - start


def measure(agent: str, config, seed: int) -> dict:
    key = jax.random.PRNGKey(seed)
    if agent == "book":
        model, metrics, compile_s, run_s = _run(ppo.make_train(config), key)
        episodes = np.asarray(metrics["episodes"])
        successes = np.round(np.nan_to_num(np.asarray(metrics["success_rate"])) * episodes)
        steps = config.env_steps_run
        policy = model
    else:
        params, metrics, compile_s, run_s = _run(blog_ppo.make_train(config), key)
        model = eqx.combine(params, blog_ppo.static(config))
        episodes, successes = np.asarray(metrics["episodes"]), np.asarray(metrics["successes"])
        steps = config.num_updates * config.num_envs * config.num_steps
        policy = blog_ppo.on_images(model)
    update, time_to_target = _time_to_target(episodes, successes, compile_s, run_s)
    env = blog_ppo.make_env(config.task)
    final = ppo.evaluate(policy, env, jax.random.PRNGKey(EVAL_SEED), 1000)
    return {
        "task": config.task,
        "agent": "this book"
        if agent == "book"
        else ("blog port" if config.mask_bug else "blog port, -inf mask"),
        "seed": seed,
        "env_steps": steps,
        "compile_s": compile_s,
        "run_s": run_s,
        "steps_per_s": steps / run_s,
        "updates_to_target": update,
        "time_to_target_s": time_to_target,
        "final_success": float(np.mean(np.asarray(final.success))),
    }


def _successes(runs):
    return ", ".join(f"{r['final_success']:.3f}" for r in runs)


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny budgets (seconds)")
    parser.add_argument("--out", type=Path, default=RESULTS / "ppo_maze.json")
    args = parser.parse_args(argv)

    book, blog = BOOK._replace(task="medium"), BLOG._replace(task="medium")
    random_steps = 122_880
    seeds = (0, 1, 2)
    if args.quick:
        book = book._replace(total_timesteps=4_096)
        blog = blog._replace(total_timesteps=8_192)
        random_steps, seeds = 8_192, (0,)
    runs = []

    def record(agent, config, seed):
        runs.append(measure(agent, config, seed))
        print(json.dumps(runs[-1]), flush=True)

    for seed in seeds:
        record("book", book, seed)
        record("blog", blog, seed)
    # The port's two variants, on the first key only (their results barely vary by seed).
    record("blog", blog._replace(task="medium-blog"), seeds[0])
    record("blog", blog._replace(mask_bug=False), seeds[0])
    record("book", ppo.RANDOM_MAZE_CONFIG._replace(total_timesteps=random_steps), 0)
    record("blog", blog._replace(task="random", total_timesteps=random_steps), 0)

    def pick(task, agent):
        return [r for r in runs if r["task"] == task and r["agent"] == agent]

    book_runs, port_runs, port_own, port_fixed = (
        pick("medium", "this book"),
        pick("medium", "blog port"),
        pick("medium-blog", "blog port"),
        pick("medium", "blog port, -inf mask"),
    )
    book_t = _median([r["time_to_target_s"] for r in book_runs])
    port_t = _median([r["time_to_target_s"] for r in port_runs])
    port_wall = _median([r["compile_s"] + r["run_s"] for r in port_own])
    solved = sum(r["time_to_target_s"] is not None for r in book_runs)
    summary = [
        f"Medium maze (9 pairs), this book: {solved} of {len(book_runs)} seeds reach {TARGET} "
        f"success, median time {book_t if book_t is None else round(book_t, 1)} s (compile "
        f"included); final success "
        f"{_successes(book_runs)}.",
        f"Medium maze (9 pairs), blog port: median time to {TARGET} "
        f"{'not reached' if port_t is None else f'{port_t:.1f} s'}; final success after "
        f"{blog.total_timesteps:,} steps {_successes(port_runs)}.",
        f"Blog port's full run on its own medium maze (4 pairs): median wall time {port_wall:.1f} s "
        f"(compile included), final success "
        f"{_successes(port_own)}.",
        f"Blog port with the mask fixed (-inf), 9 pairs: final success {_successes(port_fixed)}.",
    ]
    ratio = None if book_t is None else book_t / port_wall
    if ratio is not None:
        summary.append(
            f"This book's time to {TARGET} on 9 pairs / the port's full-run wall time on 4 "
            f"pairs: {ratio:.2f}."
        )
    rnd = {r["agent"]: r for r in runs if r["task"] == "random"}
    speedup = rnd["this book"]["steps_per_s"] / rnd["blog port"]["steps_per_s"]
    summary.append(
        f"Random maze, {random_steps:,} steps each: this book {rnd['this book']['steps_per_s']:,.0f} "
        f"steps/s, success {rnd['this book']['final_success']:.1%} on 1,000 unseen mazes; blog "
        f"port {rnd['blog port']['steps_per_s']:,.0f} steps/s, success "
        f"{rnd['blog port']['final_success']:.1%}."
    )
    result = result_header("ppo_maze", args.quick)
    result.update(
        target=TARGET,
        window_updates=WINDOW,
        window_min_episodes=MIN_EPISODES,
        book_config=book._asdict(),
        book_random_config=ppo.RANDOM_MAZE_CONFIG._replace(total_timesteps=random_steps)._asdict(),
        blog_config=blog._asdict(),
        runs=runs,
        ratio_book_time_to_target_over_port_wall_time=ratio,
        random_steps_per_s_ratio=speedup,
        summary=summary,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=list) + "\n")
    print("\n".join(summary))
    return result


if __name__ == "__main__":
    main()
