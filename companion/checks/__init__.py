"""Self-checks for the exercises.

Each ``check_*`` runs the reader's function on cases with known answers, prints one line when
all agree, and otherwise raises :class:`CheckFailed` saying what is wrong (a shape, a sign, ...).
"""

from companion.checks.basics import (
    check_discounted_returns,
    check_noisy_batch,
    check_softplus_grad,
)
from companion.checks.bugs import check_collector, check_decayed_training
from companion.checks.keys import check_rollout_keys
from companion.checks.core import CheckFailed
from companion.checks.dqn import (
    check_double_dqn_target,
    check_n_step_target,
    check_q_overshoot,
    check_sample_windows,
)
from companion.checks.foundations import (
    check_action_values,
    check_q_learning,
    check_reinforce_weights,
)
from companion.checks.cartpole import check_balancing_policy, check_semi_implicit_step
from companion.checks.endings import check_count_endings
from companion.checks.envs import (
    check_legal_fraction,
    check_termination_and_truncation,
    check_up_first_policy,
)
from companion.checks.generalising import check_settle, check_success_by_reach
from companion.checks.parallel import (
    check_allreduce_bytes,
    check_data_parallel_grad,
    check_pays_from,
)
from companion.checks.checkpointing import check_checkpointed_propagation
from companion.checks.performance import (
    check_batched_rollout,
    check_bend,
    check_rollout_bytes,
)
from companion.checks.ppo import (
    check_dual_clip_objective,
    check_epsilon_masked_probs,
    check_late_success,
)
from companion.checks.ppo_rollout import check_fill_one_loss, check_gae_from_values
from companion.checks.networks import (
    check_frozen_constant,
    check_mlp_apply,
    check_per_example_grad_norms,
)
from companion.checks.compilations import check_compilations
from companion.checks.silent_bugs import check_cross_talk

__all__ = [
    "CheckFailed",
    "check_action_values",
    "check_q_learning",
    "check_reinforce_weights",
    "check_allreduce_bytes",
    "check_data_parallel_grad",
    "check_balancing_policy",
    "check_batched_rollout",
    "check_bend",
    "check_checkpointed_propagation",
    "check_collector",
    "check_count_endings",
    "check_compilations",
    "check_cross_talk",
    "check_gae_from_values",
    "check_decayed_training",
    "check_discounted_returns",
    "check_dual_clip_objective",
    "check_epsilon_masked_probs",
    "check_fill_one_loss",
    "check_double_dqn_target",
    "check_late_success",
    "check_legal_fraction",
    "check_noisy_batch",
    "check_semi_implicit_step",
    "check_softplus_grad",
    "check_termination_and_truncation",
    "check_up_first_policy",
    "check_frozen_constant",
    "check_mlp_apply",
    "check_n_step_target",
    "check_q_overshoot",
    "check_rollout_bytes",
    "check_pays_from",
    "check_settle",
    "check_success_by_reach",
    "check_per_example_grad_norms",
    "check_rollout_keys",
    "check_sample_windows",
]
