"""Self-checks for the exercises of the performance chapter."""

from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.core import (
    check_shape,
    close,
    fail,
    passed,
    require_function,
    run_answer,
    self_check,
    unrolled,
)
from companion.checks.bugs import _COLLECTOR_MAX_STEPS, _short_episodes
from companion.envs import cartpole


def _loop_reference(state, actions, step_fn, flag="done"):
    dones = []
    for a in np.asarray(actions):
        state, timestep = step_fn(state, jnp.int32(a))
        dones.append(bool(getattr(timestep, flag)))
    return state, np.array(dones)


def _batched_loop_reference(make_states, actions, step_fn, flag="done"):
    """Step each environment on its own with ``step_fn``; final states and done (T, N)."""
    finals, dones = [], []
    num_envs = actions.shape[1]
    for e in range(num_envs):
        state = jax.tree.map(lambda leaf: leaf[e], make_states())
        state, done = _loop_reference(state, actions[:, e], step_fn, flag)
        finals.append(np.asarray(state.physics))
        dones.append(done)
    return np.stack(finals), np.stack(dones, axis=1)


@self_check
def check_batched_rollout(batched_rollout: Callable) -> None:
    """Check ``batched_rollout(states, actions) -> (final_states, done_t)`` for N CartPoles.

    ``states`` a :class:`companion.envs.cartpole.CartPoleState`, leaves with leading axis N;
    ``actions`` int32 ``(T, N)``, time first. Steps ``jax.vmap(cartpole.step_autoreset)`` in one
    ``jax.lax.scan``; returns the final states and ``timestep.done``, bool ``(T, N)``.

    Raises:
        CheckFailed: naming the mistake (no auto-reset, ``terminated`` for ``done``, done flags
            environment-first or of the wrong steps, a Python loop unrolled, wrong types or shapes).
    """
    require_function(batched_rollout, "batched_rollout")
    num_steps, num_envs = 60, 3

    def make_states():  # fresh keys for every use
        return jax.vmap(cartpole.reset)(jax.random.split(jax.random.key(5), num_envs))[0]

    actions = jax.random.bernoulli(jax.random.key(6), shape=(num_steps, num_envs))
    actions = actions.astype(jnp.int32)
    sizes = unrolled(batched_rollout, *[(make_states(), actions[:n]) for n in (20, 40)])
    if sizes is not None:
        fail(
            "batched_rollout unrolls its loop into the program"
            + (" (scan's unroll)" if sizes[1] < 0 else f" ({sizes[0]} operations for 20 "
               f"steps, {sizes[1]} for 40)")
            + ": a Python loop (even under an inner jax.jit) copies the step once per time "
            "step; use jax.lax.scan"
        )  # fmt: skip
    call = "batched_rollout(states, actions)"
    traces: list = []
    with _short_episodes(traces):  # a time limit of 30 steps, so that episodes truncate
        got = run_answer(
            batched_rollout, make_states(), actions, call=call,
            hint="states: a CartPoleState with leaves (3, ...); actions: int32 (60, 3), time "
            "first",
        )  # fmt: skip
    limit = cartpole.DEFAULT_PARAMS._replace(max_steps=_COLLECTOR_MAX_STEPS if traces else 500)
    reference_step = functools.partial(cartpole.step_autoreset, params=limit)
    if not (isinstance(got, tuple) and len(got) == 2):
        fail("batched_rollout should return a pair (final_states, done_t)")
    final, dones = got
    if not isinstance(final, cartpole.CartPoleState):
        fail(f"the first result should be a CartPoleState, got {type(final).__name__}")
    physics = check_shape(final.physics, (num_envs, 4), "final_states.physics")
    if np.shape(dones) == (num_envs, num_steps):
        fail(
            f"done_t has shape {(num_envs, num_steps)}, environment first; return it time "
            f"first, {(num_steps, num_envs)}, as lax.scan stacks its outputs"
        )
    dones = check_shape(dones, (num_steps, num_envs), "done_t", hint="One flag per step and env.")
    ref_physics, ref_dones = _batched_loop_reference(make_states, actions, reference_step)
    if not (close(physics, ref_physics) and np.array_equal(dones, ref_dones)):
        no_reset, _ = _batched_loop_reference(
            make_states, actions, functools.partial(cartpole.step, params=limit)
        )
        if close(physics, no_reset):
            fail("the episodes never restart: step with cartpole.step_autoreset, not cartpole.step")
        terminated = _batched_loop_reference(make_states, actions, reference_step, "terminated")
        if close(physics, ref_physics) and np.array_equal(dones, terminated[1]):
            fail(
                "done_t is timestep.terminated: it misses the truncations (here the time "
                "limit is 30 steps); done = terminated | truncated, timestep.done"
            )
        if close(physics, ref_physics):
            fail(
                "the final states are right but done_t is not: return timestep.done of every "
                "step as the scanned output, in order"
            )
        fail(
            "the final states differ from stepping each environment on its own with "
            "step_autoreset; actions[t, e] is the action of environment e at step t"
        )
    passed("batched_rollout matches stepping each environment alone, in one loop body")


def _rollout_bytes_per_step() -> int:
    """Bytes of one step of one environment of the PPO rollout on the 10 x 10 Maze."""
    from companion.agents import ppo
    from companion.envs import maze
    from companion.envs.autoreset import make_reset_pool, reset_with_next_obs

    env = maze.make_maze_task("empty")

    def one_step_rollout():
        model = ppo.ActorCritic(jax.random.key(0), channels=(2,), hidden_sizes=(4,))
        state, ts = reset_with_next_obs(env, jax.random.key(1))
        batch = jax.tree.map(lambda leaf: leaf[None], (state, ts))
        pool = make_reset_pool(env, jax.random.key(2), 1)
        return ppo.rollout(model, env, pool, *batch, jax.random.key(3), 1)[2]

    shapes = jax.eval_shape(one_step_rollout)
    return sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(shapes))


@self_check
def check_rollout_bytes(rollout_bytes: Callable) -> None:
    """Check ``rollout_bytes(num_steps, num_envs) -> int``: bytes of a PPO rollout's arrays.

    Per step and environment :func:`companion.agents.ppo.rollout` (10 x 10 Maze) stores ``image``
    bool (3, 10, 10), ``action_mask`` bool (4,), ``action``, ``step_count`` int32, ``log_prob``,
    ``value``, ``reward``, ``next_value`` float32, ``terminated``, ``done`` bool: 330 bytes.

    Raises:
        CheckFailed: naming the mistake (wrong dtype sizes, a next image, no next_value, one image
            channel, not ``num_steps * num_envs`` transitions, not a whole number).
    """
    require_function(rollout_bytes, "rollout_bytes")
    per = _rollout_bytes_per_step()
    mistakes = {
        per + 900: "the image is stored as bool, 1 byte a cell and channel, not float32",
        per + 18: "a bool takes 1 byte, not 4 (action_mask, terminated, done)",
        per + 918: "a bool takes 1 byte, not 4 (the image, action_mask, terminated, done)",
        per + 296: "no next image is stored: next_value (4 bytes) replaces it",
        per + 1196: "no next image is stored: next_value (4 bytes) replaces it",
        per - 4: "next_value, V(s_{t+1}) for GAE, is stored too: float32, 4 bytes",
        per + 16: "the floats are float32 (4 bytes), not float64",
        per - 200: "an image has 3 channels (walls, agent, target): 3 * 10 * 10 cells",
    }
    for num_steps, num_envs in ((1, 1), (32, 64), (128, 16)):
        call = f"rollout_bytes({num_steps}, {num_envs})"
        raw = run_answer(rollout_bytes, num_steps, num_envs, call=call, jit=False)
        try:
            got = int(raw)
        except (TypeError, ValueError):
            fail(f"{call} should return a number of bytes, got {raw!r}")
        if got != raw:
            fail(f"{call} = {raw!r}: a whole number of bytes was expected ({per:,} bytes per "
                 "step and environment)")  # fmt: skip
        expected = per * num_steps * num_envs
        if got == expected:
            continue
        if got % (num_steps * num_envs) == 0 and got // (num_steps * num_envs) in mistakes:
            fail(f"{call} = {got:,}: {mistakes[got // (num_steps * num_envs)]}")
        if got in (per * num_steps, per * num_envs):
            fail(f"{call} = {got:,}: the rollout stores num_steps * num_envs transitions")
        fail(f"{call} = {got:,}, expected {expected:,} ({per:,} bytes per step and environment)")
    passed(f"rollout_bytes counts {per:,} bytes per step and environment, as the arrays hold")
