"""Self-checks for the exercises.

Each ``check_*`` function runs a reader's function on cases with known answers.
It prints one line when everything agrees and otherwise raises
:class:`CheckFailed` with a message that says *what* is wrong (a shape, a sign,
a gradient that should be ``None``), not only *that* it is wrong.
"""

from companion.checks.core import CheckFailed
from companion.checks.dqn import check_sample, check_td_target
from companion.checks.networks import (
    check_frozen_constant,
    check_mlp_apply,
    check_mse_loss,
)

__all__ = [
    "CheckFailed",
    "check_frozen_constant",
    "check_mlp_apply",
    "check_mse_loss",
    "check_sample",
    "check_td_target",
]
