"""Tested helpers for the book *Deep reinforcement learning in JAX*.

Modules include :mod:`companion.budget` (training budgets), :mod:`companion.trees` (pytrees),
:mod:`companion.envs` (environments) and :mod:`companion.viz` (figures and animations).
"""

import os

__version__ = "0.1.0"

# XLA:CPU's concurrency-optimised scheduler can deadlock the vmapped PPO training program
# (jaxlib 0.10.2 on a 2-core CPU: every runtime thread ends up waiting, in a few out of ten
# runs; also without any host callback in the program: the PPO chapter's medium-maze program
# vmapped over 2 seeds, and benchmarks/scaling.py --quick, hung with the scheduler on).
# Importing this package before the first JAX computation turns that scheduler off, unless
# XLA_FLAGS already sets it; the flag has no effect once the CPU backend is running.
_SCHEDULER_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler"
if _SCHEDULER_FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_SCHEDULER_FLAG}=false".strip()

__all__ = ["__version__"]
