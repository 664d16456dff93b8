"""The two source posts, reimplemented faithfully, and the book's agents, measured alike.

The book's PPO (on the post's maze and on the book's medium maze, keys 0 to 3) and its DQN
(keys 0 to 32) run in the same process with the same protocol (:mod:`book_agents`), and
``comparisons`` in the JSON holds the same-run ratios. The book's DQN is measured twice: the
chapter's configuration (``dqn.DQNConfig()`` with the 64 x 64 Q-network with LayerNorm) and
the configuration the chapter used before (``EARLIER_DQN_CONFIG``, the 64 x 64 network
without LayerNorm), both evaluated every 1,000 steps on 100 greedy episodes, evaluations
outside the time as for the posts' agents (:func:`book_agents.measure_dqn`). The posts' side:

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
  CartPole (reward 0 on the terminating step, no step limit), keys 0 to 32, and with
  CartPole-v1's (the ablation), keys 0 to 10. Every 1,000 steps, clock
  stopped: 10 greedy CartPole-v1 episodes choose the kept-best parameters (the
  book's selection) and 100 give the time to a mean return of 475 (compile
  included, evaluations excluded). The post's own "solved" (one training
  episode longer than 200 steps) is recorded with its step and time. Final
  and kept-best parameters are evaluated on 100 fresh greedy CartPole-v1
  episodes.

The DQN runs go key by key, each key's runs one after another (the post's, its ablation's,
the earlier configuration's, the chapter's), so that a busier machine slows them alike.
Compile time is measured apart, once per configuration (later keys reuse the
compiled programs and report the same compile time). ``comparisons["dqn"]`` holds, per agent,
the final and kept-best solves, the last-quarter evaluations, the median steps and time to a
first evaluation at 475 (medians over all keys, a key that never got there counting as later
than any), the time of one whole run (compile included) and the expected time to a solving
final policy when retrying keys until one solves (one compile, which a retry reuses, then the
median run time divided by the fraction of keys whose final parameters solve), and the
same-run ratios. ``--resummarise`` recomputes the comparisons and the summary from the runs
in the JSON, measuring nothing.

    python benchmarks/source_posts.py             # about 20 minutes on 2 cores
    python benchmarks/source_posts.py --dqn-only  # the DQN part, merged into the JSON
    python benchmarks/source_posts.py --quick     # tiny sizes, to keep the script working
    python benchmarks/source_posts.py --resummarise  # the summaries of the committed runs
"""

from __future__ import annotations

import argparse
import json
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
from measure import result_header  # noqa: E402

from companion import stats  # noqa: E402
from companion.agents import dqn  # noqa: E402
from companion.agents.ppo import networks as ppo_networks  # noqa: E402

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

#: DQN runs: (variant, changes to the post's configuration, keys).
DQN_VARIANTS = (
    ("post", {}, tuple(range(33))),
    ("CartPole-v1 reward and truncation", {"env_fixed": True}, tuple(range(11))),
)
DQN_SEEDS = tuple(range(33))
#: The chapter's DQN before LayerNorm: Polyak averaging (tau 0.005 after every gradient step),
#: a learning rate of 0.003 falling to 0 along half a cosine, 80,000 steps, epsilon over
#: 20,000, and the 64 x 64 ReLU network without LayerNorm. ``eval_every`` 250 iterations
#: (1,000 steps) evaluates it as often as the chapter's configuration.
EARLIER_DQN_CONFIG = dqn.DQNConfig(
    total_steps=80_000,
    learning_starts=2_000,
    buffer_capacity=100_000,
    learning_rate=3e-3,
    lr_schedule="cosine",
    target_update_period=1,
    target_tau=0.005,
    epsilon_decay_steps=20_000,
    eval_every=250,
)
EARLIER_DQN_NETWORK = dqn.make_q_network(2, (64, 64))


def measure_ppo(
    variant: str, config: post_ppo.PostPPOConfig, seed: int, episodes: int, eval_every: int
) -> dict:
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
        **{
            k: record[k]
            for k in ("env_steps", "compile_s", "compile_reused", "run_s", "steps_per_s")
        },
        "evals": [
            {k: e[k] for k in ("updates", "env_steps", "train_s")} | {"success": e["value"]}
            for e in record["evals"]
        ],
        "steps_to_target": hit[0]["env_steps"] if hit else None,
        "time_to_target_s": hit[0]["train_s"] if hit else None,
        "final_success": final,
        "eval_episodes": episodes,
    }


def measure_dqn(
    variant: str,
    config: post_dqn.PostDQNConfig,
    seed: int,
    eval_every: int,
    select_episodes: int,
    episodes: int,
) -> dict:
    final_params, best_params, record = post_dqn.train(
        config,
        jax.random.key(seed),
        jax.random.key(PERIODIC_SEED + seed),
        eval_every,
        select_episodes,
        episodes,
        DQN_TARGET,
    )
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
    run = book_agents.measure_ppo(
        env, task, seed, jax.random.key(PERIODIC_SEED + seed), episodes, config
    )
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


def measure_book_dqn(
    seed: int, episodes: int, config, network=book_agents.DQN_NETWORK, variant: str = "book"
) -> dict:
    run = book_agents.measure_dqn(
        seed, jax.random.key(PERIODIC_SEED + seed), episodes, config, network=network
    )
    k_final, k_best = jax.random.split(jax.random.key(EVAL_SEED + seed))
    for name, key in (("final", k_final), ("best", k_best)):
        returns = dqn.greedy_returns(run.pop(f"{name}_params"), key, episodes, network)
        run[f"{name}_return"] = float(np.mean(returns))
    run.update(variant=variant, eval_episodes=episodes)
    return run


def _median(values):
    """The median over all keys, a key that never got there (``None``) counting as later
    than any; ``None`` when half or more never did (``companion.stats.median_first_step``)
    or when there are no runs."""
    values = list(values)
    return stats.median_first_step(values) if values else None


def _last_quarter(run: dict) -> float:
    """Mean of the last quarter of a run's in-training evaluations (100 greedy episodes)."""
    values = [e["return"] if "return" in e else e["target_return"] for e in run["evals"]]
    return float(np.mean(values[-max(1, len(values) // 4) :]))


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def dqn_comparison(runs: list) -> dict:
    """One DQN agent's summary over its keys (see the module's docstring)."""
    n = len(runs)
    final_solved = sum(r["final_return"] >= DQN_TARGET for r in runs)
    run_time = _median([r["compile_s"] + r["run_s"] for r in runs])
    compile_s, run_s = _median([r["compile_s"] for r in runs]), _median([r["run_s"] for r in runs])
    sets = {}
    for first in range(0, n, 11):
        group = [r for r in runs if first <= r["seed"] < first + 11]
        if group:
            name = f"{group[0]['seed']}-{group[-1]['seed']}"
            sets[name] = sum(r["final_return"] >= DQN_TARGET for r in group)
    return {
        "seeds": n,
        "final_solved": final_solved,
        "final_solved_by_keys": sets,
        "best_solved": sum(r["best_return"] >= DQN_TARGET for r in runs),
        "reached_in_training": sum(r["time_to_target_s"] is not None for r in runs),
        "last_quarter_eval_mean": float(np.mean([_last_quarter(r) for r in runs]))
        if runs
        else None,
        "median_time_to_target_s": _median([r["time_to_target_s"] for r in runs]),
        "median_steps_to_target": _median([r["steps_to_target"] for r in runs]),
        "post_solved": sum(r["post_solved_s"] is not None for r in runs),
        "median_post_solved_s": _median([r["post_solved_s"] for r in runs]),
        "median_steps_per_s": _median([r["steps_per_s"] for r in runs]),
        "env_steps": _median([r["env_steps"] for r in runs]),
        "compile_s": compile_s,
        "median_run_time_s": run_time,
        # retrying keys until a final policy solves: one compile (a retry reuses the
        # program), then n / final_solved runs on average
        "expected_time_to_solving_final_s": (
            None if not final_solved else compile_s + run_s * n / final_solved
        ),
    }


def dqn_comparisons(dqn_runs: list, book_dqn: list, earlier_dqn: list) -> dict:
    """Same-run DQN comparisons: the post's agent, the chapter's and its earlier one."""
    out = {
        "post": dqn_comparison([r for r in dqn_runs if r["variant"] == "post"]),
        "book": dqn_comparison(book_dqn),
    }
    if earlier_dqn:
        out["earlier"] = dqn_comparison(earlier_dqn)
    time = {k: v["median_time_to_target_s"] for k, v in out.items()}
    expected = {k: v["expected_time_to_solving_final_s"] for k, v in out.items()}
    out["post_over_book_time"] = _ratio(time["post"], time["book"])
    out["book_over_post_time"] = _ratio(time["book"], time["post"])
    out["book_over_post_expected_time"] = _ratio(expected["book"], expected["post"])
    if earlier_dqn:
        out["book_over_earlier_time"] = _ratio(time["book"], time["earlier"])
        out["book_over_earlier_steps"] = _ratio(
            out["book"]["median_steps_to_target"], out["earlier"]["median_steps_to_target"]
        )
    return out


def comparisons(ppo_runs: list, book_ppo: list) -> dict:
    """Same-run PPO comparisons, book against post, on the same tasks and protocol."""
    out = {}
    post_on = {"post-medium": "post", "book-medium": "post on the book's medium maze"}
    for task, variant in post_on.items():
        post = [r for r in ppo_runs if r["variant"] == variant]
        book = [r for r in book_ppo if r["task"] == task]
        p_t, b_t = (
            _median([r["time_to_target_s"] for r in post]),
            _median([r["time_to_target_s"] for r in book]),
        )
        out[task] = {
            "post_reached": f"{sum(r['time_to_target_s'] is not None for r in post)} of {len(post)}",
            "book_reached": f"{sum(r['time_to_target_s'] is not None for r in book)} of {len(book)}",
            "post_median_time_to_target_s": p_t,
            "book_median_time_to_target_s": b_t,
            "post_median_steps_to_target": _median([r["steps_to_target"] for r in post]),
            "book_median_steps_to_target": _median([r["steps_to_target"] for r in book]),
            "post_over_book_time": None if None in (p_t, b_t) else p_t / b_t,
        }
    return out


def _fmt(x, digits=1):
    return "not reached" if x is None else f"{x:.{digits}f} s"


def summarise_ppo(ppo_runs: list, compared: dict) -> list:
    lines = []
    for r in ppo_runs:
        f = r["final_success"]
        lines.append(
            f"PPO {r['variant']}, key {r['seed']} (trained on {r['task']}): sampled/greedy success "
            + ", ".join(f"{t} {f[t]['sampled']:.3f}/{f[t]['greedy']:.3f}" for t in EVAL_TASKS)
            + f"; time to {PPO_TARGET}: {_fmt(r['time_to_target_s'])}; "
            f"{r['steps_per_s']:,.0f} steps/s."
        )
    for task, c in compared.items():
        ratio = c["post_over_book_time"]
        lines.append(
            f"PPO on {task}: time to {PPO_TARGET}, post {_fmt(c['post_median_time_to_target_s'])}"
            f" ({c['post_reached']} keys), book {_fmt(c['book_median_time_to_target_s'])} "
            f"({c['book_reached']} keys)" + (f"; post / book {ratio:.2f}." if ratio else ".")
        )
    return lines


def summarise_dqn(dqn_runs: list, compared: dict) -> list:
    lines = []
    for variant in [v for v, _, _ in DQN_VARIANTS] + ["earlier", "book"]:
        runs = [r for r in dqn_runs if r["variant"] == variant]
        if not runs:
            continue
        final_ok = [r for r in runs if r["final_return"] >= DQN_TARGET]
        best_ok = [r for r in runs if r["best_return"] >= DQN_TARGET]
        reached = sum(r["time_to_target_s"] is not None for r in runs)
        solved = sum(r["post_solved_s"] is not None for r in runs)
        steps = _median([r["steps_to_target"] for r in runs])
        lines.append(
            f"DQN {variant}, {len(runs)} keys: final parameters >= {DQN_TARGET:.0f} on "
            f"{len(final_ok)} keys, kept-best on {len(best_ok)}; last-quarter evaluations "
            f"{np.mean([_last_quarter(r) for r in runs]):.0f}; during training a 100-episode "
            f"evaluation reached {DQN_TARGET:.0f} on {reached} keys (median over all keys "
            f"{'not reached' if steps is None else f'{steps:,.0f} steps'}, "
            f"{_fmt(_median([r['time_to_target_s'] for r in runs]), 2)}, compile included); "
            f"the post's 'solved' fired on {solved} keys (median over all keys "
            f"{_fmt(_median([r['post_solved_s'] for r in runs]), 2)})."
        )
    for name in ("book_over_earlier_time", "book_over_post_time", "book_over_post_expected_time"):
        if compared.get(name) is not None:
            lines.append(f"DQN {name.replace('_', ' ')}: {compared[name]:.2f}.")
    return lines


def _listed(config) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in config._asdict().items()}


def run_dqn(quick: bool) -> dict:
    """The DQN part: the post's agent, its ablation, the earlier and the chapter's DQN."""
    base, eval_every, select, episodes = post_dqn.PostDQNConfig(), 1_000, 10, 100
    variants, seeds = DQN_VARIANTS, DQN_SEEDS
    book_config, earlier_config = book_agents.DQN_CONFIG, EARLIER_DQN_CONFIG
    if quick:
        base = base._replace(total_steps=200, buffer_size=64, prefill_steps=64)
        eval_every, select, episodes = 100, 2, 5
        variants = tuple((n, c, k[:2]) for n, c, k in DQN_VARIANTS)
        seeds = DQN_SEEDS[:2]
        small = {
            "total_steps": 1_200,
            "learning_starts": 200,
            "eval_every": 100,
            "buffer_capacity": 1_200,
            "epsilon_decay_steps": 500,
        }
        book_config, earlier_config = (
            book_config._replace(**small),
            earlier_config._replace(**small),
        )
    dqn_runs, book_dqn, earlier_dqn = [], [], []

    def show(run):
        print(json.dumps({k: v for k, v in run.items() if k != "evals"}), flush=True)

    for seed in seeds:  # each key's runs together: a busier spell slows them alike
        for name, changes, keys in variants:
            if seed in keys:
                dqn_runs.append(
                    measure_dqn(name, base._replace(**changes), seed, eval_every, select, episodes)
                )
                show(dqn_runs[-1])
        earlier_dqn.append(
            measure_book_dqn(seed, episodes, earlier_config, EARLIER_DQN_NETWORK, "earlier")
        )
        show(earlier_dqn[-1])
        book_dqn.append(measure_book_dqn(seed, episodes, book_config))
        show(book_dqn[-1])
    compared = dqn_comparisons(dqn_runs, book_dqn, earlier_dqn)
    return {
        "dqn_target": DQN_TARGET,
        "dqn_config": _listed(base),
        "dqn_variants": [{"variant": n, "changes": c, "seeds": list(k)} for n, c, k in variants],
        "dqn_eval_every_steps": eval_every,
        "book_dqn_config": _listed(book_config),
        "book_dqn_network": {"hidden_sizes": [64, 64], "layer_norm": True},
        "earlier_dqn_config": _listed(earlier_config),
        "dqn_runs": dqn_runs,
        "book_dqn_runs": book_dqn,
        "earlier_dqn_runs": earlier_dqn,
        "comparisons_dqn": compared,
        "summary_dqn": summarise_dqn(dqn_runs + earlier_dqn + book_dqn, compared),
    }


def run_ppo(quick: bool) -> dict:
    """The PPO part: the post's agent and its variants, and the book's PPO."""
    ppo_base, ppo_episodes, ppo_eval_every = post_ppo.PostPPOConfig(), 1000, 2
    variants = PPO_VARIANTS
    book_ppo_config, book_tasks = book_agents.PPO_CONFIG, BOOK_PPO_TASKS
    if quick:
        ppo_base = ppo_base._replace(
            num_steps=64, total_timesteps=2_048, num_epochs=1, minibatch_size=256
        )
        ppo_episodes, ppo_eval_every = 20, 1
        variants = tuple((name, changes, seeds[:1]) for name, changes, seeds in PPO_VARIANTS)
        book_ppo_config = book_ppo_config._replace(total_timesteps=2 * 8 * 2_048)
        book_tasks = (("book-medium", (0,)),)
    ppo_runs, book_ppo = [], []
    for name, changes, seeds in variants:
        config = ppo_base._replace(**changes)
        if not quick:
            config = config._replace(total_timesteps=post_ppo.BUDGETS[config.env_task])
        for seed in seeds:
            ppo_runs.append(measure_ppo(name, config, seed, ppo_episodes, ppo_eval_every))
            print(json.dumps({k: v for k, v in ppo_runs[-1].items() if k != "evals"}), flush=True)
    for task, seeds in book_tasks:
        for seed in seeds:
            book_ppo.append(measure_book_ppo(task, seed, ppo_episodes, book_ppo_config))
            print(json.dumps({k: v for k, v in book_ppo[-1].items() if k != "evals"}), flush=True)
    compared = comparisons(ppo_runs, book_ppo)
    return {
        "ppo_target": PPO_TARGET,
        "ppo_config": ppo_base._asdict(),
        "ppo_variants": [{"variant": n, "changes": c, "seeds": list(s)} for n, c, s in variants],
        "ppo_eval_every_updates": ppo_eval_every,
        "book_ppo_config": book_ppo_config._asdict(),
        "book_ppo_network": ppo_networks.network_to_dict(book_agents.PPO_NETWORK),
        "ppo_runs": ppo_runs,
        "book_ppo_runs": book_ppo,
        "comparisons_ppo": compared,
        "summary_ppo": summarise_ppo(ppo_runs + book_ppo, compared),
    }


def resummarise(result: dict) -> dict:
    """``result`` with its comparisons and summary recomputed from its runs (no measurement)."""
    dqn_runs, book_dqn = result["dqn_runs"], result["book_dqn_runs"]
    earlier_dqn = result.get("earlier_dqn_runs", [])
    ppo_runs, book_ppo = result["ppo_runs"], result["book_ppo_runs"]
    compared = {
        "ppo": comparisons(ppo_runs, book_ppo),
        "dqn": dqn_comparisons(dqn_runs, book_dqn, earlier_dqn),
    }
    summary = summarise_ppo(ppo_runs + book_ppo, compared["ppo"]) + summarise_dqn(
        dqn_runs + earlier_dqn + book_dqn, compared["dqn"]
    )
    return {**result, "comparisons": compared, "summary": summary}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument(
        "--dqn-only",
        action="store_true",
        help="measure the DQN part only; keep the PPO part of --out",
    )
    parser.add_argument(
        "--resummarise",
        action="store_true",
        help="recompute the comparisons and the summary of --out from its runs",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "source_posts.json")
    args = parser.parse_args(argv)
    if args.resummarise:
        result = resummarise(json.loads(args.out.read_text()))
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print("\n".join(result["summary"]))
        return result
    started = time.perf_counter()
    header = result_header("source_posts", args.quick)
    if args.dqn_only:
        previous = json.loads(args.out.read_text())
        ppo = {k: v for k, v in previous.items() if k.startswith(("ppo_", "book_ppo_"))}
        ppo["comparisons_ppo"] = previous["comparisons"]["ppo"]
        ppo["summary_ppo"] = [line for line in previous["summary"] if line.startswith("PPO")]
        note = (
            f"The DQN part was re-measured on {header['date']} (--dqn-only); the PPO part "
            f"is that of the run of {previous.get('ppo_date', previous['date'])}."
        )
        ppo_date = previous.get("ppo_date", previous["date"])
    else:
        ppo, note, ppo_date = run_ppo(args.quick), None, header["date"]
    dqn_part = run_dqn(args.quick)
    summary = ppo.pop("summary_ppo") + dqn_part.pop("summary_dqn")
    compared = {"ppo": ppo.pop("comparisons_ppo"), "dqn": dqn_part.pop("comparisons_dqn")}
    result = {**header, "ppo_date": ppo_date}
    if note:
        result["note"] = note
    result.update(
        **ppo,
        **dqn_part,
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
