"""The tests' tiny configurations and networks, one set for every test that trains.

Most of a test run is XLA compiling, and a program is compiled for its configuration, its
network and its shapes: two tests that train with the same configuration and network run one
program, which JAX's persistent compilation cache (``conftest.py``) then holds once for the
whole suite and the next run. So the tests import these, and a test that needs another size
derives it here (a config with ``_replace``, a network with ``functools.partial(network,
...)``) and says why where it does.

- ``TINY_DQN``: DQN on CartPole, 1,200 environment steps over 2 environments: 200 before
  learning starts, then 5 blocks of 200, each ended by a greedy evaluation of 2 episodes;
  ``TINY_Q_NETWORK``: one hidden layer of 8.
- ``TINY_PPO``: PPO, 8 environments by 8 steps, 4 updates of 1 epoch of 2 minibatches;
  ``TINY_CONV_NET``: one convolution of 4 channels, one hidden layer of 16, for 10 x 10 mazes;
  ``TINY_PROPAGATION_NET``: the propagation network, 3 iterations of width 2. Each is a
  network as ``ppo.make_train`` takes it, ``network(key) -> model``: a ``functools.partial``
  of the model class and its sizes.
"""

import functools

from companion.agents import dqn, ppo

TINY_DQN = dqn.DQNConfig(
    num_envs=2,
    total_steps=1_200,
    learning_starts=200,
    buffer_capacity=500,
    batch_size=32,
    eval_every=100,
    eval_episodes=2,
    epsilon_decay_steps=500,
)
#: ``make_q_network`` returns one object per size, so every test's network is this one.
TINY_Q_NETWORK = dqn.make_q_network(2, (8,))

TINY_PPO = ppo.PPOConfig(
    num_envs=8,
    num_steps=8,
    total_timesteps=256,
    num_epochs=1,
    num_minibatches=2,
)
TINY_CONV_NET = functools.partial(
    ppo.ActorCritic, grid_shape=(10, 10), channels=(4,), hidden_sizes=(16,)
)
TINY_PROPAGATION_NET = functools.partial(
    ppo.PropagationActorCritic, width=2, hidden_sizes=(8,), iterations=3
)
