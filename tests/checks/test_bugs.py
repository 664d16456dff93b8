"""check_decayed_training (chapter 2) and check_collector (chapter 7), the find-the-bug checks
of a compiled training step and a transition collector: each run both ways from the
notebook's cell (the printed bug fails, named; the one-line fix passes), right answers,
each check's bank of wrong answers (``WRONG_*``: slip, answer, verdict).

What each check guards, and the case that breaks each plausible wrong answer:

check_decayed_training (SGD compiled once, learning rate ``0.1 * 0.97**step``)
- one compilation: the chapter's Python-float rate traces at each of 8 steps, named (and
  again on a second check: no program cached by the first); a closure jitted anew in the
  loop, named; a step run without jit, told so (not told to pass an array);
- the schedule: a constant rate, a schedule one step late or early, the base rate 0.1 left
  out, 0.1 * 0.97 * step for the power, a rate that grows (0.1 / 0.97**step), each named
  from the losses.

check_collector (300 steps of auto-resetting CartPole, time limit 30, random policy)
- terminated on the step it happens: the printed flag one step late, no flag, ``done``
  (also True at truncations), extra flags, each named;
- obs and next_obs: next_obs from the next episode, a stale obs, next_obs carried as obs,
  next_obs equal to obs (the observation before the step), the two swapped (obs the state
  after next_obs and the action), each named;
- the action recorded is the one stepped: where next_obs follows from obs and the other
  action, a second draw and the previous step's action are named;
- terminated holding the truncations, or inverted, named;
- the policy's coin: one key for every step, a biased coin (75%), alternating actions;
  statistics of 300 steps (share of 1s within 0.15 of 50%, repeats within 0.15 of the
  independent rate): a coin biased by 15 points or more is caught.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import companion.checks as checks
from checks.answers import (
    DQN,
    NETWORKS,
    _cell,
    _definitions,
    _fixed,
    _one_line_fix,
    bank_params,
    passes,
    rejects,
    right_params,
)
from companion.checks import (
    CheckFailed,
    check_collector,
    check_decayed_training,
)


def _passes(check, answer, capsys):
    check(answer)
    assert "check passed" in capsys.readouterr().out


# --- check_decayed_training: train_decayed(model, x, y, num_steps) -------------------------


def test_decayed_training_both_ways(capsys):
    buggy = _cell("02_neural_networks", "train_decayed")
    with pytest.raises(CheckFailed, match=r"ran 8 times in 8 steps.*Python float"):
        check_decayed_training(_definitions(buggy, NETWORKS)["train_decayed"])
    fixed = _one_line_fix(
        buggy, "learning_rate = 0.1 * 0.97**step", "learning_rate = jnp.asarray(0.1 * 0.97**step)"
    )
    _passes(check_decayed_training, _definitions(fixed, NETWORKS)["train_decayed"], capsys)


_DECAYED = _cell("02_neural_networks", "train_decayed")


_STEP_LINE = "learning_rate = 0.1 * 0.97**step"


def _decayed(new_line):
    return _definitions(_one_line_fix(_DECAYED, _STEP_LINE, new_line), NETWORKS)["train_decayed"]


def _decayed_in_one_scan(model, x, y, num_steps):
    """The whole loop in one compiled program: a scan over the steps."""
    params, static = eqx.partition(model, eqx.is_array)

    @jax.jit
    def run(params):
        def body(params, step):
            m = eqx.combine(params, static)
            loss, grads = eqx.filter_value_and_grad(NETWORKS["eqx_loss"])(m, x, y)
            rate = 0.1 * 0.97**step
            return jax.tree.map(lambda p, g: p - rate * g, params, grads), loss

        return jax.lax.scan(body, params, jnp.arange(num_steps, dtype=jnp.float32))

    params, losses = run(params)
    return eqx.combine(params, static), list(np.asarray(losses))


def _decayed_without_jit(model, x, y, num_steps):
    """The step of the chapter, not compiled: the learning rate already an array."""
    losses = []
    for step in range(num_steps):
        loss, grads = eqx.filter_value_and_grad(NETWORKS["eqx_loss"])(model, x, y)
        rate = jnp.asarray(0.1 * 0.97**step)
        model = eqx.apply_updates(model, jax.tree.map(lambda g, rate=rate: -rate * g, grads))
        losses.append(float(loss))
    return model, losses


def _decayed_new_jit_each_step(model, x, y, num_steps):
    """A closure jitted anew at every step: traced anew, whatever the learning rate."""
    losses = []
    for step in range(num_steps):
        rate = jnp.asarray(0.1 * 0.97**step)

        @eqx.filter_jit
        def step_fn(model, x, y, rate=rate):
            loss, grads = eqx.filter_value_and_grad(NETWORKS["eqx_loss"])(model, x, y)
            return eqx.apply_updates(model, jax.tree.map(lambda g: -rate * g, grads)), loss

        model, loss = step_fn(model, x, y)
        losses.append(float(loss))
    return model, losses


RIGHT_DECAYED = [
    lambda: _decayed("learning_rate = jnp.asarray(0.1 * 0.97**step)"),
    lambda: _decayed("learning_rate = 0.1 * jnp.float32(0.97) ** step"),
    lambda: _decayed_in_one_scan,
]


WRONG_DECAYED = [
    (
        "the chapter's loop: a Python float",
        lambda: _decayed(_STEP_LINE),
        r"ran 8 times in 8 steps, under jit.*Python float",
    ),
    ("no jit, the rate an array", lambda: _decayed_without_jit, r"the step runs without jit"),
    (
        "a closure jitted at every step",
        lambda: _decayed_new_jit_each_step,
        r"traced anew at every step.*a function jitted anew inside the loop",
    ),
    (
        "the schedule one step late",
        lambda: _decayed("learning_rate = jnp.asarray(0.1 * 0.97 ** (step + 1))"),
        r"the schedule is one step late",
    ),
]


WRONG_DECAYED += [
    (
        "a constant rate",
        lambda: _decayed("learning_rate = jnp.asarray(0.1)"),
        "does not decay",
    ),
]


WRONG_DECAYED += [
    (
        "the schedule one step early",
        lambda: _decayed("learning_rate = jnp.asarray(0.1 * 0.97 ** (step - 1))"),
        r"the schedule is one step early",
    ),
    (
        "the base rate left out",
        lambda: _decayed("learning_rate = jnp.asarray(0.97**step)"),
        r"the rate leaves out 0.1: it is 0.97\*\*step",
    ),
    (
        "a product for the power",
        lambda: _decayed("learning_rate = jnp.asarray(0.1 * 0.97 * step)"),
        r"the rate is 0.1 \* 0.97 \* step, a product",
    ),
    (
        "a rate that grows",
        lambda: _decayed("learning_rate = jnp.asarray(0.1 / 0.97**step)"),
        r"the rate grows",
    ),
]


def test_an_answer_that_passes_an_array_is_not_told_to_pass_one():
    with pytest.raises(CheckFailed) as failure:
        checks.check_decayed_training(_decayed_without_jit)
    assert "pass it as an array" not in str(failure.value)


def test_a_step_recompiled_at_every_call_fails_every_time():
    buggy = _definitions(_cell("02_neural_networks", "train_decayed"), NETWORKS)["train_decayed"]
    for _ in range(2):  # the second check finds no program cached by the first
        with pytest.raises(CheckFailed, match="ran 8 times in 8 steps"):
            checks.check_decayed_training(buggy)


# --- check_collector: collect(key, num_steps) ---------------------------------------------


def test_collector_both_ways(capsys):
    buggy = _cell("07_dqn", "collect")
    with pytest.raises(CheckFailed, match="terminated is one step late"):
        check_collector(_definitions(buggy, DQN)["collect"])
    fixed = _one_line_fix(buggy, "terminated=terminated_t,", "terminated=timestep.terminated,")
    _passes(check_collector, _definitions(fixed, DQN)["collect"], capsys)


_LATE_FLAG = ("terminated=terminated_t,", "terminated=timestep.terminated,")


_CARRY = "return (env_state, timestep.obs, timestep.terminated), transition"


_DRAW = "jax.random.bernoulli(action_key).astype(jnp.int32)"


def collector(*edits):
    """The chapter's collect with its flag fixed, and ``edits`` (old, new) applied."""
    source = _one_line_fix(_cell("07_dqn", "collect"), *_LATE_FLAG)
    for old, new in edits:
        source = _one_line_fix(source, old, new)
    return _definitions(source, DQN)["collect"]


RIGHT_COLLECTOR = [
    collector(),  # the fixed chapter collector
    # randint for the coin
    collector((_DRAW, "jax.random.randint(action_key, (), 0, 2).astype(jnp.int32)")),
]
WRONG_COLLECTOR = [
    # a stale observation: told that obs is stale, not that no episode ended
    (
        "obs never carried",
        collector((_CARRY, _CARRY.replace("timestep.obs", "obs_t"))),
        "obs at steps .* is not the previous transition's next_obs.*stale",
    ),
    (
        "next_obs carried as obs",
        collector((_CARRY, _CARRY.replace("obs,", "next_obs,"))),
        "after an episode ends, obs .* is the state it ended in",
    ),
    # a biased coin: told to draw a fair coin, not that its steps share a key
    (
        "a biased coin",
        collector((_DRAW, _DRAW.replace("action_key)", "action_key, 0.75)"))),
        "a fair coin gives 50%",
    ),
    (
        "one key for every step",
        collector((_DRAW, _DRAW.replace("action_key", "reset_key"))),
        "at every step: the steps share one key",
    ),
    (
        "actions that alternate",
        collector((_DRAW, "(env_state.step_count % 2).astype(jnp.int32)")),
        "not independent from step to step",
    ),
]


RIGHT_COLLECTOR += [
    # cartpole's parameters passed explicitly
    collector(
        (
            "cartpole.step_autoreset(env_state, action_t)",
            "cartpole.step_autoreset(env_state, action_t, cartpole.DEFAULT_PARAMS)",
        )
    ),
]
WRONG_COLLECTOR += [
    (
        "as printed: terminated one step late",
        _definitions(_cell("07_dqn", "collect"), DQN)["collect"],
        "terminated is one step late",
    ),
    (
        "next_obs from the next episode",
        _definitions(
            _one_line_fix(
                _cell("07_dqn", "collect"), "next_obs=timestep.next_obs,", "next_obs=timestep.obs,"
            ),
            DQN,
        )["collect"],
        "first observation of the next",
    ),
    (
        "no termination flag",
        _definitions(
            _one_line_fix(
                _cell("07_dqn", "collect"),
                "terminated=terminated_t,",
                "terminated=jnp.bool_(False),",
            ),
            DQN,
        )["collect"],
        "no transition is marked",
    ),
    (
        "terminated with truncations and a threshold",
        collector(
            (
                "terminated=timestep.terminated,",
                "terminated=timestep.terminated | timestep.truncated | (obs_t[0] > 0.04),",
            )
        ),
        "disagrees at steps",
    ),
    (
        "done for terminated",
        _fixed("07_dqn", "collect", "terminated=terminated_t,", "terminated=timestep.done,", DQN),
        "also True at the .* truncations",
    ),
]


WRONG_COLLECTOR += [
    (
        "the action recorded drawn apart from the one stepped",
        collector(
            (
                "action=action_t,",
                "action=jax.random.bernoulli(jax.random.fold_in(action_key, 1)).astype(jnp.int32),",
            )
        ),
        r"the action recorded is not the action stepped: at steps \[",
    ),
    (
        "next_obs the observation before the step",
        collector(("next_obs=timestep.next_obs,", "next_obs=obs_t,")),
        r"next_obs equals obs at 300 of 300 steps: it is the observation the step started from",
    ),
    (
        "terminated holds the truncations",
        collector(("terminated=timestep.terminated,", "terminated=timestep.truncated,")),
        r"terminated is True exactly at the \d+ truncations .* holds timestep.truncated",
    ),
    (
        "obs and next_obs swapped",
        collector(
            ("next_obs=timestep.next_obs,", "next_obs=OBS,"),
            ("obs=obs_t,", "obs=timestep.next_obs,"),
            ("next_obs=OBS,", "next_obs=obs_t,"),
        ),
        r"obs and next_obs are swapped",
    ),
    (
        "the previous step's action recorded",
        collector(
            ("env_state, obs_t, terminated_t = carry", "env_state, obs_t, previous = carry"),
            ("action=action_t,", "action=previous,"),
            (_CARRY, "return (env_state, timestep.obs, action_t), transition"),
            (
                "carry = (env_state, obs, jnp.bool_(False))",
                "carry = (env_state, obs, jnp.int32(0))",
            ),
        ),
        r"the action recorded is the previous step's",
    ),
    (
        "terminated inverted",
        collector(("terminated=timestep.terminated,", "terminated=~timestep.terminated,")),
        r"terminated is inverted: True at the steps where the episode goes on",
    ),
]


#: Each check's right answers and its bank of wrong ones.
RIGHTS = {
    "check_decayed_training": [make() for make in RIGHT_DECAYED],
    "check_collector": RIGHT_COLLECTOR,
}
BANKS = {
    "check_decayed_training": [(what, make(), message) for what, make, message in WRONG_DECAYED],
    "check_collector": WRONG_COLLECTOR,
}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)
