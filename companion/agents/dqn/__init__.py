"""DQN (Mnih et al., 2015) on the JAX CartPole, with dm-haiku and optax.

The pieces, each a pure function, one module each (:mod:`~companion.agents.dqn.networks`,
:mod:`~companion.agents.dqn.losses`, :mod:`~companion.agents.dqn.train`,
:mod:`~companion.agents.dqn.evaluate`):

- :func:`make_q_network`: an MLP from observations to one Q-value per action,
  through ``hk.without_apply_rng(hk.transform(...))``;
- :func:`epsilon_greedy`: exploration, with epsilon from an optax schedule;
- :func:`td_target`: ``r + gamma * (1 - terminated) * max_a Q_target(s', a)``;
  truncation is *not* termination, so a truncated transition bootstraps from
  its true final observation;
- :func:`dqn_loss`: squared (or Huber) loss between Q(s, a) and the TD
  target, with ``jax.lax.stop_gradient`` on the target;
- the target network follows the online parameters every
  ``target_update_period`` gradient steps, by a hard copy or by Polyak
  averaging (:func:`update_target`, with ``optax.incremental_update``).

:func:`make_train` puts them together into one function ``train(key)`` that
runs a whole experiment inside ``jax.lax.scan`` and can be ``jax.vmap``-ed
over seeds. The structure follows PureJaxRL's DQN (Lu et al., 2022).
"""

from companion.agents.dqn.evaluate import greedy_returns
from companion.agents.dqn.losses import Transition, dqn_loss, td_target, update_target
from companion.agents.dqn.networks import epsilon_greedy, make_q_network
from companion.agents.dqn.train import (
    DQNConfig,
    RunnerState,
    Trainer,
    check_config,
    make_optimizer,
    make_train,
    make_trainer,
)

__all__ = [
    "DQNConfig",
    "RunnerState",
    "Trainer",
    "Transition",
    "check_config",
    "dqn_loss",
    "epsilon_greedy",
    "greedy_returns",
    "make_optimizer",
    "make_q_network",
    "make_train",
    "make_trainer",
    "td_target",
    "update_target",
]
