"""The many-devices chapter's self-checks accept right answers and name wrong ones (on this
process's single device; the multi-device cases run in tests/sharding_checks.py)."""

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import PartitionSpec as P

from companion import parallel
from companion.checks import CheckFailed, check_allreduce_bytes, check_data_parallel_grad


def ring(num_params, n):
    return 2 * (n - 1) / n * 4 * num_params


def test_allreduce_bytes_passes(capsys):
    check_allreduce_bytes(ring)
    assert "check passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, named",
    [
        (lambda p, n: ring(p, n) / 2, "counts half the traffic"),
        (lambda p, n: ring(p, n) / 4, "counts parameters, not bytes"),
        (lambda p, n: ring(p, n) if n > 1 else 40, "one device has nothing to exchange"),
        (lambda p, n: 8 * p * (n - 1), "multiplies by n - 1"),
    ],
)
def test_allreduce_bytes_mistakes_are_named(wrong, named):
    with pytest.raises(CheckFailed, match=named):
        check_allreduce_bytes(wrong)


def test_allreduce_bytes_leaving_out_the_ring_fraction_is_named():
    # 8 * p on every case but one device, where it is right: the (n - 1) / n is missing
    with pytest.raises(CheckFailed, match=r"leaves out \(n - 1\) / n"):
        check_allreduce_bytes(lambda p, n: 0 if n == 1 else 8 * p)


def mean_gradient(w, x, y, mesh):
    def on_each_device(w, x, y):
        return jax.lax.pmean(jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w), "devices")

    return jax.jit(
        parallel.shard_map(on_each_device, mesh, (P(), P("devices"), P("devices")), P())
    )(w, x, y)


def test_data_parallel_grad_passes_on_one_device(capsys):
    check_data_parallel_grad(mean_gradient)
    assert "check passed" in capsys.readouterr().out


def test_data_parallel_grad_wrong_answers_are_named():
    with pytest.raises(
        CheckFailed, match="mean_gradient differs from the reference on a mesh of 1 device"
    ):
        check_data_parallel_grad(lambda w, x, y, mesh: 2 * mean_gradient(w, x, y, mesh) + 1)
    with pytest.raises(CheckFailed, match=r"shape \(1, 3\)"):
        check_data_parallel_grad(lambda w, x, y, mesh: mean_gradient(w, x, y, mesh)[None])
