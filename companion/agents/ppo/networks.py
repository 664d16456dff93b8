"""The PPO chapter's actor-critics (equinox), and what the trainers need of a ``network``.

Each maps one float32 image ``(3, rows, cols)`` to ``(logits, value)``; orthogonal init
(Huang et al., 2022); propagation after value iteration networks (Tamar et al., 2016).

A ``network``, as the trainers take it, is the network before its weights: a function
``network(key) -> model``, such as ``functools.partial(ActorCritic, grid_shape=(10, 10))``
(DQN's ``hk.Transformed`` is the same idea in haiku's form: ``network.init(key, obs)``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

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
        channels = (
            ()
            if isinstance(channels, (tuple, list)) and not channels
            else positive_ints(channels, "channels")
        )
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


#: The model classes a saved agent may name (``{"class": ..., "kwargs": ...}`` in its JSON).
MODELS = {
    cls.__name__: cls for cls in (ActorCritic, PropagationActorCritic, ValueIterationActorCritic)
}


def network_to_dict(network: functools.partial) -> dict:
    """``{"class": name, "kwargs": {...}}``, the JSON form of ``network``, a
    ``functools.partial`` of a class of :data:`MODELS` given keyword arguments only
    (equinox's serialisation example: the hyperparameters beside the weights).

    Raises:
        TypeError: for anything else (a function of your own has no sizes to save).
    """
    if not (
        isinstance(network, functools.partial)
        and network.func in MODELS.values()
        and not network.args
    ):
        raise TypeError(
            "network: expected functools.partial(<one of "
            f"{', '.join('ppo.' + name for name in MODELS)}>, **sizes) to save, got {network!r:.120}"
        )
    kwargs = {k: list(v) if isinstance(v, tuple) else v for k, v in network.keywords.items()}
    return {"class": network.func.__name__, "kwargs": kwargs}


def network_from_dict(fields: dict) -> functools.partial:
    """The network that ``{"class": name, "kwargs": {...}}`` (:func:`network_to_dict`) names:
    ``functools.partial(MODELS[name], **kwargs)``, lists read back as tuples.

    Raises:
        ValueError: for an unknown class; TypeError: for an unknown keyword argument.
    """
    name = fields.get("class")
    if name not in MODELS:
        raise ValueError(f"network: unknown class {name!r}; expected one of {tuple(MODELS)}")
    cls = MODELS[name]
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in fields["kwargs"].items()}
    unknown = set(kwargs) - set(inspect.signature(cls).parameters)
    if unknown:
        raise TypeError(f"network: unknown argument(s) {sorted(unknown)} for ppo.{name}")
    return functools.partial(cls, **kwargs)


def model_skeleton(network: Callable, grid_shape: tuple | None = None):
    """The model ``network(key)`` builds, ``jax.ShapeDtypeStruct`` in place of its weights.

    Only traced (``eqx.filter_eval_shape``): no weights computed, nothing compiled; e.g. the
    ``like`` of ``eqx.tree_deserialise_leaves``. The model's own constructor checks its sizes.

    Args:
        network: ``network(key) -> model``, e.g. :data:`~companion.agents.ppo.FIXED_MAZE_NETWORK`.
        grid_shape: ``(rows, cols)``: also check that the model maps one float32
            ``(3, rows, cols)`` image to float ``(logits (4,), value ())``.

    Raises:
        TypeError: a ``network`` that is not callable; ValueError: naming ``network``, a model
            that cannot take such an image or returns other shapes; the constructor's own
            errors for bad sizes.
    """
    if not callable(network) or isinstance(network, eqx.Module):
        raise TypeError(
            "network: expected a function key -> model, e.g. functools.partial(ppo.ActorCritic, "
            f"grid_shape=(10, 10)), got {type(network).__name__}"
        )
    skeleton = eqx.filter_eval_shape(network, jax.random.key(0))
    if grid_shape is None:
        return skeleton
    image = jax.ShapeDtypeStruct((3, *grid_shape), jnp.float32)
    try:
        logits, value = eqx.filter_eval_shape(lambda m, x: m(x), skeleton, image)
    except Exception as error:  # the model's own error, named
        raise ValueError(
            f"network: its model cannot map this maze's image float32 {image.shape} to "
            f"(logits, value): {type(error).__name__}: {error}"
        ) from error
    if (
        logits.shape != (4,)
        or value.shape != ()
        or not (
            jnp.issubdtype(logits.dtype, jnp.floating) and jnp.issubdtype(value.dtype, jnp.floating)
        )
    ):
        raise ValueError(
            f"network: its model maps an image float32 {image.shape} to logits "
            f"{logits.dtype}{logits.shape} and value {value.dtype}{value.shape}; expected float "
            "logits (4,), one per move, and a float value ()"
        )
    return skeleton


def trained_model(network: Callable, runner):
    """The model of ``runner``'s parameters: ``runner.params`` put back into the rest of the
    model ``network`` builds (the parts training never changes). ``runner`` a PPO
    ``RunnerState``, leading axes allowed (seeds); built from :func:`model_skeleton`, so
    nothing is computed twice.

    Raises:
        TypeError: as :func:`model_skeleton`, or a ``runner`` without ``params``.
    """
    params = getattr(runner, "params", None)
    if params is None:
        raise TypeError(f"runner: expected a ppo.RunnerState, got {type(runner).__name__}")
    return eqx.combine(params, static_part(model_skeleton(network)))


def static_part(skeleton):
    """What training never changes of a model (:func:`model_skeleton`): its leaves that are
    not arrays; ``eqx.combine(params, static_part(skeleton))`` is the model of ``params``."""
    return eqx.filter(skeleton, lambda x: isinstance(x, jax.ShapeDtypeStruct), inverse=True)
