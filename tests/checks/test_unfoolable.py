"""Every exercise's self-check against the kinds of weakness a student finds first.

For each check (``companion.checks.__all__``, every exercise of every chapter):
- two equivalent right answers pass (``answers.RIGHT``);
- an answer that turns a traced array into a Python value (``if x > 0:``, ``int(x)``) fails
  with a message that says the book runs it under ``jit`` (the checks run answers as the
  book does);
- a failure shows the check's message, not its source: the traceback ends in the
  ``self_check`` wrapper, with no chained exception, and IPython prints none of the
  catalogue of mistakes;
- an answer with a known mistake on one case only is not named after that mistake: the
  message reports the first differing case with its inputs.

The named mistakes of each check are in its module's bank (``test_<module>.py``).
"""

from __future__ import annotations

import traceback

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import companion.checks as checks
from checks.answers import (
    RIGHT,
    _action_values,
    _classify,
    _collect,
    _count_endings,
    _double_dqn,
    _euler_by_hand,
    _noisy_a,
    _reinforce,
    _reverse_scan_returns,
    _rollout,
    _semi_implicit,
    any_depth_mlp,
    batched_scan,
    checkpointed_class,
    dual_clip,
    eps_probs,
    fill_loss,
    gae_from_values_answer,
    grad_norms,
    mean_gradient,
    n_step_answer,
    reach_answer,
    ring,
    settle_answer,
    windows_with,
)
from companion.checks import CheckFailed, core
from companion.envs import cartpole


def test_every_check_is_listed():
    public = {name for name in checks.__all__ if name.startswith("check_")}
    assert public == set(RIGHT)


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_two_right_answers_pass(name, capsys):
    for answer in RIGHT[name]:
        getattr(checks, name)(answer)
    assert capsys.readouterr().out.count("check passed") == 2


def _if_on(value):
    """Python control flow on a traced array: an error under jit."""
    if value > -1e9:
        return value
    return value


#: For each check the book runs under jit: a right answer with one `if` on a traced value.
TRAPS = {
    "check_softplus_grad": lambda w, x: _if_on(w.sum()) * 0 + x * jax.nn.sigmoid(w * x),
    "check_discounted_returns": lambda r, g: _if_on(r.sum()) * 0 + _reverse_scan_returns(r, g),
    "check_noisy_batch": lambda k, n: (_if_on(jax.random.normal(k)), _noisy_a(k, n))[1],
    "check_mlp_apply": lambda p, x: _if_on(x.sum()) * 0 + any_depth_mlp(p, x),
    "check_per_example_grad_norms": lambda m, x, y: _if_on(x.sum()) * 0 + grad_norms(m, x, y),
    "check_legal_fraction": lambda m: jnp.mean(m, axis=0) if m.any() else 0.0,
    "check_up_first_policy": lambda k, m: 0 if m[0] else jax.random.choice(k, 4, p=m / m.sum()),
    "check_termination_and_truncation": lambda r, l, m: _classify(r, _if_on(l.sum()) * 0 + l, m),
    "check_count_endings": lambda ts: _count_endings(ts) if ts.reward.sum() > -1 else (0, 0),
    "check_semi_implicit_step": lambda p, a: _euler_by_hand(p, 1 if a == 1 else 0),
    "check_balancing_policy": lambda obs: 1 if obs[2] + obs[3] > 0 else 0,
    "check_action_values": lambda mdp, v, g: _action_values(mdp, _if_on(v.max()) * 0 + v, g),
    "check_reinforce_weights": lambda r, b, g: _reinforce(r, b, g) if r[0] >= -1e9 else r,
    "check_q_learning": lambda mdp, key, n: jnp.zeros((int(mdp.legal.sum()), 4)),
    "check_double_dqn_target": lambda r, t, q1, q2, g: (
        _double_dqn(r, t, q1, q2, g) if not t.all() else r
    ),
    "check_n_step_target": lambda r, te, tr, q, g: (
        n_step_answer(r, te, tr, q, g) * int(q.max() > 0)
    ),
    "check_sample_windows": lambda b, k, size, n: windows_with(
        lambda b, k, size, n: jax.random.randint(k, (size,), 0, int(b.size) - n + 1)
    )(b, k, size, n),
    "check_collector": lambda key, n: _collect()(key, n) if jax.random.uniform(key) >= 0 else 0,
    "check_epsilon_masked_probs": lambda x, m, e: eps_probs(x, m, e) if m.any() else x,
    "check_dual_clip_objective": lambda r, a, e, c: dual_clip(r, a, e, c) if a.min() < 0 else a,
    "check_gae_from_values": lambda *a: gae_from_values_answer(*a) * float(a[1].max() > -9),
    "check_fill_one_loss": lambda m, b, **k: (
        fill_loss(m, b, **k) if float(b.advantage.std()) > 0 else 0
    ),
    "check_rollout_keys": lambda model, env, pool, s, ts, key, n: (
        _rollout()(model, env, pool, s, ts, key, n) if jax.random.uniform(key) >= 0 else 0
    ),
    "check_batched_rollout": lambda s, a: batched_scan(s, a) if a[0, 0] >= 0 else s,
    "check_data_parallel_grad": lambda w, x, y, mesh: (
        mean_gradient(w, x, y, mesh) if x.sum() > -1e9 else w
    ),
    "check_settle": lambda v, m, c: settle_answer(v, m, c) if c > 0 else v,
    "check_success_by_reach": lambda s, d, k: reach_answer(s, d, k) if s.any() else d,
    "check_checkpointed_propagation": type(
        "Trap",
        (checkpointed_class(),),
        {
            "__call__": lambda self, image: (
                checkpointed_class().__call__(self, image) if image.sum() > 0 else image
            )
        },
    ),
}


#: Checks whose answers are not compiled functions of arrays: a module's constructor, a
#: training loop (it compiles its own step), byte counts (Python arithmetic), a detector of
#: cross-talk (NumPy is allowed) and a context manager that counts compilations.
NOT_TRACED = {
    "check_frozen_constant",
    "check_decayed_training",
    "check_rollout_bytes",
    "check_allreduce_bytes",
    "check_cross_talk",
    "check_compilations",
    "check_bend",
    "check_pays_from",  # the projects' measures, Python on dicts
    "check_q_overshoot",
    "check_late_success",  # the projects' measures, on NumPy arrays
}


def test_every_traced_check_has_a_trap():
    assert set(TRAPS) | NOT_TRACED == set(RIGHT)


@pytest.mark.parametrize("name", sorted(TRAPS))
def test_answers_run_under_jit(name):
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed) as failure:
        getattr(checks, name)(TRAPS[name])
    message = str(failure.value)
    assert "turns a traced array into a Python value" in message, message
    assert "under jax.jit" in message


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_a_failure_shows_the_message_not_the_check(name):
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed) as failure:
        getattr(checks, name)(lambda *args, **kwargs: 0)
    exc = failure.value
    assert exc.__cause__ is None and exc.__suppress_context__
    files = [frame.filename for frame in traceback.extract_tb(exc.__traceback__)]
    inside = [f for f in files if "companion" in f]
    assert inside and all(f.endswith("checks/core.py") for f in inside), files


def test_a_check_runs_the_answer_at_the_highest_matmul_precision():
    """On a TPU a float32 product runs in bfloat16 passes by default, and a right answer then
    misses a float32 reference by about 1e-3; every check (each is wrapped by ``self_check``,
    test above) runs the answer at the highest precision, and leaves the setting as it was."""
    seen = []

    def answer(a, b):
        seen.append(jax.config.jax_default_matmul_precision)
        return a @ b

    @core.self_check
    def check_product(fn):
        a = jnp.arange(6.0).reshape(2, 3)
        np.testing.assert_allclose(fn(a, a.T), np.asarray(a) @ np.asarray(a).T)

    before = jax.config.jax_default_matmul_precision
    check_product(answer)
    assert seen == ["highest"]
    assert jax.config.jax_default_matmul_precision == before


def test_ipython_prints_no_catalogue_of_mistakes(capsys):
    """The traceback a notebook shows: the student's call and the message, none of the
    check's source (its expected answer, its named mistakes)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.user_ns.update(jnp=jnp, checks=checks)
    shell.run_cell(
        "checks.check_double_dqn_target(lambda r, t, q1, q2, g: r + g * (1 - t) * q2.max(-1))"
    )
    out = capsys.readouterr()
    text = out.out + out.err
    assert "this is the plain DQN target" in text
    for source in ("take_along_axis", "_double_dqn_case", "one_hot", "mistakes"):
        assert source not in text, source


#: A known mistake on one case only (a right answer elsewhere): not named after it.
HALF = {
    "check_softplus_grad": lambda w, x: jax.nn.sigmoid(w * x) * (x if w.ndim == 1 else 1.0),
    "check_discounted_returns": lambda r, g: (
        _reverse_scan_returns(r, g) * (1.0 if r.ndim == 1 else g)
    ),
    "check_mlp_apply": lambda p, x: any_depth_mlp(p, x, bias=len(p) != 2),
    "check_legal_fraction": lambda m: jnp.mean(m, axis=0) * (1 if m.shape[0] == 5 else 7),
    "check_semi_implicit_step": lambda p, a: jnp.where(
        a == 0, cartpole.dynamics(p, a), _semi_implicit(p, a)
    ),
    "check_action_values": lambda mdp, v, g: (
        mdp.reward + g * v[mdp.next_state] * (1.0 if g == 0.8 else 1.0 - mdp.terminal)
    ),
    "check_reinforce_weights": lambda r, b, g: (
        _reinforce(r, b, g) / (g ** jnp.arange(r.shape[0]) if r.shape[0] == 7 else 1.0)
    ),
    "check_double_dqn_target": lambda r, t, q1, q2, g: (
        r
        + g
        * (1.0 - t)
        * (
            q2.max(-1)
            if q1.shape[-1] == 2
            else jnp.take_along_axis(q2, jnp.argmax(q1, -1)[:, None], -1)[:, 0]
        )
    ),
    "check_n_step_target": lambda r, te, tr, q, g: n_step_answer(
        r, te if r.shape[1] == 3 else jnp.zeros_like(te), tr, q, g
    ),
    "check_epsilon_masked_probs": lambda x, m, e: eps_probs(x, m, e if x.ndim == 3 else 0.0),
    "check_dual_clip_objective": lambda r, a, e, c: dual_clip(r, a, e, c if r.ndim == 2 else 1e9),
    "check_gae_from_values": lambda *a: gae_from_values_answer(
        *a[:6], a[6], a[7] if a[0].shape[0] == 7 else 1.0
    ),
    "check_allreduce_bytes": lambda p, n: ring(p, n) / (2 if n == 8 else 1),
    "check_fill_one_loss": lambda m, b, **k: fill_loss(
        m, b, **k, fill=1.0 if k["ent_coef"] < 0.02 else 0.0
    ),
}


@pytest.mark.parametrize("name", sorted(HALF))
def test_a_mistake_on_one_case_is_not_named(name):
    with pytest.raises(CheckFailed, match="differs from the reference on") as failure:
        getattr(checks, name)(HALF[name])
    message = str(failure.value)
    assert "it gives" in message and "expected" in message, message


# --- the generic message ------------------------------------------------------------


def test_a_differing_case_shows_its_inputs():
    with pytest.raises(CheckFailed) as failure:
        checks.check_reinforce_weights(lambda r, b, g: _reinforce(r, b, g) + 0.01)
    message = str(failure.value)
    assert (
        "on T = 5, gamma 0.9: first at index 0, it gives 2.2867, expected 2.2767\nThe inputs:"
        in message
    )
    assert "rewards = [0. , 1. , 0. , 0.5, 2. ]" in message
    assert "baselines = [0.3, 0.7, 0.2, 0.4, 1.5]" in message


def test_a_differing_case_summarises_long_inputs():
    """The generic message stays short: an input of 40 elements shows its ends, not all 40."""
    from companion.checks.core import Case, verdict

    long = np.arange(40.0)
    case = Case("forty steps", {"reward": long}, long, {})
    with pytest.raises(CheckFailed) as failure:
        verdict("returns", [case], [long + (long == 17)])
    message = str(failure.value)
    assert "first at index 17, it gives 18., expected 17." in message
    assert "..." in message and len(message.splitlines()) <= 7, message


def test_an_answer_that_raises_is_quoted_past_the_first_line():
    """JAX's carry-type error says what differs after "they differ:"; the check quotes it."""
    from companion.checks.core import run_answer

    def answer(xs):
        return jax.lax.scan(lambda c, x: (c + x, c), 0.0, xs)[0]

    with pytest.raises(CheckFailed) as failure:
        run_answer(answer, jnp.ones((3, 2)), call="answer(xs)")
    message = str(failure.value)
    assert "they differ" in message and "float32[2]" in message, message
    assert "JAX has removed" not in message and "\n" not in message


def test_an_error_names_the_students_line():
    def answer(w, x):
        scale = x.reshape(4)  # the student's line
        return scale

    with pytest.raises(CheckFailed, match=r"raised TypeError \(at `scale = x.reshape\(4\)"):
        checks.check_softplus_grad(answer)
