"""check_rollout_keys (chapter 8, find the bug): the printed rollout both ways, right answers
and its bank of wrong answers (``WRONG_*``: slip, answer, verdict).

What the check guards, and the case that breaks each plausible wrong answer:

check_rollout_keys (32 steps of 64 maze environments, time limit 8, under the key-reuse
checker and statistics with a threshold of 5 standard deviations)
- a fresh key each step: the printed bug (key reused) is found by the checker; the same
  key copied through its raw data, which the checker cannot follow, by its repeated
  actions; the step's key carried, a key closed over, one carried unchanged, named;
- independent environments: one key for all (shared noise), keys from the step count,
  named;
- no repetition across episodes: keys from each environment's step count, named;
- samples of the policy: the argmax, logits / 1.5 or / 2, uniform over legal actions,
  named; unmasked logits are told the actions are illegal (not the -inf log_prob);
- a key made afresh, or the carried key folded with a constant, at every step: told the key
  is ignored, reused or the actions repeat; keys split before the scan and passed as its xs
  are right.
"""

from __future__ import annotations

import pytest

from checks.answers import (
    PPO,
    _cell,
    _definitions,
    _one_line_fix,
    bank_params,
    passes,
    ppo_namespace,
    rejects,
    right_params,
)
from companion.checks import (
    CheckFailed,
    check_rollout_keys,
)


def _passes(check, answer, capsys):
    check(answer)
    assert "check passed" in capsys.readouterr().out


# --- check_rollout_keys (find the bug): rollout_with_a_bug(...) -------------------------


def test_rollout_keys_both_ways(capsys):
    buggy = _cell("08_ppo_maze", "rollout_with_a_bug")
    with pytest.raises(CheckFailed, match="key-reuse checker finds a key used twice"):
        check_rollout_keys(_definitions(buggy, PPO)["rollout_with_a_bug"])
    fixed = _one_line_fix(
        buggy,
        "return (env_state, timestep, key), transition",
        "return (env_state, timestep, next_key), transition",
    )
    _passes(check_rollout_keys, _definitions(fixed, PPO)["rollout_with_a_bug"], capsys)


def test_rollout_keys_names_the_symptom_when_the_checker_cannot_see_it():
    """The same fault with the key copied through its raw data, which the key-reuse checker
    does not follow: the check still finds it, from the actions' statistics."""
    buggy = _cell("08_ppo_maze", "rollout_with_a_bug")
    hidden = _one_line_fix(
        buggy,
        "next_key, key_t = jax.random.split(key)",
        "next_key, key_t = jax.random.split(jax.random.wrap_key_data(jax.random.key_data(key)))",
    )
    with pytest.raises(CheckFailed, match="takes its previous action again"):
        check_rollout_keys(_definitions(hidden, PPO)["rollout_with_a_bug"])


_FIX = (
    "return (env_state, timestep, key), transition",
    "return (env_state, timestep, next_key), transition",
)


_SPLIT = "next_key, key_t = jax.random.split(key)"


_SAMPLE = "action_t = jax.random.categorical(key_t, logits_t).astype(jnp.int32)"


def rollout(*edits, step=(), fixed=True):
    """The chapter's rollout_with_a_bug, fixed (or not), with ``edits`` applied, calling
    section 3's rollout_step with the edits ``step`` (where the action is sampled)."""
    source = _cell("08_ppo_maze", "rollout_with_a_bug")
    for old, new in ((_FIX,) if fixed else ()) + edits:
        source = _one_line_fix(source, old, new)
    return _definitions(source, ppo_namespace(*step))["rollout_with_a_bug"]


RIGHT_ROLLOUT_KEYS = [
    rollout(),  # split and carry
    # fold_in, then split
    rollout((_SPLIT, "next_key, key_t = jax.random.split(jax.random.fold_in(key, 1))")),
]
WRONG_ROLLOUT_KEYS = [
    # a clock that restarts at every reset: the keys repeat from episode to episode
    # the carried key, unchanged, reaches rollout_step as key_t
    (
        "keys from each environment's step count",
        rollout(
            (_SPLIT, "next_key = key_t = key"),
            step=[
                (
                    _SAMPLE,
                    (
                        "action_t = jax.vmap(lambda i, s, l: jax.random.categorical(jax.random."
                        "fold_in(jax.random.fold_in(key_t, i), s), l))(jnp.arange("
                        "logits_t.shape[0]), obs_t.step_count, logits_t).astype(jnp.int32)"
                    ),
                )
            ],
        ),
        "same state at the same step count of another episode",
    ),
    (
        "keys from the step count alone",
        rollout(
            (_SPLIT, "next_key = key_t = key"),
            step=[
                (
                    _SAMPLE,
                    (
                        "action_t = jax.vmap(lambda s, l: jax.random.categorical(jax.random."
                        "fold_in(key_t, s), l))(obs_t.step_count, logits_t).astype(jnp.int32)"
                    ),
                )
            ],
        ),
        "neighbouring environments .* such as the step count",
    ),
    # the rollout's own key, closed over by the step: told so, not only that a key is carried
    (
        "the rollout's key closed over",
        rollout(("env_state, timestep, key = carry", "env_state, timestep, _ = carry")),
        "one made before the scan and used inside it",
    ),
    (
        "per-environment keys from the unchanged carried key",
        rollout(
            step=[
                (
                    _SAMPLE,
                    (
                        "action_t = jax.vmap(jax.random.categorical)(jax.random.split(jax."
                        "random.fold_in(key_t, 7), logits_t.shape[0]), logits_t).astype("
                        "jnp.int32)"
                    ),
                )
            ],
            fixed=False,
        ),
        "one carried unchanged from step to step",
    ),
]


def _rollout_argmax():
    source = _one_line_fix(
        _cell("08_ppo_maze", "rollout_with_a_bug"),
        "return (env_state, timestep, key), transition",
        "return (env_state, timestep, next_key), transition",
    )
    argmax = ppo_namespace(
        (
            "action_t = jax.random.categorical(key_t, logits_t).astype(jnp.int32)",
            "action_t = jnp.argmax(logits_t, axis=-1).astype(jnp.int32)",
        )
    )
    return _definitions(source, argmax)["rollout_with_a_bug"]


_FIXED_ROLLOUT = (
    "return (env_state, timestep, key), transition",
    "return (env_state, timestep, next_key), transition",
)


def _rollout_variant(old, new, step=False):
    """The fixed rollout_with_a_bug with ``old`` made ``new`` in it or, with ``step``, in the
    section-3 rollout_step it calls (where the action is sampled)."""
    source = _one_line_fix(_cell("08_ppo_maze", "rollout_with_a_bug"), *_FIXED_ROLLOUT)
    if step:
        return _definitions(source, ppo_namespace((old, new)))["rollout_with_a_bug"]
    return _definitions(_one_line_fix(source, old, new), PPO)["rollout_with_a_bug"]


WRONG_ROLLOUT_KEYS += [
    ("the most probable action", _rollout_argmax(), "most probable one \\(an argmax\\)"),
    (
        "the step's key carried",
        _rollout_variant(_FIXED_ROLLOUT[1], "return (env_state, timestep, key_t), transition"),
        "carries that same key",
    ),
    (
        "one key for every environment",
        _rollout_variant(
            _SAMPLE,
            "action_t = jax.vmap(lambda l: jax.random.categorical("
            "key_t, l))(logits_t).astype(jnp.int32)",
            step=True,
        ),
        "share their random noise",
    ),
    (
        "logits divided by 1.5",
        _rollout_variant(_SAMPLE, _SAMPLE.replace("logits_t)", "logits_t / 1.5)"), step=True),
        "not samples of the policy",
    ),
    (
        "uniform over the legal actions",
        _rollout_variant(
            _SAMPLE,
            _SAMPLE.replace("logits_t)", "jnp.where(obs_t.action_mask, 0.0, -jnp.inf))"),
            step=True,
        ),
        "not samples of the policy",
    ),
]


WRONG_ROLLOUT_KEYS += [
    # a student trial's
    (
        "the sampling key carried, next_key = key_t",
        rollout((_SPLIT, "next_key, key_t = jax.random.split(key); next_key = key_t")),
        "carries that same key",
    ),
    (
        "sampled with the carried key, its split's halves unused",
        rollout((_SPLIT, "next_key, _unused = jax.random.split(key); key_t = key")),
        "(carries that same key|finds a key used twice)",
    ),
    (
        "a fixed seed folded with the step count",
        rollout(
            ("env_state, timestep, key = carry", "env_state, timestep, key = carry; t = _"),
            (_SPLIT, "key_t = jax.random.fold_in(jax.random.key(0), t); next_key = key"),
            ("step, carry, None, length=num_steps", "step, carry, jnp.arange(num_steps)"),
        ),
        "ignores its key: another key gave the same actions",
    ),
    # new slips
    (
        "a new key made in every step",
        rollout((_SPLIT, "next_key, key_t = key, jax.random.key(0)")),
        "(ignores its key|previous action again|finds a key used twice)",
    ),
    (
        "the logits not masked before sampling",
        _rollout_variant(
            _SAMPLE,
            "action_t = jax.random.categorical(key_t, jax.vmap(model)(image_t)[0])"
            ".astype(jnp.int32)",
            step=True,
        ),
        "some actions are illegal",
    ),
    (
        "a temperature of 2",
        _rollout_variant(_SAMPLE, _SAMPLE.replace("logits_t)", "logits_t / 2.0)"), step=True),
        "not samples of the policy",
    ),
    (
        "the same key folded with 1 at every step",
        rollout((_SPLIT, "next_key, key_t = key, jax.random.fold_in(key, 1)")),
        "(previous action again|finds a key used twice|one carried unchanged)",
    ),
]
RIGHT_ROLLOUT_KEYS += [
    # one key per step, split before the scan and passed as its xs
    rollout(
        ("def step(carry, _):", "def step(carry, key_t):"),
        (_SPLIT, "next_key = key"),
        ("step, carry, None, length=num_steps", "step, carry, jax.random.split(key, num_steps)"),
    ),
]


#: The check's right answers and its bank of wrong ones.
RIGHTS = {"check_rollout_keys": RIGHT_ROLLOUT_KEYS}
BANKS = {"check_rollout_keys": WRONG_ROLLOUT_KEYS}


@pytest.mark.parametrize("check, answer", right_params(RIGHTS))
def test_a_right_answer_passes(check, answer, capsys):
    passes(check, answer, capsys)


@pytest.mark.parametrize("check, wrong, verdict", bank_params(BANKS))
@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")
def test_a_wrong_answer_gets_its_verdict(check, wrong, verdict):
    rejects(check, wrong, verdict)
