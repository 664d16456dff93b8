"""check_batched_rollout, check_rollout_bytes, check_bend (chapter 11): right answers, each
check's bank of wrong answers (``WRONG_*``: slip, answer, verdict) and its hardest cases.

What each check guards, and the case that breaks each plausible wrong answer:

check_batched_rollout (``jax.vmap(cartpole.step_autoreset)`` in one scan; 60 steps of 3
CartPoles with a time limit of 30)
- auto-reset and ``done``: no autoreset, terminated for done (misses the truncations);
- time first and on time: environment first, rolled or late by one step, named;
- one scan: a Python loop, even under jax.jit, and scan's unroll, from the programs at
  20 and 40 steps;
- a check run twice, or under the answer's own jit, passes, and leaves the real limit;
- the final carry, on time: the states passed in returned, the actions in reverse time
  (reversed, or scan's reverse=True), the environments' actions swapped or all
  environment 0's, named; other final states generic, at their first element;
- the contract: the states only, the physics for the states, int done.

check_rollout_bytes (330 bytes per step and environment)
- dtype sizes: bools as 4 bytes, ints as int64, float64, bits, megabytes, named;
- the fields: a next image, one channel, a missing 4-byte field (next_value, not told it
  is stored too) or bool, named;
- num_steps * num_envs transitions; an int. 8 bytes too many is generic;
- any other whole number of bytes a step: the difference explained by one field (or every
  field of a dtype) left out, counted as one element, at another size an element or in
  bits: the bools in bits, the mask as 1 byte, terminated as float32, the image in bits or
  left out, reward as float64, named.

check_bend (the first size where the log-log slope drops below ``slope``)
- numeric order: sizes sorted as strings, the dict's order, named;
- the size before the bend, not after; not the peak; the slope of logs, not a ratio of
  gains nor log(gain) alone; segments between neighbours, not from the first size; the
  first flat segment, not the first steep one nor the last flat one; steps_per_s, not
  median_s (named with the steep segment, whose bends it gives on every sweep); the
  largest size for a curve that never bends, not the smallest; slope used;
  an int, not a str. Otherwise generic, with the log-log slopes.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import companion.checks as checks
from checks.answers import (
    _bend_numpy,
    _bytes_by_fields,
    bank_params,
    batched_scan,
    bend_answer,
    generic,
    passes,
    rejects,
    right_params,
    right_rollout_bytes,
    scan_rollout,
)
from companion.checks import (
    CheckFailed,
    check_batched_rollout,
    check_rollout_bytes,
)
from companion.envs import cartpole

# --- check_batched_rollout: batched_rollout(states, actions) ------------------------------


def looked_up_scan(states, actions):
    """A right answer that finds ``cartpole.step_autoreset`` when it is traced, as a student's."""

    def body(states, actions_t):
        states, timestep = jax.vmap(cartpole.step_autoreset)(states, actions_t)
        return states, timestep.done

    return jax.lax.scan(body, states, actions)


def test_batched_rollout_check_runs_again_and_leaves_the_real_time_limit(capsys):
    """A check cell run twice, and an answer under its own jax.jit, still pass (the short time
    limit the check sets is traced each time); afterwards the answer runs with the real limit."""
    jitted = jax.jit(looked_up_scan)
    for answer in (looked_up_scan, looked_up_scan, jitted, jitted):
        check_batched_rollout(answer)
    assert capsys.readouterr().out.count("check passed") == 4

    def states():  # the same three starts each time, from keys not yet used
        return jax.vmap(cartpole.reset)(jax.random.split(jax.random.key(3), 3))[0]

    # pushing left and right in turn keeps some poles up past the check's 30-step limit
    actions = jnp.tile(jnp.array([[0], [1]], jnp.int32), (60, 3))
    _, dones = jitted(states(), actions)
    _, expected = batched_scan(states(), actions)  # cartpole's own step, its real limit
    short = cartpole.DEFAULT_PARAMS._replace(max_steps=30)
    _, truncated_early = batched_scan(
        states(), actions, step_fn=lambda s, a: cartpole.step_autoreset(s, a, short)
    )
    assert not np.array_equal(np.asarray(truncated_early), np.asarray(expected))
    assert np.array_equal(np.asarray(dones), np.asarray(expected))


def unrolled_batched(states, actions):
    dones = []
    for t in range(actions.shape[0]):
        states, timestep = jax.vmap(cartpole.step_autoreset)(states, actions[t])
        dones.append(timestep.done)
    return states, jnp.stack(dones)


def _batched_late(states, actions):
    """Emits the done flag carried from the step before."""

    def body(carry, actions_t):
        states, done = carry
        states, timestep = jax.vmap(cartpole.step_autoreset)(states, actions_t)
        return (states, timestep.done), done

    (states, _), dones = jax.lax.scan(body, (states, jnp.zeros(actions.shape[1], bool)), actions)
    return states, dones


@jax.jit
def _jitted_python_loop(states, actions):
    dones = []
    for t in range(actions.shape[0]):
        states, timestep = jax.vmap(cartpole.step_autoreset)(states, actions[t])
        dones.append(timestep.done)
    return states, jnp.stack(dones)


def _scan_unrolled(states, actions):
    def body(states, actions_t):
        states, timestep = jax.vmap(cartpole.step_autoreset)(states, actions_t)
        return states, timestep.done

    return jax.lax.scan(body, states, actions, unroll=True)


def _scan_terminated(states, actions):
    def body(states, actions_t):
        states, timestep = jax.vmap(cartpole.step_autoreset)(states, actions_t)
        return states, timestep.terminated

    return jax.lax.scan(body, states, actions)


RIGHT_BATCHED = [batched_scan, jax.vmap(scan_rollout, in_axes=(0, 1), out_axes=(0, 1))]


WRONG_BATCHED = [
    (
        "done as int32",
        lambda s, a: (batched_scan(s, a)[0], batched_scan(s, a)[1].astype(jnp.int32)),
        r"done_t .* should be a bool array .*; it is an int32 array",
    ),
    ("done one step late", _batched_late, r"one step late"),
]


WRONG_BATCHED += [
    ("no autoreset", lambda s, a: batched_scan(s, a, cartpole.step), "never restart"),
    (
        "done environment first",
        lambda s, a: (batched_scan(s, a)[0], batched_scan(s, a)[1].T),
        "environment first",
    ),
    (
        "done rolled by one step",
        lambda s, a: (batched_scan(s, a)[0], jnp.roll(batched_scan(s, a)[1], 1, 0)),
        "done_t is not",
    ),
    (
        "the environments' actions reversed",
        lambda s, a: batched_scan(s, a[:, ::-1]),
        r"environment 0 is stepped with the actions of environment 2",
    ),
    ("a Python loop", unrolled_batched, "unrolls its loop"),
    ("the states only", lambda s, a: s, "pair"),
    (
        "the physics for the states",
        lambda s, a: (s.physics, batched_scan(s, a)[1]),
        "should be the final states, a cartpole.CartPoleState",
    ),
    ("one argument", lambda s: s, "raised TypeError"),
    ("a Python loop under jax.jit", _jitted_python_loop, "unrolls its loop"),
    ("scan's unroll", _scan_unrolled, "unroll"),
    ("terminated for done", _scan_terminated, "misses the truncations"),
    (
        "the states passed in",
        lambda s, a: (s, batched_scan(s, a)[1]),
        r"the final states are the states passed in: return the scan's final carry",
    ),
    (
        "environment 0's actions for all",
        lambda s, a: batched_scan(s, jnp.broadcast_to(a[:, :1], a.shape)),
        r"environment 1 is stepped with the actions of environment 0",
    ),
    (
        "the actions in reverse time",
        lambda s, a: batched_scan(s, a[::-1]),
        r"the actions are taken in reverse time order",
    ),
    (
        "scan's reverse=True",
        lambda s, a: jax.lax.scan(
            lambda st, at: (lambda out: (out[0], out[1].done))(
                jax.vmap(cartpole.step_autoreset)(st, at)
            ),
            s,
            a,
            reverse=True,
        ),
        r"the actions are taken in reverse time order",
    ),
    (
        "the final step's physics perturbed",
        lambda s, a: (lambda st, d: (st._replace(physics=st.physics * 1.5), d))(
            *batched_scan(s, a)
        ),
        generic(r"final_states.physics first differs at environment 0"),
    ),
]


# --- check_rollout_bytes: rollout_bytes(num_steps, num_envs) ------------------------------


def test_rollout_bytes(capsys):
    check_rollout_bytes(right_rollout_bytes)
    assert "330 bytes per step and environment" in capsys.readouterr().out


RIGHT_BYTES = [right_rollout_bytes, _bytes_by_fields]


WRONG_BYTES = [
    ("4 bytes missing (step_count)", 326, r"4 bytes a step are missing.*step_count"),
    ("ints as int64", 338, r"int32 \(4 bytes\), not int64"),
    ("64-bit ints and floats", 354, r"32-bit \(4 bytes\) by default"),
    ("a next image as well", 630, r"no next image is stored"),
    ("bits", 2640, r"these are bits"),
    ("one bool missing", 329, r"1 byte a step is missing"),
]


WRONG_BYTES = [
    (what, lambda t, n, b=per_step: b * t * n, message) for what, per_step, message in WRONG_BYTES
]
WRONG_BYTES += [
    ("bools as 4 bytes", lambda t, n: 1230 * t * n, "stored as bool"),
    ("the mask as 4 bytes", lambda t, n: 348 * t * n, "1 byte, not 4 \\(action_mask"),
    ("the image as 4 bytes", lambda t, n: 1248 * t * n, "1 byte, not 4 \\(the image"),
    ("a next image", lambda t, n: 626 * t * n, "no next image"),
    ("a next image of 4 bytes", lambda t, n: 1526 * t * n, "no next image"),
    ("next_value missing", lambda t, n: 326 * t * n, "next_value"),
    ("floats as float64", lambda t, n: 346 * t * n, "float64"),
    ("one channel", lambda t, n: 130 * t * n, "3 channels"),
    ("num_steps left out", lambda t, n: 330 * n, "num_steps \\* num_envs"),
    ("8 bytes too many", lambda t, n: 330 * t * n + 8, generic("expected 330")),
    ("a str", lambda t, n: "many", "should return an int .*; it returned the str 'many'"),
    ("megabytes", lambda t, n: 330 * t * n / 1e6, "a whole number of bytes"),
]
WRONG_BYTES += [
    (what, lambda t, n, b=per_step: b * t * n, message)
    for what, per_step, message in [
        (
            "the bools in bits",
            (300 + 4 + 2) // 8 + 8 + 16,
            r"= 62, where 330 bytes .*: the difference, -268 bytes a step, is exactly every "
            r"bool field \(image \(3, 10, 10\) bool / action_mask \(4,\) bool / terminated",
        ),
        (
            "the action mask as 1 byte",
            300 + 1 + 8 + 16 + 2,
            r"-3 bytes a step, is exactly action_mask \(4,\) bool counted as one element, not 4",
        ),
        (
            "terminated as float32",
            333,
            r"one of terminated \(\) bool / done \(\) bool counted at 4 bytes an element",
        ),
        ("the image in bits", 330 - 300 + 37, r"image \(3, 10, 10\) bool counted in bits"),
        ("the image left out", 30, r"image \(3, 10, 10\) bool left out"),
        (
            "reward as float64",
            334,
            r"one of action \(\) int32 / .* counted at 8 bytes an element, not 4",
        ),
    ]
]


def test_a_missing_field_is_not_told_it_is_next_value():
    with pytest.raises(CheckFailed) as failure:
        checks.check_rollout_bytes(lambda t, n: 326 * t * n)
    assert "next_value" in str(failure.value) and "is stored too" not in str(failure.value)


# --- check_bend: bend(sweep, slope) --------------------------------------------------


def _bend_past(sweep, slope=0.5):
    sizes = sorted(sweep, key=int)
    for a, b in zip(sizes, sizes[1:]):
        if (
            np.log(sweep[b]["steps_per_s"] / sweep[a]["steps_per_s"]) / np.log(int(b) / int(a))
            < slope
        ):
            return int(b)
    return int(sizes[-1])


def _bend_linear(sweep, slope=0.5):
    sizes = sorted(sweep, key=int)
    for a, b in zip(sizes, sizes[1:]):
        if sweep[b]["steps_per_s"] / sweep[a]["steps_per_s"] / (int(b) / int(a)) < slope:
            return int(a)
    return int(sizes[-1])


def _bend_with(sweep, slope, flat):
    """The bend with ``flat(gain, growth)`` for a segment flatter than ``slope``."""
    sizes = sorted(sweep, key=int)
    for a, b in zip(sizes, sizes[1:]):
        if flat(sweep[b]["steps_per_s"] / sweep[a]["steps_per_s"], int(b) / int(a)):
            return int(a)
    return int(sizes[-1])


def _bend_from_first(sweep, slope=0.5):
    sizes = sorted(sweep, key=int)
    a = sizes[0]
    for b in sizes[1:]:
        gain = sweep[b]["steps_per_s"] / sweep[a]["steps_per_s"]
        if np.log(gain) / np.log(int(b) / int(a)) < slope:
            return int(b)
    return int(sizes[-1])


def _bend_last(sweep, slope=0.5):
    sizes = sorted(sweep, key=int)
    bend = int(sizes[-1])
    for a, b in zip(sizes, sizes[1:]):
        if (
            np.log(sweep[b]["steps_per_s"] / sweep[a]["steps_per_s"]) / np.log(int(b) / int(a))
            < slope
        ):
            bend = int(a)
    return bend


RIGHT_BEND = [bend_answer, _bend_numpy]


WRONG_BEND = [
    ("sorted as strings", functools.partial(bend_answer, order=sorted), r"sorted as strings"),
    ("the dict's order", functools.partial(bend_answer, order=list), r"the dict's order"),
    ("the size past the bend", _bend_past, r"the size after the bend"),
    (
        "the peak",
        lambda s, slope: int(max(s, key=lambda k: s[k]["steps_per_s"])),
        r"the size with the most steps per second",
    ),
    ("gain / growth", _bend_linear, r"gain over the size's growth"),
    ("slope ignored", lambda s, slope: bend_answer(s), r"slope is ignored"),
    (
        "log(gain) alone",
        lambda s, slope=0.5: _bend_with(s, slope, lambda g, growth: np.log(g) < slope),
        r"the slope is log\(gain\) alone, without dividing by log\(growth\)",
    ),
    (
        "every slope from the first size",
        _bend_from_first,
        r"every slope is measured from the first size",
    ),
    (
        ">= for <",
        lambda s, slope=0.5: _bend_with(
            s, slope, lambda g, growth: np.log(g) / np.log(growth) >= slope
        ),
        r"it returns where the curve is steep",
    ),
    (
        "the last flat segment",
        _bend_last,
        r"the last segment flatter than slope",
    ),
    (
        "median_s for steps_per_s",
        lambda s, slope=0.5: bend_answer(
            {k: {"steps_per_s": v["median_s"]} for k, v in s.items()}, slope
        ),
        r"it returns where the curve is steep.*not median_s",
    ),
    (
        "the smallest size when it never bends",
        lambda s, slope=0.5: (lambda b: min(map(int, s)) if b == max(map(int, s)) else b)(
            bend_answer(s, slope)
        ),
        r"on a curve that never bends it returns the smallest size",
    ),
    (
        "twice the size",
        lambda s, slope=0.5: 2 * bend_answer(s, slope),
        generic(r"differs from the reference on DQN's committed curve(.|\n)*log-log slopes"),
    ),
    (
        "a str",
        lambda s, slope: str(bend_answer(s, slope)),
        r"should return an int \(a size\); it returned the str '512'",
    ),
]


def test_bend_of_the_committed_sweeps():
    """The chapter's solution runs bend on the committed sweeps: each gives a size; DQN's
    environments, whose steps per second grow with them for a while, bend past one."""
    from companion.bench import load_result

    scaling = load_result("scaling")
    assert bend_answer(scaling["dqn_envs"]) > 1
    assert all(isinstance(bend_answer(scaling[k]), int) for k in ("ppo_envs", "dqn_seeds"))


#: Each check's right answers and its bank of wrong ones.
RIGHTS = {
    "check_batched_rollout": RIGHT_BATCHED,
    "check_rollout_bytes": RIGHT_BYTES,
    "check_bend": RIGHT_BEND,
}
BANKS = {
    "check_batched_rollout": WRONG_BATCHED,
    "check_rollout_bytes": WRONG_BYTES,
    "check_bend": WRONG_BEND,
}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)
