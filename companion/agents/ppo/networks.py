"""The actor-critic networks of the PPO chapter, as equinox modules.

- :class:`ActorCritic`: a small convolutional torso for one fixed grid size;
- :class:`PropagationActorCritic`: a size-agnostic torso that passes messages
  along the maze's open cells, one cell per iteration (value iteration
  networks, Tamar et al., 2016);
- :class:`ValueIterationActorCritic`: value iteration on the maze (a fixed,
  convergent backup) with a learned input and a policy read off the values,
  for mazes of any size;
- :func:`make_model`: the network a :class:`~companion.agents.ppo.PPOConfig`
  describes.

All three map one float32 image ``(3, rows, cols)`` (walls, agent, target; see
:func:`companion.envs.maze.observation_image`) to ``(logits, value)``.
Linear layers start orthogonal with zero biases, the policy head with gain
0.01 and the value head with gain 1 (Huang et al., 2022, "The 37
implementation details of PPO").
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from companion._validate import positive_int, positive_ints
from companion.envs import maze as maze_lib


def _orthogonal(key: jax.Array, shape: tuple, scale: float) -> jax.Array:
    return jax.nn.initializers.orthogonal(scale)(key, shape, jnp.float32)


def orthogonal_linear(key: jax.Array, in_size: int, out_size, gain: float) -> eqx.nn.Linear:
    """An ``eqx.nn.Linear`` with orthogonal weights (float32 ``(out_size, in_size)``, rows of
    norm ``gain`` when ``out_size <= in_size``) and zero bias, as PPO implementations
    initialise (Huang et al., 2022, "The 37 implementation details of PPO").

    Args:
        key: PRNG key, split once: the layer and the orthogonal matrix.
        in_size: input features, a positive int.
        out_size: output features, a positive int, or ``"scalar"`` (a value head).
        gain: scale of the orthogonal matrix, a positive float.

    Raises:
        ValueError: for a non-positive size or gain.
    """
    positive_int(in_size, "in_size")
    if out_size != "scalar":
        positive_int(out_size, "out_size")
    if not gain > 0:
        raise ValueError(f"gain: expected a positive number, got {gain!r}")
    layer_key, weight_key = jax.random.split(key)
    layer = eqx.nn.Linear(in_size, out_size, key=layer_key)
    rows = 1 if out_size == "scalar" else out_size
    return eqx.tree_at(
        lambda lin: (lin.weight, lin.bias),
        layer,
        (_orthogonal(weight_key, (rows, in_size), gain), jnp.zeros(rows)),
    )


def _grid_shape(grid_shape) -> tuple:
    if not isinstance(grid_shape, (tuple, list)) or len(grid_shape) != 2:
        raise ValueError(f"grid_shape: expected (rows, cols), got {grid_shape!r}")
    return positive_ints(grid_shape, "grid_shape")


def _check_image(image: jax.Array, grid_shape: tuple | None = None) -> None:
    """Shape and dtype checks of one network input (at trace time)."""
    shape = jnp.shape(image)
    if len(shape) != 3 or shape[0] != 3:
        hint = "; for a batch use jax.vmap(model)" if len(shape) == 4 and shape[1] == 3 else ""
        raise ValueError(
            f"image: expected one image of shape (3, rows, cols), got shape {shape}{hint}"
        )
    if grid_shape is not None and tuple(shape[1:]) != tuple(grid_shape):
        raise ValueError(
            f"image: shape {shape} does not fit a network built for grid_shape {grid_shape}; "
            f"expected (3, {grid_shape[0]}, {grid_shape[1]})"
        )
    if not jnp.issubdtype(jnp.result_type(image), jnp.floating):
        raise TypeError(
            f"image: expected a float image (companion.envs.maze.observation_image), got dtype "
            f"{jnp.result_type(image)}"
        )


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
    """Shared convolutional torso with a policy head and a value head.

    ``model(image)`` takes one float32 image ``(3, rows, cols)`` (walls, agent,
    target; see :func:`companion.envs.maze.observation_image`) and returns
    ``(logits, value)``: float32 ``(num_actions,)`` and float32 ``()``. Use
    ``jax.vmap(model)`` for a batch.

    The torso is one or more 3 x 3 convolutions (padding 1, ReLU) followed by
    fully connected layers (ReLU). Linear layers are initialised orthogonally
    with zero biases; the policy head with a small gain (0.01) so that the
    first policy is close to uniform over the legal actions, the value head
    with gain 1 (as in the PPO implementation details of Huang et al., 2022).

    Args:
        key: PRNG key.
        grid_shape: ``(rows, cols)`` of the maze.
        num_actions: number of discrete actions (4 for Maze).
        channels: output channels of each convolution (may be empty: no convolution).
        hidden_sizes: widths of the fully connected layers, at least one.

    Raises:
        TypeError, ValueError: for sizes that are not positive ints, an empty
            ``hidden_sizes`` or a ``grid_shape`` that is not two positive ints;
            when called, for an image that is not float ``(3, rows, cols)`` of
            the ``grid_shape`` it was built for.
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


def neighbour(h: jax.Array, direction: int) -> jax.Array:
    """The value at each cell's neighbour in ``direction`` (0 up, 1 right, 2 down, 3 left).

    Args:
        h: array ``(rows, cols, ...)``.
        direction: an action id of Maze, a Python int in 0..3.

    Returns:
        array of ``h``'s shape: ``out[r, c] = h[r + dr, c + dc]``, and 0 where that
        cell is outside the grid.

    Raises:
        ValueError: if ``h`` has fewer than 2 axes or ``direction`` is not 0, 1, 2 or 3.
    """
    if isinstance(direction, bool) or direction not in (0, 1, 2, 3):
        raise ValueError(
            f"direction: expected 0 (up), 1 (right), 2 (down) or 3 (left), got {direction!r}"
        )
    if jnp.ndim(h) < 2:
        raise ValueError(f"h: expected an array (rows, cols, ...), got shape {jnp.shape(h)}")
    rows, cols = h.shape[:2]
    dr, dc = maze_lib.MOVES[direction]
    padded = jnp.pad(h, ((1, 1), (1, 1)) + ((0, 0),) * (h.ndim - 2))
    return padded[1 + dr : 1 + dr + rows, 1 + dc : 1 + dc + cols]


class PropagationActorCritic(eqx.Module):
    """An actor-critic whose torso passes messages along the maze's open cells.

    A plain convolution sees a 3 x 3 neighbourhood; to know which way leads to
    a target 20 moves away, information has to travel 20 cells, through the
    corridors and not through walls. This torso repeats one wall-gated
    convolution ``iterations`` times, with shared weights, as in value
    iteration networks (Tamar et al., 2016):

        h_0 = tanh(x E),    h_{k+1} = tanh(h_k W_self + m_k W_nbr + x U + b)

    where ``x`` (rows, cols, 3) is the image per cell and ``m_k`` sums ``h_k``
    over the neighbours reachable in one move (both cells free). The features of
    the agent's cell and of its four neighbours (zero where blocked) then go
    through fully connected layers (ReLU) to a policy head (orthogonal, gain
    0.01) and a value head.

    ``model(image)`` takes one float32 image ``(3, rows, cols)`` and returns
    ``(logits, value)``: float32 ``(num_actions,)`` and ``()``.

    Args:
        key: PRNG key.
        num_actions: 4 for Maze.
        width: features per cell.
        hidden_sizes: widths of the fully connected layers after the torso.
        iterations: propagation steps (information travels one cell per step).

    Raises:
        TypeError, ValueError: for a size that is not a positive int or an empty
            ``hidden_sizes``; when called, for an image that is not float
            ``(3, rows, cols)`` (any rows and cols: the weights do not depend
            on the grid's size).
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


#: The value of a cell that no source has reached yet (a finite stand-in for minus infinity,
#: so that sums and gradients stay finite).
UNREACHED = -1e4


class ValueIterationActorCritic(eqx.Module):
    """An actor-critic that plans: max-plus value iteration on the maze (value iteration
    networks, Tamar et al., 2016), then a policy read off the values (the PPO chapter's
    planning section derives it).

    Per value channel ``k``: ``v_0(s) = log(relu(x_s E)_k)`` from the wall and target channels
    ``x_s`` (``UNREACHED`` where that is 0), then ``v_{i+1}(s) = max(v_i(s), max_{s'} v_i(s') -
    c_k)`` over the open neighbours ``s'``, with a learned cost ``c_k = exp(log_cost_k)``. The
    policy reads the neighbours' differences ``v(s') - v(s_agent)`` (``(4, width)``, zero
    behind a wall, clipped to [-10, 10]) through one network shared by the directions; the
    value head reads ``v(s_agent) / 10`` and the differences.

    ``model(image)``: one float32 image ``(3, rows, cols)`` to ``(logits, value)``, float32
    ``(4,)`` and ``()``.

    Args:
        key: PRNG key.
        width: value channels.
        policy_hidden: width of the per-direction policy network's hidden layer.
        hidden_sizes: widths of the value head's fully connected layers.
        iterations: backups per call, in a ``jax.lax.scan`` (differentiable: for training),
            or ``None``: backups in a ``jax.lax.while_loop`` until the values the readout
            uses are final (at most ``rows * cols - 1``), on a maze of any size; for acting
            and evaluation only (a ``while_loop`` has no reverse-mode gradient).

    Raises:
        TypeError, ValueError: for a size that is not a positive int, an empty
            ``hidden_sizes`` or ``iterations`` that is neither ``None`` nor a positive
            int; when called, for an image that is not float ``(3, rows, cols)``.
    """

    embed: jax.Array
    log_cost: jax.Array
    policy_hidden: eqx.nn.Linear
    policy_out: eqx.nn.Linear
    dense: tuple
    value_head: eqx.nn.Linear
    iterations: int | None = eqx.field(static=True)

    def __init__(
        self,
        key: jax.Array,
        width: int = 4,
        policy_hidden: int = 16,
        hidden_sizes: tuple = (64,),
        iterations: int | None = None,
    ):
        width = positive_int(width, "width")
        policy_hidden = positive_int(policy_hidden, "policy_hidden")
        hidden_sizes = positive_ints(hidden_sizes, "hidden_sizes")
        if iterations is not None:
            iterations = positive_int(iterations, "iterations")
        keys = list(jax.random.split(key, 4 + len(hidden_sizes)))
        # Positive source scores, so that every channel starts with the target as a source.
        self.embed = jax.random.uniform(keys.pop(), (2, width), minval=0.5, maxval=1.5)
        self.log_cost = jnp.zeros(width)
        self.policy_hidden = orthogonal_linear(keys.pop(), width, policy_hidden, np.sqrt(2.0))
        self.policy_out = orthogonal_linear(keys.pop(), policy_hidden, 1, 0.01)
        dense = []
        in_size = 5 * width
        for size in hidden_sizes:
            dense.append(orthogonal_linear(keys.pop(), in_size, size, np.sqrt(2.0)))
            in_size = size
        self.dense = tuple(dense)
        self.value_head = orthogonal_linear(keys.pop(), in_size, "scalar", 1.0)
        self.iterations = iterations

    def values(self, image: jax.Array) -> jax.Array:
        """The value map after the backups: float32 ``(rows, cols, width)``.

        With ``iterations=None``, backups run until no value changes (at most
        ``rows * cols - 1``): the fixed point. Wall cells keep their initial value (no
        move enters or leaves them); a cell that no source reached holds ``UNREACHED``.
        """
        _check_image(image)
        return self._values(image, watch=None)

    def _values(self, image: jax.Array, watch) -> jax.Array:
        x = jnp.moveaxis(image, 0, -1)  # (rows, cols, 3)
        free = 1.0 - x[..., :1]
        open_to = [(neighbour(free, d) * free) > 0 for d in range(4)]
        source = jax.nn.relu(x[..., (0, 2)] @ self.embed)
        v_0 = jnp.where(source > 0, jnp.log(jnp.maximum(source, 1e-30)), UNREACHED)
        cost = jnp.exp(self.log_cost)

        def backup(v_i):
            v_next = v_i
            for d in range(4):
                moved = jnp.where(open_to[d], neighbour(v_i, d) - cost, UNREACHED)
                v_next = jnp.maximum(v_next, moved)
            return v_next

        if self.iterations is not None:
            v, _ = jax.lax.scan(lambda v, _: (backup(v), None), v_0, length=self.iterations)
            return v
        rows, cols = image.shape[1:]
        # A value that arrives after backup i + 1 is at most best_source - cost * (i + 1),
        # so a watched value at least that large is final.
        best_source = jnp.max(jnp.where(free > 0, v_0, UNREACHED), axis=(0, 1))

        def going(carry):
            i, v, changed = carry
            go = (i < rows * cols - 1) & changed
            if watch is not None:
                final = (v >= best_source - cost * (i + 1)) | ~watch
                go = go & ~jnp.all(final)
            return go

        def body(carry):
            i, v, _ = carry
            v_next = backup(v)
            return i + 1, v_next, jnp.any(v_next != v)

        _, v, _ = jax.lax.while_loop(going, body, (0, v_0, jnp.array(True)))
        return v

    def __call__(self, image: jax.Array) -> tuple[jax.Array, jax.Array]:
        _check_image(image)
        x = jnp.moveaxis(image, 0, -1)
        free = 1.0 - x[..., :1]
        open_to = [(neighbour(free, d) * free) > 0 for d in range(4)]
        agent_map = x[..., 1:2] > 0
        # the agent's cell and the neighbours it can move to: all the readout looks at
        watch = agent_map
        for d in range(4):
            watch = watch | (neighbour(agent_map, d) & open_to[d])
        v = self._values(image, watch)
        cols = image.shape[2]
        agent = jnp.argmax(image[1].reshape(-1))
        row, col = agent // cols, agent % cols
        here = v[row, col]
        diffs = []
        for d in range(4):
            diff = jnp.clip(neighbour(v, d)[row, col] - here, -10.0, 10.0)
            diffs.append(jnp.where(open_to[d][row, col, 0], diff, 0.0))
        f = jnp.stack(diffs)  # (4, width): one row per direction
        hidden = jax.nn.relu(jax.vmap(self.policy_hidden)(f))
        logits = jax.vmap(self.policy_out)(hidden)[:, 0]
        z = jnp.concatenate([jnp.clip(here / 10.0, -10.0, 10.0), f.reshape(-1)])
        for layer in self.dense:
            z = jax.nn.relu(layer(z))
        return logits, self.value_head(z)


#: Names accepted by ``PPOConfig.network``.
NETWORKS = ("conv", "propagation", "value_iteration")


def make_model(config, key: jax.Array, grid_shape: tuple = (10, 10)):
    """The network that ``config`` describes.

    Args:
        config: a :class:`~companion.agents.ppo.PPOConfig`; reads ``network``,
            ``channels``, ``hidden_sizes`` and ``iterations``.
        key: PRNG key for the initial weights.
        grid_shape: ``(rows, cols)`` of the maze (used by :class:`ActorCritic`).

    Returns:
        :class:`ActorCritic` (``network="conv"``), :class:`PropagationActorCritic`
        (``network="propagation"``) or :class:`ValueIterationActorCritic`
        (``network="value_iteration"``, ``channels[0]`` value channels, 4 when
        ``channels`` is empty); all map one ``(3, rows, cols)`` image to
        ``(logits (4,), value ())``.

    Raises:
        ValueError: for an unknown ``config.network`` or an empty ``config.channels``
            with ``"propagation"``.
    """
    if config.network == "conv":
        channels, hidden = tuple(config.channels), tuple(config.hidden_sizes)
        return ActorCritic(key, grid_shape, 4, channels=channels, hidden_sizes=hidden)
    if config.network == "propagation":
        if len(config.channels) == 0:
            raise ValueError(
                "config.channels: the propagation network reads its width per cell from "
                "channels[0]; got an empty tuple"
            )
        width, hidden = config.channels[0], tuple(config.hidden_sizes)
        return PropagationActorCritic(key, 4, width, hidden, iterations=config.iterations)
    if config.network == "value_iteration":
        width = config.channels[0] if len(config.channels) else 4
        return ValueIterationActorCritic(
            key, width, hidden_sizes=tuple(config.hidden_sizes), iterations=config.iterations
        )
    raise ValueError(
        f"config.network: unknown network {config.network!r}; expected one of {NETWORKS}"
    )


def model_skeleton(config, grid_shape: tuple = (10, 10)):
    """The network of ``config`` with ``jax.ShapeDtypeStruct`` in place of its weights.

    Built by ``eqx.filter_eval_shape``: only traced, so no initial weights are computed and
    nothing is compiled. It serves wherever only the structure is needed: the static part of
    a model in a training program, or ``like`` for ``eqx.tree_deserialise_leaves``.

    Args:
        config, grid_shape: as for :func:`make_model`.

    Returns:
        the module of :func:`make_model`, every array a ``jax.ShapeDtypeStruct`` (float32).

    Raises:
        ValueError: as :func:`make_model`.
    """
    return eqx.filter_eval_shape(make_model, config, jax.random.key(0), grid_shape)
