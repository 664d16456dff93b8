"""The book's PPO and DQN measured the way ``source_posts.py`` measures the posts' agents.

PPO is trained in compiled chunks (``make_trainer``'s ``init`` and ``run``): after each chunk
the clock stops and the current policy is evaluated on fresh episodes. DQN is trained in one
compiled run (``dqn.make_train``) twice with the same key: timed without evaluations
(``eval_episodes = 0``), and untimed with its greedy evaluations after every block, which draw
keys of their own, so both runs train the same parameters (checked). "Time to target" is, as
for the posts' agents, compile time plus training time up to the first evaluation at or above
the target, evaluations excluded. The compiled programs are reused by later keys of the same
configuration, which report the first compile time.

- PPO (``ppo.FIXED_MAZE_CONFIG``, the chapter's 262,144 steps): evaluation every 8 updates
  (16,384 steps, as for the post) on 1,000 fresh sampled episodes; target 0.99 success.
- DQN (``dqn.DQNConfig()`` with the chapter's Q-network, 64 x 64 with LayerNorm, 40,000
  steps): evaluation after every block of ``eval_every`` iterations (1,000 steps) on 100
  fresh greedy episodes of CartPole-v1, outside the time; target a mean return of 475. The
  post's own "solved" (one training episode longer than 200 steps) is recorded too, from the
  episodes that end during training.
"""

from __future__ import annotations

import time

import jax
import numpy as np

from companion.agents import dqn, ppo
from companion.envs import cartpole

PPO_CONFIG = ppo.FIXED_MAZE_CONFIG._replace(total_timesteps=262_144)
PPO_NETWORK = ppo.FIXED_MAZE_NETWORK
PPO_EVAL_EVERY_UPDATES = 8  # 8 x 64 environments x 32 steps = 16,384 steps
DQN_CONFIG = dqn.DQNConfig()
DQN_NETWORK = dqn.make_q_network(2, (64, 64), layer_norm=True)
DQN_ENV = cartpole.CartPole()
_COMPILED: dict = {}


def _compiled(name, fn, *args):
    """``fn`` compiled for ``args`` once per name; returns (program, compile seconds)."""
    if name not in _COMPILED:
        start = time.perf_counter()
        program = fn.lower(*args).compile()
        _COMPILED[name] = (program, time.perf_counter() - start)
    return _COMPILED[name]


def measure_ppo(
    env,
    task: str,
    seed: int,
    eval_key: jax.Array,
    episodes: int = 1000,
    config: ppo.PPOConfig = PPO_CONFIG,
    target: float = 0.99,
    eval_every: int = PPO_EVAL_EVERY_UPDATES,
) -> dict:
    """Train the book's PPO on ``env`` and evaluate it every ``eval_every`` updates.

    Args:
        env: the Maze to train and evaluate on; ``task`` is its name in the results.
        seed: the training key is ``jax.random.key(seed)``.
        eval_key: a key for the evaluations (split once per evaluation).
        episodes: fresh sampled episodes per evaluation.

    Returns:
        dict with ``compile_s``, ``run_s``, ``steps_per_s``, ``evals`` (updates,
        env_steps, train_s, success), ``steps_to_target``, ``time_to_target_s`` (None
        if never reached) and the final ``model`` (removed before writing JSON).
    """
    trainer = ppo.make_trainer(config, PPO_NETWORK, env)
    runner = trainer.init(jax.random.key(seed))
    chunks = config.num_updates // eval_every
    run, compile_s = _compiled(("ppo", task, config), trainer.run, runner, eval_every)
    run_s, evals = 0.0, []
    for chunk in range(1, chunks + 1):
        start = time.perf_counter()
        runner, _ = jax.block_until_ready(run(runner))
        run_s += time.perf_counter() - start
        eval_key, key = jax.random.split(eval_key)
        result = ppo.evaluate(ppo.trained_model(PPO_NETWORK, runner), env, key, episodes)
        updates = chunk * eval_every
        evals.append(
            {
                "updates": updates,
                "env_steps": updates * config.batch_size,
                "train_s": compile_s + run_s,
                "success": float(np.mean(result.success)),
            }
        )
    hit = [e for e in evals if e["success"] >= target]
    steps = chunks * eval_every * config.batch_size
    return {
        "agent": "book PPO",
        "task": task,
        "seed": seed,
        "env_steps": steps,
        "compile_s": compile_s,
        "run_s": run_s,
        "steps_per_s": steps / run_s,
        "evals": evals,
        "steps_to_target": hit[0]["env_steps"] if hit else None,
        "time_to_target_s": hit[0]["train_s"] if hit else None,
        "model": ppo.trained_model(PPO_NETWORK, runner),
    }


def measure_dqn(
    seed: int,
    eval_key: jax.Array,
    episodes: int = 100,
    config: dqn.DQNConfig = DQN_CONFIG,
    target: float = 475.0,
    post_solved_length: float = 200.0,
    network=DQN_NETWORK,
) -> dict:
    """Train the book's DQN in one run, timed without evaluations, and evaluate it alike.

    ``dqn.make_train(config, network, DQN_ENV)`` runs twice with the key ``seed``: with
    ``eval_episodes = 0``, compiled and timed (``compile_s``, ``run_s``); then with
    ``eval_episodes = episodes``, untimed, for the greedy evaluation after every block and the
    kept-best parameters. The time to an evaluation is ``compile_s`` plus ``run_s`` in
    proportion to the environment steps run up to it. ``eval_key`` is not used (the
    evaluations draw from the training key).

    Returns:
        dict with ``compile_s``, ``run_s``, ``steps_per_s``, ``evals`` (env_steps,
        train_s, mean greedy return over ``episodes``), ``last_quarter_eval_mean`` (the mean
        of the last quarter of the evaluations), ``steps_to_target``,
        ``time_to_target_s``, ``post_solved_steps`` and ``post_solved_s`` (the first
        training episode longer than ``post_solved_length`` steps), ``longest_episode``,
        ``evaluated_run_s`` (the untimed run's wall time, evaluations included), and the final
        and kept-best parameters (removed before writing JSON).

    Raises:
        RuntimeError: if the two runs train different parameters.
    """
    del eval_key
    key = jax.random.key(seed)
    timed = jax.jit(dqn.make_train(config._replace(eval_episodes=0), network, DQN_ENV))
    program, compile_s = _compiled(("dqn", config, network, "timed"), timed, key)
    start = time.perf_counter()
    plain, _ = jax.block_until_ready(program(key))
    run_s = time.perf_counter() - start
    evaluated = jax.jit(dqn.make_train(config._replace(eval_episodes=episodes), network, DQN_ENV))
    evaluated, _ = _compiled(("dqn", config, network, episodes), evaluated, key)
    start = time.perf_counter()
    runner, metrics = jax.block_until_ready(evaluated(key))
    evaluated_run_s = time.perf_counter() - start
    if not jax.tree.all(jax.tree.map(np.array_equal, plain.params, runner.params)):
        raise RuntimeError(f"key {seed}: the timed and the evaluated runs trained apart")
    total = int(runner.env_steps)

    def train_s(env_steps: int) -> float:
        return compile_s + run_s * env_steps / total

    longest_t = np.asarray(metrics["returns_max"])
    steps_t = np.asarray(metrics["env_steps"])
    solved = np.flatnonzero(longest_t > post_solved_length)
    post_solved = None
    if solved.size:
        steps = int(steps_t[solved[0]])
        post_solved = {"steps": steps, "time_s": train_s(steps)}
    evals = [
        {"env_steps": int(s), "train_s": train_s(int(s)), "return": float(r)}
        for s, r in zip(np.asarray(metrics["eval_env_steps"]), np.asarray(metrics["eval_return"]))
    ]
    hit = [e for e in evals if e["return"] >= target]
    quarter = max(1, len(evals) // 4)
    return {
        "agent": "book DQN",
        "seed": seed,
        "env_steps": total,
        "compile_s": compile_s,
        "run_s": run_s,
        "steps_per_s": total / run_s,
        "evals": evals,
        "last_quarter_eval_mean": float(np.mean([e["return"] for e in evals[-quarter:]])),
        "steps_to_target": hit[0]["env_steps"] if hit else None,
        "time_to_target_s": hit[0]["train_s"] if hit else None,
        "post_solved_steps": post_solved["steps"] if post_solved else None,
        "post_solved_s": post_solved["time_s"] if post_solved else None,
        "longest_episode": float(longest_t.max()),
        "evaluated_run_s": evaluated_run_s,
        "final_params": runner.params,
        "best_params": runner.best_params,
    }
