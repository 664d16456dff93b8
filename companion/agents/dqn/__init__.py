"""DQN (Mnih et al., 2015) on the JAX CartPole, with dm-haiku and optax.

Q-network and exploration (``networks``), TD target and loss (``losses``), training loop
(``train``), greedy evaluation (``evaluate``). Follows PureJaxRL's DQN (Lu et al., 2022).
"""

from companion.agents.dqn.evaluate import greedy_returns
from companion.agents.dqn.losses import Transition, dqn_loss, td_target, update_target
from companion.agents.dqn.networks import epsilon_greedy, make_q_network
from companion.agents.dqn.train import (
    DQNConfig,
    RunnerState,
    check_config,
    make_optimizer,
    make_train,
)

__all__ = [
    "DQNConfig",
    "RunnerState",
    "Transition",
    "check_config",
    "dqn_loss",
    "epsilon_greedy",
    "greedy_returns",
    "make_optimizer",
    "make_q_network",
    "make_train",
    "td_target",
    "update_target",
]
