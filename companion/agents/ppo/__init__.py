"""PPO (Schulman et al., 2017) on jumanji's Maze, with equinox and optax.

Networks, masked policy, rollouts, GAE (Schulman et al., 2016), loss, config, training
(structure of PureJaxRL's PPO, Lu et al., 2022), evaluation and the saved agents.
"""

from companion.agents.ppo.config import (
    FIXED_MAZE_CONFIG,
    FIXED_MAZE_NETWORK,
    RANDOM_MAZE_CONFIG,
    RANDOM_MAZE_NETWORK,
    RESETS,
    VALUE_ITERATION_MAZE_CONFIG,
    VALUE_ITERATION_NETWORK,
    PPOConfig,
    check_config,
    default_loss,
    make_optimizer,
)
from companion.agents.ppo.evaluate import (
    Evaluation,
    evaluate,
    shortest_path_lengths,
)
from companion.agents.ppo.losses import Batch, clipped_surrogate, gae, normalise, ppo_loss
from companion.agents.ppo.networks import (
    ActorCritic,
    PropagationActorCritic,
    ValueIterationActorCritic,
    model_skeleton,
    neighbour,
    orthogonal_linear,
    trained_model,
)
from companion.agents.ppo.policy import entropy, log_prob, masked_logits
from companion.agents.ppo.rollout import Transition, next_values, reached_target, rollout
from companion.agents.ppo.train import (
    RunnerState,
    Trainer,
    make_train,
    make_trainer,
    success_by_start,
)

__all__ = [
    "ActorCritic",
    "Batch",
    "Evaluation",
    "FIXED_MAZE_CONFIG",
    "FIXED_MAZE_NETWORK",
    "PPOConfig",
    "PropagationActorCritic",
    "RANDOM_MAZE_CONFIG",
    "RANDOM_MAZE_NETWORK",
    "RESETS",
    "RunnerState",
    "Trainer",
    "Transition",
    "VALUE_ITERATION_MAZE_CONFIG",
    "VALUE_ITERATION_NETWORK",
    "ValueIterationActorCritic",
    "check_config",
    "clipped_surrogate",
    "default_loss",
    "entropy",
    "evaluate",
    "gae",
    "log_prob",
    "make_optimizer",
    "make_train",
    "make_trainer",
    "masked_logits",
    "model_skeleton",
    "neighbour",
    "next_values",
    "normalise",
    "orthogonal_linear",
    "ppo_loss",
    "reached_target",
    "rollout",
    "shortest_path_lengths",
    "success_by_start",
    "trained_model",
]
