"""The two source posts, reimplemented faithfully, and the book's agents, measured alike.

The book's PPO (on the post's maze and on the book's medium maze, keys 0 to 3) and its DQN
(keys 0 to 10) run in the same process with the same protocol (:mod:`book_agents`), and
``comparisons`` in the JSON holds the same-run ratios. The posts' side:

- **PPO on Maze** (:mod:`post_ppo`): the post's agent on its own medium maze
  as its generator draws it (4 start/target pairs), keys 0 to 3, 819,200
  steps; on key 0, each of its three bugs fixed alone (illegal logits ``-inf``
  in the loss; the value loss without the (B, B) broadcast; all 9 pairs
  drawn); and the post's agent trained on the book's medium maze. Every 2
  updates (16,384 steps) the training is paused and the policy evaluated on
  1,000 fresh sampled episodes of the task it trains on; "time to 0.99" is
  compile time plus training time (evaluations excluded) up to the first
  evaluation >= 0.99. The final network is evaluated on 1,000 fresh episodes,
  sampled and greedy (``companion.agents.ppo.evaluate``), on the post's maze
  with its 4 pairs, with all 9 pairs, and on the book's medium maze.
- **DQN on CartPole** (:mod:`post_dqn`): the post's agent with its own
  CartPole (reward 0 on the terminating step, no step limit) and with
  CartPole-v1's (the ablation), keys 0 to 10. Every 1,000 steps, clock
  stopped: 10 greedy CartPole-v1 episodes choose the kept-best parameters (the
  book's selection) and 100 give the time to a mean return of 475 (compile
  included, evaluations excluded). The post's own "solved" (one training
  episode longer than 200 steps) is recorded with its step and time. Final
  and kept-best parameters are evaluated on 100 fresh greedy CartPole-v1
  episodes.

Compile time is measured apart, once per configuration (later keys reuse the
compiled programs and report the same compile time).

    python benchmarks/source_posts.py           # about 12 minutes on 2 cores
    python benchmarks/source_posts.py --quick   # tiny sizes, to keep the script working
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import book_agents  # noqa: E402
import post_dqn  # noqa: E402
import post_maze  # noqa: E402
import post_ppo  # noqa: E402

from companion.agents.ppo import networks as ppo_networks  # noqa: E402
from measure import result_header  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
PPO_TARGET = 0.99
DQN_TARGET = 475.0
EVAL_SEED = 10_000  # final evaluations: keys EVAL_SEED + seed
PERIODIC_SEED = 20_000  # evaluations during training: keys PERIODIC_SEED + seed
EVAL_TASKS = ("post-medium", "post-medium-9", "book-medium")

#: PPO runs: (variant, changes to the post's configuration, keys).
PPO_VARIANTS = (
    ("post", {}, (0, 1, 2, 3)),
    ("mask fixed (-inf in the loss)", {"mask_bug": False}, (0,)),
    ("value broadcast fixed", {"value_broadcast_bug": False}, (0,)),
    ("all 9 pairs drawn", {"draw_bug": False}, (0,)),
    ("post on the book's medium maze", {"task": "book-medium"}, (0,)),
)
#: The book's PPO runs: (task it trains on, keys), each evaluated on every task of EVAL_TASKS.
BOOK_PPO_TASKS = (("post-medium", (0, 1, 2, 3)), ("book-medium", (0, 1, 2, 3)))

#: DQN runs: (variant, changes to the post's configuration).
DQN_VARIANTS = (("post", {}), ("CartPole-v1 reward and truncation", {"env_fixed": True}))


def measure_ppo(variant: str, config: post_ppo.PostPPOConfig, seed: int, episodes: int,
                eval_every: int) -> dict:  # fmt: skip
    periodic_key = [jax.random.key(PERIODIC_SEED + seed)]

    def on_eval(params, _):
        periodic_key[0], key = jax.random.split(periodic_key[0])
        return post_ppo.success_rate(params, config.env_task, key, episodes)

    params, record = post_ppo.train(config, jax.random.key(seed), on_eval, eval_every)
    hit = [e for e in record["evals"] if e["value"] >= PPO_TARGET]
    final, keys = {}, jax.random.split(jax.random.key(EVAL_SEED + seed), 2 * len(EVAL_TASKS))
    for i, task in enumerate(EVAL_TASKS):
        final[task] = {
            mode: post_ppo.success_rate(params, task, keys[2 * i + g], episodes, greedy=bool(g))
            for g, mode in enumerate(("sampled", "greedy"))
        }
    return {
        "agent": "post PPO",
        "variant": variant,
        "task": config.env_task,
        "seed": seed,
        **{k: record[k] for k in ("env_steps", "compile_s", "compile_reused", "run_s",
                                  "steps_per_s")},  # fmt: skip
        "evals": [{k: e[k] for k in ("updates", "env_steps", "train_s")} | {"success": e["value"]}
                  for e in record["evals"]],  # fmt: skip
        "steps_to_target": hit[0]["env_steps"] if hit else None,
        "time_to_target_s": hit[0]["train_s"] if hit else None,
        "final_success": final,
        "eval_episodes": episodes,
    }


def measure_dqn(variant: str, config: post_dqn.PostDQNConfig, seed: int, eval_every: int,
                select_episodes: int, episodes: int) -> dict:  # fmt: skip
    final_params, best_params, record = post_dqn.train(
        config, jax.random.key(seed), jax.random.key(PERIODIC_SEED + seed), eval_every,
        select_episodes, episodes, DQN_TARGET,
    )  # fmt: skip
    k_final, k_best = jax.random.split(jax.random.key(EVAL_SEED + seed))
    return {
        "agent": "post DQN",
        "variant": variant,
        "seed": seed,
        **record,
        "final_return": post_dqn.greedy_mean_return(final_params, k_final, episodes, config),
        "best_return": post_dqn.greedy_mean_return(best_params, k_best, episodes, config),
        "eval_episodes": episodes,
        "select_episodes": select_episodes,
    }


def measure_book_ppo(task: str, seed: int, episodes: int, config) -> dict:
    env = post_maze.make_env(task)
    run = book_agents.measure_ppo(env, task, seed, jax.random.key(PERIODIC_SEED + seed),
                                  episodes, config)  # fmt: skip
    model = run.pop("model")
    keys = jax.random.split(jax.random.key(EVAL_SEED + seed), 2 * len(EVAL_TASKS))
    run["final_success"] = {
        t: {
            mode: float(np.mean(ppo_evaluate(model, t, keys[2 * i + g], episodes, bool(g))))
            for g, mode in enumerate(("sampled", "greedy"))
        }
        for i, t in enumerate(EVAL_TASKS)
    }
    run.update(variant="book", eval_episodes=episodes)
    return run


def ppo_evaluate(model, task, key, episodes, greedy):
    from companion.agents import ppo

    return ppo.evaluate(model, post_maze.make_env(task), key, episodes, greedy=greedy).success


def measure_book_dqn(seed: int, episodes: int, config) -> dict:
    from companion.agents import dqn

    run = book_agents.measure_dqn(seed, jax.random.key(PERIODIC_SEED + seed), episodes, config)
    network = book_agents.DQN_NETWORK
    k_final, k_best = jax.random.split(jax.random.key(EVAL_SEED + seed))
    for name, key in (("final", k_final), ("best", k_best)):
        returns = dqn.greedy_returns(run.pop(f"{name}_params"), key, episodes, network)
        run[f"{name}_return"] = float(np.mean(returns))
    run.update(variant="book", eval_episodes=episodes)
    return run


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def comparisons(ppo_runs: list, book_ppo: list, dqn_runs: list, book_dqn: list) -> dict:
    """Same-run comparisons, book against post, on the same tasks and protocol."""
    out = {"ppo": {}, "dqn": {}}
    post_on = {"post-medium": "post", "book-medium": "post on the book's medium maze"}
    for task, variant in post_on.items():
        post = [r for r in ppo_runs if r["variant"] == variant]
        book = [r for r in book_ppo if r["task"] == task]
        p_t, b_t = _median([r["time_to_target_s"] for r in post]), _median(
            [r["time_to_target_s"] for r in book])  # fmt: skip
        out["ppo"][task] = {
            "post_reached": f"{sum(r['time_to_target_s'] is not None for r in post)} of {len(post)}",
            "book_reached": f"{sum(r['time_to_target_s'] is not None for r in book)} of {len(book)}",
            "post_median_time_to_target_s": p_t,
            "book_median_time_to_target_s": b_t,
            "post_median_steps_to_target": _median([r["steps_to_target"] for r in post]),
            "book_median_steps_to_target": _median([r["steps_to_target"] for r in book]),
            "post_over_book_time": None if None in (p_t, b_t) else p_t / b_t,
        }  # fmt: skip
    post = [r for r in dqn_runs if r["variant"] == "post"]
    for agent, runs in (("post", post), ("book", book_dqn)):
        out["dqn"][agent] = {
            "seeds": len(runs),
            "final_solved": sum(r["final_return"] >= DQN_TARGET for r in runs),
            "best_solved": sum(r["best_return"] >= DQN_TARGET for r in runs),
            "reached_in_training": sum(r["time_to_target_s"] is not None for r in runs),
            "median_time_to_target_s": _median([r["time_to_target_s"] for r in runs]),
            "median_steps_to_target": _median([r["steps_to_target"] for r in runs]),
            "post_solved": sum(r["post_solved_s"] is not None for r in runs),
            "median_post_solved_s": _median([r["post_solved_s"] for r in runs]),
            "median_steps_per_s": _median([r["steps_per_s"] for r in runs]),
        }
    p_t, b_t = out["dqn"]["post"]["median_time_to_target_s"], out["dqn"]["book"][
        "median_time_to_target_s"]  # fmt: skip
    out["dqn"]["post_over_book_time"] = None if None in (p_t, b_t) else p_t / b_t
    return out


def _fmt(x, digits=1):
    return "not reached" if x is None else f"{x:.{digits}f} s"


def summarise(ppo_runs: list, dqn_runs: list, compared: dict) -> list:
    lines = []
    for r in ppo_runs:
        f = r["final_success"]
        lines.append(
            f"PPO {r['variant']}, key {r['seed']} (trained on {r['task']}): sampled/greedy success "
            + ", ".join(f"{t} {f[t]['sampled']:.3f}/{f[t]['greedy']:.3f}" for t in EVAL_TASKS)
            + f"; time to {PPO_TARGET}: {_fmt(r['time_to_target_s'])}; "
            f"{r['steps_per_s']:,.0f} steps/s."
        )
    for variant in [v for v, _ in DQN_VARIANTS] + ["book"]:
        runs = [r for r in dqn_runs if r["variant"] == variant]
        final_ok = [r for r in runs if r["final_return"] >= DQN_TARGET]
        best_ok = [r for r in runs if r["best_return"] >= DQN_TARGET]
        reached = [r["time_to_target_s"] for r in runs if r["time_to_target_s"] is not None]
        solved = [r["post_solved_s"] for r in runs if r["post_solved_s"] is not None]
        lines.append(
            f"DQN {variant}, {len(runs)} keys: final parameters >= {DQN_TARGET:.0f} on "
            f"{len(final_ok)} keys, kept-best on {len(best_ok)}; during training a 100-episode "
            f"evaluation reached {DQN_TARGET:.0f} on {len(reached)} keys (median "
            f"{_fmt(statistics.median(reached) if reached else None)}, compile included); "
            f"the post's 'solved' fired on {len(solved)} keys (median "
            f"{_fmt(statistics.median(solved) if solved else None, 2)})."
        )
    for task, c in compared["ppo"].items():
        ratio = c["post_over_book_time"]
        lines.append(
            f"PPO on {task}: time to {PPO_TARGET}, post {_fmt(c['post_median_time_to_target_s'])}"
            f" ({c['post_reached']} keys), book {_fmt(c['book_median_time_to_target_s'])} "
            f"({c['book_reached']} keys)"
            + (f"; post / book {ratio:.2f}." if ratio else ".")
        )
    ratio = compared["dqn"]["post_over_book_time"]
    if ratio:
        lines.append(f"DQN time to a mean greedy return of {DQN_TARGET:.0f}, post / book: {ratio:.2f}.")
    return lines


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument("--out", type=Path, default=RESULTS / "source_posts.json")
    args = parser.parse_args(argv)
    started = time.perf_counter()

    ppo_base, ppo_episodes, ppo_eval_every = post_ppo.PostPPOConfig(), 1000, 2
    dqn_base, dqn_seeds, dqn_eval_every, select, episodes = (
        post_dqn.PostDQNConfig(), range(11), 1_000, 10, 100)  # fmt: skip
    variants = PPO_VARIANTS
    if args.quick:
        ppo_base = ppo_base._replace(num_steps=64, total_timesteps=2_048, num_epochs=1,
                                     minibatch_size=256)  # fmt: skip
        ppo_episodes, ppo_eval_every = 20, 1
        variants = tuple((name, changes, seeds[:1]) for name, changes, seeds in PPO_VARIANTS)
        dqn_base = dqn_base._replace(total_steps=200, buffer_size=64, prefill_steps=64)
        dqn_seeds, dqn_eval_every, select, episodes = range(2), 100, 2, 5

    book_ppo_config, book_dqn_config, book_tasks = (
        book_agents.PPO_CONFIG, book_agents.DQN_CONFIG, BOOK_PPO_TASKS)  # fmt: skip
    if args.quick:
        book_ppo_config = book_ppo_config._replace(total_timesteps=2 * 8 * 2_048)
        book_dqn_config = book_dqn_config._replace(
            total_steps=1_200, learning_starts=200, eval_every=100, buffer_capacity=1_000)
        book_tasks = (("book-medium", (0,)),)
    ppo_runs, dqn_runs, book_ppo, book_dqn = [], [], [], []
    for name, changes, seeds in variants:
        config = ppo_base._replace(**changes)
        if not args.quick:
            config = config._replace(total_timesteps=post_ppo.BUDGETS[config.env_task])
        for seed in seeds:
            ppo_runs.append(measure_ppo(name, config, seed, ppo_episodes, ppo_eval_every))
            print(json.dumps({k: v for k, v in ppo_runs[-1].items() if k != "evals"}), flush=True)
    for name, changes in DQN_VARIANTS:
        for seed in dqn_seeds:
            dqn_runs.append(measure_dqn(name, dqn_base._replace(**changes), seed,
                                        dqn_eval_every, select, episodes))  # fmt: skip
            print(json.dumps({k: v for k, v in dqn_runs[-1].items() if k != "evals"}), flush=True)

    for task, seeds in book_tasks:
        for seed in seeds:
            book_ppo.append(measure_book_ppo(task, seed, ppo_episodes, book_ppo_config))
            print(json.dumps({k: v for k, v in book_ppo[-1].items() if k != "evals"}), flush=True)
    for seed in dqn_seeds if not args.quick else dqn_seeds[:1]:
        book_dqn.append(measure_book_dqn(seed, episodes, book_dqn_config))
        print(json.dumps({k: v for k, v in book_dqn[-1].items() if k != "evals"}), flush=True)

    compared = comparisons(ppo_runs, book_ppo, dqn_runs, book_dqn)
    summary = summarise(ppo_runs + book_ppo, dqn_runs + book_dqn, compared)
    result = result_header("source_posts", args.quick)
    result.update(
        ppo_target=PPO_TARGET,
        dqn_target=DQN_TARGET,
        ppo_config=ppo_base._asdict(),
        ppo_variants=[{"variant": n, "changes": c, "seeds": list(s)} for n, c, s in variants],
        ppo_eval_every_updates=ppo_eval_every,
        dqn_config={k: (list(v) if isinstance(v, tuple) else v)
                    for k, v in dqn_base._asdict().items()},  # fmt: skip
        dqn_variants=[{"variant": n, "changes": c} for n, c in DQN_VARIANTS],
        dqn_eval_every_steps=dqn_eval_every,
        book_ppo_config=book_ppo_config._asdict(),
        book_ppo_network=ppo_networks.network_to_dict(book_agents.PPO_NETWORK),
        book_dqn_config={k: (list(v) if isinstance(v, tuple) else v)
                         for k, v in book_dqn_config._asdict().items()},  # fmt: skip
        ppo_runs=ppo_runs,
        dqn_runs=dqn_runs,
        book_ppo_runs=book_ppo,
        book_dqn_runs=book_dqn,
        comparisons=compared,
        summary=summary,
        wall_s=time.perf_counter() - started,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("\n".join(summary))
    print(f"wall time {result['wall_s']:.0f} s")
    return result


if __name__ == "__main__":
    main()
