"""Evaluation of a Maze policy on fresh episodes, and breadth-first-search baselines."""

from __future__ import annotations

from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from companion._validate import maze_env, positive_int, prng_key
from companion.agents.ppo.policy import masked_logits
from companion.envs import maze as maze_lib
from companion.envs.autoreset import _env_reset
from companion.envs.maze import reached_target


class Evaluation(NamedTuple):
    """Episodes run by :func:`evaluate`; leading axis ``num_episodes`` (N).

    Fields:
        success: bool ``(N,)``, the target was reached within the time limit.
        length: int32 ``(N,)``, steps taken (the time limit when truncated).
        start: the reset Maze states, leaves ``(N, ...)`` (for :func:`shortest_path_lengths`).
        states: ``None``, or with ``record_states=True`` the Maze states, leaves
            ``(time_limit + 1, N, ...)``: reset, then after every step (frozen once ended);
            their ``key`` field holds raw uint32 keys.
    """

    success: jax.Array
    length: jax.Array
    start: Any
    states: Any


@eqx.filter_jit
def _evaluate(model, env, key, num_episodes: int, greedy: jax.Array, record: bool) -> Evaluation:
    # greedy is a traced bool: the greedy and the sampling policy share one program
    reset_key, act_key = jax.random.split(key)
    state, timestep = jax.vmap(_env_reset, in_axes=(None, 0))(
        env, jax.random.split(reset_key, num_episodes)
    )

    def logits_of(obs):
        logits, _ = jax.vmap(model)(jax.vmap(maze_lib.observation_image)(obs))
        return logits.astype(jnp.float32)

    def no_logits(obs):  # no episode is running: skip the network
        return jnp.zeros(obs.action_mask.shape, jnp.float32)

    def body(carry, _):
        state, obs, running, key = carry
        key, key_t = jax.random.split(key)
        # once every episode has ended, the remaining steps skip the network (the costly
        # part; keys stay outside the cond); the environments step on, and keep() leaves
        # their states unchanged
        logits = jax.lax.cond(running.any(), logits_of, no_logits, obs)
        logits = masked_logits(logits, obs.action_mask)
        keys = jax.random.split(key_t, num_episodes)
        sampled = jax.vmap(jax.random.categorical)(keys, logits)
        actions = jnp.where(greedy, jnp.argmax(logits, axis=-1), sampled).astype(jnp.int32)
        next_state, ts = jax.vmap(env.step)(state, actions)
        keep = lambda new, old: jnp.where(  # noqa: E731
            running.reshape(running.shape + (1,) * (new.ndim - 1)), new, old
        )
        state = jax.tree.map(keep, next_state, state)
        obs = jax.tree.map(keep, ts.observation, obs)
        running = running & ~ts.last()
        return (state, obs, running, key), (state if record else None)

    running = jnp.ones((num_episodes,), bool)
    (last_state, _, _, _), states = jax.lax.scan(
        body, (state, timestep.observation, running, act_key), None, length=env.time_limit
    )
    if record:
        states = jax.tree.map(lambda f, rest: jnp.concatenate([f[None], rest]), state, states)
    return Evaluation(
        success=reached_target(last_state),
        length=last_state.step_count.astype(jnp.int32),
        start=state,
        states=states,
    )


def evaluate(
    model: Any,
    env: Any,
    key: jax.Array,
    num_episodes: int = 1000,
    greedy: bool = False,
    record_states: bool = False,
) -> Evaluation:
    """Run ``num_episodes`` independent episodes of ``env`` with ``model``: an :class:`Evaluation`.

    Each episode resets with its own key. Compiled once per model structure, ``env``,
    ``num_episodes`` and ``record_states``; new weights, keys or ``greedy`` reuse the program.
    On a fixed maze with ``greedy=True``, success is a fraction of the (start, target) pairs
    drawn, not of independent trials.

    Args:
        model: one float32 image ``(3, rows, cols)`` to ``(logits (4,), value ())``.
        env: a jumanji Maze without wrappers (its episodes end here, at their LAST step).
        greedy: argmax of the masked logits instead of sampling; a bool or bool scalar array.
        record_states: also return every step's state (1,000 episodes at 20 x 20: about 160 MB).

    Raises:
        TypeError: if ``env`` is not a jumanji Maze without wrappers (an auto-reset wrapper
            would restart every episode that reaches the target before it is counted).
        TypeError, ValueError: bad ``num_episodes``, ``greedy``, ``record_states`` or ``key``.
    """
    maze_env(env)
    positive_int(num_episodes, "num_episodes")
    if isinstance(greedy, (bool, np.bool_)):
        greedy = jnp.asarray(bool(greedy))
    elif not (isinstance(greedy, jax.Array) and greedy.shape == () and greedy.dtype == bool):
        raise TypeError(f"greedy: expected True or False (or a bool scalar array), got {greedy!r}")
    if not isinstance(record_states, bool):
        raise TypeError(f"record_states: expected True or False, got {record_states!r}")
    prng_key(key)
    return _evaluate(model, env, key, int(num_episodes), greedy, record_states)


def shortest_path_lengths(states: Any) -> np.ndarray:
    """Breadth-first-search distance from start to target of each episode: int64 ``(N,)``.

    ``states``: batched Maze states (leaves ``(N, ...)``), e.g. ``evaluation.start``; -1 where
    the target cannot be reached.

    Raises:
        ValueError: if ``states`` is not a batch of Maze states (``walls`` ``(N, rows, cols)``).
    """
    if np.ndim(getattr(states, "walls", None)) != 3:
        raise ValueError(
            "states: expected batched Maze states with walls of shape (N, rows, cols), got "
            f"{np.shape(getattr(states, 'walls', None))}"
        )
    walls = np.asarray(states.walls)
    rows, cols = np.asarray(states.agent_position.row), np.asarray(states.agent_position.col)
    t_rows, t_cols = np.asarray(states.target_position.row), np.asarray(states.target_position.col)
    return np.array(
        [
            maze_lib.shortest_path_length(walls[i], (rows[i], cols[i]), (t_rows[i], t_cols[i]))
            for i in range(walls.shape[0])
        ]
    )
