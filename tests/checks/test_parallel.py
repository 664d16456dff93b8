"""check_allreduce_bytes, check_data_parallel_grad, check_pays_from (chapter 12): right answers,
each check's bank of wrong answers (``WRONG_*``: slip, answer, verdict) and the multi-device
cases (8 simulated devices, in a process of their own).

What each check guards, and the case that breaks each plausible wrong answer:

check_allreduce_bytes (``2 (n - 1) / n * 4 * num_params`` per device)
- the factor 2, the (n - 1) / n (one device's case), 4 bytes a float, named; half the
  bytes is one phase or 2 bytes a parameter (the same numbers), named as either;
- per device: all devices' traffic together, bits, a cost on one device, named;
- the formula as written: megabytes, an integer division in (n - 1) / n (1 for every n
  above 1), a chunk's share (divided by n again), n for (n - 1) / n, named.

check_data_parallel_grad (pmean of the shards' gradients, meshes of 1 to 8 devices)
- the whole batch split: a gradient that never splits is named;
- a mean: a loss summed over rows, psum for pmean (8 devices), named;
- an all-reduce and one result: none (the first device's rows only), stacked (8 devices);
- the rows split: x and y replicated into the shard_map (in_specs P() for them: each device
  differentiates the whole batch, the right numbers), named from the shard_map body's
  input shapes (8 devices, with and without jax.jit);
- the contract: an extra axis; 2 g + 1 is generic;
- the gradient itself: half of it (the 2 of the square left out), its sign flipped, divided by
  the rows again, named.

check_pays_from (the smallest num_envs from which every ratio exceeds ``above``)
- from which it pays for good: the first that pays (a larger one falls back), the
  first of two paying sizes in a row (a dip after two paying sizes), the largest, named; sizes given out of order (the dict's order named);
- ``>`` not ``>=``, ``above`` used, None (not -1) where none pays, a size, not a ratio.
- sorted by size: ratios that do not rise with the size (above 1 from the second size on)
  name sizes sorted by their ratio, and sizes sorted with the ratios left in the dict's
  order; the paying size of the largest ratio and the size just below the answer, named;
- what any answer meets, named on the set that breaks it: None where every size pays (a set
  where all pay) or where a run pays, a size where none pays, an int that is no size (the
  answer's position, how many sizes pay).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest
from notebook_runner import ROOT

from checks.answers import (
    _pays_suffix,
    _rows_summed,
    _summed_parts_gradient,
    bank_params,
    generic,
    mean_gradient,
    passes,
    pays_answer,
    rejects,
    right_params,
    ring,
)

# --- check_allreduce_bytes: allreduce_bytes(num_params, num_devices) --------------------


RIGHT_ALLREDUCE = [ring, lambda p, n: int(8 * p * (n - 1) // n)]


WRONG_ALLREDUCE = [
    (
        "every device's traffic together",
        lambda p, n: n * ring(p, n),
        r"multiplies by n - 1 .*all n devices send together",
    ),
    ("bits", lambda p, n: 8 * ring(p, n), r"counts bits"),
]


WRONG_ALLREDUCE += [
    ("half the traffic", lambda p, n: ring(p, n) / 2, "gives half the bytes: either it counts one"),
    (
        "2 bytes a parameter (a bfloat16's size)",
        lambda p, n: 2 * (n - 1) / n * 2 * p,
        r"gives half the bytes: .* or 2 bytes a parameter",
    ),
    ("parameters, not bytes", lambda p, n: ring(p, n) / 4, "counts parameters, not bytes"),
    (
        "traffic on one device",
        lambda p, n: ring(p, n) if n > 1 else 40,
        "one device has nothing to exchange",
    ),
    ("8 p (n - 1)", lambda p, n: 8 * p * (n - 1), "multiplies by n - 1"),
    # 8 * p on every case but one device, where it is right: the (n - 1) / n is missing
    ("8 p", lambda p, n: 0 if n == 1 else 8 * p, r"leaves out \(n - 1\) / n"),
]


WRONG_ALLREDUCE += [
    ("megabytes", lambda p, n: ring(p, n) / 1e6, r"gives megabytes or gigabytes"),
    (
        "an integer division in (n - 1) / n",
        lambda p, n: 2 * (n - 1) // n * 4 * p,
        r"2 \* \(n - 1\) // n is an integer division",
    ),
    ("one chunk's share", lambda p, n: ring(p, n) / n, r"divides by n once more"),
    ("n for (n - 1) / n", lambda p, n: 8 * p * n, r"multiplies by n instead of \(n - 1\) / n"),
]


# --- check_data_parallel_grad: mean_gradient(w, x, y, mesh) ------------------------------


RIGHT_DATA_PARALLEL = [mean_gradient, _summed_parts_gradient]


def _whole_batch_gradient(w, x, y, mesh):
    return jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)


WRONG_DATA_PARALLEL = [
    (
        "twice plus one",
        lambda w, x, y, mesh: 2 * mean_gradient(w, x, y, mesh) + 1,
        generic("mean_gradient differs from the reference on a mesh of 1 device"),
    ),
    ("an extra axis", lambda w, x, y, mesh: mean_gradient(w, x, y, mesh)[None], r"shape \(1, 3\)"),
    # on this process's one device: the rows per device are the whole batch
    ("the loss summed over rows", _rows_summed, r"a sum over its rows, not a mean"),
    ("the whole batch on each device", _whole_batch_gradient, "never splits the batch"),
    (
        "the gradient derived by hand without its 2",
        lambda w, x, y, mesh: mean_gradient(w, x, y, mesh) / 2,
        r"the gradient is half what it should be",
    ),
    (
        "the descent direction",
        lambda w, x, y, mesh: -mean_gradient(w, x, y, mesh),
        r"the gradient's sign is flipped",
    ),
    (
        "divided by the rows again",
        lambda w, x, y, mesh: mean_gradient(w, x, y, mesh) / x.shape[0],
        r"divided by the number of rows once more",
    ),
]


_EIGHT_DEVICES = """
import json, sys
import jax, jax.numpy as jnp
from jax.sharding import PartitionSpec as P
from companion import parallel
from companion.checks import CheckFailed, check_data_parallel_grad
from checks.answers import mean_gradient, _rows_summed

def sharded(collective=jax.lax.pmean, out=P(), rows=P("devices")):
    def answer(w, x, y, mesh):
        def on_each_device(w, x, y):
            return collective(jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w), "devices")
        return parallel.shard_map(on_each_device, mesh, (P(), rows, rows), out)(w, x, y)
    return answer

answers = {"right": mean_gradient, "psum": sharded(jax.lax.psum),
           "no all-reduce": sharded(lambda g, axis: g), "stacked": sharded(out=P("devices")),
           "rows summed": _rows_summed, "replicated": sharded(rows=P()),
           "replicated, jitted": jax.jit(sharded(rows=P()), static_argnums=3)}
out = {"devices": len(jax.devices())}
for name, answer in answers.items():
    try:
        check_data_parallel_grad(answer)
        out[name] = "passed"
    except CheckFailed as exc:
        out[name] = str(exc)
print(json.dumps(out))
"""


@pytest.mark.subprocess
@pytest.mark.devices
def test_data_parallel_mistakes_on_eight_devices():
    env = dict(
        os.environ,
        XLA_FLAGS="--xla_force_host_platform_device_count=8",
        PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
    )
    run = subprocess.run(
        [sys.executable, "-c", _EIGHT_DEVICES],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    messages = json.loads(run.stdout.strip().splitlines()[-1])
    assert messages["devices"] == 8
    assert messages["right"] == "passed"
    assert "summed, not averaged" in messages["psum"]
    assert "the first device's rows only" in messages["no all-reduce"]
    assert "gradients are stacked" in messages["stacked"]
    assert "a sum over its rows, not a mean" in messages["rows summed"]
    for name in ("replicated", "replicated, jitted"):
        assert (
            "gives every device the whole batch: inside its shard_map x is (16, 3)"
            in (messages[name])
        )


# --- check_pays_from: pays_from(ratios, above) ----------------------------------------


RIGHT_PAYS = [pays_answer, _pays_suffix]


WRONG_PAYS = [
    (
        "the first that pays",
        lambda r, a: next((n for n in sorted(r) if r[n] > a), None),
        r"the first num_envs whose ratio exceeds above, though a larger one falls back",
    ),
    (
        "the largest that pays",
        lambda r, a: max((n for n in r if r[n] > a), default=None),
        r"the largest num_envs that pays",
    ),
    (
        "the first of two paying sizes in a row",
        lambda r, a: _pays_first_pair(r, a),
        r"the first num_envs whose ratio exceeds above, though a larger one falls back",
    ),
    ("the dict's order", lambda r, a: _pays_unsorted(r, a), r"the dict's order"),
    (">= for >", lambda r, a: pays_answer(r, a - 1e-12), r"a ratio equal to above counts"),
    ("above ignored", lambda r, a: pays_answer(r), r"above is ignored"),
    (
        "the ratio returned",
        lambda r, a: None if pays_answer(r, a) is None else r[pays_answer(r, a)],
        r"returned the Python float 1.08\. That is a ratio, not the number of environments",
    ),
    ("-1 for none", lambda r, a: pays_answer(r, a) or -1, r"= -1, where no num_envs pays"),
]


WRONG_PAYS += [
    (
        "None where every size pays",
        lambda r, a: None if pays_answer(r, a) == min(r) else pays_answer(r, a),
        r"= None, but every num_envs pays here, the smallest included: return the smallest, 64",
    ),
    (
        "sizes sorted by their ratio",
        lambda r, a: _pays_by_ratio(r, a),
        r"sorted by their ratio, not by num_envs",
    ),
    (
        "the last size that does not pay",
        lambda r, a: _pays_below(r, a),
        r"the size just below the answer, the last one that does not pay",
    ),
    (
        "the answer's position",
        lambda r, a: None if pays_answer(r, a) is None else sorted(r).index(pays_answer(r, a)),
        r"= 2, which is not one of the sizes measured .*the answer's position",
    ),
    (
        "the largest size where none pays",
        lambda r, a: max(r) if pays_answer(r, a) is None else pays_answer(r, a),
        r"= 1024, where no num_envs pays \(the largest, 1024, has ratio 0.9",
    ),
    (
        "sizes sorted, ratios in the dict's order",
        lambda r, a: _pays_run(zip(sorted(r), r.values()), a),
        r"the sizes are sorted but the ratios are not",
    ),
    (
        "the size of the largest ratio",
        lambda r, a: max((n for n in r if r[n] > a), key=r.get, default=None),
        r"the size with the largest ratio",
    ),
    (
        "how many sizes pay",
        lambda r, a: sum(v > a for v in r.values()) or None,
        r"= 3, which is not one of the sizes measured .*how many sizes pay",
    ),
    (
        "None unless every size pays",
        lambda r, a: min(r) if all(v > a for v in r.values()) else None,
        r"= None, but every num_envs from 1024 on has a ratio above 1.0: return 1024",
    ),
]


def _pays_run(pairs, above):
    """The first size of the last run of paying (size, ratio) pairs, in the order given."""
    start = None
    for n, ratio in pairs:
        start = (n if start is None else start) if ratio > above else None
    return start


def _pays_by_ratio(ratios, above):
    return _pays_run(sorted(ratios.items(), key=lambda item: item[1]), above)


def _pays_below(ratios, above):
    """The largest size that does not pay (the smallest if none fails, None if the largest
    fails)."""
    sizes = sorted(ratios)
    if ratios[sizes[-1]] <= above:
        return None
    failing = [n for n in sizes if ratios[n] <= above]
    return failing[-1] if failing else sizes[0]


def _pays_first_pair(ratios, above):
    """The first size whose next one also pays (a dip after two paying sizes is missed)."""
    sizes = sorted(ratios)
    for a, b in zip(sizes, sizes[1:]):
        if ratios[a] > above and ratios[b] > above:
            return a
    return sizes[-1] if ratios[sizes[-1]] > above else None


def _pays_unsorted(ratios, above):
    start = None
    for n in ratios:
        start = (n if start is None else start) if ratios[n] > above else None
    return start


#: Each check's right answers and its bank of wrong ones.
RIGHTS = {
    "check_allreduce_bytes": RIGHT_ALLREDUCE,
    "check_data_parallel_grad": RIGHT_DATA_PARALLEL,
    "check_pays_from": RIGHT_PAYS,
}
BANKS = {
    "check_allreduce_bytes": WRONG_ALLREDUCE,
    "check_data_parallel_grad": WRONG_DATA_PARALLEL,
    "check_pays_from": WRONG_PAYS,
}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)
