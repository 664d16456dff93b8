"""Every public function and config of ``companion`` rejects bad input with a clear error.

One table: each row calls a public name with one bad input (wrong shape, dtype, range, an
empty list, zero sizes, an unknown name) and expects an error of the right kind whose
message names the argument. Errors that exist only at run time inside ``jit`` are tested
under ``jit``. A last test lists the public names of the package and fails for any name that
has no row here (or no reason to be exempt), so a new function cannot skip this table.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import companion
from companion import (
    bench,
    budget,
    diagrams,
    parallel,
    playground,
    playground_widget,
    quiz,
    replay,
    stats,
    tabular,
    trees,
    viz,
)
from companion.agents import dqn, ppo
from companion.agents.ppo import saved
from companion.checks import basics, core
from companion.checks import bugs as bug_checks
from companion.checks import cartpole as cartpole_checks
from companion.checks import checkpointing as checkpoint_checks
from companion.checks import compilations as compilation_checks
from companion.checks import dqn as dqn_checks
from companion.checks import endings as ending_checks
from companion.checks import envs as env_checks
from companion.checks import foundations as foundation_checks
from companion.checks import generalising as generalising_checks
from companion.checks import keys as key_checks
from companion.checks import networks as net_checks
from companion.checks import parallel as parallel_checks
from companion.checks import performance as perf_checks
from companion.checks import ppo as ppo_checks
from companion.checks import ppo_rollout as ppo_rollout_checks
from companion.checks import replay_windows as replay_window_checks
from companion.checks import silent_bugs as silent_bug_checks
from companion.debug import checked
from companion.envs import autoreset, cartpole, jumanji_import, maze

from jumanji.wrappers import AutoResetWrapper, VmapAutoResetWrapper  # after companion's import

# Value checks inside a compiled program run under companion.debug.checked (checkify), which
# raises checkify's JaxRuntimeError, a ValueError; a plain jit leaves them out.
RUNTIME = ValueError


class Case(NamedTuple):
    target: str  # the public name, module.name
    call: Callable[[pytest.MonkeyPatch], Any]
    error: type
    match: str


def _key(seed=0):
    return jax.random.key(seed)


def _maze_obs():
    env = maze.make_maze_task("medium")
    return env.reset(_key())[1].observation


def _tiny_ppo(**changes):
    return ppo.PPOConfig(
        num_envs=4,
        num_steps=4,
        total_timesteps=64,
        num_minibatches=2,
    )._replace(**changes)


TINY_NET = ppo.ConvNet(channels=(2,), hidden_sizes=(4,))
EMPTY = maze.make_maze_task("empty")
WRAPPED = AutoResetWrapper(EMPTY)  # resets by itself: would hide the episode ends
UNWRAP = "env: expected a jumanji Maze without wrappers, got AutoResetWrapper\\(Maze\\)"


def _tiny_dqn(**changes):
    return dqn.DQNConfig(
        num_envs=2,
        total_steps=400,
        learning_starts=200,
        batch_size=8,
        eval_every=50,
        buffer_capacity=100,
    )._replace(**changes)


DQN_NET = dqn.make_q_network(2, (8,))
CARTPOLE = cartpole.CartPole()


def _buffer():
    return replay.replay_init({"x": jnp.zeros(2)}, 4)


def _transitions(T, N):
    """A rollout's Transition of zeros, leaves (T, N)."""
    return ppo.Transition(*(jnp.zeros((T, N)),) * len(ppo.Transition._fields))


def _jit_rollout_bad_key():
    env = maze.make_maze_task("empty")
    model = ppo.ActorCritic(_key(), channels=(2,), hidden_sizes=(4,))
    state, ts = jax.vmap(autoreset.reset_with_next_obs, in_axes=(None, 0))(
        env, jax.random.split(_key(1), 2)
    )
    return ppo.rollout(model, env, None, state, ts, 7, 3)


def _rollout_without_next_obs():
    env = maze.make_maze_task("empty")
    model = ppo.ActorCritic(_key(), channels=(2,), hidden_sizes=(4,))
    state, ts = jax.vmap(env.reset)(jax.random.split(_key(1), 2))
    return ppo.rollout(model, env, None, state, ts, _key(2), 3)


def _pool_step_on_a_batch():
    env = maze.make_maze_task("empty")
    pool = autoreset.make_reset_pool(env, _key(), 2)
    state, _ = autoreset.reset_with_next_obs(env, _key(1))
    return autoreset.pooled_autoreset_step(env, pool, state, jnp.zeros(3, jnp.int32))


def _ppo_loss_with_a_vector_value_head():
    model = ppo.ActorCritic(_key(), channels=(2,), hidden_sizes=(4,))
    wide = lambda image: (model(image)[0], model(image)[1][None])  # noqa: E731  (1,), not ()
    batch = ppo.Batch(
        image=jnp.zeros((5, 3, 10, 10)),
        action_mask=jnp.ones((5, 4), bool),
        action=jnp.zeros(5, jnp.int32),
        log_prob=jnp.zeros(5),
        value=jnp.zeros(5),
        advantage=jnp.zeros(5),
        target=jnp.zeros(5),
    )
    return ppo.ppo_loss(wide, batch)


def _dqn_params():
    return dqn.make_q_network(2, (8,)).init(_key(), jnp.zeros((1, 4)))


# fmt: off
CASES = [
    Case('agents.ppo.policy.masked_logits',
         lambda mp: ppo.masked_logits(jnp.zeros(4), jnp.ones(4)),
         TypeError, 'action_mask: expected dtype bool'),
    Case('agents.ppo.policy.masked_logits',
         lambda mp: ppo.masked_logits(jnp.zeros(4), jnp.ones(3, bool)),
         ValueError, 'action_mask: shape'),
    Case('agents.ppo.policy.masked_logits',
         lambda mp: checked(ppo.masked_logits)(jnp.zeros((2, 4)), jnp.zeros((2, 4), bool).at[0].set(True)),
         RUNTIME, 'action_mask: a row has no legal action'),
    Case('agents.ppo.policy.log_prob',
         lambda mp: checked(ppo.log_prob)(jnp.zeros(4), -1),
         RUNTIME, 'action: expected values in 0 \\.\\. 3'),
    Case('agents.ppo.policy.log_prob',
         lambda mp: checked(ppo.log_prob)(jnp.zeros(4), 4),
         RUNTIME, 'action: expected values in 0 \\.\\. 3'),
    Case('agents.ppo.policy.masked_logits',
         lambda mp: ppo.masked_logits(jnp.zeros((2, 4)), jnp.zeros((2, 4), bool).at[0].set(True)),
         ValueError, 'action_mask: a row has no legal action'),
    Case('agents.ppo.policy.log_prob',
         lambda mp: ppo.log_prob(jnp.zeros(4), 7),
         ValueError, 'action: expected values in 0 \\.\\. 3'),
    Case('debug.checked',
         lambda mp: checked('train'),
         TypeError, 'fn: expected a function'),
    Case('replay.replay_sample',
         lambda mp: replay.replay_sample(_buffer(), _key(), 2),
         ValueError, 'replay_sample: the buffer is empty'),
    Case('agents.ppo.policy.log_prob',
         lambda mp: ppo.log_prob(jnp.zeros(4), 1.0),
         TypeError, 'action: expected an integer dtype'),
    Case('agents.ppo.policy.log_prob',
         lambda mp: ppo.log_prob(jnp.zeros((3, 4)), jnp.zeros(2, jnp.int32)),
         ValueError, 'action: shape'),
    Case('agents.ppo.policy.entropy',
         lambda mp: checked(ppo.entropy)(jnp.full(4, -jnp.inf)),
         RUNTIME, 'logits: a row has no finite logit'),
    Case('agents.ppo.layers.orthogonal_linear',
         lambda mp: ppo.orthogonal_linear(_key(), 0, 4, 1.0),
         ValueError, 'in_size'),
    Case('agents.ppo.layers.orthogonal_linear',
         lambda mp: ppo.orthogonal_linear(_key(), 4, 4, -1.0),
         ValueError, 'gain'),
    Case('agents.ppo.networks.ActorCritic',
         lambda mp: ppo.ActorCritic(_key(), hidden_sizes=()),
         ValueError, 'hidden_sizes'),
    Case('agents.ppo.networks.ActorCritic',
         lambda mp: ppo.ActorCritic(_key(), grid_shape=(10,)),
         ValueError, 'grid_shape'),
    Case('agents.ppo.networks.ActorCritic',
         lambda mp: ppo.ActorCritic(_key(), channels=(0,)),
         ValueError, 'channels'),
    Case('agents.ppo.networks.ActorCritic',
         lambda mp: ppo.ActorCritic(_key())(jnp.zeros((3, 12, 12))),
         ValueError, 'image: shape .* grid_shape'),
    Case('agents.ppo.networks.ActorCritic',
         lambda mp: ppo.ActorCritic(_key())(jnp.zeros((8, 3, 10, 10))),
         ValueError, 'image: expected one image .* jax.vmap'),
    Case('agents.ppo.networks.PropagationActorCritic',
         lambda mp: ppo.PropagationActorCritic(_key(), iterations=0),
         ValueError, 'iterations'),
    Case('agents.ppo.networks.PropagationActorCritic',
         lambda mp: ppo.PropagationActorCritic(_key(), width=2.5),
         TypeError, 'width'),
    Case('agents.ppo.networks.PropagationActorCritic',
         lambda mp: ppo.PropagationActorCritic(_key())(jnp.zeros((3, 10, 10), jnp.int32)),
         TypeError, 'image: expected a float image'),
    Case('agents.ppo.planning.ValueIterationActorCritic',
         lambda mp: ppo.ValueIterationActorCritic(_key(), iterations=0),
         ValueError, 'iterations'),
    Case('agents.ppo.planning.ValueIterationActorCritic',
         lambda mp: ppo.ValueIterationActorCritic(_key(), policy_hidden=0),
         ValueError, 'policy_hidden'),
    Case('agents.ppo.planning.ValueIterationActorCritic',
         lambda mp: ppo.ValueIterationActorCritic(_key())(jnp.zeros((3, 10, 10), jnp.int32)),
         TypeError, 'image: expected a float image'),
    Case('agents.ppo.planning.ValueIterationActorCritic',
         lambda mp: ppo.ValueIterationActorCritic(_key()).values(jnp.zeros((10, 10))),
         ValueError, 'image: expected one image of shape \\(3, rows, cols\\)'),
    Case('agents.ppo.saved.saved_agent_files',
         lambda mp: saved.saved_agent_files('transformer'),
         ValueError, "network: unknown value 'transformer'"),
    Case('agents.ppo.saved.saved_summary',
         lambda mp: saved.saved_summary('conv'),
         ValueError, "network: unknown value 'conv'"),
    Case('agents.ppo.saved.saved_config',
         lambda mp: saved.saved_config(None),
         ValueError, "network: unknown value None"),
    Case('agents.ppo.saved.load_saved_agent',
         lambda mp: saved.load_saved_agent('value_iteration', iterations=0),
         ValueError, 'iterations'),
    Case('agents.ppo.layers.neighbour',
         lambda mp: ppo.neighbour(jnp.zeros((3, 3)), 4),
         ValueError, 'direction'),
    Case('agents.ppo.layers.neighbour',
         lambda mp: ppo.neighbour(jnp.zeros(3), 0),
         ValueError, 'h: expected an array \\(rows, cols'),
    Case('agents.ppo.networks.make_model',
         lambda mp: ppo.make_model('resnet', _key()),
         TypeError, "network: expected ppo.ConvNet, ppo.PropagationNet or ppo.ValueIterationNet, "
                    "got str"),
    Case('agents.ppo.networks.make_model',
         lambda mp: ppo.make_model(_tiny_ppo(), _key()),
         TypeError, "network: expected ppo.ConvNet, .* got PPOConfig"),
    Case('agents.ppo.networks.make_model',
         lambda mp: ppo.make_model(ppo.PropagationNet(width=0), _key()),
         ValueError, 'network.width'),
    Case('agents.ppo.networks.make_model',
         lambda mp: ppo.make_model(ppo.ConvNet(channels=(4, -1)), _key()),
         ValueError, 'network.channels'),
    Case('agents.ppo.networks.make_model',
         lambda mp: ppo.make_model(ppo.ConvNet(channels=8), _key()),
         TypeError, 'network.channels: expected a tuple of positive ints, got 8'),
    Case('agents.ppo.networks.make_model',
         lambda mp: ppo.make_model(ppo.ValueIterationNet(hidden_sizes=()), _key()),
         ValueError, 'network.hidden_sizes'),
    Case('agents.ppo.networks.make_model',
         lambda mp: ppo.make_model(ppo.PropagationNet(iterations=None), _key()),
         ValueError, 'network.iterations: None'),
    Case('agents.ppo.networks.model_skeleton',
         lambda mp: ppo.networks.model_skeleton('resnet'),
         TypeError, "network: expected ppo.ConvNet"),
    Case('agents.ppo.networks.network_from_dict',
         lambda mp: ppo.networks.network_from_dict({'name': 'resnet'}),
         ValueError, "network: unknown name 'resnet'"),
    Case('agents.ppo.networks.network_name',
         lambda mp: ppo.networks.network_name({'name': 'conv'}),
         TypeError, "network: expected ppo.ConvNet, .* got dict"),
    Case('agents.ppo.networks.network_to_dict',
         lambda mp: ppo.networks.network_to_dict(ppo.FIXED_MAZE_CONFIG),
         TypeError, "network: expected ppo.ConvNet, .* got PPOConfig"),
    Case('agents.ppo.networks.network_from_dict',
         lambda mp: ppo.networks.network_from_dict({'name': 'conv', 'depth': 3}),
         TypeError, "network: unknown size\\(s\\) \\['depth'\\] for 'conv'"),
    Case('agents.ppo.saved.saved_network',
         lambda mp: saved.saved_network('conv'),
         ValueError, "network: unknown value 'conv'"),
    Case('agents.ppo.networks.check_network',
         lambda mp: ppo.check_network(ppo.ValueIterationNet(iterations=None)),
         ValueError, 'network.iterations: None .* reverse mode'),
    Case('agents.ppo.rollout.rollout',
         lambda mp: _jit_rollout_bad_key(),
         TypeError, 'key: expected a PRNG key, got the number 7'),
    Case('agents.ppo.rollout.rollout',
         lambda mp: _rollout_without_next_obs(),
         ValueError, "timestep: expected extras\\['next_obs'\\]"),
    Case('agents.ppo.rollout.rollout',
         lambda mp: ppo.rollout(None, WRAPPED, None, None, None, _key(), 3),
         TypeError, UNWRAP + '.*Pass the unwrapped Maze: env.unwrapped'),
    Case('agents.ppo.rollout.rollout',
         lambda mp: ppo.rollout(None, EMPTY, {'states': 0}, None, None, _key(), 3),
         TypeError, 'pool: expected None or a ResetPool'),
    Case('agents.ppo.rollout.next_values',
         lambda mp: ppo.next_values(None, _transitions(3, 2), None,
                                    jax.tree.map(lambda x: jnp.stack([x, x]), _maze_obs()), WRAPPED),
         TypeError, UNWRAP),
    Case('agents.ppo.rollout.next_values',
         lambda mp: ppo.next_values(None, {"value": jnp.zeros((3, 2))}, None, None, None),
         TypeError, 'transitions: expected a ppo.Transition, got dict'),
    Case('agents.ppo.rollout.next_values',
         lambda mp: ppo.next_values(None, _transitions(3, 2), None, jnp.zeros(3), None),
         ValueError, 'last_obs: expected 2 Maze observations'),
    Case('agents.ppo.losses.gae',
         lambda mp: ppo.gae(*(jnp.zeros(3),) * 5, 1.5, 0.95),
         ValueError, 'gamma'),
    Case('agents.ppo.losses.gae',
         lambda mp: ppo.gae(*(jnp.zeros(3),) * 5, 0.99, -0.1),
         ValueError, 'gae_lambda'),
    Case('agents.ppo.losses.gae',
         lambda mp: ppo.gae(*(jnp.zeros(0),) * 5, 0.99, 0.95),
         ValueError, 'reward_t: expected a time axis of length T >= 1'),
    Case('agents.ppo.losses.gae',
         lambda mp: ppo.gae(jnp.zeros(3, jnp.int32), *(jnp.zeros(3),) * 4, 0.99, 0.95),
         TypeError, 'reward_t: expected a floating-point array'),
    Case('agents.ppo.losses.gae',
         lambda mp: ppo.gae(jnp.zeros(3), jnp.zeros(4), *(jnp.zeros(3),) * 3, 0.99, 0.95),
         ValueError, 'expected one shape'),
    Case('agents.ppo.losses.clipped_surrogate',
         lambda mp: ppo.clipped_surrogate(jnp.ones(3), jnp.ones(3), 0.0),
         ValueError, 'clip_eps'),
    Case('agents.ppo.losses.clipped_surrogate',
         lambda mp: ppo.clipped_surrogate(jnp.ones(3), jnp.ones(2), 0.2),
         ValueError, 'advantage: shape'),
    Case('agents.ppo.losses.normalise',
         lambda mp: ppo.normalise(jnp.zeros(0)),
         ValueError, 'advantages: expected at least one'),
    Case('agents.ppo.losses.ppo_loss',
         lambda mp: _ppo_loss_with_a_vector_value_head(),
         ValueError, 'model: its values have shape \\(5, 1\\)'),
    Case('agents.ppo.losses.ppo_loss',
         lambda mp: ppo.ppo_loss(lambda x: x, {'image': 0}),
         TypeError, 'batch: expected a ppo.Batch'),
    Case('agents.ppo.config.check_config',
         lambda mp: ppo.check_config(_tiny_ppo(num_envs=0)),
         ValueError, 'config.num_envs: expected a positive int, got 0'),
    Case('agents.ppo.config.check_config',
         lambda mp: ppo.check_config(_tiny_ppo(num_minibatches=0)),
         ValueError, 'config.num_minibatches: expected a positive int, got 0'),
    Case('agents.ppo.config.check_config',
         lambda mp: ppo.check_config(_tiny_ppo(num_steps=2.5)),
         TypeError, 'config.num_steps'),
    Case('agents.ppo.config.check_config',
         lambda mp: ppo.check_config(_tiny_ppo(gamma=1.2)),
         ValueError, 'config.gamma'),
    Case('agents.ppo.config.check_config',
         lambda mp: ppo.check_config(_tiny_ppo(learning_rate=0.0)),
         ValueError, 'config.learning_rate'),
    Case('agents.ppo.config.check_config',
         lambda mp: ppo.check_config(dqn.DQNConfig()),
         TypeError, 'config: expected a PPOConfig'),
    Case('agents.ppo.train.make_train',
         lambda mp: ppo.make_train(_tiny_ppo(), TINY_NET, 'medium'),
         TypeError, "env: expected a jumanji Maze, got str; .*make_maze_task"),
    Case('agents.ppo.train.make_train',
         lambda mp: ppo.make_train(_tiny_ppo(total_timesteps=10), TINY_NET, EMPTY),
         ValueError, 'config.total_timesteps: 10 is less than one update'),
    Case('agents.ppo.train.make_train',
         lambda mp: ppo.make_train(_tiny_ppo(), TINY_NET, EMPTY)(0),
         TypeError, 'key: expected a PRNG key, got the number 0'),
    Case('agents.ppo.train.make_train',
         lambda mp: jax.jit(ppo.make_train(_tiny_ppo(), TINY_NET, EMPTY))(jnp.int32(0)),
         TypeError, 'key: expected a PRNG key, got an integer scalar'),
    Case('agents.ppo.train.make_train',
         lambda mp: ppo.make_train(_tiny_ppo(), 'conv', EMPTY),
         TypeError, 'network: expected ppo.ConvNet, ppo.PropagationNet or ppo.ValueIterationNet'),
    Case('agents.ppo.train.make_trainer',
         lambda mp: ppo.make_trainer(_tiny_ppo(), TINY_NET, EMPTY, loss_fn='ppo'),
         TypeError, 'loss_fn: expected a function'),
    Case('agents.ppo.train.make_trainer',
         lambda mp: ppo.make_trainer(_tiny_ppo(), TINY_NET, VmapAutoResetWrapper(EMPTY)),
         TypeError, 'env: expected a jumanji Maze without wrappers, got VmapAutoResetWrapper\\('),
    Case('agents.ppo.train.make_train',
         lambda mp: ppo.make_train(_tiny_ppo(), TINY_NET, WRAPPED),
         TypeError, UNWRAP),
    Case('agents.ppo.config.default_loss',
         lambda mp: ppo.default_loss({'clip_eps': 0.2}),
         TypeError, 'config: expected a PPOConfig'),
    Case('agents.ppo.evaluate.evaluate',
         lambda mp: ppo.evaluate(lambda x: x, maze.make_maze_task('empty'), _key(), 5, False, 1),
         TypeError, 'record_states: expected True or False'),
    Case('agents.ppo.config.make_optimizer',
         lambda mp: ppo.make_optimizer('fast'),
         TypeError, 'config: expected a PPOConfig'),
    Case('agents.ppo.train.success_by_start',
         lambda mp: ppo.success_by_start(None),
         TypeError, 'runner: expected a ppo.RunnerState'),
    Case('agents.ppo.evaluate.evaluate',
         lambda mp: ppo.evaluate(lambda x: x, WRAPPED, _key(), 5),
         TypeError, UNWRAP + '.*reaching the target would not count'),
    Case('agents.ppo.evaluate.evaluate',
         lambda mp: ppo.evaluate(lambda x: x, 'empty', _key(), 5),
         TypeError, "env: expected a jumanji Maze, got str; .*make_maze_task"),
    Case('agents.ppo.evaluate.evaluate',
         lambda mp: ppo.evaluate(lambda x: x, maze.make_maze_task('empty'), _key(), 0),
         ValueError, 'num_episodes: expected a positive int, got 0'),
    Case('agents.ppo.evaluate.evaluate',
         lambda mp: ppo.evaluate(lambda x: x, maze.make_maze_task('empty'), _key(), 5, 'yes'),
         TypeError, 'greedy: expected True or False'),
    Case('agents.ppo.evaluate.shortest_path_lengths',
         lambda mp: ppo.shortest_path_lengths(_maze_obs()),
         ValueError, 'states: expected batched Maze states'),
    Case('agents.dqn.networks.make_q_network',
         lambda mp: dqn.make_q_network(0),
         ValueError, 'num_actions'),
    Case('agents.dqn.networks.make_q_network',
         lambda mp: dqn.make_q_network(2, ()),
         ValueError, 'hidden_sizes'),
    Case('agents.dqn.networks.epsilon_greedy',
         lambda mp: dqn.epsilon_greedy(_key(), jnp.zeros((3, 2)), 0.1),
         ValueError, 'q_values: expected shape \\(num_actions,\\)'),
    Case('agents.dqn.networks.epsilon_greedy',
         lambda mp: checked(dqn.epsilon_greedy)(_key(), jnp.zeros(2), 1.5),
         RUNTIME, 'epsilon: expected a probability in \\[0, 1\\]'),
    Case('agents.dqn.losses.td_target',
         lambda mp: dqn.td_target(jnp.zeros(3), jnp.zeros(3, bool), jnp.zeros(3), 0.99),
         ValueError, 'q_next_target: expected shape \\(batch, num_actions\\)'),
    Case('agents.dqn.losses.td_target',
         lambda mp: dqn.td_target(jnp.zeros(2), jnp.zeros(3, bool), jnp.zeros((3, 2)), 0.99),
         ValueError, 'reward: expected shape'),
    Case('agents.dqn.losses.td_target',
         lambda mp: dqn.td_target(jnp.zeros(3), jnp.zeros(3, bool), jnp.zeros((3, 2)), -0.5),
         ValueError, 'gamma'),
    Case('agents.dqn.losses.dqn_loss',
         lambda mp: dqn.dqn_loss(None, None, None, None, 0.9, loss='l1'),
         ValueError, "loss: unknown value 'l1'"),
    Case('agents.dqn.losses.dqn_loss',
         lambda mp: dqn.dqn_loss(None, None, None, None, 1.5),
         ValueError, 'gamma: expected a number in \\[0.0, 1.0\\], got 1.5'),
    Case('agents.dqn.losses.update_target',
         lambda mp: dqn.update_target({'w': 1.0}, {'w': 0.0}, 3, period=0, tau=1.0),
         ValueError, 'period: expected a positive int, got 0'),
    Case('agents.dqn.losses.update_target',
         lambda mp: dqn.update_target({'w': 1.0}, {'w': 0.0}, 3, period=1, tau=0.0),
         ValueError, 'tau'),
    Case('agents.dqn.train.check_config',
         lambda mp: dqn.check_config(_tiny_dqn(num_envs=0)),
         ValueError, 'config.num_envs: expected a positive int, got 0'),
    Case('agents.dqn.train.check_config',
         lambda mp: dqn.check_config(_tiny_dqn(eval_every=0)),
         ValueError, 'config.eval_every: expected a positive int, got 0'),
    Case('agents.dqn.train.check_config',
         lambda mp: dqn.check_config(_tiny_dqn(eval_episodes=-1)),
         ValueError, 'config.eval_episodes: expected an int >= 0 .0: no evaluation., got -1'),
    Case('agents.dqn.train.check_config',
         lambda mp: dqn.check_config(_tiny_dqn(eval_episodes=2.0)),
         TypeError, 'config.eval_episodes: expected an int >= 0'),
    Case('agents.dqn.train.check_config',
         lambda mp: dqn.check_config(_tiny_dqn(loss='l1')),
         ValueError, "config.loss: unknown value 'l1'"),
    Case('agents.dqn.train.check_config',
         lambda mp: dqn.check_config(_tiny_dqn(lr_schedule='step')),
         ValueError, "config.lr_schedule: unknown value 'step'"),
    Case('agents.dqn.train.make_optimizer',
         lambda mp: dqn.make_optimizer(_tiny_dqn(lr_schedule='exponential')),
         ValueError, "config.lr_schedule: unknown value 'exponential'"),
    Case('agents.dqn.train.check_config',
         lambda mp: dqn.check_config(_tiny_dqn(buffer_capacity=1)),
         ValueError, 'config.buffer_capacity: 1 cannot hold one step'),
    Case('agents.dqn.train.check_config',
         lambda mp: dqn.check_config(_tiny_dqn(epsilon_end=-0.1)),
         ValueError, 'config.epsilon_end'),
    Case('agents.dqn.train.make_train',
         lambda mp: dqn.make_train(_tiny_dqn(learning_starts=4), DQN_NET, CARTPOLE),
         ValueError, 'config.learning_starts: 4 must be at least batch_size'),
    Case('agents.dqn.train.make_train',
         lambda mp: dqn.make_train(_tiny_dqn(), DQN_NET, CARTPOLE, target_fn=3),
         TypeError, 'target_fn: expected a function or None'),
    Case('agents.dqn.train.make_train',
         lambda mp: dqn.make_train(_tiny_dqn(), DQN_NET, CARTPOLE)(jnp.zeros(2)),
         TypeError, 'key: expected a PRNG key'),
    Case('agents.dqn.train.make_optimizer',
         lambda mp: dqn.make_optimizer('fast'),
         TypeError, 'config: expected a DQNConfig'),
    Case('agents.dqn.evaluate.greedy_returns',
         lambda mp: dqn.greedy_returns(_dqn_params(), _key(), 0),
         ValueError, 'num_episodes: expected a positive int, got 0'),
    Case('agents.dqn.evaluate.greedy_returns',
         lambda mp: dqn.greedy_returns(_dqn_params(), 5, 3),
         TypeError, 'key: expected a PRNG key, got the number 5'),
    Case('envs.cartpole.reset',
         lambda mp: cartpole.reset(0),
         TypeError, 'key: expected a PRNG key, got the number 0; make one with jax.random.key\\(0\\)'),
    Case('envs.cartpole.dynamics',
         lambda mp: checked(cartpole.dynamics)(jnp.zeros(4), 2),
         RUNTIME, 'action: expected 0 \\(push left\\) or 1 \\(push right\\)'),
    Case('envs.cartpole.dynamics',
         lambda mp: cartpole.dynamics(jnp.zeros(4), 0.5),
         TypeError, 'action: expected an integer'),
    Case('envs.cartpole.dynamics',
         lambda mp: cartpole.dynamics(jnp.zeros(3), 1),
         ValueError, 'physics: expected shape \\(4,\\)'),
    Case('envs.cartpole.dynamics',
         lambda mp: cartpole.dynamics(jnp.zeros(4, jnp.int32), 1),
         TypeError, 'physics: expected a float array'),
    Case('envs.cartpole.step',
         lambda mp: cartpole.step(cartpole.reset(_key())[0], jnp.zeros(2, jnp.int32)),
         ValueError, 'action: expected a scalar'),
    Case('envs.cartpole.step_autoreset',
         lambda mp: checked(cartpole.step_autoreset)(cartpole.reset(_key())[0], -1),
         RUNTIME, 'action: expected 0 \\(push left\\) or 1'),
    Case('envs.cartpole.random_rollout',
         lambda mp: cartpole.random_rollout(_key(), 0, 5),
         ValueError, 'num_envs: expected a positive int, got 0'),
    Case('envs.cartpole.random_rollout',
         lambda mp: cartpole.random_rollout(_key(), 2, 1.5),
         TypeError, 'num_steps: expected a positive int'),
    Case('envs.maze.FixedMazeGenerator',
         lambda mp: maze.FixedMazeGenerator(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]]), [(0, 0)], [(2, 2)]),
         ValueError, 'starts: cell \\(0, 0\\) has no legal move'),
    Case('envs.maze.FixedMazeGenerator',
         lambda mp: maze.FixedMazeGenerator(np.array([[0, 1, 0], [0, 1, 0], [0, 1, 0]]), [(0, 0)], [(2, 2)]),
         ValueError, 'targets: cell \\(2, 2\\) cannot be reached from start \\(0, 0\\)'),
    Case('envs.maze.FixedMazeGenerator',
         lambda mp: maze.FixedMazeGenerator(np.zeros((3, 3)), [(3, 0)], [(2, 2)]),
         ValueError, 'starts: cell \\(3, 0\\) is outside the 3x3 maze'),
    Case('envs.maze.FixedMazeGenerator',
         lambda mp: maze.FixedMazeGenerator(np.zeros((3, 3)), [(-1, 0)], [(2, 2)]),
         ValueError, 'starts: cell \\(-1, 0\\) is outside'),
    Case('envs.maze.FixedMazeGenerator',
         lambda mp: maze.FixedMazeGenerator(np.zeros((3, 3)), [], [(2, 2)]),
         ValueError, 'starts: expected a non-empty list'),
    Case('envs.maze.FixedMazeGenerator',
         lambda mp: maze.FixedMazeGenerator(np.full((3, 3), 0.5), [(0, 0)], [(2, 2)]),
         ValueError, 'walls: expected booleans'),
    Case('envs.maze.FixedMazeGenerator',
         lambda mp: maze.FixedMazeGenerator(np.zeros(9), [(0, 0)], [(2, 2)]),
         ValueError, 'walls: expected a 2-D array'),
    Case('envs.maze.EmptyMazeGenerator',
         lambda mp: maze.EmptyMazeGenerator(0, 5),
         ValueError, 'num_rows: expected a positive int, got 0'),
    Case('envs.maze.EmptyMazeGenerator',
         lambda mp: maze.EmptyMazeGenerator(1, 1),
         ValueError, 'num_rows, num_cols: a 1 x 1 maze'),
    Case('envs.maze.EmptyMazeGenerator',
         lambda mp: maze.EmptyMazeGenerator(5, 5, target=(9, 9)),
         ValueError, 'targets: cell \\(9, 9\\) is outside the 5x5 maze'),
    Case('envs.maze.parse_maze',
         lambda mp: maze.parse_maze(['S.#', '..T.']),
         ValueError, 'layout: every row must have the same length'),
    Case('envs.maze.parse_maze',
         lambda mp: maze.parse_maze(['S.x']),
         ValueError, "layout: unknown character 'x'"),
    Case('envs.maze.parse_maze',
         lambda mp: maze.parse_maze('S.#T'),
         TypeError, 'layout: expected a sequence of strings'),
    Case('envs.maze.parse_maze',
         lambda mp: maze.parse_maze([]),
         ValueError, 'layout: expected at least one non-empty row'),
    Case('envs.grid.shortest_path_length',
         lambda mp: maze.shortest_path_length(np.zeros((3, 3)), (5, 0), (1, 1)),
         ValueError, 'start: cell \\(5, 0\\) is outside'),
    Case('envs.grid.shortest_path_length',
         lambda mp: maze.shortest_path_length(np.zeros((3, 3)), (0, -1), (1, 1)),
         ValueError, 'start: cell \\(0, -1\\) is outside'),
    Case('envs.grid.shortest_path_length',
         lambda mp: maze.shortest_path_length(np.eye(3), (0, 0), (2, 0)),
         ValueError, 'start: cell \\(0, 0\\) is a wall'),
    Case('envs.grid.shortest_path_length',
         lambda mp: maze.shortest_path_length(np.zeros((3, 3)), (0, 0), (1.5, 0)),
         ValueError, 'target: expected a \\(row, col\\) pair of ints'),
    Case('envs.maze.make_maze_task',
         lambda mp: maze.make_maze_task('maze'),
         ValueError, "name: unknown Maze task 'maze'"),
    Case('envs.maze.make_maze_task',
         lambda mp: maze.make_maze_task('empty', time_limit=0),
         ValueError, 'time_limit: expected a positive int, got 0'),
    Case('envs.maze.make_maze',
         lambda mp: maze.make_maze(time_limit=-3),
         ValueError, 'time_limit: expected a positive int, got -3'),
    Case('envs.maze.medium_maze_generator',
         lambda mp: maze.medium_maze_generator(3),
         TypeError, 'takes 0 positional arguments'),
    Case('envs.maze.maze_rgb',
         lambda mp: maze.maze_rgb(jnp.zeros((3, 3))),
         TypeError, 'state: expected a Maze State or Observation'),
    Case('envs.maze.observation_image',
         lambda mp: maze.observation_image({'walls': 1}),
         TypeError, 'obs: expected a Maze Observation or State'),
    Case('envs.maze.reached_target',
         lambda mp: maze.reached_target(jnp.zeros(3)),
         TypeError, 'obs: expected a Maze Observation or State'),
    Case('envs.maze.no_legal_move',
         lambda mp: maze.no_legal_move(jnp.zeros(3)),
         TypeError, 'obs: expected a Maze Observation or State'),
    Case('envs.maze.terminated',
         lambda mp: maze.terminated(None),
         TypeError, 'obs: expected a Maze Observation or State'),
    Case('envs.maze.truncated',
         lambda mp: maze.truncated(_maze_obs(), jnp.zeros(3, bool)),
         ValueError, 'done: shape \\(3,\\) does not match'),
    Case('envs.autoreset.make_reset_pool',
         lambda mp: autoreset.make_reset_pool(maze.make_maze_task('empty'), _key(), 0),
         ValueError, 'pool_size: expected a positive int, got 0'),
    Case('envs.autoreset.make_reset_pool',
         lambda mp: autoreset.make_reset_pool(WRAPPED, _key(), 2),
         TypeError, UNWRAP),
    Case('envs.autoreset.make_reset_pool',
         lambda mp: autoreset.make_reset_pool(EMPTY, 0, 2),
         TypeError, 'key: expected a PRNG key, got the number 0'),
    Case('envs.autoreset.reset_with_next_obs',
         lambda mp: autoreset.reset_with_next_obs(WRAPPED, _key()),
         TypeError, UNWRAP),
    Case('envs.autoreset.pooled_autoreset_step',
         lambda mp: autoreset.pooled_autoreset_step(WRAPPED, None, None, 0),
         TypeError, UNWRAP),
    Case('envs.autoreset.env_reset',
         lambda mp: autoreset.env_reset(maze.make_maze_task('empty'), 3),
         TypeError, 'key: expected a PRNG key'),
    Case('envs.autoreset.reset_with_next_obs',
         lambda mp: autoreset.reset_with_next_obs(maze.make_maze_task('empty'), 1.0),
         TypeError, 'key: expected a PRNG key'),
    Case('envs.autoreset.pooled_autoreset_step',
         lambda mp: _pool_step_on_a_batch(),
         ValueError, 'action: expected one action'),
    Case('envs.jumanji_import.import_jumanji',
         lambda mp: (mp.setitem(sys.modules, 'jumanji', None), jumanji_import.import_jumanji()),
         ImportError, 'jumanji'),
    Case('replay.replay_init',
         lambda mp: replay.replay_init({'x': 0.0}, 0),
         ValueError, 'capacity: expected a positive int, got 0'),
    Case('replay.replay_init',
         lambda mp: replay.replay_init({}, 4),
         ValueError, 'example: expected a transition'),
    Case('replay.replay_add',
         lambda mp: replay.replay_add(_buffer(), {'x': jnp.zeros(3)}),
         ValueError, "transition\\['x'\\]: shape \\(3,\\), expected \\(2,\\)"),
    Case('replay.replay_add',
         lambda mp: replay.replay_add(_buffer(), {'y': jnp.zeros(2)}),
         ValueError, 'transition: structure'),
    Case('replay.replay_add_batch',
         lambda mp: replay.replay_add_batch(_buffer(), {'x': jnp.zeros((5, 2))}),
         ValueError, 'transitions: a batch of 5 does not fit a buffer of capacity 4'),
    Case('replay.replay_add_batch',
         lambda mp: replay.replay_add_batch(_buffer(), {'x': jnp.zeros((2, 2), jnp.int32)}),
         ValueError, "transitions\\['x'\\]: dtype int32, expected float32"),
    Case('replay.replay_sample',
         lambda mp: replay.replay_sample(_buffer(), _key(), 0),
         ValueError, 'batch_size: expected a positive int, got 0'),
    Case('replay.replay_sample',
         lambda mp: replay.replay_sample(_buffer(), _key(), True),
         TypeError, 'batch_size: expected a positive int'),
    Case('replay.replay_sample',
         lambda mp: checked(replay.replay_sample, static_argnums=2)(_buffer(), _key(), 2),
         RUNTIME, 'replay_sample: the buffer is empty'),
    Case('trees.leading_size',
         lambda mp: trees.leading_size({'a': jnp.zeros(())}),
         ValueError, 'tree: every leaf needs a leading'),
    Case('trees.unstack',
         lambda mp: trees.unstack({'a': jnp.zeros(2), 'b': jnp.zeros(3)}),
         ValueError, 'tree: leaves disagree on the size of the leading axis: \\[2, 3\\]'),
    Case('trees.unstack',
         lambda mp: trees.unstack({}),
         ValueError, 'tree: expected a pytree with array leaves'),
    Case('trees.stack',
         lambda mp: trees.stack([]),
         ValueError, 'trees: expected a non-empty sequence'),
    Case('trees.stack',
         lambda mp: trees.stack([{'a': 1}, {'b': 1}]),
         ValueError, 'trees\\[1\\] has structure'),
    Case('budget.budget',
         lambda mp: budget.budget(full=100, tiny='5'),
         TypeError, 'both values must have the same type'),
    Case('budget.budget_mode',
         lambda mp: (mp.setenv('DRLJAX_BUDGET', 'huge'), budget.budget_mode()),
         ValueError, "DRLJAX_BUDGET='huge'"),
    Case('bench.tables.measured_on',
         lambda mp: bench.measured_on({'hardware': {'cpu': 'x'}}),
         ValueError, 'result: expected a benchmark result'),
    Case('bench.tables.post_ppo_table',
         lambda mp: bench.post_ppo_table({'ppo_runs': []}),
         ValueError, 'posts: expected the source_posts result, missing book_ppo_runs, comparisons'),
    Case('bench.tables.post_ppo_ablation_table',
         lambda mp: bench.post_ppo_ablation_table([]),
         ValueError, 'posts: expected the source_posts result, missing ppo_runs'),
    Case('bench.tables.post_dqn_table',
         lambda mp: bench.post_dqn_table({'dqn_runs': []}),
         ValueError, 'posts: expected the source_posts result, missing book_dqn_runs'),
    Case('bench.tables.dqn_cartpole_table',
         lambda mp: bench.dqn_cartpole_table({'book': []}),
         ValueError, 'result: expected the dqn_cartpole result, missing book_all_seeds'),
    Case('bench.tables.dqn_levers_table',
         lambda mp: bench.dqn_levers_table({'date': '2026-12-05'}),
         ValueError, 'result: expected the dqn_stability result, missing configs'),
    Case('bench.tables.dqn_grid_table',
         lambda mp: bench.dqn_grid_table({'configs': {}}),
         ValueError, 'result: expected the dqn_stability result, missing grid'),
    Case('bench.readings.dqn_expected_times',
         lambda mp: bench.dqn_expected_times({'dqn_runs': []}),
         ValueError, 'posts: expected the source_posts result'),
    Case('bench.readings.dqn_grid_readings',
         lambda mp: bench.dqn_grid_readings({'configs': {}}),
         ValueError, 'result: expected the dqn_stability result with its grid'),
    Case('bench.tables.lever_verdicts',
         lambda mp: bench.lever_verdicts({'configs': {}}),
         ValueError, 'result: expected the dqn_stability result, missing its chapter row'),
    Case('stats.solved',
         lambda mp: stats.solved([[475.0]]),
         ValueError, 'final_returns: expected a 1-D sequence'),
    Case('stats.share_interval',
         lambda mp: stats.share_interval(5, 3),
         ValueError, 'successes, n: expected 0 <= successes <= n'),
    Case('stats.iqm',
         lambda mp: stats.iqm([]),
         ValueError, 'scores: expected at least 1 values, got 0'),
    Case('stats.iqm_interval',
         lambda mp: stats.iqm_interval([1.0, float('inf')]),
         ValueError, 'scores: expected finite numbers'),
    Case('stats.paired_interval',
         lambda mp: stats.paired_interval([1.0, 2.0], [1.0]),
         ValueError, 'samples\\[1\\]: expected at least 2 values, got 1'),
    Case('stats.paired_solved',
         lambda mp: stats.paired_solved([1, 0], [True, False]),
         TypeError, 'a_solved: expected a 1-D sequence of bools'),
    Case('stats.unpaired_solved',
         lambda mp: stats.unpaired_solved(1, 0, 1, 3),
         ValueError, 'expected 0 <= successes <= n, n > 0'),
    Case('stats.holm',
         lambda mp: stats.holm([0.5, 2.0]),
         ValueError, 'p_values: expected values in \\[0, 1\\]'),
    Case('stats.holm_adjust',
         lambda mp: stats.holm_adjust({'lever': 0.01}),
         TypeError, "comparisons\\['lever'\\]: expected a Comparison, got float"),
    Case('stats.reached_by',
         lambda mp: stats.reached_by([1000, 'never'], [2000]),
         TypeError, 'first_steps: expected steps \\(ints\\) or None'),
    Case('stats.median_first_step',
         lambda mp: stats.median_first_step([]),
         ValueError, 'first: expected one entry per key, got none'),
    Case('stats.require',
         lambda mp: stats.require(stats.Comparison(0, 0.5, 'McNemar', 3, 3), 1, 'more solve'),
         AssertionError, "The page says: 'more solve' \\(above\\), but the evidence now says"),
    Case('bench.tables.benchmarks_against_others',
         lambda mp: bench.benchmarks_against_others({}, {'book': []}, {}),
         ValueError, 'result: expected the env_throughput result, missing gymnasium'),
    Case('bench.tables.dqn_levers_table',
         lambda mp: bench.dqn_levers_table(bench.load_result('dqn_stability'), 'jp'),
         ValueError, "language: expected one of \\('en', 'ja'\\), got 'jp'"),
    Case('bench.timed',
         lambda mp: bench.timed(lambda: None, repeats=0),
         ValueError, 'repeats: expected a positive int, got 0'),
    Case('bench.timed',
         lambda mp: bench.timed(42),
         TypeError, 'fn: expected a function'),
    Case('bench.throughput',
         lambda mp: bench.throughput(lambda: None, 0),
         ValueError, 'steps_per_call: expected a positive int, got 0'),
    Case('bench.step_rates',
         lambda mp: bench.step_rates({'median_s': 0.5, 'min_s': 0.0, 'max_s': 1.0}, 10),
         ValueError, 'timing: expected a dict with median_s, min_s and max_s > 0'),
    Case('bench.step_rates',
         lambda mp: bench.step_rates({'median_s': 0.5, 'min_s': 0.4, 'max_s': 1.0}, 2.5),
         TypeError, 'steps: expected a positive int'),
    Case('bench.find_results_dir',
         lambda mp: bench.find_results_dir(3.5),
         TypeError, 'start: expected a path'),
    Case('bench.load_result',
         lambda mp: bench.load_result('../secrets'),
         ValueError, 'name: expected a benchmark name'),
    Case('bench.load_result_or_note',
         lambda mp: bench.load_result_or_note('../secrets'),
         ValueError, 'name: expected a benchmark name'),
    Case('quiz.check_quiz',
         lambda mp: quiz.check_quiz(quiz.load_quiz('01_jax_essentials')[:3], 'q.json'),
         ValueError, 'q.json: expected 4 to 6 questions, got 3'),
    Case('quiz.check_quiz',
         lambda mp: quiz.check_quiz('questions'),
         TypeError, 'quiz: expected a list of questions, got str'),
    Case('quiz.find_quiz_file',
         lambda mp: quiz.find_quiz_file('07_dqn', start=3.5),
         TypeError, 'start: expected a path or None, got float'),
    Case('quiz.load_quiz',
         lambda mp: quiz.load_quiz('../secrets'),
         ValueError, 'chapter: expected a notebook name'),
    Case('quiz.show_quiz',
         lambda mp: quiz.show_quiz('06 dqn'),
         ValueError, 'chapter: expected a notebook name'),
    Case('diagrams.agents.dqn_data_flow',
         lambda mp: diagrams.dqn_data_flow(target_update_period=0),
         ValueError, 'target_update_period: expected a positive int, got 0'),
    Case('diagrams.planning.value_backups',
         lambda mp: diagrams.value_backups(maze=('...', '.#.')),
         ValueError, "maze: expected exactly one target 'T', got 0"),
    Case('viz.figure_png',
         lambda mp: viz.figure_png(np.zeros((3, 3))),
         TypeError, 'fig: expected a matplotlib Figure, got ndarray'),
    Case('viz.step_explorer',
         lambda mp: viz.step_explorer(lambda step: None, 0),
         ValueError, 'num_steps: expected a positive int, got 0'),
    Case('viz.step_explorer',
         lambda mp: viz.step_explorer('plot', 3),
         TypeError, 'draw: expected a function step -> Figure, got str'),
    Case('viz.animate_frames',
         lambda mp: viz.animate_frames([]),
         ValueError, 'frames: expected a non-empty sequence'),
    Case('viz.animate_maze',
         lambda mp: viz.animate_maze([]),
         ValueError, 'states: expected a non-empty list of environment states'),
    Case('viz.animate_maze',
         lambda mp: viz.animate_maze(_maze_obs()),
         TypeError, 'states: expected a list of single environment states'),
    Case('viz.animate_mazes',
         lambda mp: viz.animate_mazes([]),
         ValueError, 'episodes: expected a non-empty list'),
    Case('viz.show_maze',
         lambda mp: viz.show_maze(jax.vmap(maze.make_maze_task('empty').reset)(jax.random.split(_key(), 2))[0]),
         ValueError, 'state: walls has shape'),
    Case('viz.show_cartpole',
         lambda mp: viz.show_cartpole(jnp.zeros(3)),
         ValueError, 'state\\[0\\]: expected a CartPoleState or an observation of shape \\(4,\\)'),
    Case('viz.animate_cartpole',
         lambda mp: viz.animate_cartpole([]),
         ValueError, 'states: expected a non-empty list'),
    Case("checks.core.require_function",
         lambda mp: core.require_function([1, 2], "policy"),
         core.CheckFailed, "policy: expected your function, got list"),
    Case('checks.core.run_answer',
         lambda mp: core.run_answer('f', 1, call='f(x)'),
         core.CheckFailed, 'f: expected your function, got str'),
    Case('checks.core.check_shape',
         lambda mp: core.check_shape(np.zeros(3), (2,), 'answer'),
         core.CheckFailed, 'answer has shape \\(3,\\), expected \\(2,\\)'),
    Case('checks.core.check_shape',
         lambda mp: core.check_shape(np.array([np.nan]), (1,), 'answer'),
         core.CheckFailed, 'answer contains NaN'),
    Case('checks.core.close',
         lambda mp: core.close(np.zeros(2), np.zeros((2, 2)), rtol=-1),
         ValueError, 'rtol: expected a number'),
    Case('checks.core.verdict',
         lambda mp: core.verdict('f', [], []),
         ValueError, 'outputs: expected one output per case'),
    Case('checks.core.error_text',
         lambda mp: core.error_text(ValueError('x'), limit=0),
         ValueError, 'limit: expected a positive int'),
    Case('glue.glue',
         lambda mp: __import__('companion.glue', fromlist=['glue']).glue(ratio=0.3),
         TypeError, 'ratio: expected the figure as formatted text'),
    Case('glue.english_words',
         lambda mp: __import__('companion.glue', fromlist=['english_words']).english_words(3),
         TypeError, 'english_words: text: expected a str, got int'),
    Case('glue.words',
         lambda mp: __import__('companion.glue', fromlist=['words']).words(en='lowers', ja=''),
         ValueError, 'words: ja: the text is empty'),
    Case('glue.markdown',
         lambda mp: __import__('companion.glue', fromlist=['markdown']).markdown(
             en='| agent |', ja='| agent |'),
         ValueError, 'markdown: ja: expected Japanese'),
    Case('checks.core.program_equations',
         lambda mp: core.program_equations([1]),
         TypeError, "jaxpr: expected jax.make_jaxpr's result, got list"),
    Case('checks.core.unrolled',
         lambda mp: core.unrolled(3, (), ()),
         TypeError, 'fn: expected a function, got int'),
    Case('checks.core.self_check',
         lambda mp: core.self_check(None),
         TypeError, 'check: expected a function'),
    Case('playground.load_agent', lambda mp: playground.load_agent('greedy'),
         ValueError, "agent: unknown value 'greedy'"),
    Case('playground_widget.value_map',
         lambda mp: playground_widget.value_map(None, np.zeros((3, 3))),
         TypeError, 'model: expected a ValueIterationActorCritic'),
    Case('playground_widget.value_map',
         lambda mp: playground_widget.value_map(playground.load_agent(), np.eye(3, dtype=bool)),
         TypeError, 'state: expected a jumanji Maze State'),
    Case('playground.maze_state',
         lambda mp: playground.maze_state(np.zeros((3, 3)), (0, 3), (1, 1)),
         ValueError, 'agent: cell \\(0, 3\\) is outside the 3x3 maze'),
    Case('playground.maze_state',
         lambda mp: playground.maze_state(np.zeros((3, 3)), (0, 0), (1, 1), step_count=1.5),
         ValueError, 'step_count: expected an int >= 0, got 1.5'),
    Case('playground.policy', lambda mp: playground.policy(None, np.zeros((3, 3))),
         TypeError, 'state: expected a jumanji Maze State'),
    Case('playground.policy',
         lambda mp: playground.policy(None, playground.maze_state(
             np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]]), (0, 0), (2, 2))),
         ValueError, "state: the agent's cell \\(0, 0\\) has no legal move"),
    Case('playground.step_state', lambda mp: playground.step_state(np.zeros((3, 3)), 0),
         TypeError, 'state: expected a jumanji Maze State'),
    Case('playground.step_state',
         lambda mp: playground.step_state(playground.maze_state(np.zeros((3, 3)), (0, 0), (2, 2)),
                                          0, time_limit=0),
         ValueError, 'time_limit: expected a positive int, got 0'),
    Case('playground.step', lambda mp: playground.step(np.zeros((3, 3)), (0, 0), (2, 2), 4),
         ValueError, 'action: expected 0 \\(up\\)'),
    Case('playground.step',
         lambda mp: playground.step(np.zeros((3, 3)), (0, 0), (2, 2), 0, step_count=-1),
         ValueError, 'step_count: expected an int >= 0'),
    Case('envs.grid.check_walls',
         lambda mp: maze.check_walls(np.zeros(4)),
         ValueError, 'walls: expected a 2-D array'),
    Case('envs.grid.check_cell',
         lambda mp: maze.check_cell((0, 3), 'agent', np.zeros((2, 2), bool)),
         ValueError, 'agent: cell \\(0, 3\\) is outside the 2x2 maze'),
    Case('envs.grid.shortest_path',
         lambda mp: maze.shortest_path(np.eye(3, dtype=bool), (0, 0), (2, 1)),
         ValueError, 'start: cell \\(0, 0\\) is a wall'),
    Case('playground.agent_policy',
         lambda mp: playground.agent_policy(None, np.zeros(9), (0, 0), (2, 2)),
         ValueError, 'walls: expected a 2-D array'),
    Case('playground_widget.maze_playground',
         lambda mp: playground_widget.maze_playground(None, np.zeros((2, 2, 2)), (0, 0), (1, 1)),
         ValueError, 'walls: expected a 2-D array'),
    Case('playground_widget.maze_playground',
         lambda mp: playground_widget.maze_playground(agent='greedy'),
         ValueError, "agent: unknown value 'greedy'"),
]
# fmt: on

CASES += [
    Case(
        "agents.dqn.train.make_train",
        lambda mp: dqn.make_train(_tiny_dqn(), "mlp", CARTPOLE),
        TypeError,
        "network: expected a haiku hk.Transformed",
    ),
    Case(
        "agents.dqn.train.make_train",
        lambda mp: dqn.make_train(_tiny_dqn(), dqn.make_q_network(3, (8,)), CARTPOLE),
        ValueError,
        "network: expected Q-values of shape \\(batch, 2\\)",
    ),
    Case(
        "agents.dqn.train.make_train",
        lambda mp: dqn.make_train(_tiny_dqn(), DQN_NET, cartpole),
        TypeError,
        "env: expected a cartpole.CartPole, got module",
    ),
    Case(
        "agents.dqn.train.make_train",
        lambda mp: dqn.make_train(_tiny_dqn(), DQN_NET, cartpole.DEFAULT_PARAMS),
        TypeError,
        "env: expected a cartpole.CartPole, got CartPoleParams; wrap the constants",
    ),
    Case(
        "agents.dqn.evaluate.greedy_returns",
        lambda mp: dqn.greedy_returns(_dqn_params(), _key(), 3, env="CartPole-v1"),
        TypeError,
        "env: expected a cartpole.CartPole, got str",
    ),
    Case(
        "envs.cartpole.check_env",
        lambda mp: cartpole.check_env(cartpole.CartPole(params=(9.8,))),
        TypeError,
        "env: expected a cartpole.CartPole, got CartPole",
    ),
    Case(
        "agents.dqn.train.make_train",
        lambda mp: dqn.make_train(_tiny_dqn(), DQN_NET, CARTPOLE, target_fn="double"),
        TypeError,
        "target_fn: expected a function or None",
    ),
    Case(
        "agents.ppo.train.make_trainer",
        lambda mp: ppo.make_trainer(_tiny_ppo(), TINY_NET, env="Maze-v0"),
        TypeError,
        "env: expected a jumanji Maze",
    ),
    Case("parallel.make_mesh", lambda mp: parallel.make_mesh(0), ValueError, "num_devices"),
    Case("parallel.make_mesh", lambda mp: parallel.make_mesh(1, ""), TypeError, "axis_name"),
    Case(
        "parallel.split_evenly",
        lambda mp: parallel.split_evenly(6, "cpu", "x"),
        TypeError,
        "mesh: expected a 1-D jax.sharding.Mesh",
    ),
    Case(
        "parallel.shard_seeds",
        lambda mp: parallel.shard_seeds(None, parallel.make_mesh()),
        TypeError,
        "train: expected a function of a key",
    ),
    Case(
        "parallel.shard_seeds",
        lambda mp: parallel.shard_seeds(lambda k: k, parallel.make_mesh())(jax.numpy.zeros((2, 3))),
        TypeError,
        "keys",
    ),
    Case(
        "parallel.make_data_parallel_step",
        lambda mp: parallel.make_data_parallel_step(_tiny_ppo(), None),
        TypeError,
        "mesh",
    ),
    Case(
        "parallel.make_data_parallel_train",
        lambda mp: parallel.make_data_parallel_train(
            _tiny_ppo()._replace(num_envs=0), TINY_NET, EMPTY, parallel.make_mesh()
        ),
        ValueError,
        "config.num_envs",
    ),
    Case(
        "parallel.make_data_parallel_train",
        lambda mp: parallel.make_data_parallel_train(
            _tiny_ppo(), TINY_NET, EMPTY, parallel.make_mesh()
        )(3),
        TypeError,
        "key: expected a PRNG key",
    ),
    Case(
        "parallel.first_batch",
        lambda mp: parallel.first_batch(_tiny_ppo(), TINY_NET, EMPTY, 3),
        TypeError,
        "key: expected a PRNG key",
    ),
]


def _small_mdp():
    walls, _, (target,) = maze.parse_maze(("S.#", "...", "#.T"))
    return tabular.maze_mdp(walls, target)


CASES += [
    Case(
        "tabular.maze_mdp",
        lambda mp: tabular.maze_mdp(np.zeros((3, 3), bool), (0, 3)),
        ValueError,
        r"target: cell \(0, 3\) is outside the 3x3 maze",
    ),
    Case(
        "tabular.maze_mdp",
        lambda mp: tabular.maze_mdp(np.array([[0, 1, 0], [1, 0, 0]]), (1, 2)),
        ValueError,
        r"walls: the free cells \[\(0, 0\)\] cannot reach the target \(1, 2\)",
    ),
    Case(
        "tabular.evaluate_policy",
        lambda mp: tabular.evaluate_policy(_small_mdp(), jnp.full((5, 4), 0.25), 0.9),
        ValueError,
        r"probs: expected shape \(6, 4\), got \(5, 4\)",
    ),
    Case(
        "tabular.evaluate_policy",
        lambda mp: tabular.evaluate_policy(_small_mdp(), jnp.full((6, 4), 0.25), 0.9),
        ValueError,
        "probs: .* 0 on illegal actions",
    ),
    Case(
        "tabular.action_values",
        lambda mp: tabular.action_values(_small_mdp(), jnp.zeros(6), 1.0),
        ValueError,
        r"gamma: expected a number in \[0.0, 1.0\)",
    ),
    Case(
        "tabular.value_iteration",
        lambda mp: tabular.value_iteration(_small_mdp(), 0.9, tol=-1.0),
        ValueError,
        "tol",
    ),
    Case(
        "tabular.sample_episode",
        lambda mp: tabular.sample_episode(
            _small_mdp(), jax.random.key(0), jnp.full((6, 4), 0.25), 6
        ),
        ValueError,
        r"start_state: expected a state in \[0, 6\), got 6",
    ),
    Case(
        "tabular.discounted_returns",
        lambda mp: tabular.discounted_returns(jnp.zeros((2, 3)), 0.9),
        ValueError,
        r"rewards: expected shape \(T,\), got \(2, 3\)",
    ),
]

#: Every check names what it was given when it is not a function.
CHECKS = {
    basics: ["check_softplus_grad", "check_discounted_returns", "check_noisy_batch"],
    dqn_checks: [
        "check_double_dqn_target",
        "check_n_step_target",
        "check_q_overshoot",
    ],
    replay_window_checks: ["check_sample_windows"],
    env_checks: [
        "check_legal_fraction",
        "check_up_first_policy",
        "check_termination_and_truncation",
    ],
    ending_checks: ["check_count_endings"],
    cartpole_checks: ["check_semi_implicit_step", "check_balancing_policy"],
    net_checks: [
        "check_mlp_apply",
        "check_frozen_constant",
        "check_per_example_grad_norms",
    ],
    perf_checks: [
        "check_batched_rollout",
        "check_rollout_bytes",
        "check_bend",
    ],
    checkpoint_checks: ["check_checkpointed_propagation"],
    ppo_checks: [
        "check_dual_clip_objective",
        "check_epsilon_masked_probs",
        "check_late_success",
    ],
    ppo_rollout_checks: ["check_gae_from_values", "check_fill_one_loss"],
    parallel_checks: ["check_allreduce_bytes", "check_data_parallel_grad", "check_pays_from"],
    generalising_checks: ["check_settle", "check_success_by_reach"],
    bug_checks: ["check_decayed_training", "check_collector"],
    key_checks: ["check_rollout_keys"],
    foundation_checks: ["check_action_values", "check_reinforce_weights", "check_q_learning"],
    silent_bug_checks: ["check_cross_talk"],
    compilation_checks: ["check_compilations"],
}
CASES += [
    Case(
        f"checks.{module.__name__.rsplit('.', 1)[1]}.{name}",
        lambda mp, fn=getattr(module, name): fn(42),
        core.CheckFailed,
        "expected your function, got int 42",
    )
    for module, names in CHECKS.items()
    for name in names
]

#: Public names without a bad-input row, and why.
EXEMPT = {
    "stats.Comparison": "data container: what a test says (made by stats' tests)",
    "parallel.shard_map": "jax.shard_map with one flag set; JAX checks the arguments",
    # data containers (NamedTuples and equinox-free records) with no behaviour to misuse
    "agents.dqn.losses.Transition": "data container",
    "agents.dqn.train.DQNConfig": "data container; checked by agents.dqn.check_config",
    "agents.dqn.train.RunnerState": "data container",
    "agents.ppo.rollout.Transition": "data container",
    "agents.ppo.losses.Batch": "data container",
    "agents.ppo.config.PPOConfig": "data container; checked by agents.ppo.config.check_config",
    "agents.ppo.networks.ConvNet": "data container; checked by agents.ppo.networks.check_network",
    "agents.ppo.networks.PropagationNet": "data container; checked by check_network",
    "agents.ppo.networks.ValueIterationNet": "data container; checked by check_network",
    "agents.ppo.train.RunnerState": "data container",
    "agents.ppo.train.collect_batch": "called by make_trainer's update and parallel.first_batch, "
    "which check its arguments first (validated once, at those entry points)",
    "agents.ppo.train.episode_stats": "called by make_trainer's update, which checks its "
    "arguments first (validated once, at that entry point)",
    "agents.ppo.train.shuffle_minibatches": "called by make_trainer's update, which checks "
    "its arguments first (validated once, at that entry point)",
    "agents.ppo.train.Trainer": "data container",
    "agents.ppo.evaluate.Evaluation": "data container",
    "envs.autoreset.ResetPool": "data container",
    "envs.cartpole.CartPoleParams": "data container",
    "envs.cartpole.CartPoleState": "data container",
    "envs.cartpole.CartPole": "constants and three methods that call reset, step and step_autoreset",
    "envs.cartpole.TimeStep": "data container",
    "replay.ReplayBuffer": "data container",
    "glue.Words": "data container; made and checked by glue.words",
    "checks.core.CheckFailed": "the exception the checks raise",
    "checks.core.Case": "data container",
    "checks.core.fail": "raises CheckFailed by design",
    "checks.core.require_pair": "raises CheckFailed by design when an answer is not a pair",
    "checks.core.passed": "prints a line; any message is valid",
    "bench.hardware": "takes no arguments",
    **{
        f"diagrams.{name}": "takes no arguments"
        for name in (
            "rl.agent_environment_loop",
            "rl.corridor_mdp",
            "rl.episode_endings",
            "jax_ideas.jit_compile",
            "jax_ideas.vmap_batch",
            "jax_ideas.scan_carry",
            "jax_ideas.init_apply_and_module",
            "agents.ppo_iteration",
            "devices.data_parallel",
        )
    },
    "playground.StepResult": "data container",
    "tabular.MazeMDP": "data container; made by tabular.maze_mdp",
}


def _public_names():
    names = set()
    for info in pkgutil.walk_packages(companion.__path__, "companion."):
        if info.name.rsplit(".", 1)[1].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if obj.__module__ == info.name:
                names.add(f"{info.name.removeprefix('companion.')}.{name}")
    return names


@pytest.mark.parametrize("case", CASES, ids=[f"{c.target}-{i}" for i, c in enumerate(CASES)])
def test_bad_input_gives_a_clear_error(case, monkeypatch):
    with pytest.raises(case.error, match=case.match):
        jax.block_until_ready(case.call(monkeypatch))


def test_every_public_name_has_a_bad_input_row():
    public = _public_names()
    covered = {c.target for c in CASES}
    assert not covered - public, f"rows for names that do not exist: {covered - public}"
    assert not set(EXEMPT) - public, f"exemptions for missing names: {set(EXEMPT) - public}"
    missing = public - covered - set(EXEMPT)
    assert not missing, f"public names without a bad-input row: {sorted(missing)}"


def test_close_compares_shapes_too():
    assert core.close(np.ones(3), np.ones(3))
    assert not core.close(np.ones(3), np.ones(1))  # no broadcasting: a (1,) answer is not (3,)
    assert not core.close(np.ones(2), np.ones((2, 2)))
