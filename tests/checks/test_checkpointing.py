"""check_checkpointed_propagation (chapter 11): right answers and its bank of wrong answers
(``WRONG_*``: slip, answer, verdict).

What the check guards, and the case that breaks each plausible wrong answer:

check_checkpointed_propagation (jax.checkpoint around the scan's body, same outputs)
- where the checkpoint is: around the whole scan or call, around a part of the body only
  (the message sum: the new carry is computed outside it), none at all, named;
- what it saves (the exercise's point): the residuals of ``jax.vjp`` stacked over the
  scan's 7 iterations, measured per iteration against one carry (3 images x 5 x 6 x 4
  float32). Kept twice a carry or more fails: a policy that saves everything (by name,
  its own ``lambda``, or ``save_anything_except_these_names()``), the dots policy (the
  body's two products are each as large as the carry, so it keeps as much as the original),
  named as a policy; a checkpoint around an identity on the output or around the last tanh
  (the outputs come out of the checkpoint, the work does not), named as a part of the body;
  ``nothing_saveable`` passes;
- a scan: a Python loop over checkpointed bodies, named;
- the same network: one iteration fewer or more (the outputs are the original's after 6 or
  8), named; relu in the body changes (logits, value) (generic); another network's
  class holds other arrays; a model instead of the class is told to pass the class.
"""

from __future__ import annotations

import jax
import pytest

from checks.answers import (
    bank_params,
    checkpointed_class,
    generic,
    passes,
    rejects,
    right_params,
)
from companion.agents import ppo

# --- a checkpointed copy of ppo.PropagationActorCritic ------------------------------


RIGHT_CHECKPOINT = [
    checkpointed_class(),
    checkpointed_class(policy=jax.checkpoint_policies.nothing_saveable),
]


WRONG_CHECKPOINT = [
    ("around the whole scan", checkpointed_class("scan"), r"wraps the whole scan"),
    ("around the whole call", checkpointed_class("call"), r"wraps the whole scan \(or the whole"),
    ("no checkpoint", checkpointed_class("none"), r"there is no jax.checkpoint"),
    (
        "around the message sum inside the body only",
        checkpointed_class("messages"),
        r"wraps only a part of the scan's body",
    ),
    (
        "a policy that saves everything",
        checkpointed_class(policy=jax.checkpoint_policies.everything_saveable),
        r"saves everything",
    ),
    (
        "a policy of its own that saves everything",
        checkpointed_class(policy=lambda *args, **params: True),
        r"keeps \d+ bytes of each iteration .*the policy given to jax.checkpoint saves",
    ),
    (
        "save_anything_except_these_names() with no name: saves everything",
        checkpointed_class(policy=jax.checkpoint_policies.save_anything_except_these_names()),
        r"the policy given to jax.checkpoint saves the body's activations",
    ),
    (
        "a policy that saves the matrix products, as large as the carry here",
        checkpointed_class(policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable),
        r"the policy given to jax.checkpoint saves the body's activations",
    ),
    (
        "a checkpoint around an identity on the body's output",
        checkpointed_class("identity"),
        r"keeps \d+ bytes of each iteration .*wraps only a part of the scan's body",
    ),
    (
        "only the body's last tanh checkpointed",
        checkpointed_class("tanh"),
        r"wraps only a part of the scan's body",
    ),
    (
        "a Python loop over checkpointed bodies in place of the scan",
        checkpointed_class("loop"),
        r"has no jax.lax.scan: a Python loop",
    ),
    (
        "one iteration fewer (length=self.iterations - 1)",
        checkpointed_class(extra=-1),
        r"the original's after 6 iterations of the scan, not 7",
    ),
    (
        "one iteration more",
        checkpointed_class(extra=1),
        r"the original's after 8 iterations of the scan, not 7",
    ),
    (
        "relu in the body",
        checkpointed_class(activation=jax.nn.relu),
        generic(r"\(logits, value\) differ"),
    ),
    ("a model, not the class", checkpointed_class()(jax.random.key(0)), r"pass the class itself"),
    ("another network's class", ppo.ValueIterationActorCritic, r"holds other arrays"),
]


#: The check's right answers and its bank of wrong ones.
RIGHTS = {"check_checkpointed_propagation": RIGHT_CHECKPOINT}
BANKS = {"check_checkpointed_propagation": WRONG_CHECKPOINT}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)
