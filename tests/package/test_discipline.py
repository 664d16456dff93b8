"""The package practises what chapter 1 teaches: no PRNG key used twice, one compile per
program and shape.

- Every training, rollout and evaluation entry point runs with JAX's key-reuse checker on
  (``jax_debug_key_reuse``, which the whole suite sets in conftest.py) and typed keys
  (``jax.random.key``; the checker does not track raw ``PRNGKey`` arrays).
- Calling an entry point a second time with new keys (and new weights) compiles nothing:
  XLA compilations are counted with ``jax.monitoring``'s backend-compile event, which a
  program loaded from JAX's persistent compilation cache also records.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from compilations import CACHE_HIT_EVENT, count_compiles
from tiny import TINY_CONV_NET, TINY_DQN, TINY_PPO, TINY_PROPAGATION_NET, TINY_Q_NETWORK

from companion import replay
from companion.agents import dqn, ppo
from companion.envs import autoreset, cartpole
from companion.envs import maze as maze_lib

RANDOM = maze_lib.make_maze_task("random")
CARTPOLE = cartpole.CartPole()


def test_the_key_reuse_checker_is_on_and_catches_a_reuse():
    assert jax.config.jax_debug_key_reuse
    key = jax.random.key(0)
    jax.random.normal(key)
    with pytest.raises(jax.errors.KeyReuseError):
        jax.random.normal(key)

    def reuse_inside_jit(key):
        return jax.random.normal(key) + jax.random.uniform(key)

    with pytest.raises(jax.errors.KeyReuseError):
        jax.jit(reuse_inside_jit)(jax.random.key(1))


def _rollout(reset, task="random"):
    env = maze_lib.make_maze_task(task)
    model = ppo.ActorCritic(jax.random.key(0), channels=(2,), hidden_sizes=(8,))
    state, ts = jax.vmap(autoreset.reset_with_next_obs, in_axes=(None, 0))(
        env, jax.random.split(jax.random.key(1), 4)
    )
    pool = autoreset.make_reset_pool(env, jax.random.key(2), 4) if reset == "pooled" else None
    return jax.jit(ppo.rollout, static_argnums=(1, 6))(
        model, env, pool, state, ts, jax.random.key(3), 6
    )


ENTRY_POINTS = {
    "ppo.make_train pooled": lambda: jax.jit(ppo.make_train(TINY_PPO, TINY_CONV_NET, RANDOM))(
        jax.random.key(0)
    ),
    "ppo.make_train per_step": lambda: jax.jit(
        ppo.make_train(TINY_PPO._replace(reset="per_step"), TINY_CONV_NET, RANDOM)
    )(jax.random.key(0)),
    "ppo.make_train propagation": lambda: jax.jit(
        ppo.make_train(TINY_PPO, TINY_PROPAGATION_NET, RANDOM)
    )(jax.random.key(0)),
    "ppo.make_train vmapped seeds": lambda: jax.jit(
        jax.vmap(ppo.make_train(TINY_PPO, TINY_CONV_NET, RANDOM))
    )(jax.random.split(jax.random.key(0), 2)),
    "ppo.rollout pooled": lambda: _rollout("pooled"),
    "ppo.rollout per_step": lambda: _rollout("per_step"),
    "ppo.evaluate": lambda: ppo.evaluate(
        ppo.ActorCritic(jax.random.key(0), channels=(2,), hidden_sizes=(8,)),
        maze_lib.make_maze_task("random"),
        jax.random.key(1),
        4,
    ),
    "dqn.make_train": lambda: jax.jit(dqn.make_train(TINY_DQN, TINY_Q_NETWORK, CARTPOLE))(
        jax.random.key(0)
    ),
    "dqn.make_train vmapped seeds": lambda: jax.jit(
        jax.vmap(dqn.make_train(TINY_DQN, TINY_Q_NETWORK, CARTPOLE))
    )(jax.random.split(jax.random.key(0), 2)),
    "ppo.evaluate vmapped over keys": lambda: jax.vmap(
        lambda k: (
            ppo.evaluate(
                ppo.ActorCritic(jax.random.key(0), channels=(2,), hidden_sizes=(8,)),
                maze_lib.make_maze_task("medium"),
                k,
                3,
            ).success
        )
    )(jax.random.split(jax.random.key(1), 2)),
    "dqn.greedy_returns": lambda: dqn.greedy_returns(
        dqn.make_q_network().init(jax.random.key(0), jnp.zeros((1, 4))), jax.random.key(1), 3
    ),
    "cartpole.random_rollout": lambda: jax.jit(cartpole.random_rollout, static_argnums=(1, 2))(
        jax.random.key(0), 4, 20
    ),
    "replay.replay_sample": lambda: replay.replay_sample(
        replay.replay_add(replay.replay_init(jnp.zeros(2), 8), jnp.ones(2)), jax.random.key(0), 4
    ),
}


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_entry_point_runs_clean_under_the_key_reuse_checker(name):
    jax.block_until_ready(ENTRY_POINTS[name]())


def test_a_program_loaded_from_the_persistent_cache_counts_as_a_compilation():
    """The suite runs with JAX's persistent compilation cache on (conftest.py). A program
    that JAX loads from it instead of compiling must still show in ``count_compiles``, or a
    test of "the second call compiles nothing" could pass on a cache hit."""
    if not jax.config.jax_compilation_cache_dir:
        pytest.skip("the persistent compilation cache is off in this session")

    @jax.jit
    def f(x):
        return jnp.tanh(x) * 1.75 - 0.5

    hits = []

    def on_cache_hit(event, **kwargs):
        if event == CACHE_HIT_EVENT:
            hits.append(event)

    x = jnp.arange(3.0)
    with count_compiles() as first:
        jax.block_until_ready(f(x))  # compiled, or loaded from an earlier run's cache
    jax.clear_caches()  # forget the program in memory: the copy on disk remains
    jax.monitoring.register_event_listener(on_cache_hit)
    try:
        with count_compiles() as second:
            jax.block_until_ready(f(x))
    finally:
        jax.monitoring.unregister_event_listener(on_cache_hit)
    assert len(hits) == 1  # the second call loaded the program from disk ...
    assert first == second == ["jit(f)"]  # ... and counts as a compilation all the same


def test_ppo_train_compiles_once_for_new_keys():
    train = jax.jit(ppo.make_train(TINY_PPO, TINY_CONV_NET, RANDOM))
    jax.block_until_ready(train(jax.random.key(0)))
    with count_compiles() as compiles:
        jax.block_until_ready(train(jax.random.key(1)))
        jax.block_until_ready(train(jax.random.key(2)))
    assert compiles == []


def test_ppo_evaluate_compiles_once_per_model_structure_and_size():
    env = maze_lib.make_maze_task("random")
    make = lambda seed: ppo.ActorCritic(jax.random.key(seed), channels=(2,), hidden_sizes=(8,))  # noqa: E731
    jax.block_until_ready(ppo.evaluate(make(0), env, jax.random.key(10), 6))
    with count_compiles() as compiles:
        for seed in (1, 2, 3):  # new weights and new keys, same structure and sizes
            jax.block_until_ready(ppo.evaluate(make(seed), env, jax.random.key(10 + seed), 6))
        # greedy is an input of the same program, not a new one
        jax.block_until_ready(ppo.evaluate(make(6), env, jax.random.key(14), 6, greedy=True))
    assert compiles == []
    # a new size is a new program, compiled once
    jax.block_until_ready(ppo.evaluate(make(4), env, jax.random.key(20), 7, greedy=True))
    with count_compiles() as compiles:
        jax.block_until_ready(ppo.evaluate(make(5), env, jax.random.key(21), 7, greedy=True))
    assert compiles == []


def test_dqn_train_and_greedy_returns_compile_once():
    train = jax.jit(dqn.make_train(TINY_DQN, TINY_Q_NETWORK, CARTPOLE))
    runner, _ = jax.block_until_ready(train(jax.random.key(0)))
    network = TINY_Q_NETWORK
    jax.block_until_ready(dqn.greedy_returns(runner.params, jax.random.key(5), 3, network))
    with count_compiles() as compiles:
        runner, _ = jax.block_until_ready(train(jax.random.key(1)))
        jax.block_until_ready(dqn.greedy_returns(runner.params, jax.random.key(6), 3, network))
        # the default network is one object too, so its program is reused as well
        same = dqn.make_q_network(2, (8,))
        assert same is network
        jax.block_until_ready(dqn.greedy_returns(runner.params, jax.random.key(7), 3, same))
    assert compiles == []


def test_trainer_runs_in_chunks_like_one_train_call():
    """make_trainer's init and run, in two chunks, give make_train's result."""
    config = TINY_PPO  # 4 updates: a chunk of 2, then the other 2
    medium = maze_lib.make_maze_task("medium")
    trainer = ppo.make_trainer(config, TINY_CONV_NET, medium)
    runner = trainer.init(jax.random.key(0))
    runner, first = trainer.run(runner, 2)
    runner, second = trainer.run(runner, config.num_updates - 2)
    whole, metrics = jax.jit(ppo.make_train(config, TINY_CONV_NET, medium))(jax.random.key(0))
    for a, b in zip(jax.tree.leaves(runner.params), jax.tree.leaves(whole.params)):
        assert jnp.allclose(a, b, atol=1e-6)
    steps = jnp.concatenate([first["env_steps"], second["env_steps"]])
    assert jnp.array_equal(steps, metrics["env_steps"])
    with count_compiles() as compiles:
        trainer.run(trainer.init(jax.random.key(1)), 2)  # the same chunk size: no new compile
    assert compiles == []


# --- lean programs: no host callbacks, so JAX's persistent cache can serve them -----------


def _callbacks(jaxpr) -> list[str]:
    """Names of the host-callback primitives in ``jaxpr`` and every jaxpr nested in it."""
    from jax.extend.core import jaxprs_in_params

    found = []
    for eqn in jaxpr.eqns:
        if "callback" in eqn.primitive.name:
            found.append(eqn.primitive.name)
        for sub in jaxprs_in_params(eqn.params):
            found += _callbacks(sub)
    return found


def _ppo_evaluate():
    model = ppo.ActorCritic(jax.random.key(0), channels=(2,), hidden_sizes=(8,))
    env = maze_lib.make_maze_task("random")
    return lambda key: ppo.evaluate(model, env, key, 4)


def _dqn_greedy_returns():
    params = dqn.make_q_network().init(jax.random.key(0), jnp.zeros((1, 4)))
    return lambda key: dqn.greedy_returns(params, key, 3)


# Each entry builds a function of one key (what is built outside the trace stays outside).
LEAN_PROGRAMS = {
    "ppo train": lambda: ppo.make_train(TINY_PPO, TINY_CONV_NET, RANDOM),
    "ppo train propagation": lambda: ppo.make_train(TINY_PPO, TINY_PROPAGATION_NET, RANDOM),
    "ppo evaluate": _ppo_evaluate,
    "dqn train": lambda: dqn.make_train(TINY_DQN, TINY_Q_NETWORK, CARTPOLE),
    "dqn greedy_returns": _dqn_greedy_returns,
}


@pytest.mark.parametrize("name", list(LEAN_PROGRAMS))
def test_default_programs_have_no_host_callback(name):
    """Value checks (an illegal action, an empty buffer) are checkify checks that a plain jit
    drops; a host callback would keep the program out of the persistent cache."""
    closed = jax.make_jaxpr(LEAN_PROGRAMS[name]())(jax.random.key(1))
    assert _callbacks(closed.jaxpr) == []
    assert "callback" not in str(closed)


def test_a_progress_bar_is_the_only_callback_and_is_asked_for():
    train = ppo.make_train(TINY_PPO, TINY_CONV_NET, RANDOM, progress_bar=True)
    closed = jax.make_jaxpr(train)(jax.random.key(1))
    assert _callbacks(closed.jaxpr)  # jax-tqdm's bar is a host callback: opt in only


def test_a_programs_text_does_not_depend_on_the_checks_traced_before_it():
    """A run-time check leaves the same program text whatever was traced before it (JAX's
    persistent cache finds a program by that text), under a plain jit and under checkify
    (which numbers the checks of each trace from the same start), and under ``checked`` it
    still raises its own message."""
    from jax.experimental import checkify

    from companion._validate import runtime_check, tracing_checks
    from companion.debug import checked

    def make_program():  # a new function each time: traced afresh, not from jit's cache
        def program(x):
            runtime_check(x < 0, "x: expected >= 0")
            runtime_check(x > 10, "x: expected <= 10")
            return x + 1.0

        return program

    def checkified():  # the program as ``checked`` traces it
        program = make_program()

        def with_checks(x):
            with tracing_checks():
                return program(x)

        return jax.jit(checkify.checkify(with_checks, errors=checkify.user_checks))

    def texts():
        return jax.jit(make_program()).lower(1.0).as_text(), checkified().lower(1.0).as_text()

    first = texts()
    assert "expected >= 0" not in first[0]  # a plain jit leaves the checks out
    for _ in range(2):
        jax.make_jaxpr(lambda x: checkify.debug_check(x > 0, "another check"))(1.0)
        checkified().lower(2.0)
    assert texts() == first
    assert float(checked(make_program())(2.0)) == 3.0
    with pytest.raises(checkify.JaxRuntimeError, match="x: expected >= 0"):
        checked(make_program())(-1.0)
    with pytest.raises(checkify.JaxRuntimeError, match="x: expected <= 10"):
        checked(make_program())(11.0)


def test_a_value_check_leaves_no_effect_on_a_plain_jit():
    """Outside ``checked`` a traced value check leaves nothing in the program: a checkify
    check would stay on the jitted function as an effect, and every call of it would wait for
    its result (the Python loop over a jitted CartPole step in chapter 11 ran about 15 times
    slower). Under ``checked`` the same step raises for an illegal action."""
    from jax.experimental import checkify

    from companion.debug import checked

    state, _ = cartpole.reset(jax.random.key(0))
    assert jax.make_jaxpr(cartpole.step_autoreset)(state, jnp.int32(1)).effects == set()
    key = jax.random.key(1)
    epsilon = jnp.float32(0.1)
    assert jax.make_jaxpr(dqn.epsilon_greedy)(key, jnp.zeros(2), epsilon).effects == set()
    with pytest.raises(checkify.JaxRuntimeError, match="action: expected 0"):
        checked(cartpole.step)(state, jnp.int32(2))


CACHED_PROGRAM = """
import sys
import jax
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
from companion.agents import dqn, ppo
from companion.envs import cartpole
from companion.envs import maze as maze_lib
hits = []
jax.monitoring.register_event_listener(
    lambda event, **kw: hits.append(event) if event == "/jax/compilation_cache/cache_hits" else None
)
from tiny import TINY_CONV_NET, TINY_DQN, TINY_PPO, TINY_Q_NETWORK
ppo_config, ppo_network, dqn_config = TINY_PPO, TINY_CONV_NET, TINY_DQN
dqn_parts = (TINY_Q_NETWORK, cartpole.CartPole())
if sys.argv[2] == "other programs first":  # checks traced before: checkify counts them
    from jax.experimental import checkify
    for _ in range(3):
        jax.make_jaxpr(lambda x: checkify.debug_check(x > 0, "x: expected > 0"))(1.0)
    jax.make_jaxpr(dqn.make_train(dqn_config, *dqn_parts))(jax.random.key(1))
loaded = []  # per training program: 1 if it came from the cache
ppo_train = ppo.make_train(ppo_config, ppo_network, maze_lib.make_maze_task("empty"))
for train in (ppo_train, dqn.make_train(dqn_config, *dqn_parts)):
    key = jax.random.key(0)
    before = len(hits)
    jax.block_until_ready(jax.jit(train)(key))  # one program: jit(train)
    loaded.append(len(hits) - before)
print("loaded", *loaded)
"""


@pytest.mark.subprocess
def test_training_programs_are_served_from_the_persistent_cache_in_a_second_process(
    tmp_path, kept_run
):
    """A fresh process finds the PPO and DQN training programs that another process wrote to
    JAX's persistent compilation cache (JAX writes no program that has a host callback), also
    when it traced other programs first: the programs' text, which the cache hashes, must not
    depend on what else the process did (checkify numbers the checks it traces). The two
    processes' output is kept for the next session while nothing they read changes."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    tests = str(Path(__file__).resolve().parents[1])  # tiny.py
    env["PYTHONPATH"] = os.pathsep.join(p for p in (tests, env.get("PYTHONPATH")) if p)
    run = lambda history: (  # noqa: E731
        subprocess.run(
            [sys.executable, "-c", CACHED_PROGRAM, str(tmp_path / "cache"), history],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stdout
    )
    loaded = lambda stdout: stdout.split("loaded")[-1].split()  # noqa: E731

    def check(first, second):
        assert loaded(first) == ["0", "0"]
        assert loaded(second) == ["1", "1"], second  # both from the cache

    def both():  # a run that fails its check is not kept
        first, second = run("nothing first"), run("other programs first")
        check(first, second)
        return json.dumps([first, second]).encode()

    check(*json.loads(kept_run("second-process-cache", both, Path(__file__).read_text())))
