"""The installed JAX computes right on the CPU: guards against the known bad releases.

Each test is an upstream reproducer or the book's own computation in the same shape, with the
answer known independently (a hand-computed value, or the same function run op by op):

- jax-ml/jax#39103 (jaxlib 0.10.2): a vmapped matrix-vector product followed by a sum returns
  wrong numbers under ``jit`` from 32,769 rows on;
- jax-ml/jax#39257 (jaxlib 0.10.2 and 0.11.0): a broadcast-multiply-reduce of rank 8 kills the
  process (a segmentation fault, or a hang) on x86-64;
- every XLA flag the project sets is one the installed jaxlib knows: an unknown flag in
  ``XLA_FLAGS`` aborts the process before it prints anything.

The speed regression of jaxlib 0.11.1 (jax-ml/jax#40101: a small write inside a loop costs the
whole buffer) is measured by ``benchmarks/loop_writes.py``, whose quick mode runs in
``make test`` (``tests/tooling/test_benchmarks.py``).
"""

import json
import re
import subprocess
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from notebook_runner import ROOT

from companion.agents import dqn, ppo
from companion.envs import maze as maze_lib

#: More rows than 2**15: jaxlib 0.10.2 went wrong from 32,769 rows on (float32).
ROWS = 32_769


@pytest.mark.parametrize("n", [4_096, ROWS])
def test_vmapped_matvec_then_sum_is_right_under_jit(n):
    """jax-ml/jax#39103's reproducer: row i is (i, 0, 0), so the last row's squared norm is
    (n - 1)**2, exact in float32 (jaxlib 0.10.2 returned 1,071,645,696 for 1,073,741,824)."""
    i = jnp.arange(n, dtype=jnp.float32)
    rows = jnp.stack([i, jnp.zeros_like(i), jnp.zeros_like(i)], axis=1)
    matrix = jnp.eye(3, dtype=jnp.float32)

    def squared_norms(rows):
        return jax.vmap(lambda row: jnp.sum((matrix @ row) ** 2))(rows)

    expected = float(n - 1) ** 2
    assert float(squared_norms(rows)[-1]) == expected  # op by op
    assert float(jax.jit(squared_norms)(rows)[-1]) == expected
    np.testing.assert_array_equal(jax.jit(squared_norms)(rows), squared_norms(rows))


def test_the_books_networks_over_many_rows_agree_under_jit():
    """The DQN's Q-network and the PPO chapter's actor-critic, vmapped over more than 32,768
    observations: each row's outputs under ``jit`` equal those computed op by op, to float32
    rounding (the bug above was off by 0.2% to 0.8%)."""
    obs = jax.random.normal(jax.random.key(0), (ROWS, 4))
    q_network = dqn.make_q_network()
    params = q_network.init(jax.random.key(1), obs[0])

    def q_values(params, obs):
        return jax.vmap(lambda o: q_network.apply(params, o))(obs)

    eager, jitted = q_values(params, obs), jax.jit(q_values)(params, obs)
    assert eager.shape == (ROWS, 2)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5, atol=1e-6)

    env = maze_lib.make_maze_task("medium")
    _, timestep = env.reset(jax.random.key(2))
    image = maze_lib.observation_image(timestep.observation).astype(jnp.float32)
    # Rows differ: the image scaled by a different factor each.
    images = image * jnp.linspace(0.5, 1.5, ROWS)[:, None, None, None]
    assert (env.num_rows, env.num_cols) == (10, 10)  # the grid FIXED_MAZE_NETWORK is built for
    model = ppo.FIXED_MAZE_NETWORK(jax.random.key(3))

    def outputs(model, images):
        return jax.vmap(model)(images)

    eager, jitted = outputs(model, images), eqx.filter_jit(outputs)(model, images)
    assert eager[0].shape == (ROWS, 4) and eager[1].shape == (ROWS,)
    for a, b in zip(jitted, eager):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


RANK_8_REDUCE = """
import json

import jax
import jax.numpy as jnp

def f(obs, A):
    lik = jnp.sum(obs[..., None, None, None, None, None] * A, axis=2)
    return jnp.log(jnp.maximum(lik, 2.220446049250313e-16))

obs, A = jnp.ones((10, 4, 6), jnp.float32), jnp.ones((10, 4, 6, 9, 9, 9, 9, 9), jnp.float32)
out = jax.jit(f)(obs, A)
print(json.dumps([out.shape, float(out.min()), float(out.max())]))
"""


@pytest.mark.subprocess
def test_a_rank_8_broadcast_multiply_reduce_runs():
    """jax-ml/jax#39257's reproducer, in a process of its own (it crashed or hung jaxlib 0.10.2
    and 0.11.0): every element is log(6)."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", RANK_8_REDUCE], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        pytest.fail("jax-ml/jax#39257: the rank-8 broadcast-multiply-reduce hung (> 120 s)")
    assert done.returncode == 0, (
        f"jax-ml/jax#39257: the process ended with code {done.returncode}: {done.stderr[-500:]}"
    )
    shape, low, high = json.loads(done.stdout.strip().splitlines()[-1])
    assert shape == [10, 4, 9, 9, 9, 9, 9]
    assert low == pytest.approx(np.log(6.0)) and high == pytest.approx(np.log(6.0))


def _xla_flags_in_the_repository() -> list[str]:
    """Every ``--xla_...`` flag name in a file git tracks (code, notebooks, docs, Makefile)."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    names = set()
    for name in files:
        path = ROOT / name
        if path.suffix in {".py", ".ipynb", ".md", ".yml", ".toml", ".txt", ""} and path.is_file():
            names.update(re.findall(r"--xla_[a-z0-9_]+", path.read_text(errors="ignore")))
    return sorted(names)


@pytest.mark.subprocess
def test_every_xla_flag_the_project_sets_is_known_to_the_installed_jaxlib():
    """One process with every flag the repository names, each set to 1 (a valid value of a
    bool or an int flag): XLA aborts on the first computation and lists every name it does
    not know."""
    names = _xla_flags_in_the_repository()
    assert "--xla_backend_optimization_level" in names  # the tests' own flag is found
    env = {"XLA_FLAGS": " ".join(f"{name}=1" for name in names), "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", "import jax.numpy as jnp; print(float(jnp.ones(3).sum()))"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    unknown = re.findall(r"Unknown flags? in XLA_FLAGS: (.*)", done.stderr)
    assert not unknown, f"flags the installed jaxlib does not know: {unknown}"
    assert done.returncode == 0 and done.stdout.strip() == "3.0", done.stderr[-1000:]
