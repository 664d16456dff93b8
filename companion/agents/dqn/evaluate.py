"""Greedy evaluation of a Q-network on fresh CartPole episodes."""

from __future__ import annotations

import functools
from typing import Any

import haiku as hk
import jax
import jax.numpy as jnp

from companion._validate import positive_int, prng_key
from companion.agents.dqn.networks import make_q_network
from companion.envs import cartpole


def greedy_returns(
    params: Any,
    key: jax.Array,
    num_episodes: int = 100,
    network: hk.Transformed | None = None,
    env: cartpole.CartPole | None = None,
) -> jax.Array:
    """Returns of greedy (argmax Q) episodes (up to ``max_steps``), float32 (num_episodes,).

    Args:
        key: PRNG key; each episode starts from its own reset.
        num_episodes: number of episodes (static), a positive int.
        network: the Q-network; default ``make_q_network()`` (64, 64).
        env: a :class:`~companion.envs.cartpole.CartPole`; default ``CartPole()``, CartPole-v1.

    Raises:
        TypeError, ValueError: if ``num_episodes`` is not a positive int, ``key`` not a PRNG
            key, or ``env`` not a ``CartPole``.
    """
    positive_int(num_episodes, "num_episodes")
    prng_key(key)
    network = network if network is not None else make_q_network()
    env = cartpole.CartPole() if env is None else cartpole.check_env(env)
    return _greedy_returns(params, key, int(num_episodes), network, env)


@functools.partial(jax.jit, static_argnums=(2, 3, 4))
def _greedy_returns(
    params, key, num_episodes: int, network: hk.Transformed, env: cartpole.CartPole
) -> jax.Array:
    max_steps = env.params.max_steps

    def episode(key):
        state, obs = env.reset(key)

        def body(carry, _):
            state, obs, alive, total = carry
            action = jnp.argmax(network.apply(params, obs)).astype(jnp.int32)
            state, ts = env.step(state, action)
            total = total + ts.reward * alive
            return (state, ts.obs, alive & ~ts.done, total), None

        init = (state, obs, jnp.array(True), jnp.float32(0.0))
        (_, _, _, total), _ = jax.lax.scan(body, init, length=max_steps)
        return total

    return jax.vmap(episode)(jax.random.split(key, num_episodes))
