"""The Q-network and epsilon-greedy exploration of the DQN chapter."""

from __future__ import annotations

import functools

import haiku as hk
import jax
import jax.numpy as jnp

from companion._validate import positive_int, positive_ints, runtime_check


def make_q_network(
    num_actions: int = 2, hidden_sizes: tuple = (64, 64), layer_norm: bool = False
) -> hk.Transformed:
    """Q-network: obs float32 (..., 4) -> Q-values float32 (..., num_actions), a ReLU MLP.

    Each hidden layer is Linear -> ReLU, or with ``layer_norm`` Linear -> LayerNorm -> ReLU:
    LayerNorm (Ba et al., 2016) rescales each sample's pre-activations over the layer's units
    to mean 0 and variance 1, then applies a learned per-unit scale (init 1) and offset
    (init 0). The last layer is a Linear to the Q-values.

    The same arguments return the same ``hk.Transformed`` object, so functions
    compiled for it (:func:`greedy_returns`) are compiled once.

    Raises:
        TypeError, ValueError: if ``num_actions`` is not a positive int, ``hidden_sizes`` not a
            non-empty tuple of positive ints, or ``layer_norm`` not a bool.
    """
    if not isinstance(layer_norm, bool):
        raise TypeError(f"layer_norm: expected a bool, got {type(layer_norm).__name__}")
    return _q_network(
        positive_int(num_actions, "num_actions"),
        positive_ints(hidden_sizes, "hidden_sizes"),
        layer_norm,
    )


@functools.cache
def _q_network(num_actions: int, hidden_sizes: tuple, layer_norm: bool) -> hk.Transformed:
    def forward(obs):
        if not layer_norm:
            return hk.nets.MLP([*hidden_sizes, num_actions])(obs)
        x = obs
        for size in hidden_sizes:
            x = hk.Linear(size)(x)
            x = hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)
            x = jax.nn.relu(x)
        return hk.Linear(num_actions)(x)

    return hk.without_apply_rng(hk.transform(forward))


def epsilon_greedy(key: jax.Array, q_values: jax.Array, epsilon: jax.Array) -> jax.Array:
    """With probability ``epsilon`` a uniform random action, else ``argmax q_values``: int32 ().

    Args:
        q_values: float (num_actions,); vmap for a batch.
        epsilon: float scalar in [0, 1].

    Raises:
        ValueError: if ``q_values`` is not 1-D and non-empty, or ``epsilon`` is outside [0, 1]
            (traced: under :func:`companion.debug.checked`).
    """
    q_values = jnp.asarray(q_values)
    if q_values.ndim != 1 or q_values.shape[0] == 0:
        raise ValueError(
            f"q_values: expected shape (num_actions,), got {q_values.shape}; "
            "use jax.vmap(epsilon_greedy) for a batch"
        )
    epsilon = jnp.asarray(epsilon, jnp.float32)
    runtime_check((epsilon < 0) | (epsilon > 1), "epsilon: expected a probability in [0, 1]")
    explore_key, action_key = jax.random.split(key)
    random_action = jax.random.randint(action_key, (), 0, q_values.shape[-1])
    greedy_action = jnp.argmax(q_values, axis=-1).astype(jnp.int32)
    return jnp.where(jax.random.uniform(explore_key) < epsilon, random_action, greedy_action)
