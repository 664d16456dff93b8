"""The PPO chapter's actor-critics (equinox), their size descriptions and :func:`make_model`.

Each maps one float32 image ``(3, rows, cols)`` to ``(logits, value)``; orthogonal init
(Huang et al., 2022); propagation after value iteration networks (Tamar et al., 2016).
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from companion._validate import positive_int, positive_ints
from companion.agents.ppo.layers import (  # noqa: F401  (re-exported)
    _check_image,
    _grid_shape,
    _orthogonal,
    neighbour,
    orthogonal_linear,
)
from companion.agents.ppo.planning import UNREACHED, ValueIterationActorCritic  # noqa: F401


def _torso_and_heads(keys: list, in_size: int, hidden_sizes: tuple, num_actions: int):
    """Fully connected layers (gain sqrt 2), a policy head (gain 0.01) and a value head (gain 1)."""
    dense = []
    for size in hidden_sizes:
        dense.append(orthogonal_linear(keys.pop(), in_size, size, np.sqrt(2.0)))
        in_size = size
    policy = orthogonal_linear(keys.pop(), in_size, num_actions, 0.01)
    value = orthogonal_linear(keys.pop(), in_size, "scalar", 1.0)
    return tuple(dense), policy, value


class ActorCritic(eqx.Module):
    """Convolutional actor-critic for one grid size: ``model(image) -> (logits, value)``.

    ``image`` float32 ``(3, rows, cols)`` (:func:`companion.envs.maze.observation_image`) ->
    float32 ``(num_actions,)``, ``()``; vmap for a batch. 3 x 3 convolutions (padding 1, ReLU),
    dense ReLU layers, orthogonal init (policy gain 0.01, value gain 1; Huang et al., 2022).

    Args:
        channels: output channels of each convolution (may be empty: no convolution).
        hidden_sizes: widths of the fully connected layers, at least one.

    Raises:
        TypeError, ValueError: for sizes that are not positive ints or an empty ``hidden_sizes``;
            when called, for an image that is not float ``(3, *grid_shape)``.
    """

    convs: tuple
    dense: tuple
    policy_head: eqx.nn.Linear
    value_head: eqx.nn.Linear
    grid_shape: tuple = eqx.field(static=True)

    def __init__(
        self,
        key: jax.Array,
        grid_shape: tuple = (10, 10),
        num_actions: int = 4,
        channels: tuple = (16,),
        hidden_sizes: tuple = (128, 128),
    ):
        rows, cols = _grid_shape(grid_shape)
        num_actions = positive_int(num_actions, "num_actions")
        channels = positive_ints(channels, "channels") if len(channels) else ()
        hidden_sizes = positive_ints(hidden_sizes, "hidden_sizes")
        keys = list(jax.random.split(key, len(channels) + len(hidden_sizes) + 2))
        in_ch = 3
        convs = []
        for ch in channels:
            convs.append(eqx.nn.Conv2d(in_ch, ch, kernel_size=3, padding=1, key=keys.pop()))
            in_ch = ch
        self.convs = tuple(convs)
        self.grid_shape = (rows, cols)
        self.dense, self.policy_head, self.value_head = _torso_and_heads(
            keys, in_ch * rows * cols, hidden_sizes, num_actions
        )

    def __call__(self, image: jax.Array) -> tuple[jax.Array, jax.Array]:
        _check_image(image, self.grid_shape)
        x = image
        for conv in self.convs:
            x = jax.nn.relu(conv(x))
        x = x.reshape(-1)
        for layer in self.dense:
            x = jax.nn.relu(layer(x))
        return self.policy_head(x), self.value_head(x)


class PropagationActorCritic(eqx.Module):
    """Actor-critic for mazes of any size: a wall-gated convolution repeated ``iterations`` times.

    Shared weights as in value iteration networks (Tamar et al., 2016). ``model(image)``: one
    float32 ``(3, rows, cols)`` -> float32 ``(num_actions,)``, ``()``.

    Args:
        width: features per cell.
        hidden_sizes: widths of the fully connected layers after the torso.
        iterations: propagation steps (information travels one cell per step).

    Raises:
        TypeError, ValueError: for a size that is not a positive int or an empty ``hidden_sizes``;
            when called, for an image that is not float ``(3, rows, cols)``.
    """

    embed: jax.Array
    w_self: jax.Array
    w_nbr: jax.Array
    w_in: jax.Array
    bias: jax.Array
    dense: tuple
    policy_head: eqx.nn.Linear
    value_head: eqx.nn.Linear
    iterations: int = eqx.field(static=True)

    def __init__(
        self,
        key: jax.Array,
        num_actions: int = 4,
        width: int = 8,
        hidden_sizes: tuple = (64,),
        iterations: int = 32,
    ):
        num_actions = positive_int(num_actions, "num_actions")
        width = positive_int(width, "width")
        hidden_sizes = positive_ints(hidden_sizes, "hidden_sizes")
        iterations = positive_int(iterations, "iterations")
        keys = list(jax.random.split(key, 6 + len(hidden_sizes)))
        self.embed = _orthogonal(keys.pop(), (3, width), 1.0)
        self.w_self = _orthogonal(keys.pop(), (width, width), 1.0)
        self.w_nbr = _orthogonal(keys.pop(), (width, width), 0.5)
        self.w_in = _orthogonal(keys.pop(), (3, width), 1.0)
        self.bias = jnp.zeros(width)
        self.dense, self.policy_head, self.value_head = _torso_and_heads(
            keys, 5 * width, tuple(hidden_sizes), num_actions
        )
        self.iterations = iterations

    def __call__(self, image: jax.Array) -> tuple[jax.Array, jax.Array]:
        _check_image(image)
        x = jnp.moveaxis(image, 0, -1)  # (rows, cols, 3)
        free = 1.0 - x[..., :1]
        open_to = [neighbour(free, d) * free for d in range(4)]  # (rows, cols, 1) each
        injected = x @ self.w_in + self.bias

        def propagate(h, _):
            messages = sum(neighbour(h, d) * open_to[d] for d in range(4))
            return jnp.tanh(h @ self.w_self + messages @ self.w_nbr + injected), None

        h, _ = jax.lax.scan(propagate, jnp.tanh(x @ self.embed), length=self.iterations)
        cols = image.shape[2]
        agent = jnp.argmax(image[1].reshape(-1))
        row, col = agent // cols, agent % cols
        around = [h[row, col]] + [
            neighbour(h, d)[row, col] * open_to[d][row, col] for d in range(4)
        ]
        z = jnp.concatenate(around)
        for layer in self.dense:
            z = jax.nn.relu(layer(z))
        return self.policy_head(z), self.value_head(z)


class ConvNet(NamedTuple):
    """:class:`ActorCritic` by its sizes: 3 x 3 convolutions with ``channels`` (may be
    empty), then fully connected layers of ``hidden_sizes``. For one grid size."""

    channels: tuple = (16,)
    hidden_sizes: tuple = (128, 128)


class PropagationNet(NamedTuple):
    """:class:`PropagationActorCritic` by its sizes: ``width`` features per cell,
    ``iterations`` propagation steps, then fully connected layers of ``hidden_sizes``."""

    width: int = 8
    hidden_sizes: tuple = (64,)
    iterations: int = 32


class ValueIterationNet(NamedTuple):
    """:class:`ValueIterationActorCritic` by its sizes: ``width`` value channels,
    ``iterations`` backups (``None``: until the values settle; not for training) and a
    value head of ``hidden_sizes``."""

    width: int = 4
    hidden_sizes: tuple = (64,)
    iterations: int | None = 99


#: The networks :func:`make_model` builds, by the name a saved agent records.
NETWORKS = {"conv": ConvNet, "propagation": PropagationNet, "value_iteration": ValueIterationNet}


def network_name(network) -> str:
    """The name of a network description in :data:`NETWORKS` (``"conv"``, ...).

    Raises:
        TypeError: if ``network`` is not a :class:`ConvNet`, :class:`PropagationNet` or
            :class:`ValueIterationNet`.
    """
    for name, kind in NETWORKS.items():
        if type(network) is kind:
            return name
    raise TypeError(
        "network: expected ppo.ConvNet, ppo.PropagationNet or ppo.ValueIterationNet, "
        f"got {type(network).__name__}"
    )


def network_from_dict(fields: dict):
    """The network description that ``{"name": ..., **sizes}`` (as saved in JSON) names.

    Raises:
        ValueError: for an unknown ``name``. TypeError: for an unknown size.
    """
    fields = dict(fields)
    name = fields.pop("name", None)
    if name not in NETWORKS:
        raise ValueError(f"network: unknown name {name!r}; expected one of {tuple(NETWORKS)}")
    kind = NETWORKS[name]
    unknown = set(fields) - set(kind._fields)
    if unknown:
        raise TypeError(
            f"network: unknown size(s) {sorted(unknown)} for {name!r}; expected {kind._fields}"
        )
    return kind(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


def network_to_dict(network) -> dict:
    """``{"name": ..., **sizes}``, the JSON form of a network description."""
    return {"name": network_name(network), **network._asdict()}


def check_network(network, trainable: bool = True):
    """Return ``network`` if :func:`make_model` can build it (and, when ``trainable``, train
    it: a positive number of iterations).

    Raises:
        TypeError: for another type, or a size that is not an int.
        ValueError: naming the field, for a size that is not positive, or ``iterations=None``
            when ``trainable`` or for a :class:`PropagationNet`.
    """
    name = network_name(network)
    positive_ints(network.hidden_sizes, "network.hidden_sizes")
    if name == "conv":
        if not (isinstance(network.channels, (tuple, list)) and len(network.channels) == 0):
            positive_ints(network.channels, "network.channels")  # () is allowed: no convolution
        return network
    positive_int(network.width, "network.width")
    if network.iterations is None and (trainable or name == "propagation"):
        raise ValueError(
            "network.iterations: None (backups until the values settle, in a while_loop) "
            "cannot be differentiated in reverse mode; train with a positive int, for "
            "example rows * cols - 1 = 99 on 10 x 10 mazes"
        )
    if network.iterations is not None:
        positive_int(network.iterations, "network.iterations")
    return network


def make_model(network, key: jax.Array, grid_shape: tuple = (10, 10)):
    """The network that ``network`` describes, with initial weights from ``key``.

    Args:
        network: :class:`ConvNet`, :class:`PropagationNet` or :class:`ValueIterationNet`.
        grid_shape: ``(rows, cols)`` of the maze (used by :class:`ActorCritic` only).

    Raises:
        TypeError, ValueError: as :func:`check_network` (``iterations=None`` allowed for planning).
    """
    return _make_model(check_network(network, trainable=False), key, grid_shape)


def _make_model(network, key: jax.Array, grid_shape: tuple):
    hidden = tuple(network.hidden_sizes)
    if isinstance(network, ConvNet):
        channels = tuple(network.channels)
        return ActorCritic(key, grid_shape, 4, channels=channels, hidden_sizes=hidden)
    if isinstance(network, PropagationNet):
        return PropagationActorCritic(key, 4, network.width, hidden, network.iterations)
    return ValueIterationActorCritic(
        key, network.width, hidden_sizes=hidden, iterations=network.iterations
    )


def model_skeleton(network, grid_shape: tuple = (10, 10)):
    """The network of ``network`` with ``jax.ShapeDtypeStruct`` in place of its weights.

    Only traced (``eqx.filter_eval_shape``): no weights computed, nothing compiled; e.g. the
    ``like`` of ``eqx.tree_deserialise_leaves``.

    Raises:
        TypeError, ValueError: as :func:`make_model`.
    """
    check_network(network, trainable=False)
    return eqx.filter_eval_shape(_make_model, network, jax.random.key(0), grid_shape)
