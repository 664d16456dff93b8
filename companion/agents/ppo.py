"""PPO (Schulman et al., 2017) on jumanji's Maze, with equinox and optax.

The pieces, each a pure function over pytrees:

- :class:`ActorCritic`: an equinox module from the 3-channel maze image
  (:func:`companion.envs.maze.observation_image`) to policy logits and a
  state value;
- :func:`masked_logits`, :func:`log_prob`, :func:`entropy`: a categorical
  policy over the *legal* actions only. Illegal actions get logit ``-inf``,
  hence probability exactly 0; log-probabilities, entropy and their gradients
  stay finite;
- :func:`rollout`: ``num_steps`` steps of ``num_envs`` environments inside
  ``jax.lax.scan``, episodes restarted from a reset pool
  (:mod:`companion.envs.autoreset`);
- :func:`gae`: generalised advantage estimation (Schulman et al., 2016) that
  cuts the recursion at episode boundaries and bootstraps from the true final
  observation unless the episode *terminated* (truncation is not termination);
- :func:`ppo_loss`: the clipped surrogate objective, a value loss and an
  entropy bonus;
- :func:`make_train`: the whole experiment as one function ``train(key)``,
  compiled once per configuration and ``jax.vmap``-able over seeds.

The structure of :func:`make_train` follows PureJaxRL's PPO (Lu et al., 2022).
"""

from __future__ import annotations

import collections
import functools
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from companion.envs import maze as maze_lib
from companion.envs.autoreset import make_reset_pool, pooled_autoreset_step, reset_with_next_obs
from jumanji.wrappers import AutoResetWrapper  # noqa: E402  (after maze: it sets up jumanji)

#: How many times the training function of each configuration was traced
#: (compiled); :func:`make_train` increments it. A second call of the same
#: ``train`` with a new key must not add to it.
TRACE_COUNTS: collections.Counter = collections.Counter()


# --------------------------------------------------------------------------------------
# Network
# --------------------------------------------------------------------------------------


def _orthogonal(key: jax.Array, shape: tuple, scale: float) -> jax.Array:
    return jax.nn.initializers.orthogonal(scale)(key, shape, jnp.float32)


def orthogonal_linear(key: jax.Array, in_size: int, out_size, gain: float) -> eqx.nn.Linear:
    """An ``eqx.nn.Linear`` with orthogonal weights scaled by ``gain`` and zero bias.

    ``out_size="scalar"`` gives a layer with a scalar output (a value head).
    The weights are replaced with ``eqx.tree_at``, as equinox modules are immutable.
    """
    layer = eqx.nn.Linear(in_size, out_size, key=key)
    rows = 1 if out_size == "scalar" else out_size
    return eqx.tree_at(
        lambda lin: (lin.weight, lin.bias),
        layer,
        (_orthogonal(key, (rows, in_size), gain), jnp.zeros(rows)),
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
        channels: output channels of each convolution.
        hidden_sizes: widths of the fully connected layers.

    Raises:
        ValueError: for an empty ``hidden_sizes`` or a non-positive size.
    """

    convs: tuple
    dense: tuple
    policy_head: eqx.nn.Linear
    value_head: eqx.nn.Linear

    def __init__(
        self,
        key: jax.Array,
        grid_shape: tuple = (10, 10),
        num_actions: int = 4,
        channels: tuple = (16,),
        hidden_sizes: tuple = (128, 128),
    ):
        if len(hidden_sizes) == 0 or min(hidden_sizes) <= 0 or (channels and min(channels) <= 0):
            raise ValueError(
                "hidden_sizes and channels: expected positive sizes and at least one hidden "
                f"layer, got channels={channels!r}, hidden_sizes={hidden_sizes!r}"
            )
        keys = list(jax.random.split(key, len(channels) + len(hidden_sizes) + 2))
        in_ch, (rows, cols) = 3, grid_shape
        convs = []
        for ch in channels:
            convs.append(eqx.nn.Conv2d(in_ch, ch, kernel_size=3, padding=1, key=keys.pop()))
            in_ch = ch
        self.convs = tuple(convs)
        self.dense, self.policy_head, self.value_head = _torso_and_heads(
            keys, in_ch * rows * cols, tuple(hidden_sizes), num_actions
        )

    def __call__(self, image: jax.Array) -> tuple[jax.Array, jax.Array]:
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
        direction: an action id of Maze.

    Returns:
        array of ``h``'s shape: ``out[r, c] = h[r + dr, c + dc]``, and 0 where that
        cell is outside the grid.
    """
    rows, cols = h.shape[:2]
    dr, dc = ((-1, 0), (0, 1), (1, 0), (0, -1))[direction]
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
        ValueError: for a non-positive size or ``iterations < 1``.
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
        if width <= 0 or iterations < 1 or not hidden_sizes or min(hidden_sizes) <= 0:
            raise ValueError(
                "width, hidden_sizes, iterations: expected positive sizes, at least one hidden "
                f"layer and one iteration, got width={width!r}, hidden_sizes={hidden_sizes!r}, "
                f"iterations={iterations!r}"
            )
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


# --------------------------------------------------------------------------------------
# Masked categorical policy
# --------------------------------------------------------------------------------------


def masked_logits(logits: jax.Array, action_mask: jax.Array) -> jax.Array:
    """Set the logits of illegal actions to ``-inf``.

    Args:
        logits: float ``(..., num_actions)``.
        action_mask: bool ``(..., num_actions)``, True for a legal action.

    Returns:
        float ``(..., num_actions)``: ``logits`` where legal, ``-inf`` elsewhere,
        so ``softmax`` gives illegal actions probability exactly 0 and
        ``jax.random.categorical`` never samples them.

    Raises:
        ValueError: if the shapes differ or ``action_mask`` is not boolean.
    """
    if action_mask.dtype != jnp.bool_:
        raise ValueError(f"action_mask: expected dtype bool, got {action_mask.dtype}")
    if logits.shape != action_mask.shape:
        raise ValueError(
            f"action_mask: shape {action_mask.shape} differs from logits shape {logits.shape}"
        )
    return jnp.where(action_mask, logits, -jnp.inf)


def log_prob(logits: jax.Array, action: jax.Array) -> jax.Array:
    """Log-probability of ``action`` under ``softmax(logits)``.

    ``logits`` may hold ``-inf`` (masked actions); the result is finite for
    any action with a finite logit and its gradient is finite.

    Args:
        logits: float ``(..., num_actions)``.
        action: int ``(...)``.

    Returns:
        float ``(...)``.
    """
    logp = jax.nn.log_softmax(logits, axis=-1)
    return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def entropy(logits: jax.Array) -> jax.Array:
    """Entropy (nats) of ``softmax(logits)``, ignoring actions with logit ``-inf``.

    A masked action contributes ``0 * log 0 = 0``. The naive
    ``-sum(p * log p)`` gives ``0 * (-inf) = nan`` there, and a nan gradient
    even when the value is patched; here ``log p`` is replaced by 0 *before*
    the product, so value and gradient stay finite. For logits
    ``[0, 0, -inf, -inf]`` the entropy is ``ln 2``.

    Args:
        logits: float ``(..., num_actions)``, at least one finite entry per row.

    Returns:
        float ``(...)``.
    """
    legal = jnp.isfinite(logits)
    logp = jax.nn.log_softmax(logits, axis=-1)
    safe_logp = jnp.where(legal, logp, 0.0)
    return -jnp.sum(jnp.exp(safe_logp) * safe_logp * legal, axis=-1)


# --------------------------------------------------------------------------------------
# Rollout
# --------------------------------------------------------------------------------------


class Transition(NamedTuple):
    """A batch of steps; leaves have leading axes ``(num_steps, num_envs)``.

    Fields:
        image: float32 ``(..., 3, rows, cols)``, the observation at time t.
        action_mask: bool ``(..., 4)``, the mask used to pick the action (and
            used again in the update).
        action: int32 ``(...)``.
        log_prob: float32 ``(...)``, log pi_old(a_t | s_t) of the acting policy.
        value: float32 ``(...)``, V_old(s_t).
        reward: float32 ``(...)``.
        terminated: bool ``(...)``, the episode ended by reaching the target.
        done: bool ``(...)``, the episode ended (terminated or truncated by the
            time limit).
        next_image: float32 ``(..., 3, rows, cols)``, the true observation at
            t+1 (the final one when ``done``).
        step_count: int32 ``(...)``, steps taken in the episode after step t
            (the episode length when ``done``).
    """

    image: jax.Array
    action_mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    terminated: jax.Array
    done: jax.Array
    next_image: jax.Array
    step_count: jax.Array


def reached_target(obs: Any) -> jax.Array:
    """True where the agent stands on the target (Maze's only termination)."""
    return (obs.agent_position.row == obs.target_position.row) & (
        obs.agent_position.col == obs.target_position.col
    )


def rollout(
    model: ActorCritic,
    env: Any,
    pool: Any,
    env_state: Any,
    timestep: Any,
    key: jax.Array,
    num_steps: int,
) -> tuple[Any, Any, Transition]:
    """Run ``num_steps`` steps of a batch of Maze environments with ``model``.

    Args:
        model: the actor-critic.
        env: a jumanji Maze.
        pool: a reset pool (:func:`companion.envs.autoreset.make_reset_pool`),
            or ``None`` to restart episodes with jumanji's
            ``AutoResetWrapper(env, next_obs_in_extras=True)``: a fresh reset
            for every environment on every step (slower for random mazes,
            since under ``vmap`` the reset runs whether or not it is used).
        env_state, timestep: batched (leading axis ``num_envs``) state and
            timestep; ``timestep.observation`` is the current observation.
        key: PRNG key.
        num_steps: rollout length (static).

    Returns:
        ``(env_state, timestep, transitions)``, transitions with leaves of
        shape ``(num_steps, num_envs, ...)``.
    """
    if pool is None:
        step_env = jax.vmap(AutoResetWrapper(env, next_obs_in_extras=True).step)
    else:
        step_env = jax.vmap(functools.partial(pooled_autoreset_step, env, pool))
    images = jax.vmap(maze_lib.observation_image)

    def step(carry, key_t):
        env_state, timestep = carry
        obs_t = timestep.observation
        image_t = images(obs_t)
        logits_t, value_t = jax.vmap(model)(image_t)
        logits_t = masked_logits(logits_t, obs_t.action_mask)
        action_t = jax.random.categorical(key_t, logits_t).astype(jnp.int32)
        env_state, timestep = step_env(env_state, action_t)
        next_obs = timestep.extras["next_obs"]
        transition = Transition(
            image=image_t,
            action_mask=obs_t.action_mask,
            action=action_t,
            log_prob=log_prob(logits_t, action_t),
            value=value_t,
            reward=timestep.reward.astype(jnp.float32),
            terminated=reached_target(next_obs),
            done=timestep.last(),
            next_image=images(next_obs),
            step_count=next_obs.step_count.astype(jnp.int32),
        )
        return (env_state, timestep), transition

    (env_state, timestep), transitions = jax.lax.scan(
        step, (env_state, timestep), jax.random.split(key, num_steps)
    )
    return env_state, timestep, transitions


# --------------------------------------------------------------------------------------
# GAE
# --------------------------------------------------------------------------------------


def gae(
    reward_t: jax.Array,
    value_t: jax.Array,
    value_tp1: jax.Array,
    terminated_t: jax.Array,
    done_t: jax.Array,
    gamma: float,
    gae_lambda: float,
) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimation over a rollout (Schulman et al., 2016).

    With ``delta_t = r_t + gamma * (1 - terminated_t) * V(s_{t+1}) - V(s_t)``::

        A_t = delta_t + gamma * lambda * (1 - done_t) * A_{t+1},   A_T = 0

    ``value_tp1[t]`` is the value of the true next observation of step t (the
    final observation when the episode ended there), so a *truncated* episode
    still bootstraps and a *terminated* one does not. ``done_t`` cuts the sum
    at every episode boundary. The recursion runs backwards with
    ``jax.lax.scan(..., reverse=True)``.

    Args:
        reward_t, value_t, value_tp1: float ``(T, ...)``.
        terminated_t, done_t: bool or float ``(T, ...)``; ``terminated_t``
            implies ``done_t``.
        gamma: discount in [0, 1]; gae_lambda: lambda in [0, 1].

    Returns:
        ``(advantages, returns)``, both float ``(T, ...)``; ``returns =
        advantages + value_t`` are the value targets (lambda-returns).

    Raises:
        ValueError: if the inputs differ in shape.
    """
    shapes = {a.shape for a in (reward_t, value_t, value_tp1, terminated_t, done_t)}
    if len(shapes) != 1:
        raise ValueError(
            "reward_t, value_t, value_tp1, terminated_t, done_t: expected one shape (T, ...), "
            f"got {[a.shape for a in (reward_t, value_t, value_tp1, terminated_t, done_t)]}"
        )
    not_terminated = 1.0 - terminated_t.astype(value_t.dtype)
    not_done = 1.0 - done_t.astype(value_t.dtype)
    delta_t = reward_t + gamma * not_terminated * value_tp1 - value_t

    def backward(advantage_tp1, inputs):
        delta, not_done = inputs
        advantage = delta + gamma * gae_lambda * not_done * advantage_tp1
        return advantage, advantage

    _, advantages = jax.lax.scan(
        backward, jnp.zeros_like(delta_t[0]), (delta_t, not_done), reverse=True
    )
    return advantages, advantages + value_t


# --------------------------------------------------------------------------------------
# Loss
# --------------------------------------------------------------------------------------


def normalise(advantages: jax.Array, eps: float = 1e-8) -> jax.Array:
    """``(a - mean) / (std + eps)``: zero (not nan) for constant advantages."""
    return (advantages - advantages.mean()) / (advantages.std() + eps)


class Batch(NamedTuple):
    """A flat minibatch: :class:`Transition` fields ``image``, ``action_mask``,
    ``action``, ``log_prob``, ``value`` with leading axis B, plus
    ``advantage`` and ``target`` (float32 ``(B,)``)."""

    image: jax.Array
    action_mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array


def clipped_surrogate(ratio: jax.Array, advantage: jax.Array, clip_eps: float) -> jax.Array:
    """PPO's clipped objective per sample (to be *maximised*).

    ``min(ratio * A, clip(ratio, 1 - eps, 1 + eps) * A)``, elementwise.
    """
    return jnp.minimum(
        ratio * advantage, jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantage
    )


def ppo_loss(
    model: ActorCritic,
    batch: Batch,
    clip_eps: float = 0.2,
    vf_coef: float = 0.5,
    ent_coef: float = 0.01,
    normalise_advantages: bool = True,
) -> tuple[jax.Array, dict]:
    """PPO loss of one minibatch (to be *minimised*).

    ``loss = -mean(clipped surrogate) + vf_coef * value_loss - ent_coef * mean(entropy)``,
    with ``value_loss = 0.5 * mean((V(s) - target)^2)``. The policy is
    recomputed from ``batch.image`` and masked with ``batch.action_mask``, the
    mask stored when the action was taken.

    Returns:
        ``(loss, metrics)``: a float32 scalar and a dict of scalars
        (``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl``,
        ``clip_fraction``).
    """
    logits, value = jax.vmap(model)(batch.image)
    logits = masked_logits(logits, batch.action_mask)
    new_log_prob = log_prob(logits, batch.action)
    log_ratio = new_log_prob - batch.log_prob
    ratio = jnp.exp(log_ratio)
    advantage = normalise(batch.advantage) if normalise_advantages else batch.advantage
    policy_loss = -jnp.mean(clipped_surrogate(ratio, advantage, clip_eps))
    value_loss = 0.5 * jnp.mean((value - batch.target) ** 2)
    ent = jnp.mean(entropy(logits))
    loss = policy_loss + vf_coef * value_loss - ent_coef * ent
    metrics = {
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": ent,
        "approx_kl": jnp.mean((ratio - 1.0) - log_ratio),
        "clip_fraction": jnp.mean(jnp.abs(ratio - 1.0) > clip_eps),
    }
    return loss, metrics


# --------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------


class PPOConfig(NamedTuple):
    """Hyperparameters of :func:`make_train` (hashable, so one compile per config).

    Attributes:
        task: ``"empty"``, ``"medium"`` or ``"random"``
            (:func:`companion.envs.maze.make_maze_task`).
        num_envs: parallel environments.
        num_steps: rollout length per environment and update.
        total_timesteps: environment steps in all (rounded down to whole updates).
        num_epochs, num_minibatches: passes over each rollout, and minibatches per pass.
        gamma, gae_lambda: discount and GAE lambda.
        clip_eps, vf_coef, ent_coef: PPO loss coefficients.
        learning_rate: Adam step size, decayed linearly to 0 when ``anneal_lr``.
        normalise_advantages: standardise advantages per minibatch (:func:`normalise`).
        max_grad_norm: global gradient-norm clip.
        network: ``"conv"`` (:class:`ActorCritic`) or ``"propagation"``
            (:class:`PropagationActorCritic`).
        channels, hidden_sizes: for ``"conv"``, the convolutions' channels and
            the fully connected widths; for ``"propagation"``, ``channels[0]``
            is the feature width per cell and ``hidden_sizes`` the widths after it.
        iterations: propagation steps of ``"propagation"``.
        reset: how episodes restart within a rollout: ``"pooled"`` (from a pool
            of ``num_envs`` resets drawn once per rollout,
            :mod:`companion.envs.autoreset`) or ``"per_step"`` (jumanji's
            ``AutoResetWrapper``, a fresh reset computed on every step).
        progress_bar: show a jax-tqdm progress bar over updates.
    """

    task: str = "medium"
    num_envs: int = 64
    num_steps: int = 32
    total_timesteps: int = 200_000
    num_epochs: int = 4
    num_minibatches: int = 4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    learning_rate: float = 1e-3
    anneal_lr: bool = True
    normalise_advantages: bool = True
    max_grad_norm: float = 0.5
    channels: tuple = (16,)
    hidden_sizes: tuple = (128, 128)
    network: str = "conv"
    iterations: int = 32
    reset: str = "pooled"
    progress_bar: bool = False

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // self.batch_size

    @property
    def env_steps_run(self) -> int:
        return self.num_updates * self.batch_size


#: The PPO chapter's configuration for the fixed mazes ("empty", "medium"); set
#: ``task`` and ``total_timesteps`` with ``_replace``.
FIXED_MAZE_CONFIG = PPOConfig(
    normalise_advantages=False,
    num_envs=64,
    num_steps=32,
    num_epochs=2,
    num_minibatches=4,
    learning_rate=2e-3,
    channels=(8,),
    hidden_sizes=(64, 64),
)

#: The configuration of the chapter's random-maze agent (``tools/train_random_maze.py``).
RANDOM_MAZE_CONFIG = PPOConfig(
    task="random",
    normalise_advantages=True,
    network="propagation",
    channels=(8,),
    hidden_sizes=(64,),
    iterations=32,
    num_envs=128,
    num_steps=32,
    total_timesteps=1_048_576,
    num_epochs=2,
    num_minibatches=4,
    learning_rate=1e-3,
)


class RunnerState(NamedTuple):
    """The carry of the training loop."""

    params: Any
    opt_state: Any
    env_state: Any
    timestep: Any
    key: jax.Array


NETWORKS = ("conv", "propagation")
RESETS = ("pooled", "per_step")


def make_model(config: PPOConfig, key: jax.Array, grid_shape: tuple = (10, 10)):
    """The network that ``config`` describes.

    Args:
        config: reads ``network``, ``channels``, ``hidden_sizes`` and ``iterations``.
        key: PRNG key for the initial weights.
        grid_shape: ``(rows, cols)`` of the maze (used by :class:`ActorCritic`).

    Returns:
        :class:`ActorCritic` (``network="conv"``) or :class:`PropagationActorCritic`
        (``network="propagation"``); both map one ``(3, rows, cols)`` image to
        ``(logits (4,), value ())``.

    Raises:
        ValueError: for an unknown ``config.network``.
    """
    if config.network == "conv":
        return ActorCritic(
            key, grid_shape, 4, channels=tuple(config.channels),
            hidden_sizes=tuple(config.hidden_sizes),
        )  # fmt: skip
    if config.network == "propagation":
        return PropagationActorCritic(
            key, 4, width=config.channels[0], hidden_sizes=tuple(config.hidden_sizes),
            iterations=config.iterations,
        )  # fmt: skip
    raise ValueError(
        f"config.network: unknown network {config.network!r}; expected one of {NETWORKS}"
    )


def make_optimizer(config: PPOConfig) -> optax.GradientTransformation:
    """Adam with global-norm gradient clipping; the step size decays linearly
    to 0 over all minibatch updates when ``config.anneal_lr``."""
    steps = max(1, config.num_updates * config.num_epochs * config.num_minibatches)
    lr = (
        optax.linear_schedule(config.learning_rate, 0.0, steps)
        if config.anneal_lr
        else config.learning_rate
    )
    return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(lr, eps=1e-5))


def _check_config(config: PPOConfig) -> None:
    if not isinstance(config, PPOConfig):
        raise TypeError(f"config: expected a PPOConfig, got {type(config).__name__}")
    if config.network not in NETWORKS:
        raise ValueError(
            f"config.network: unknown network {config.network!r}; expected one of {NETWORKS}"
        )
    if config.reset not in RESETS:
        raise ValueError(f"config.reset: unknown reset {config.reset!r}; expected one of {RESETS}")
    if config.num_updates < 1:
        raise ValueError(
            f"config.total_timesteps: {config.total_timesteps} is less than one update "
            f"(num_envs * num_steps = {config.batch_size})"
        )
    if config.batch_size % config.num_minibatches:
        raise ValueError(
            f"config.num_minibatches: {config.num_minibatches} does not divide the batch of "
            f"num_envs * num_steps = {config.batch_size} transitions"
        )


def make_train(config: PPOConfig = PPOConfig()):
    """Build ``train(key) -> (model, metrics)`` for ``config``, jitted.

    ``train`` runs the whole experiment in one compiled program: an outer
    ``lax.scan`` over ``config.num_updates`` updates, each a rollout
    (:func:`rollout`), :func:`gae`, and ``num_epochs`` passes of
    ``num_minibatches`` minibatch steps of :func:`ppo_loss` (both inside
    ``lax.scan``). Only the floating-point arrays of the model are trained
    (``eqx.partition(model, eqx.is_inexact_array)``). ``jax.vmap(train)`` runs
    several seeds at once.

    Metrics (float32, one entry per update, shape ``(num_updates,)``):
    ``env_steps``, ``episodes`` (episodes finished in the rollout),
    ``success_rate`` and ``episode_length`` (over those episodes; nan when
    none finished), and the mean of ``policy_loss``, ``value_loss``,
    ``entropy``, ``approx_kl``, ``clip_fraction`` over the update's minibatches.

    Raises:
        TypeError, ValueError: for a config that cannot run (see
        :class:`PPOConfig`), including an unknown ``config.task``.
    """
    _check_config(config)
    env = maze_lib.make_maze_task(config.task)
    grid_shape = (env.num_rows, env.num_cols)
    optimizer = make_optimizer(config)
    n = config.num_envs
    minibatch = config.batch_size // config.num_minibatches

    def update(runner: RunnerState, _):
        key, pool_key, rollout_key, perm_key = jax.random.split(runner.key, 4)
        params, static = runner.params, static_model
        model = eqx.combine(params, static)
        pool = make_reset_pool(env, pool_key, n) if config.reset == "pooled" else None
        env_state, timestep, traj = rollout(
            model, env, pool, runner.env_state, runner.timestep, rollout_key, config.num_steps
        )
        _, value_tp1 = jax.vmap(jax.vmap(model))(traj.next_image)
        advantages, targets = gae(
            traj.reward, traj.value, value_tp1, traj.terminated, traj.done,
            config.gamma, config.gae_lambda,
        )  # fmt: skip
        flat = jax.tree.map(
            lambda x: x.reshape((config.batch_size,) + x.shape[2:]),
            Batch(
                image=traj.image,
                action_mask=traj.action_mask,
                action=traj.action,
                log_prob=traj.log_prob,
                value=traj.value,
                advantage=advantages,
                target=targets,
            ),
        )

        def minibatch_step(carry, batch):
            params, opt_state = carry

            def loss_fn(p):
                return ppo_loss(
                    eqx.combine(p, static), batch,
                    config.clip_eps, config.vf_coef, config.ent_coef,
                    config.normalise_advantages,
                )  # fmt: skip

            (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), metrics

        def epoch(carry, key):
            perm = jax.random.permutation(key, config.batch_size)
            shuffled = jax.tree.map(
                lambda x: x[perm].reshape((config.num_minibatches, minibatch) + x.shape[1:]),
                flat,
            )
            return jax.lax.scan(minibatch_step, carry, shuffled)

        (params, opt_state), loss_metrics = jax.lax.scan(
            epoch, (params, runner.opt_state), jax.random.split(perm_key, config.num_epochs)
        )
        episodes = traj.done.sum()
        lengths = jnp.where(traj.done, traj.step_count, 0)
        metrics = {k: v.mean() for k, v in loss_metrics.items()}
        metrics.update(
            episodes=episodes.astype(jnp.float32),
            success_rate=jnp.where(
                episodes > 0, traj.terminated.sum() / jnp.maximum(episodes, 1), jnp.nan
            ),
            episode_length=jnp.where(
                episodes > 0, lengths.sum() / jnp.maximum(episodes, 1), jnp.nan
            ),
        )
        runner = RunnerState(params, opt_state, env_state, timestep, key)
        return runner, metrics

    static_model = eqx.filter(
        make_model(config, jax.random.PRNGKey(0), grid_shape), eqx.is_inexact_array, inverse=True
    )

    def train(key: jax.Array):
        TRACE_COUNTS[config] += 1
        key, model_key, env_key = jax.random.split(key, 3)
        model = make_model(config, model_key, grid_shape)
        params = eqx.filter(model, eqx.is_inexact_array)
        env_state, timestep = jax.vmap(reset_with_next_obs, in_axes=(None, 0))(
            env, jax.random.split(env_key, n)
        )
        runner = RunnerState(params, optimizer.init(params), env_state, timestep, key)
        body = update
        if config.progress_bar:
            from jax_tqdm import scan_tqdm

            body = scan_tqdm(
                config.num_updates,
                print_rate=max(1, config.num_updates // 10),
                tqdm_type="std",
                desc=f"PPO {config.task}",
            )(lambda r, i: update(r, i))
        runner, metrics = jax.lax.scan(body, runner, jnp.arange(config.num_updates))
        metrics["env_steps"] = (jnp.arange(1, config.num_updates + 1) * config.batch_size).astype(
            jnp.float32
        )
        return eqx.combine(runner.params, static_model), metrics

    return jax.jit(train)


# --------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------


class Evaluation(NamedTuple):
    """Episodes run by :func:`evaluate`; leading axis ``num_episodes``.

    Fields:
        success: bool ``(N,)``, the target was reached within the time limit.
        length: int32 ``(N,)``, steps taken (the time limit when not successful).
        states: the Maze states, leaves ``(time_limit + 1, N, ...)``: the
            reset state, then the state after every step (frozen once the
            episode has ended), for animations and for breadth-first search
            on ``states.walls[0]``.
    """

    success: jax.Array
    length: jax.Array
    states: Any


def evaluate(
    model: ActorCritic,
    env: Any,
    key: jax.Array,
    num_episodes: int = 1000,
    greedy: bool = False,
) -> Evaluation:
    """Run ``num_episodes`` independent episodes of ``env`` with ``model``.

    Each episode starts from ``env.reset`` with its own key (for the random
    Maze: a maze drawn from ``key``, which training never used when ``key`` is
    kept apart from the training keys). Actions are sampled from the masked
    policy, or its most likely legal action when ``greedy``.

    Args:
        model: the actor-critic.
        env: a jumanji Maze (no auto-reset wrapper).
        key: PRNG key.
        num_episodes: number of episodes (static), at least 1.
        greedy: take ``argmax`` of the masked logits instead of sampling.

    Returns:
        :class:`Evaluation`.

    Raises:
        ValueError: if ``num_episodes < 1``.
    """
    if num_episodes < 1:
        raise ValueError(f"num_episodes: expected at least 1, got {num_episodes}")
    reset_key, act_key = jax.random.split(key)
    state, timestep = jax.vmap(env.reset)(jax.random.split(reset_key, num_episodes))

    def act(key, obs):
        logits, _ = model(maze_lib.observation_image(obs))
        logits = masked_logits(logits, obs.action_mask)
        if greedy:
            return jnp.argmax(logits).astype(jnp.int32)
        return jax.random.categorical(key, logits).astype(jnp.int32)

    def body(carry, key_t):
        state, obs, running = carry
        actions = jax.vmap(act)(jax.random.split(key_t, num_episodes), obs)
        next_state, ts = jax.vmap(env.step)(state, actions)
        keep = lambda new, old: jnp.where(  # noqa: E731
            running.reshape(running.shape + (1,) * (new.ndim - 1)), new, old
        )
        state = jax.tree.map(keep, next_state, state)
        obs = jax.tree.map(keep, ts.observation, obs)
        running = running & ~ts.last()
        return (state, obs, running), state

    running = jnp.ones((num_episodes,), bool)
    (last_state, _, _), states = jax.lax.scan(
        body,
        (state, timestep.observation, running),
        jax.random.split(act_key, env.time_limit),
    )
    states = jax.tree.map(lambda first, rest: jnp.concatenate([first[None], rest]), state, states)
    return Evaluation(
        success=reached_target(last_state),
        length=last_state.step_count.astype(jnp.int32),
        states=states,
    )


def shortest_path_lengths(states: Any) -> np.ndarray:
    """Breadth-first-search distance from start to target of each episode.

    Args:
        states: batched Maze states (leaves ``(N, ...)``), for example
            ``jax.tree.map(lambda x: x[0], evaluation.states)``.

    Returns:
        int64 ``(N,)``; -1 where the target cannot be reached.
    """
    walls = np.asarray(states.walls)
    rows, cols = np.asarray(states.agent_position.row), np.asarray(states.agent_position.col)
    t_rows, t_cols = np.asarray(states.target_position.row), np.asarray(states.target_position.col)
    return np.array(
        [
            maze_lib.shortest_path_length(walls[i], (rows[i], cols[i]), (t_rows[i], t_cols[i]))
            for i in range(walls.shape[0])
        ]
    )
