"""A minimal port of the blog approach that the PPO chapter improves on (the baseline).

What it keeps from that approach, on purpose:

- environments through jumanji's wrappers, ``VmapWrapper(AutoResetWrapper(env))``:
  under ``vmap`` the auto-reset ``cond`` runs ``reset`` for every environment on
  every step, so each step pays for a fresh reset (for ``Maze-v0``, a new maze);
- the loss masks illegal actions with ``jnp.where(mask, logits, 1.0)``, the
  misplaced-parenthesis bug: illegal actions keep a logit of 1.0 in the update,
  so the ratio and entropy are those of a different distribution than the one
  that acted (acting masks with ``-inf``, as the rollout did);
- an MLP on the flattened observation; per-update rollouts, GAE and minibatch
  epochs inside ``lax.scan``; no reset pool; the blog's sizes (32 environments,
  128 steps, 819,200 steps on the medium maze).

It runs on the book's tasks (``make_maze_task``: the medium maze with all 9
start/target pairs, the random maze), and on ``"medium-blog"``: the medium
maze as the blog's generator drew it, with ``randint(0, n - 1)`` picking only
the first 2 of the 3 start cells and of the 3 target cells (4 pairs). Nothing
here is used by the book.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from companion.envs import maze as maze_lib
from companion.envs.jumanji_import import import_jumanji

import_jumanji()
from jumanji.wrappers import AutoResetWrapper, VmapWrapper  # noqa: E402


class BlogConfig(NamedTuple):
    task: str = "medium"
    num_envs: int = 32
    num_steps: int = 128
    total_timesteps: int = 819_200
    num_epochs: int = 4
    num_minibatches: int = 4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    learning_rate: float = 3e-4
    max_grad_norm: float = 0.5
    hidden: int = 64
    mask_bug: bool = True

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // (self.num_envs * self.num_steps)


class MLPActorCritic(eqx.Module):
    actor: eqx.nn.MLP
    critic: eqx.nn.MLP

    def __init__(self, key, in_size, hidden):
        k1, k2 = jax.random.split(key)
        self.actor = eqx.nn.MLP(in_size, 4, hidden, 2, activation=jnp.tanh, key=k1)
        self.critic = eqx.nn.MLP(in_size, "scalar", hidden, 2, activation=jnp.tanh, key=k2)

    def __call__(self, x):
        return self.actor(x), self.critic(x)


def make_env(task: str):
    """A Maze for ``task``: a name of ``make_maze_task``, or ``"medium-blog"`` (4 pairs)."""
    if task == "medium-blog":
        walls, starts, targets = maze_lib.parse_maze(maze_lib.MEDIUM_MAZE)
        generator = maze_lib.FixedMazeGenerator(walls, starts[:2], targets[:2])
        return maze_lib.make_maze(generator=generator)
    return maze_lib.make_maze_task(task)


def _features(obs):
    return jax.vmap(maze_lib.observation_image)(obs).reshape(obs.walls.shape[0], -1)


def make_train(config: BlogConfig):
    """``train(key) -> (params, metrics)``; ``eqx.combine(params, static(config))`` is the model."""
    env = VmapWrapper(AutoResetWrapper(make_env(config.task)))
    n, T = config.num_envs, config.num_steps
    minibatch = n * T // config.num_minibatches
    optimizer = optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate)
    )

    def loss_fn(params, static, batch):
        obs, mask, action, old_logp, adv, target = batch
        logits, value = jax.vmap(eqx.combine(params, static))(obs)
        # The blog's masking in the loss: illegal logits become 1.0, not -inf.
        logits = (
            jnp.where(mask, logits, 1.0) if config.mask_bug else jnp.where(mask, logits, -jnp.inf)
        )
        logp_all = jax.nn.log_softmax(logits)
        logp = jnp.take_along_axis(logp_all, action[:, None], 1)[:, 0]
        ratio = jnp.exp(logp - old_logp)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        pg = -jnp.mean(jnp.minimum(ratio * adv, jnp.clip(ratio, 0.8, 1.2) * adv))
        # Entropy with log p replaced by 0 where p = 0 *before* the product: a where() after it
        # would leave a nan gradient once the mask is -inf.
        safe_logp = jnp.where(jnp.isfinite(logits), logp_all, 0.0)
        ent = -jnp.mean(jnp.sum(jnp.exp(safe_logp) * safe_logp * jnp.isfinite(logits), -1))
        return pg + config.vf_coef * 0.5 * jnp.mean((value - target) ** 2) - config.ent_coef * ent

    def train(key):
        key, k_model, k_env = jax.random.split(key, 3)
        model = MLPActorCritic(k_model, 300, config.hidden)
        params, static = eqx.partition(model, eqx.is_inexact_array)
        opt_state = optimizer.init(params)
        state, timestep = env.reset(jax.random.split(k_env, n))

        def update(carry, _):
            params, opt_state, state, timestep, key = carry
            model = eqx.combine(params, static)

            def step(carry, key):
                state, timestep = carry
                obs = timestep.observation
                x = _features(obs)
                logits, value = jax.vmap(model)(x)
                logits = jnp.where(obs.action_mask, logits, -jnp.inf)
                action = jax.random.categorical(key, logits)
                logp = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], 1)[:, 0]
                state, timestep = env.step(state, action)
                out = (x, obs.action_mask, action, logp, value, timestep.reward,
                       timestep.discount, timestep.last())  # fmt: skip
                return (state, timestep), out

            key, k_roll, k_perm = jax.random.split(key, 3)
            (state, timestep), traj = jax.lax.scan(
                step, (state, timestep), jax.random.split(k_roll, T)
            )
            x, mask, action, logp, value, reward, discount, last = traj
            _, last_value = jax.vmap(model)(_features(timestep.observation))

            def gae_step(carry, inp):
                adv, next_value = carry
                r, v, d = inp
                delta = r + config.gamma * d * next_value - v
                adv = delta + config.gamma * config.gae_lambda * d * adv
                return (adv, v), adv

            _, adv = jax.lax.scan(
                gae_step, (jnp.zeros(n), last_value), (reward, value, discount), reverse=True
            )
            batch = jax.tree.map(
                lambda a: a.reshape((n * T,) + a.shape[2:]),
                (x, mask, action, logp, adv, adv + value),
            )

            def epoch(carry, key):
                perm = jax.random.permutation(key, n * T)
                mbs = jax.tree.map(
                    lambda a: a[perm].reshape((config.num_minibatches, minibatch) + a.shape[1:]),
                    batch,
                )

                def mb_step(carry, mb):
                    params, opt_state = carry
                    grads = jax.grad(loss_fn)(params, static, mb)
                    updates, opt_state = optimizer.update(grads, opt_state, params)
                    return (optax.apply_updates(params, updates), opt_state), None

                return jax.lax.scan(mb_step, carry, mbs)[0], None

            (params, opt_state), _ = jax.lax.scan(
                epoch, (params, opt_state), jax.random.split(k_perm, config.num_epochs)
            )
            episodes = last.sum()
            successes = (reward > 0).sum()
            return (params, opt_state, state, timestep, key), (episodes, successes)

        (params, *_), (episodes, successes) = jax.lax.scan(
            update, (params, opt_state, state, timestep, key), length=config.num_updates
        )
        return params, {"episodes": episodes, "successes": successes}

    return train


def static(config: BlogConfig):
    """The non-array part of the port's model (activation functions), to rebuild it from params."""
    return eqx.partition(
        MLPActorCritic(jax.random.PRNGKey(0), 300, config.hidden), eqx.is_inexact_array
    )[1]


def on_images(model: MLPActorCritic):
    """The port's network as a function of one ``(3, rows, cols)`` image (for ``ppo.evaluate``)."""
    return lambda image: model(image.reshape(-1))
