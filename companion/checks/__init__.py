"""Self-checks for the exercises.

Each ``check_*`` runs the reader's function on cases with known answers, prints one line when
all agree, and otherwise raises :class:`CheckFailed` saying what is wrong (a shape, a sign, ...).

``from companion.checks import check_x`` imports only the module that holds ``check_x``
(``_LAZY`` below, PEP 562): a chapter loads its own checks, so the book's execution cache,
which records the files each chapter read (``tools/book_cache.py``), executes again only the
chapters whose checks changed.
"""

from __future__ import annotations

import importlib

#: Each public name and the module of ``companion.checks`` that defines it.
_LAZY = {
    "check_discounted_returns": "basics",
    "check_noisy_batch": "basics",
    "check_softplus_grad": "basics",
    "check_collector": "bugs",
    "check_decayed_training": "bugs",
    "check_balancing_policy": "cartpole",
    "check_semi_implicit_step": "cartpole",
    "check_checkpointed_propagation": "checkpointing",
    "check_compilations": "compilations",
    "CheckFailed": "core",
    "check_double_dqn_target": "dqn",
    "check_n_step_target": "dqn",
    "check_q_overshoot": "dqn",
    "check_sample_windows": "replay_windows",
    "check_count_endings": "endings",
    "check_legal_fraction": "envs",
    "check_termination_and_truncation": "envs",
    "check_up_first_policy": "envs",
    "check_action_values": "foundations",
    "check_q_learning": "foundations",
    "check_reinforce_weights": "foundations",
    "check_settle": "generalising",
    "check_success_by_reach": "generalising",
    "check_rollout_keys": "keys",
    "check_frozen_constant": "networks",
    "check_mlp_apply": "networks",
    "check_per_example_grad_norms": "networks",
    "check_allreduce_bytes": "parallel",
    "check_data_parallel_grad": "parallel",
    "check_pays_from": "parallel",
    "check_batched_rollout": "performance",
    "check_bend": "performance",
    "check_rollout_bytes": "performance",
    "check_dual_clip_objective": "ppo",
    "check_epsilon_masked_probs": "ppo",
    "check_late_success": "ppo",
    "check_fill_one_loss": "ppo_rollout",
    "check_gae_from_values": "ppo_rollout",
    "check_cross_talk": "silent_bugs",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'companion.checks' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"companion.checks.{_LAZY[name]}"), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
