"""companion.parallel on 8 simulated CPU devices: the data-parallel PPO step equals the
single-device step, seeds split over devices give vmap's results, sizes that do not split
raise errors that name them.

JAX fixes its device count when it starts, and this process (and each pytest-xdist worker)
started it with one CPU device, so the multi-device checks run in one subprocess
(``tests/package/sharding_checks.py``) with
``XLA_FLAGS=--xla_force_host_platform_device_count=8``; the rest of the suite keeps its one
device.
"""

import json
import os
import subprocess
import sys

import equinox as eqx
import jax
import numpy as np
import pytest
import run_cache
from notebook_runner import ROOT
from tiny import TINY_CONV_NET, TINY_PPO

from companion import parallel
from companion.agents import ppo
from companion.envs import maze as maze_lib

#: The tests that read the subprocess's checks run in one pytest-xdist worker, so that it
#: runs once.
pytestmark = pytest.mark.xdist_group("sharding_checks")

#: float32 has 24 bits of mantissa: sums of the same terms in another order differ by a
#: few units of the last place, relative to the largest term.
FLOAT32_TOL = 1e-6


@pytest.fixture(scope="module")
def checks(tmp_path_factory, request):
    """The subprocess's checks, kept for the next session while nothing it reads changes
    (``run_cache.py``)."""
    out = tmp_path_factory.mktemp("sharding") / "checks.json"
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=8"
    env = {**os.environ, "XLA_FLAGS": flags.strip()}

    def run():
        done = subprocess.run(
            [sys.executable, str(ROOT / "tests" / "package" / "sharding_checks.py"), str(out)],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return out.read_bytes()

    store = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    folder = None if store is None else store.mkdir("sharding-checks")
    return json.loads(run_cache.kept(folder, "checks", ".json", run_cache.key(), run))


def test_the_checks_ran_on_eight_devices(checks):
    assert checks["devices"] == 8


def test_data_parallel_step_equals_the_single_device_step(checks):
    """Two minibatch steps with the batch split over 2 and 8 devices give the loss and the
    parameters of the same steps on one device, to float32 rounding; the parameters moved
    by far more than that, and the clipped surrogate clipped (a real PPO step)."""
    for d, r in checks["step"].items():
        assert r["moved"] > 1e-3, d
        assert r["params"] < FLOAT32_TOL, (d, r)
        assert r["loss"] < 10 * FLOAT32_TOL, (d, r)
        assert 0.1 < r["clip_fraction"] < 0.9, (d, r)
    assert checks["all_reduce_in_program"]  # where the devices' gradients meet


def test_sharded_seeds_match_vmap(checks):
    """Equal to float32 rounding, every integer exactly: XLA compiles a vmap of 1 seed per
    device and of 4 seeds as two programs and may order some sums differently (PPO differs
    by about 1e-7 here; DQN's tiny run happens to agree bit for bit on this CPU, which is
    not guaranteed)."""
    for agent in ("ppo_seeds", "ppo_seeds_pretraced", "dqn_seeds"):
        assert checks[agent]["float"] < 1e-5, checks[agent]
        assert checks[agent]["int_leaves_differing"] == 0, checks[agent]
    assert checks["dqn_seeds_sharding"] == "P('devices',)"  # the seed axis stays split


def test_data_parallel_training_keeps_one_model(checks):
    """Each device steps its own environments, yet the copies of the parameters agree
    exactly after training (without the all-reduce each would follow its own gradients),
    and the steps of all devices are counted."""
    r = checks["dp_train"]
    assert r["replica_spread"] == 0.0
    assert r["env_steps"] == [128.0, 256.0]  # 16 environments x 8 steps per update
    assert r["loss_finite"]


def test_data_parallel_train_returns_the_whole_runs_runner(checks):
    """train(key) -> (runner, metrics) as ppo.make_train: jitted or called, the same results; the
    runner holds the 16 environments of the 4 devices (split over them), each device's own key,
    and every episode of every device: the 16 first ones and one per episode that ended
    (the metrics' count, itself a sum over the devices), none ending before it started."""
    r = checks["dp_train"]
    assert r["is_runner"]
    assert r["jit_against_call"] == {"float": 0.0, "int_leaves_differing": 0}
    assert r["environments"] == 16 and r["episode_starts"] == [16]
    assert r["env_state_sharding"] == "P('devices',)"
    assert r["positions_agree"]
    assert r["distinct_keys"] == 4
    assert r["episodes"] > 16  # 16 steps per environment, episodes of at most 5: several end
    assert r["started"] == 16 + r["episodes"]
    assert r["ended_within_started"]
    assert r["success_by_start"]["float"] == 0.0  # ppo.success_by_start(runner): the metric
    assert r["model_logits_shape"] == [128, 4]  # ppo.trained_model(network, runner) runs


@pytest.mark.parametrize(
    "name, expected",
    [
        ("seeds", "keys (the number of seeds): 6 does not split evenly over the mesh's 4 devices"),
        ("num_envs", "config.num_envs: 6 does not split evenly over the mesh's 4 devices"),
        ("minibatches", "config.num_minibatches: 4 does not divide each device's batch"),
        ("batch", "batch (the minibatch size): 6 does not split evenly over the mesh's 8 devices"),
    ],
)
def test_sizes_that_do_not_split_are_named(checks, name, expected):
    assert checks["errors"][name].startswith(expected), checks["errors"][name]


def test_one_device_mesh_and_bad_meshes():
    """In this process JAX has one CPU device: a mesh of it works, more is a clear error."""
    mesh = parallel.make_mesh()
    assert mesh.shape == {"devices": len(jax.devices())}
    with pytest.raises(ValueError, match="num_devices: 99 requested.*xla_force_host_platform"):
        parallel.make_mesh(99)
    with pytest.raises(ValueError, match="num_devices"):
        parallel.make_mesh(0)
    with pytest.raises(TypeError, match="mesh: expected a 1-D jax.sharding.Mesh"):
        parallel.make_data_parallel_step(ppo.PPOConfig(), "cpu")
    with pytest.raises(TypeError, match="train: expected a function"):
        parallel.shard_seeds(3, mesh)
    with pytest.raises(ValueError, match="keys: expected a batch of keys"):
        parallel.shard_seeds(lambda k: k, mesh)(jax.random.key(0))


def test_the_exercise_check_names_mistakes_on_eight_devices(checks):
    m = checks["check_messages"]
    assert m["right"] == "passed"
    summed = "mean_gradient: the parts' gradients are summed, not averaged"
    assert m["psum"].startswith(summed), m["psum"]
    assert "check_vma" in m["check_vma"] and m["check_vma"].startswith(summed), m["check_vma"]
    assert "the devices' gradients never meet" in m["no_all_reduce"], m["no_all_reduce"]


def test_first_batch_is_the_batch_of_make_trains_first_update():
    """One update of one epoch and one minibatch trains on a permutation of the whole batch: a
    loss that records its minibatch sees first_batch's transitions, every field of every row
    (episodes of at most 3 steps, so that GAE meets episode ends), and first_batch's model."""
    # one update of one minibatch: the whole batch, 4 environments by 6 steps
    config = TINY_PPO._replace(num_envs=4, num_steps=6, total_timesteps=24, num_minibatches=1)
    network, env = TINY_CONV_NET, maze_lib.make_maze_task("empty", time_limit=3)
    seen = []

    def recording_loss(model, batch):
        jax.debug.callback(lambda b: seen.append(jax.tree.map(np.asarray, b)), batch)
        return ppo.default_loss(config)(model, batch)

    jax.block_until_ready(
        jax.jit(ppo.make_train(config, network, env, recording_loss))(jax.random.key(6))
    )
    jax.effects_barrier()
    model, batch = parallel.first_batch(config, network, env, jax.random.key(6))
    (trained,) = seen
    assert batch.advantage.shape == (24,) and batch.image.dtype == np.float32
    assert np.asarray(batch.action_mask).sum() < 24 * 4  # walls and edges mask some moves
    first, other = (
        np.lexsort([np.asarray(b.target), np.asarray(b.log_prob)]) for b in (batch, trained)
    )
    for name, a, b in zip(batch._fields, batch, trained):
        np.testing.assert_allclose(
            np.asarray(a)[first], np.asarray(b)[other], atol=1e-6, err_msg=name
        )
    initial = ppo.make_trainer(config, network, env).init(jax.random.key(6))
    for a, b in zip(
        jax.tree.leaves(eqx.filter(model, eqx.is_inexact_array)), jax.tree.leaves(initial.params)
    ):
        np.testing.assert_array_equal(a, b)
