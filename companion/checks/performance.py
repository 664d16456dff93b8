"""Self-checks for the exercises of the performance chapter."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks.core import check_shape, close, fail, passed, require_function, run_answer
from companion.envs import cartpole
from companion.replay import replay_init


def _loop_reference(state, actions, step_fn):
    dones = []
    for a in np.asarray(actions):
        state, timestep = step_fn(state, jnp.int32(a))
        dones.append(bool(timestep.done))
    return state, np.array(dones)


def check_scan_rollout(rollout_scan: Callable) -> None:
    """Check ``rollout_scan(state, actions) -> (final_state, done_t)`` for CartPole.

    ``state`` is a :class:`companion.envs.cartpole.CartPoleState` (one
    environment), ``actions`` int32 (T,); the answer steps with
    :func:`companion.envs.cartpole.step_autoreset` inside ``jax.lax.scan`` and
    returns the final state and ``timestep.done`` of every step, bool (T,).

    Raises:
        CheckFailed: naming the mistake (no auto-reset, the done flags of the
            wrong steps, a Python loop unrolled into the program, wrong shape).
    """
    require_function(rollout_scan, "rollout_scan")
    start = lambda: cartpole.reset(jax.random.key(3))[0]  # noqa: E731  (a fresh key per use)
    state = start()
    num_steps = 60  # random pushes end several episodes in 60 steps
    actions = jax.random.bernoulli(jax.random.key(4), shape=(num_steps,)).astype(jnp.int32)
    got = run_answer(
        rollout_scan, state, actions, call="rollout_scan(state, actions)",
        hint="state is one CartPoleState, actions is int32 of shape (60,)",
    )  # fmt: skip
    if not (isinstance(got, tuple) and len(got) == 2):
        fail("rollout_scan should return a pair (final_state, done_t)")
    final, dones = got
    if not isinstance(final, cartpole.CartPoleState):
        fail(f"the first result should be a CartPoleState, got {type(final).__name__}")
    dones = check_shape(dones, (num_steps,), "done_t", hint="One flag per step, in step order.")
    ref_state, ref_dones = _loop_reference(start(), actions, cartpole.step_autoreset)
    if not (close(final.physics, ref_state.physics) and np.array_equal(dones, ref_dones)):
        no_reset_state, _ = _loop_reference(start(), actions, cartpole.step)
        if close(final.physics, no_reset_state.physics):
            fail("the episodes never restart: step with cartpole.step_autoreset, not cartpole.step")
        if close(final.physics, ref_state.physics):
            fail(
                "the final state is right but done_t is not: return timestep.done of every "
                "step as the scanned output, in order"
            )
        fail("the final state differs from stepping the actions one by one with step_autoreset")
    # A scan's program has one loop body whatever the length; an unrolled loop grows.
    sizes = []
    for length in (20, 40):
        jaxpr = jax.make_jaxpr(rollout_scan)(start(), actions[:length])
        sizes.append(len(jaxpr.jaxpr.eqns))
    if sizes[1] > sizes[0]:
        fail(
            f"the program grows with the number of steps ({sizes[0]} operations for 20 steps, "
            f"{sizes[1]} for 40): a Python loop is unrolled into it; use jax.lax.scan"
        )
    passed("rollout_scan matches the step-by-step loop and compiles to one loop body")


def _example_transition():
    from companion.agents.dqn import Transition

    obs = jnp.zeros((4,), jnp.float32)
    return Transition(
        obs=obs,
        action=jnp.zeros((), jnp.int32),
        reward=jnp.zeros((), jnp.float32),
        next_obs=obs,
        terminated=jnp.zeros((), bool),
    )


def check_buffer_bytes(buffer_bytes: Callable) -> None:
    """Check ``buffer_bytes(capacity) -> int``: bytes of the DQN chapter's replay buffer.

    The buffer (:func:`companion.replay.replay_init` with one
    :class:`companion.agents.dqn.Transition` as example) stores, per
    transition, ``obs`` and ``next_obs`` float32 (4,), ``action`` int32,
    ``reward`` float32 and ``terminated`` bool. Only the stored arrays count
    (not the two int32 counters).

    Raises:
        CheckFailed: naming the mistake (bool counted as 4 bytes, ``next_obs``
            left out, float64 instead of float32, not proportional to capacity).
    """
    require_function(buffer_bytes, "buffer_bytes")
    example = _example_transition()
    for capacity in (1, 1_000, 50_000):
        got = run_answer(buffer_bytes, capacity, call=f"buffer_bytes({capacity})")
        try:
            got = int(got)
        except (TypeError, ValueError):
            fail(f"buffer_bytes({capacity}) should return a number of bytes, got {got!r}")
        data = jax.eval_shape(lambda: replay_init(example, capacity).data)
        expected = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(data))
        if got == expected:
            continue
        per = got / capacity
        mistakes = {
            44: "a bool takes 1 byte, not 4",
            25: "next_obs is stored too: 16 more bytes per transition",
            82: "the arrays are float32 (4 bytes per number), not float64",
            40: "terminated (a bool, 1 byte) is stored too",
        }
        if per in mistakes:
            fail(f"buffer_bytes({capacity}) = {got:,}: {mistakes[per]}")
        fail(
            f"buffer_bytes({capacity}) = {got:,}, expected {expected:,} "
            f"({expected // capacity} bytes per transition)"
        )
    passed("buffer_bytes counts 41 bytes per transition, as the arrays hold")
