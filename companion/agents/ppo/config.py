"""PPO hyperparameters (:class:`PPOConfig`), their checks, the optimiser and the default loss.

The chapters' agents: :data:`FIXED_MAZE_CONFIG` / :data:`FIXED_MAZE_NETWORK`, ``RANDOM_MAZE_*``
and ``VALUE_ITERATION_MAZE_CONFIG`` / ``VALUE_ITERATION_NETWORK``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import optax

from companion._validate import number_in, one_of, positive_int, positive_number
from companion.agents.ppo.losses import ppo_loss
from companion.agents.ppo.networks import (
    ActorCritic,
    PropagationActorCritic,
    ValueIterationActorCritic,
)

#: Names accepted by ``PPOConfig.reset``.
RESETS = ("pooled", "per_step")


class PPOConfig(NamedTuple):
    """Hyperparameters of :func:`make_train` (hashable, so one compile per config).

    Attributes:
        num_envs: parallel environments.
        num_steps: rollout length per environment and update.
        total_timesteps: environment steps in all (rounded down to whole updates).
        num_epochs, num_minibatches: passes over each rollout, and minibatches per pass.
        gamma, gae_lambda: discount and GAE lambda.
        clip_eps, vf_coef, ent_coef: PPO loss coefficients.
        learning_rate: Adam step size, decayed linearly to 0 when ``anneal_lr``.
        normalise_advantages: standardise advantages per minibatch (:func:`normalise`).
        max_grad_norm: global gradient-norm clip.
        reset: ``"pooled"`` (a reset pool per rollout) or ``"per_step"`` (``AutoResetWrapper``).
    """

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
    reset: str = "pooled"

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
#: ``total_timesteps`` with ``_replace``.
FIXED_MAZE_CONFIG = PPOConfig(
    normalise_advantages=False,
    num_envs=64,
    num_steps=32,
    num_epochs=2,
    num_minibatches=4,
    learning_rate=2e-3,
)
#: The PPO chapter's network for the fixed 10 x 10 mazes: one convolution, two dense layers;
#: ``FIXED_MAZE_NETWORK(key)`` is an :class:`ActorCritic` with initial weights from ``key``.
FIXED_MAZE_NETWORK = functools.partial(
    ActorCritic, grid_shape=(10, 10), channels=(8,), hidden_sizes=(64, 64)
)

#: The configuration of the chapter's random-maze agent (``tools/train_random_maze.py``).
RANDOM_MAZE_CONFIG = PPOConfig(
    normalise_advantages=True,
    num_envs=128,
    num_steps=32,
    total_timesteps=1_048_576,
    num_epochs=2,
    num_minibatches=4,
    learning_rate=1e-3,
)

#: The random-maze agent's network: 8 features per cell, 32 propagation steps.
RANDOM_MAZE_NETWORK = functools.partial(
    PropagationActorCritic, width=8, hidden_sizes=(64,), iterations=32
)

#: The configuration of the chapter's planning agent on random mazes
#: (``tools/train_random_maze.py --agent value_iteration``): an eighth of the budget above.
VALUE_ITERATION_MAZE_CONFIG = RANDOM_MAZE_CONFIG._replace(total_timesteps=131_072)
#: The planning agent's network: 99 backups (rows * cols - 1, enough to converge on any
#: 10 x 10 maze), 4 value channels, a value head of 64 units.
VALUE_ITERATION_NETWORK = functools.partial(
    ValueIterationActorCritic, width=4, hidden_sizes=(64,), iterations=99
)


def make_optimizer(config: PPOConfig) -> optax.GradientTransformation:
    """Adam (eps 1e-5) with global-norm gradient clipping; the step size decays
    linearly to 0 over all minibatch updates when ``config.anneal_lr``.

    Raises:
        TypeError: if ``config`` is not a :class:`PPOConfig`.
    """
    if not isinstance(config, PPOConfig):
        raise TypeError(f"config: expected a PPOConfig, got {type(config).__name__}")
    steps = max(1, config.num_updates * config.num_epochs * config.num_minibatches)
    lr = (
        optax.linear_schedule(config.learning_rate, 0.0, steps)
        if config.anneal_lr
        else config.learning_rate
    )
    return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(lr, eps=1e-5))


def check_config(config: PPOConfig) -> PPOConfig:
    """Return ``config`` if :func:`make_train` can run it.

    Raises:
        TypeError: if ``config`` is not a :class:`PPOConfig`, a size is not an int, or a
            coefficient or rate is not a number.
        ValueError: naming the field: an unknown ``reset``, a non-positive size, ``learning_rate``
            or ``max_grad_norm``, ``gamma`` or ``gae_lambda`` outside [0, 1], ``clip_eps`` outside
            (0, 1], a negative coefficient, a budget below one update, or ``num_minibatches``
            that does not divide the batch.
    """
    if not isinstance(config, PPOConfig):
        raise TypeError(f"config: expected a PPOConfig, got {type(config).__name__}")
    one_of(config.reset, RESETS, "config.reset")
    for field in (
        "num_envs",
        "num_steps",
        "total_timesteps",
        "num_epochs",
        "num_minibatches",
    ):
        positive_int(getattr(config, field), f"config.{field}")
    number_in(config.gamma, "config.gamma", 0.0, 1.0)
    number_in(config.gae_lambda, "config.gae_lambda", 0.0, 1.0)
    number_in(config.clip_eps, "config.clip_eps", 0.0, 1.0, low_open=True)
    number_in(config.vf_coef, "config.vf_coef", 0.0, float("inf"))
    number_in(config.ent_coef, "config.ent_coef", 0.0, float("inf"))
    positive_number(config.learning_rate, "config.learning_rate")
    positive_number(config.max_grad_norm, "config.max_grad_norm")
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
    return config


def default_loss(config: PPOConfig, loss: Callable = ppo_loss) -> Callable:
    """``loss`` with ``config``'s ``clip_eps``, ``vf_coef``, ``ent_coef`` and
    ``normalise_advantages`` bound by keyword: the ``loss_fn(model, batch) -> (loss, metrics)``
    that :func:`~companion.agents.ppo.make_train` takes.

    Args:
        loss: a function with :func:`~companion.agents.ppo.ppo_loss`'s keyword arguments.

    Raises:
        TypeError: if ``config`` is not a :class:`PPOConfig` or ``loss`` is not callable.
    """
    if not isinstance(config, PPOConfig):
        raise TypeError(f"config: expected a PPOConfig, got {type(config).__name__}")
    if not callable(loss):
        raise TypeError(f"loss: expected a function, got {type(loss).__name__}")
    return functools.partial(
        loss,
        clip_eps=config.clip_eps,
        vf_coef=config.vf_coef,
        ent_coef=config.ent_coef,
        normalise_advantages=config.normalise_advantages,
    )
