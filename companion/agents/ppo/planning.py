"""The generalising chapter's planning network: value iteration inside an actor-critic."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from companion._validate import positive_int, positive_ints
from companion.agents.ppo.layers import _check_image, neighbour, orthogonal_linear

#: The value of a cell that no source has reached yet (a finite stand-in for minus infinity,
#: so that sums and gradients stay finite).
UNREACHED = -1e4


class ValueIterationActorCritic(eqx.Module):
    """Actor-critic that plans: max-plus value iteration on the maze (Tamar et al., 2016).

    ``model(image)``: float32 ``(3, rows, cols)`` to float32 ``(logits (4,), value ())``.

    Args:
        width: value channels.
        policy_hidden: width of the per-direction policy network's hidden layer.
        hidden_sizes: widths of the value head's fully connected layers.
        iterations: backups per call (``jax.lax.scan``), or ``None``: until the values used are
            final (``while_loop``, any maze size; no reverse-mode gradient, so not for training).

    Raises:
        TypeError, ValueError: bad sizes or ``iterations``; an image not float ``(3, rows, cols)``.
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
