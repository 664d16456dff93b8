"""CartPole in JAX, step for step equal to gymnasium's ``CartPole-v1``.

The cart-pole system of Barto, Sutton and Anderson (1983), as implemented by
gymnasium's ``CartPoleEnv`` (``gymnasium/envs/classic_control/cartpole.py``)
behind ``gymnasium.make("CartPole-v1")``: the same constants, the same
explicit Euler update, and the same episode ends.

- Observation: float32 ``(4,)`` = cart position x (m), cart velocity (m/s),
  pole angle theta (rad, 0 = upright), pole angular velocity (rad/s).
- Action: int ``()`` in {0, 1}: push the cart left (0) or right (1) with 10 N.
- Reward: 1.0 on every step, *including* the step that ends the episode.
- Termination: |x| > 2.4 or |theta| > 12 degrees (0.2095 rad) after the step.
- Truncation (not termination): when the step count reaches 500.
  As in gymnasium's ``TimeLimit`` wrapper, a step can be both terminated and
  truncated. A TD target bootstraps whenever ``terminated`` is False,
  truncated steps included.
- Reset: each of the four state variables uniform in [-0.05, 0.05].

All functions are pure and work under ``jax.jit``, ``jax.vmap`` and
``jax.lax.scan``.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


class CartPoleParams(NamedTuple):
    """Physical constants and limits of gymnasium's CartPole-v1 (SI units)."""

    gravity: float = 9.8  # m/s^2
    masscart: float = 1.0  # kg
    masspole: float = 0.1  # kg
    length: float = 0.5  # m, HALF the pole's length
    force_mag: float = 10.0  # N
    tau: float = 0.02  # s between updates
    theta_threshold: float = 12 * 2 * np.pi / 360  # rad (12 degrees)
    x_threshold: float = 2.4  # m
    max_steps: int = 500  # truncation limit of CartPole-v1
    reset_bound: float = 0.05  # reset state uniform in [-bound, bound]

    @property
    def total_mass(self) -> float:
        return self.masspole + self.masscart

    @property
    def polemass_length(self) -> float:
        # mass times half-length: a product, not a sum
        return self.masspole * self.length


DEFAULT_PARAMS = CartPoleParams()


class CartPoleState(NamedTuple):
    """State of one CartPole: ``physics`` float32 (4,), ``step_count`` int32 (), ``key``."""

    physics: jax.Array  # (x, x_dot, theta, theta_dot), float32 (4,)
    step_count: jax.Array  # int32 (), steps taken in this episode
    key: jax.Array  # PRNG key used by the auto-reset variant


class TimeStep(NamedTuple):
    """What one step returns besides the new state.

    Fields:
        obs: float32 (4,), the observation after the step. In
            :func:`step_autoreset` this is the *first observation of the next
            episode* when the episode ended.
        reward: float32 (), 1.0 on every step.
        terminated: bool (), the pole fell or the cart left the track.
        truncated: bool (), the step count reached ``max_steps``.
        next_obs: float32 (4,), the true observation after the step, even
            when the episode ended and ``obs`` was reset (use it to bootstrap
            on truncation).
    """

    obs: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    next_obs: jax.Array

    @property
    def done(self) -> jax.Array:
        """True when the episode ended, by termination or truncation."""
        return self.terminated | self.truncated


def _initial_physics(key: jax.Array, params: CartPoleParams) -> jax.Array:
    return jax.random.uniform(key, (4,), jnp.float32, -params.reset_bound, params.reset_bound)


def reset(
    key: jax.Array, params: CartPoleParams = DEFAULT_PARAMS
) -> tuple[CartPoleState, jax.Array]:
    """Start an episode.

    Args:
        key: a PRNG key (``jax.random.key`` or ``jax.random.PRNGKey``).
        params: physical constants; the defaults are CartPole-v1's.

    Returns:
        ``(state, obs)``: the state, and the observation float32 ``(4,)``
        with every entry uniform in [-0.05, 0.05].
    """
    key, init_key = jax.random.split(key)
    physics = _initial_physics(init_key, params)
    state = CartPoleState(physics=physics, step_count=jnp.zeros((), jnp.int32), key=key)
    return state, physics


def _check_action(action) -> jax.Array:
    action = jnp.asarray(action)
    if action.shape != ():
        raise ValueError(
            f"action: expected a scalar of shape (), got shape {action.shape}; "
            "use jax.vmap(step) for a batch of environments"
        )
    if not (jnp.issubdtype(action.dtype, jnp.integer) or action.dtype == jnp.bool_):
        raise TypeError(
            f"action: expected an integer (0 = push left, 1 = push right), got dtype {action.dtype}"
        )
    # Values are checked at run time, also under jit and vmap (equinox raises
    # an error with this message instead of taking a silently wrong step).
    return eqx.error_if(
        action, (action < 0) | (action > 1), "action: expected 0 (push left) or 1 (push right)"
    )


def dynamics(
    physics: jax.Array, action: jax.Array, params: CartPoleParams = DEFAULT_PARAMS
) -> jax.Array:
    """One explicit Euler step of the cart-pole equations, as gymnasium computes it.

    Args:
        physics: float32 (4,), (x, x_dot, theta, theta_dot).
        action: int (), 0 or 1.
        params: physical constants.

    Returns:
        float32 (4,), the state ``tau`` seconds later. Positions are updated
        with the *old* velocities (explicit Euler, gymnasium's default).
    """
    x, x_dot, theta, theta_dot = physics
    force = jnp.where(action == 1, params.force_mag, -params.force_mag)
    costheta, sintheta = jnp.cos(theta), jnp.sin(theta)
    temp = (force + params.polemass_length * theta_dot**2 * sintheta) / params.total_mass
    thetaacc = (params.gravity * sintheta - costheta * temp) / (
        params.length * (4.0 / 3.0 - params.masspole * costheta**2 / params.total_mass)
    )
    xacc = temp - params.polemass_length * thetaacc * costheta / params.total_mass
    new = jnp.stack(
        [
            x + params.tau * x_dot,
            x_dot + params.tau * xacc,
            theta + params.tau * theta_dot,
            theta_dot + params.tau * thetaacc,
        ]
    )
    return new.astype(jnp.float32)


def step(
    state: CartPoleState, action, params: CartPoleParams = DEFAULT_PARAMS
) -> tuple[CartPoleState, TimeStep]:
    """Advance one environment by one step, without resetting.

    Args:
        state: the current state (not batched; ``jax.vmap`` for batches).
        action: int scalar, 0 (push left) or 1 (push right).
        params: physical constants; the defaults are CartPole-v1's.

    Returns:
        ``(state, timestep)``; ``timestep.obs`` and ``timestep.next_obs`` are
        both the observation after the step.

    Raises:
        ValueError: if ``action`` is not a scalar, or (at run time, also under
            ``jit``) is not 0 or 1.
        TypeError: if ``action`` is not of an integer dtype.
    """
    action = _check_action(action)
    physics = dynamics(state.physics, action, params)
    x, theta = physics[0], physics[2]
    terminated = (jnp.abs(x) > params.x_threshold) | (jnp.abs(theta) > params.theta_threshold)
    step_count = state.step_count + 1
    truncated = step_count >= params.max_steps
    new_state = CartPoleState(physics=physics, step_count=step_count, key=state.key)
    timestep = TimeStep(
        obs=physics,
        reward=jnp.ones((), jnp.float32),
        terminated=terminated,
        truncated=truncated,
        next_obs=physics,
    )
    return new_state, timestep


def step_autoreset(
    state: CartPoleState, action, params: CartPoleParams = DEFAULT_PARAMS
) -> tuple[CartPoleState, TimeStep]:
    """Like :func:`step`, but start a new episode when this one ends.

    On the step that ends an episode (terminated or truncated) the returned
    state and ``timestep.obs`` belong to a fresh episode drawn with the key
    carried in the state; ``timestep.reward``, ``terminated`` and ``truncated``
    describe the step that ended the old one, and ``timestep.next_obs`` keeps
    its true final observation.

    Args, Returns and Raises: as :func:`step`.
    """
    stepped, timestep = step(state, action, params)
    key, reset_key = jax.random.split(stepped.key)
    fresh_physics = _initial_physics(reset_key, params)
    done = timestep.done
    new_state = CartPoleState(
        physics=jnp.where(done, fresh_physics, stepped.physics),
        step_count=jnp.where(done, 0, stepped.step_count),
        key=key,
    )
    return new_state, timestep._replace(obs=new_state.physics)


def random_rollout(
    key: jax.Array, num_envs: int, num_steps: int, params: CartPoleParams = DEFAULT_PARAMS
) -> tuple[CartPoleState, jax.Array]:
    """Run ``num_envs`` CartPoles for ``num_steps`` steps of uniformly random actions.

    The batch is stepped with ``jax.vmap(step_autoreset)`` inside ``jax.lax.scan``;
    wrap the call in ``jax.jit`` (with ``num_envs`` and ``num_steps`` static).

    Args:
        key: PRNG key.
        num_envs: number of environments (batch size), a positive int.
        num_steps: number of steps of every environment, a positive int.
        params: physical constants.

    Returns:
        ``(states, episodes)``: the final batched state, and the number of
        episodes that ended (int32 scalar).
    """
    reset_key, action_key = jax.random.split(key)
    states, _ = jax.vmap(reset, in_axes=(0, None))(jax.random.split(reset_key, num_envs), params)

    def body(states, step_key):
        actions = jax.random.bernoulli(step_key, shape=(num_envs,)).astype(jnp.int32)
        states, timestep = jax.vmap(step_autoreset, in_axes=(0, 0, None))(states, actions, params)
        return states, timestep.done.sum(dtype=jnp.int32)

    states, ended = jax.lax.scan(body, states, jax.random.split(action_key, num_steps))
    return states, ended.sum()
