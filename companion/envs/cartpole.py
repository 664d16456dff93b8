"""CartPole in JAX: gymnasium's ``CartPole-v1`` (Barto, Sutton and Anderson, 1983) in float32.

Constants, explicit Euler update and episode ends of gymnasium's ``CartPoleEnv``, with a float32
state (gymnasium's is float64). Pure functions, for ``jit``, ``vmap`` and ``lax.scan``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from companion._validate import positive_int, prng_key, runtime_check


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
        obs: float32 (4,), the observation after the step (the next episode's after an auto-reset).
        reward: float32 (), 1.0 on every step, the last one included.
        terminated: bool (), the pole fell or the cart left the track.
        truncated: bool (), the step count reached ``max_steps`` (may coincide with terminated).
        next_obs: float32 (4,), the true observation after the step (bootstrap on truncation).
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
    """Start an episode from ``key`` (``jax.random.key`` or ``jax.random.PRNGKey``).

    Returns:
        ``(state, obs)``; ``obs`` float32 ``(4,)``, each entry uniform in
        [-``reset_bound``, ``reset_bound``] ([-0.05, 0.05] for CartPole-v1).

    Raises:
        TypeError, ValueError: if ``key`` is not one PRNG key (an int seed, say).
    """
    prng_key(key)
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
    # Values: at once in an eager call; inside a compiled program under companion.debug.checked.
    runtime_check((action < 0) | (action > 1), "action: expected 0 (push left) or 1 (push right)")
    return action


def _check_physics(physics) -> jax.Array:
    physics = jnp.asarray(physics)
    if physics.shape != (4,):
        raise ValueError(
            f"physics: expected shape (4,) (x, x_dot, theta, theta_dot), got {physics.shape}; "
            "use jax.vmap for a batch"
        )
    if not jnp.issubdtype(physics.dtype, jnp.floating):
        raise TypeError(f"physics: expected a float array, got dtype {physics.dtype}")
    return physics.astype(jnp.float32)


def dynamics(
    physics: jax.Array, action: jax.Array, params: CartPoleParams = DEFAULT_PARAMS
) -> jax.Array:
    """One explicit Euler step, as gymnasium's: float32 (4,), the state ``tau`` seconds later.

    Args:
        physics: float (4,), (x, x_dot, theta, theta_dot) in m, m/s, rad, rad/s.
        action: int (), 0 (push left) or 1 (push right).

    Raises:
        ValueError: ``physics`` not (4,), ``action`` not a scalar or (a run-time check) not 0 or 1.
        TypeError: ``physics`` not floating point, or ``action`` not an integer.
    """
    physics = _check_physics(physics)
    action = _check_action(action)
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


def _float32_above(threshold) -> np.float32:
    """Smallest float32 strictly above the float64 ``threshold``: for a float32 ``v``,
    ``v > threshold`` exactly when ``v >= _float32_above(threshold)``.
    """
    t32 = np.float32(threshold)
    return t32 if float(t32) > float(threshold) else np.nextafter(t32, np.float32(np.inf))


def _exceeds(value: jax.Array, threshold) -> jax.Array:
    """``value > threshold`` as gymnasium decides it, with a float64 threshold."""
    if isinstance(threshold, (int, float, np.floating)):
        return value >= _float32_above(threshold)
    return value > threshold  # a traced threshold is float32 already


def step(
    state: CartPoleState, action, params: CartPoleParams = DEFAULT_PARAMS
) -> tuple[CartPoleState, TimeStep]:
    """Advance one environment (``jax.vmap`` for a batch) by one step, without resetting.

    Returns:
        ``(state, timestep)``; ``timestep.obs`` and ``timestep.next_obs`` are both the
        observation after the step. ``action``: int (), 0 (push left) or 1 (push right).

    Raises:
        ValueError: if ``action`` is not a scalar, or (a run-time check) not 0 or 1.
        TypeError: if ``action`` is not of an integer dtype.
    """
    physics = dynamics(state.physics, action, params)
    x, theta = physics[0], physics[2]
    terminated = _exceeds(jnp.abs(x), params.x_threshold) | _exceeds(
        jnp.abs(theta), params.theta_threshold
    )
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

    On an ending step the returned state and ``timestep.obs`` belong to a fresh episode drawn
    with the state's key; ``reward``, ``terminated``, ``truncated`` and ``next_obs`` describe
    the old episode's last step. Args, Returns and Raises: as :func:`step`.
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


class CartPole(NamedTuple):
    """CartPole as an environment object: its constants, and :func:`reset`, :func:`step` and
    :func:`step_autoreset` over them. What the book's DQN trains on
    (``dqn.make_train(config, network, cartpole.CartPole())``), as a jumanji ``Maze`` is what
    its PPO trains on. ``CartPole()`` is gymnasium's CartPole-v1.
    """

    params: CartPoleParams = DEFAULT_PARAMS

    def reset(self, key: jax.Array) -> tuple[CartPoleState, jax.Array]:
        """:func:`reset` with this environment's constants."""
        return reset(key, self.params)

    def step(self, state: CartPoleState, action) -> tuple[CartPoleState, TimeStep]:
        """:func:`step` with this environment's constants."""
        return step(state, action, self.params)

    def step_autoreset(self, state: CartPoleState, action) -> tuple[CartPoleState, TimeStep]:
        """:func:`step_autoreset` with this environment's constants."""
        return step_autoreset(state, action, self.params)


def check_env(env, name: str = "env") -> CartPole:
    """Return ``env`` if it is a :class:`CartPole` whose constants are a :class:`CartPoleParams`.

    Raises:
        TypeError: naming ``name``, for anything else (the module ``cartpole`` itself, a
            gymnasium environment, a bare ``CartPoleParams``).
    """
    if not isinstance(env, CartPole) or not isinstance(env.params, CartPoleParams):
        hint = (
            "wrap the constants: cartpole.CartPole(params)"
            if isinstance(env, CartPoleParams)
            else "for CartPole-v1 pass companion.envs.cartpole.CartPole()"
        )
        raise TypeError(f"{name}: expected a cartpole.CartPole, got {type(env).__name__}; {hint}")
    return env


def random_rollout(
    key: jax.Array, num_envs: int, num_steps: int, params: CartPoleParams = DEFAULT_PARAMS
) -> tuple[CartPoleState, jax.Array]:
    """Run ``num_envs`` CartPoles for ``num_steps`` steps of uniformly random actions.

    ``jax.vmap(step_autoreset)`` inside ``jax.lax.scan``; jit it with both counts static.

    Returns:
        ``(states, episodes)``: the final batched state, int32 () count of episodes that ended.

    Raises:
        TypeError, ValueError: ``num_envs`` or ``num_steps`` not a positive int; ``key`` not a key.
    """
    positive_int(num_envs, "num_envs")
    positive_int(num_steps, "num_steps")
    prng_key(key)
    reset_key, action_key = jax.random.split(key)
    states, _ = jax.vmap(reset, in_axes=(0, None))(jax.random.split(reset_key, num_envs), params)

    def body(states, step_key):
        actions = jax.random.bernoulli(step_key, shape=(num_envs,)).astype(jnp.int32)
        states, timestep = jax.vmap(step_autoreset, in_axes=(0, 0, None))(states, actions, params)
        return states, timestep.done.sum(dtype=jnp.int32)

    states, ended = jax.lax.scan(body, states, jax.random.split(action_key, num_steps))
    return states, ended.sum()
