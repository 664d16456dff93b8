"""A maze as a tabular MDP (Sutton and Barto, 2018, ch. 3), and its exact values (Bellman, 1957).

States: the free cells but the target, row by row. An illegal move stays put (as in jumanji's
Maze); moving onto the target pays 1 and terminates; every other step pays 0.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from companion._validate import number_in, positive_int, positive_number, prng_key
from companion.envs.grid import MOVES, check_cell, check_walls, shortest_path_length


class MazeMDP(NamedTuple):
    """The tables of a maze with ``S`` states (free cells but the target) and 4 actions.

    Attributes:
        cells: int32 ``(S, 2)``, the ``(row, col)`` of each state.
        legal: bool ``(S, 4)``, True where the action moves (the Maze's action mask).
        next_state: int32 ``(S, 4)``, the next state (the state itself if illegal or terminal).
        reward: float32 ``(S, 4)``, 1 for a move onto the target, else 0.
        terminal: bool ``(S, 4)``, True for a move onto the target.
        target: int32 ``(2,)``, the target cell.
    """

    cells: jax.Array
    legal: jax.Array
    next_state: jax.Array
    reward: jax.Array
    terminal: jax.Array
    target: jax.Array


def maze_mdp(walls: Any, target: Any) -> MazeMDP:
    """The :class:`MazeMDP` of ``walls`` (bool ``(rows, cols)``, True for a wall) and ``target``.

    Args:
        target: ``(row, col)`` of a free cell.

    Raises:
        ValueError: if ``walls`` is not a 2-D 0/1 grid, ``target`` not a free cell inside it,
            or some free cell cannot reach the target.
    """
    walls = check_walls(walls)
    target = check_cell(target, "target", walls)
    free = zip(*np.nonzero(~walls))
    cells = [(int(r), int(c)) for r, c in free if (int(r), int(c)) != target]
    cut_off = [c for c in cells if shortest_path_length(walls, c, target) < 0]
    if cut_off:
        raise ValueError(
            f"walls: the free cells {cut_off[:5]} cannot reach the target {target}; "
            "wall them in or choose another layout"
        )
    index = {cell: i for i, cell in enumerate(cells)}
    rows, cols = walls.shape
    num_states = len(cells)
    legal = np.zeros((num_states, 4), bool)
    next_state = np.tile(np.arange(num_states, dtype=np.int32)[:, None], (1, 4))
    terminal = np.zeros((num_states, 4), bool)
    for i, (r, c) in enumerate(cells):
        for a, (dr, dc) in enumerate(MOVES):
            nr, nc = r + dr, c + dc
            if not (0 <= nr < rows and 0 <= nc < cols) or walls[nr, nc]:
                continue
            legal[i, a] = True
            if (nr, nc) == target:
                terminal[i, a] = True
            else:
                next_state[i, a] = index[(nr, nc)]
    return MazeMDP(
        cells=jnp.asarray(np.array(cells, np.int32).reshape(-1, 2)),
        legal=jnp.asarray(legal),
        next_state=jnp.asarray(next_state),
        reward=jnp.asarray(terminal, jnp.float32),
        terminal=jnp.asarray(terminal),
        target=jnp.asarray(target, jnp.int32),
    )


def _check_gamma(gamma: float) -> None:
    if number_in(gamma, "gamma", 0.0, 1.0) == 1.0:
        raise ValueError("gamma: expected a number in [0.0, 1.0), got 1.0 (no discount)")


def action_values(mdp: MazeMDP, v: jax.Array, gamma: float) -> jax.Array:
    """``Q(s, a) = r(s, a) + gamma * (1 - terminal(s, a)) * V(s')``, float32 ``(S, 4)``.

    Args:
        v: float ``(S,)``, a value per state.
        gamma: discount in [0, 1).

    Raises:
        TypeError: if ``gamma`` is not a number.
        ValueError: if ``v`` is not ``(S,)`` or ``gamma`` is outside [0, 1).
    """
    _check_gamma(gamma)
    if jnp.shape(v) != mdp.legal.shape[:1]:
        raise ValueError(f"v: expected shape {mdp.legal.shape[:1]}, got {jnp.shape(v)}")
    return mdp.reward + gamma * (~mdp.terminal) * jnp.asarray(v)[mdp.next_state]


def evaluate_policy(mdp: MazeMDP, probs: jax.Array, gamma: float) -> jax.Array:
    """``V^pi`` exactly: the solution of ``(I - gamma P_pi) V = r_pi``, float32 ``(S,)``.

    ``probs``: float ``(S, 4)``, ``pi(a | s)``, rows summing to 1 (differentiable in it);
    ``gamma``: discount in [0, 1).

    Raises:
        TypeError: if ``gamma`` is not a number.
        ValueError: if ``gamma`` is outside [0, 1), ``probs`` is not ``(S, 4)``, or (when
            concrete) is negative, puts probability on an illegal action or a row's sum is not 1.
    """
    _check_gamma(gamma)
    if jnp.shape(probs) != mdp.legal.shape:
        raise ValueError(f"probs: expected shape {mdp.legal.shape}, got {jnp.shape(probs)}")
    if not isinstance(probs, jax.core.Tracer):
        p = np.asarray(probs, np.float64)
        if (p < 0).any() or (p[~np.asarray(mdp.legal)] > 1e-6).any():
            raise ValueError("probs: expected probabilities >= 0, and 0 on illegal actions")
        if not np.allclose(p.sum(axis=1), 1.0, atol=1e-4):
            raise ValueError("probs: every row (state) must sum to 1")
    probs = jnp.asarray(probs, jnp.float32)
    num_states = mdp.legal.shape[0]
    stay = (~mdp.terminal).astype(jnp.float32)
    transition = jnp.zeros((num_states, num_states), jnp.float32)
    transition = transition.at[jnp.arange(num_states)[:, None], mdp.next_state].add(probs * stay)
    reward = jnp.sum(probs * mdp.reward, axis=1)
    return jnp.linalg.solve(jnp.eye(num_states) - gamma * transition, reward)


def value_iteration(
    mdp: MazeMDP, gamma: float, tol: float = 1e-6, max_iterations: int = 10_000
) -> tuple[jax.Array, jax.Array]:
    """``V*`` by iterating ``V(s) <- max over legal a of [r + gamma (1 - terminal) V(s')]``
    from ``V = 0`` until no value changes by more than ``tol``, or ``max_iterations`` times.

    Returns:
        ``(v, iterations)``: float32 ``(S,)`` and int32 ``()``.

    Raises:
        TypeError: if ``gamma`` or ``tol`` is not a number.
        ValueError: if ``gamma`` is outside [0, 1) or ``tol`` is not positive.
    """
    _check_gamma(gamma)
    positive_number(tol, "tol")

    def backup(v):
        q = action_values(mdp, v, gamma)
        return jnp.max(jnp.where(mdp.legal, q, -jnp.inf), axis=1)

    def not_done(carry):
        _, change, k = carry
        return (change > tol) & (k < max_iterations)

    def body(carry):
        v, _, k = carry
        v_new = backup(v)
        return v_new, jnp.max(jnp.abs(v_new - v)), k + 1

    v0 = jnp.zeros(mdp.legal.shape[0], jnp.float32)
    v, _, iterations = jax.lax.while_loop(not_done, body, (v0, jnp.inf, jnp.int32(0)))
    return v, iterations


def sample_episode(
    mdp: MazeMDP, key: jax.Array, probs: jax.Array, start_state: Any, num_steps: int = 100
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """One episode of the policy ``probs`` from ``start_state``, sampled with the tables of
    ``mdp`` in one ``lax.scan`` of ``num_steps`` steps (jit- and vmap-friendly).

    Args:
        key: a PRNG key; step ``t`` samples its action with the ``t``-th of
            ``jax.random.split(key, num_steps)``.
        probs: float ``(S, 4)``, ``pi(a | s)``.
        start_state: int, the index of the first state.
        num_steps: the time limit; a later step of an episode that ended is padding.

    Returns:
        ``(s_t, a_t, r_t, alive_t)``: int32, int32, float32 and bool, each ``(num_steps,)``;
        ``alive_t`` is False for the steps after the end, whose reward is 0.

    Raises:
        TypeError: if ``key`` is not a PRNG key or ``num_steps`` not an int.
        ValueError: if ``probs`` is not ``(S, 4)``, ``num_steps`` is not positive or a
            concrete ``start_state`` is not a state.
    """
    prng_key(key)
    num_steps = positive_int(num_steps, "num_steps")
    if jnp.shape(probs) != mdp.legal.shape:
        raise ValueError(f"probs: expected shape {mdp.legal.shape}, got {jnp.shape(probs)}")
    num_states = mdp.legal.shape[0]
    if not isinstance(start_state, jax.core.Tracer) and not 0 <= int(start_state) < num_states:
        raise ValueError(f"start_state: expected a state in [0, {num_states}), got {start_state}")

    def body(carry, step_key):
        s, alive = carry
        a = jax.random.categorical(step_key, jnp.log(probs[s]))
        r = mdp.reward[s, a] * alive
        return (mdp.next_state[s, a], alive & ~mdp.terminal[s, a]), (s, a, r, alive)

    carry = (jnp.int32(start_state), jnp.array(True))
    _, (s_t, a_t, r_t, alive_t) = jax.lax.scan(body, carry, jax.random.split(key, num_steps))
    return s_t, a_t, r_t, alive_t


def discounted_returns(rewards: jax.Array, gamma: float) -> jax.Array:
    """``G_t = r_t + gamma * G_{t+1}`` with ``G_T = 0`` past the last reward, by a reverse
    ``lax.scan``; ``rewards`` float ``(T,)``, the result float32 ``(T,)``.

    Raises:
        TypeError: if ``gamma`` is not a number.
        ValueError: if ``rewards`` is not 1-D or ``gamma`` is outside [0, 1].
    """
    number_in(gamma, "gamma", 0.0, 1.0)
    if jnp.ndim(rewards) != 1:
        raise ValueError(f"rewards: expected shape (T,), got {jnp.shape(rewards)}")

    def body(g_tp1, r):
        g_t = r + gamma * g_tp1
        return g_t, g_t

    return jax.lax.scan(body, 0.0, rewards, reverse=True)[1]
