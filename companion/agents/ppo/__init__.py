"""PPO (Schulman et al., 2017) on jumanji's Maze, with equinox and optax.

The pieces, each a pure function over pytrees, one module each:

- :mod:`~companion.agents.ppo.networks`: :class:`ActorCritic`,
  :class:`PropagationActorCritic` and :class:`ValueIterationActorCritic`, equinox modules from
  the 3-channel maze image (:func:`companion.envs.maze.observation_image`) to policy logits
  and a state value, described by their sizes (:class:`ConvNet`, :class:`PropagationNet`,
  :class:`ValueIterationNet`) for :func:`make_train`;
- :mod:`~companion.agents.ppo.policy`: :func:`masked_logits`,
  :func:`log_prob`, :func:`entropy`, a categorical policy over the *legal*
  actions only (illegal actions get logit ``-inf``, hence probability exactly
  0; log-probabilities, entropy and their gradients stay finite);
- :mod:`~companion.agents.ppo.rollout`: :func:`rollout`, ``num_steps`` steps
  of ``num_envs`` environments inside ``jax.lax.scan``, and :func:`next_values`,
  the V(s_{t+1}) that GAE bootstraps from;
- :mod:`~companion.agents.ppo.losses`: :func:`gae`, generalised advantage
  estimation (Schulman et al., 2016) that cuts the recursion at episode
  boundaries and bootstraps unless the episode *terminated*; :func:`ppo_loss`, the clipped surrogate objective, a
  value loss and an entropy bonus;
- :mod:`~companion.agents.ppo.config`: :class:`PPOConfig`, its checks, the optimiser and
  the default loss;
- :mod:`~companion.agents.ppo.train`: :func:`make_train`, the whole
  experiment as one pure function ``train(key)``, which the caller jits once per
  configuration and ``jax.vmap``-s over seeds (structure of PureJaxRL's PPO, Lu et al., 2022);
- :mod:`~companion.agents.ppo.evaluate`: :func:`evaluate` on fresh episodes.
"""

from companion.agents.ppo.evaluate import (
    Evaluation,
    evaluate,
    shortest_path_lengths,
)
from companion.agents.ppo.losses import Batch, clipped_surrogate, gae, normalise, ppo_loss
from companion.agents.ppo.networks import (
    NETWORKS,
    ActorCritic,
    ConvNet,
    PropagationActorCritic,
    PropagationNet,
    ValueIterationActorCritic,
    ValueIterationNet,
    check_network,
    make_model,
    neighbour,
    orthogonal_linear,
)
from companion.agents.ppo.policy import entropy, log_prob, masked_logits
from companion.agents.ppo.rollout import Transition, next_values, reached_target, rollout
from companion.agents.ppo.train import (
    FIXED_MAZE_CONFIG,
    FIXED_MAZE_NETWORK,
    RANDOM_MAZE_CONFIG,
    RANDOM_MAZE_NETWORK,
    RESETS,
    VALUE_ITERATION_MAZE_CONFIG,
    VALUE_ITERATION_NETWORK,
    PPOConfig,
    RunnerState,
    Trainer,
    check_config,
    default_loss,
    make_optimizer,
    make_train,
    make_trainer,
    success_by_start,
)

__all__ = [
    "ActorCritic",
    "Batch",
    "ConvNet",
    "Evaluation",
    "FIXED_MAZE_CONFIG",
    "FIXED_MAZE_NETWORK",
    "NETWORKS",
    "PPOConfig",
    "PropagationActorCritic",
    "PropagationNet",
    "RANDOM_MAZE_CONFIG",
    "RANDOM_MAZE_NETWORK",
    "RESETS",
    "RunnerState",
    "Trainer",
    "Transition",
    "VALUE_ITERATION_MAZE_CONFIG",
    "VALUE_ITERATION_NETWORK",
    "ValueIterationActorCritic",
    "ValueIterationNet",
    "check_config",
    "check_network",
    "clipped_surrogate",
    "default_loss",
    "entropy",
    "evaluate",
    "gae",
    "log_prob",
    "make_model",
    "make_optimizer",
    "make_train",
    "make_trainer",
    "masked_logits",
    "neighbour",
    "next_values",
    "normalise",
    "orthogonal_linear",
    "ppo_loss",
    "reached_target",
    "rollout",
    "shortest_path_lengths",
    "success_by_start",
]
