"""The answers the self-checks' tests share: right answers to every exercise, the chapters'
find-the-bug functions read from the notebooks, and the machinery of the wrong-answer banks.

``RIGHT`` holds two right answers per check (the contract and trap tests wrap the first).
Each ``tests/checks/test_<module>.py`` holds, for the checks of ``companion/checks/<module>.py``,
a bank per check: ``WRONG_<CHECK>``, rows ``(slip, wrong answer, verdict)``, the verdict a
regex of the message that names the mistake, or ``generic(regex)`` where the check can only
say what differs; ``BANKS`` maps each check to its bank and ``RIGHTS`` to its right answers.
:func:`banks` gathers them all (the language test and the named share read them).
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import itertools
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P
from notebook_runner import ROOT

import companion.checks as checks
from companion import parallel
from companion.agents import dqn, ppo
from companion.checks import CheckFailed
from companion.envs import cartpole
from companion.envs import maze as maze_lib
from companion.envs.autoreset import pooled_autoreset_step

# --- the banks ------------------------------------------------------------------------------


class Generic(str):
    """The regex of a verdict that can only say what differs (no mistake named)."""


def generic(regex: str = "differs from the reference") -> Generic:
    """A generic verdict: the message shows where the answer differs, naming no mistake."""
    return Generic(regex)


#: The first line of a message that names no mistake: the generic difference of
#: ``companion.checks.core.verdict``, or a check's own statement of what differs (a largest
#: error, a first differing step, a count of bytes, losses, a module's value).
GENERIC_FORM = "|".join(
    [
        r"differs from the reference on",
        r"differ from the reference",
        r"expected < 1e-3",
        r"first differs at",
        r", expected [\d,]+ \([\d,]+ bytes per step",
        r"^train_decayed: losses .*, expected",
        r"^module\.scale is .*, expected",
        r"^module\(x\) = .*, expected scale",
        r"^settle's values differ on|but the count is .*, expected",
        r"^the copy's \(logits, value\) differ|^the copy's gradients differ",
    ]
)


def passes(check: str, answer, capsys) -> None:
    """``check`` accepts ``answer``."""
    with jax.debug_key_reuse(False):
        getattr(checks, check)(answer)
    assert "check passed" in capsys.readouterr().out


def rejects(check: str, wrong, verdict: str) -> str:
    """``check`` rejects ``wrong`` with a message that ``verdict`` matches, a generic one
    exactly where the verdict is :func:`generic`; the message is returned."""
    with jax.debug_key_reuse(False), pytest.raises(CheckFailed, match=verdict) as failure:
        getattr(checks, check)(wrong)
    message = str(failure.value)
    said_generic = re.search(GENERIC_FORM, message.split("\n")[0]) is not None
    assert said_generic == isinstance(verdict, Generic), message
    return message


def _slip(row) -> tuple:
    return tuple(getattr(row, "values", row))


def bank_params(banks: dict) -> list:
    """``pytest.param(check, wrong, verdict)`` for every row of ``banks``, its marks kept."""
    return [
        pytest.param(
            check,
            _slip(row)[1],
            _slip(row)[2],
            marks=getattr(row, "marks", ()),
            id=f"{check[6:]}-{_slip(row)[0]}",
        )
        for check, rows in banks.items()
        for row in rows
    ]


def right_params(rights: dict) -> list:
    """``pytest.param(check, answer)`` for every right answer of ``rights``, marks kept."""
    return [
        pytest.param(
            check,
            getattr(answer, "values", (answer,))[0],
            marks=getattr(answer, "marks", ()),
            id=f"{check[6:]}-{i}",
        )
        for check, answers in rights.items()
        for i, answer in enumerate(answers)
    ]


def _gathered(table: str) -> dict:
    found = {}
    for module in sorted(set(checks._LAZY.values()) - {"core"}):
        found |= getattr(importlib.import_module(f"checks.test_{module}"), table)
    return found


def banks() -> dict:
    """Every check's bank, ``{check: [(slip, wrong, verdict) or a pytest.param of it]}``,
    from the test file of the check's module."""
    return _gathered("BANKS")


def rights() -> dict:
    """Every check's right answers, ``{check: [answer or a pytest.param of it]}``, from the
    test file of the check's module."""
    return _gathered("RIGHTS")


# --- the find-the-bug functions, read from the notebooks ------------------------------------
def _cell(notebook: str, defines: str) -> str:
    """The source of the one code cell of ``notebook``, not a solution, that defines
    ``defines``."""
    nb = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    found = [
        c.source
        for c in nb.cells
        if c.cell_type == "code"
        and f"def {defines}(" in c.source
        and "solution" not in c.metadata.get("tags", [])
    ]
    assert len(found) == 1, f"{notebook}: {len(found)} cells define {defines}"
    return found[0]


def _definitions(source: str, namespace: dict) -> dict:
    """Execute only the imports and function definitions of ``source`` in a copy of
    ``namespace`` (the rest of the cell runs the chapter's demonstration)."""
    tree = ast.parse(source)
    tree.body = [
        node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom))
    ]
    scope = dict(namespace)
    exec(compile(tree, "<notebook cell>", "exec"), scope)
    return scope


def _one_line_fix(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"the faulty line {old!r} is not in the cell once"
    return source.replace(old, new)


def _eqx_loss(model, x, y):
    return jnp.mean((jax.vmap(model)(x) - y) ** 2)


NETWORKS = {"jax": jax, "jnp": jnp, "np": np, "eqx": eqx, "eqx_loss": _eqx_loss}


DQN = {"jax": jax, "jnp": jnp, "np": np, "dqn": dqn, "cartpole": cartpole}


_PPO_NAMES = {
    "jax": jax,
    "jnp": jnp,
    "np": np,
    "ppo": ppo,
    "maze_lib": maze_lib,
    "images_of": jax.vmap(maze_lib.observation_image),
    "step_env": jax.vmap(pooled_autoreset_step, in_axes=(None, None, 0, 0)),
}


def ppo_namespace(*step_edits) -> dict:
    """The PPO chapter's names with the functions of its section-3 cell, which defines
    ``rollout_step`` (one step of every environment; the find-the-bug rollout calls it), each
    ``(old, new)`` of ``step_edits`` applied to that cell first."""
    source = _cell("08_ppo_maze", "rollout_step")
    for old, new in step_edits:
        source = _one_line_fix(source, old, new)
    return _definitions(source, _PPO_NAMES)


PPO = ppo_namespace()


FOUNDATIONS = {"jax": jax, "jnp": jnp}


# --- right answers shared by the tests -------------------------------------------------


def _reverse_scan_returns(rewards, gamma, reverse=True, init=jnp.zeros_like):
    def body(g, r):
        g = r + gamma * g
        return g, g

    return jax.lax.scan(body, init(rewards[0]), rewards, reverse=reverse)[1]


def _loop_returns(rewards, gamma):
    g, out = jnp.zeros_like(rewards[0]), []
    for t in reversed(range(rewards.shape[0])):
        g = rewards[t] + gamma * g
        out.append(g)
    return jnp.stack(out[::-1])


def _semi_implicit(physics, action):
    p = cartpole.DEFAULT_PARAMS
    explicit = cartpole.dynamics(physics, action)
    x_dot = explicit[1]  # explicit Euler's new velocities are the same
    theta_dot = explicit[3]
    return jnp.stack([physics[0] + p.tau * x_dot, x_dot, physics[2] + p.tau * theta_dot, theta_dot])


def any_depth_mlp(params, x, output=lambda h: h, hidden=jnp.tanh, bias=True, skip=False):
    """The forward pass for any number of layers; keyword arguments plant mistakes."""
    layers = [params[0], params[-1]] if skip and len(params) > 2 else params
    for w, b in layers[:-1]:
        x = hidden(x @ w + (b if bias else 0.0))
    w, b = layers[-1]
    return output(x @ w + (b if bias else 0.0))


class StaticScale(eqx.Module):
    weight: jax.Array
    scale: float = eqx.field(static=True)

    def __call__(self, x):
        return self.scale * jnp.sum(self.weight * x)


class FloatScale(eqx.Module):
    weight: jax.Array
    scale: float

    def __call__(self, x):
        return self.scale * jnp.sum(self.weight * x)


def grad_norms(
    model,
    x,
    y,
    loss_of=lambda e: jnp.sum(e),
    leaf_filter=lambda g: True,
    combine=lambda squares: jnp.sqrt(sum(squares)),
    grad=eqx.filter_grad,
):
    """Per-example gradient norms; keyword arguments plant mistakes."""

    def norm(x_i, y_i):
        grads = grad(lambda m: loss_of((m(x_i) - y_i) ** 2))(model)
        return combine([jnp.sum(g**2) for g in jax.tree.leaves(grads) if leaf_filter(g)])

    return jax.vmap(norm)(x, y)


def ring(num_params, n):
    return 2 * (n - 1) / n * 4 * num_params


def mean_gradient(w, x, y, mesh):
    def on_each_device(w, x, y):
        return jax.lax.pmean(jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w), "devices")

    return jax.jit(
        parallel.shard_map(on_each_device, mesh, (P(), P("devices"), P("devices")), P())
    )(w, x, y)


def _rows_summed(w, x, y, mesh):
    from jax.sharding import PartitionSpec as P

    from companion import parallel

    def on_each_device(w, x, y):
        return jax.lax.pmean(jax.grad(lambda w: jnp.sum((x @ w - y) ** 2))(w), "devices")

    return parallel.shard_map(on_each_device, mesh, (P(), P("devices"), P("devices")), P())(w, x, y)


def scan_rollout(state, actions, step_fn=cartpole.step_autoreset):
    def body(state, action):
        state, timestep = step_fn(state, action)
        return state, timestep.done

    return jax.lax.scan(body, state, actions)


def batched_scan(states, actions, step_fn=cartpole.step_autoreset):
    def body(states, actions_t):
        states, timestep = jax.vmap(step_fn)(states, actions_t)
        return states, timestep.done

    return jax.lax.scan(body, states, actions)


def right_rollout_bytes(num_steps, num_envs):
    return 330 * num_steps * num_envs


def gae_from_values_answer(
    reward,
    value,
    value_last,
    value_final,
    terminated,
    truncated,
    gamma,
    lam,
    cut_with=None,
    boot_trunc="final",
    last_zero=False,
    term_boots=False,
    forwards=False,
):
    """A scan over time; the keyword arguments plant one mistake each."""
    value_tp1 = jnp.concatenate([value[1:], (0.0 if last_zero else 1.0) * value_last[None]])
    if boot_trunc == "final":
        value_tp1 = jnp.where(truncated, value_final, value_tp1)
    done = terminated | truncated
    no_boot = done if boot_trunc == "none" else terminated
    not_term = 1.0 if term_boots else 1.0 - no_boot.astype(jnp.float32)
    cut = {"terminated": terminated, "nothing": jnp.zeros_like(done)}.get(cut_with, done)
    delta = reward + gamma * not_term * value_tp1 - value

    def step(a_next, inputs):
        d, c = inputs
        a = d + gamma * lam * (1.0 - c) * a_next
        return a, a

    inputs = (delta, cut.astype(jnp.float32))
    return jax.lax.scan(step, jnp.zeros_like(value_last), inputs, reverse=not forwards)[1]


def dual_clip(ratio, adv, eps, c, low=None, pick=jnp.minimum, floor=jnp.maximum, everywhere=False):
    low = 1 - eps if low is None else low
    standard = pick(ratio * adv, jnp.clip(ratio, low, 1 + eps) * adv)
    return jnp.where((adv < 0) | everywhere, floor(standard, c * adv), standard)


def eps_probs(logits, mask, eps, axis=-1, fill=-jnp.inf, spread="legal"):
    p = jax.nn.softmax(jnp.where(mask, logits, fill), axis=axis)
    legal = {"legal": mask.sum(-1, keepdims=True), "all": mask.shape[-1], "batch": mask.sum()}
    return (1 - eps) * p + eps * mask / legal[spread]


def fill_loss(
    model,
    batch,
    clip_eps,
    vf_coef,
    ent_coef,
    normalise_advantages,
    fill=1.0,
    normalise=None,
    coefs=None,
):
    """ppo_loss_in_view with another fill; keyword arguments plant mistakes."""
    clip_eps, vf_coef, ent_coef = coefs or (clip_eps, vf_coef, ent_coef)
    normalise = normalise_advantages if normalise is None else normalise
    logits, value = jax.vmap(model)(batch.image)
    logits = jnp.where(batch.action_mask, logits, fill)
    ratio = jnp.exp(ppo.log_prob(logits, batch.action) - batch.log_prob)
    adv = ppo.normalise(batch.advantage) if normalise else batch.advantage
    policy_loss = -jnp.mean(ppo.clipped_surrogate(ratio, adv, clip_eps))
    value_loss = 0.5 * jnp.mean((value - batch.target) ** 2)
    loss = policy_loss + vf_coef * value_loss - ent_coef * jnp.mean(ppo.entropy(logits))
    return loss, {"policy_loss": policy_loss, "value_loss": value_loss}


def n_step_answer(
    reward, terminated, truncated, q_next_target, gamma, boot_at_end=False, from_last=False
):
    """The n-step target by a backward loop over the window; flags plant two mistakes."""
    best = jnp.max(q_next_target, axis=-1)
    not_term = 1.0 - terminated.astype(reward.dtype)
    if boot_at_end:  # a termination ends the sum but, wrongly, still bootstraps
        truncated, not_term = truncated | terminated, jnp.ones_like(not_term)
    y = reward[:, -1] + gamma * not_term[:, -1] * best[:, -1]
    for k in reversed(range(reward.shape[1] - 1)):
        boot = best[:, -1] if from_last else best[:, k]
        y = reward[:, k] + gamma * not_term[:, k] * jnp.where(truncated[:, k], boot, y)
    return y


def n_step_with_powers(reward, terminated, truncated, q_next_target, gamma, mode):
    """A forward loop: the sum stops at the first ending; `mode` plants a discount mistake."""
    best = jnp.max(q_next_target, axis=-1)
    n = reward.shape[1]
    total = jnp.zeros(reward.shape[0])
    alive = jnp.ones(reward.shape[0], bool)  # no ending before step k
    for k in range(n):
        weight = 1.0 if mode == "undiscounted" else gamma**k
        total = total + alive * weight * reward[:, k]
        stops = alive & (terminated[:, k] | truncated[:, k] | (k == n - 1))
        power = gamma**n if mode == "gamma_n" else gamma ** (k + 1)
        total = total + stops * (1.0 - terminated[:, k]) * power * best[:, k]
        alive = alive & ~stops
    return total


def windows_with(start_fn, offset=True, order=None):
    """Windows of n slots from a start drawn by `start_fn(buffer, key, batch_size, n)`."""

    def sample_windows(buffer, key, batch_size, n):
        oldest = (buffer.position - buffer.size) % buffer.capacity if offset else 0
        steps = jnp.arange(n) if order is None else order(n)
        start = start_fn(buffer, key, batch_size, n)
        idx = (oldest + start[:, None] + steps) % buffer.capacity
        return jax.tree.map(lambda leaf: leaf[idx], buffer.data)

    return sample_windows


def uniform_start(b, k, size, n):
    return jax.random.randint(k, (size,), 0, b.size - n + 1)


def q_overshoot_by_steps(q_mean, env_steps, gamma):
    late = env_steps > 0.75 * env_steps.max(axis=1, keepdims=True)
    return (q_mean * late).sum(axis=1) / late.sum(axis=1) - 1.0 / (1.0 - gamma)


def q_overshoot_by_index(q_mean, env_steps, gamma):
    quarter = q_mean.shape[1] // 4
    return np.array([row[-quarter:].mean() for row in q_mean]) - 1.0 / (1.0 - gamma)


def q_overshoot_loop(q_mean, env_steps, gamma):
    """By steps, a loop over the seeds: each seed's iterations past 3/4 of its last count."""
    return np.array(
        [row[steps > steps[-1] * 3 / 4].mean() for row, steps in zip(q_mean, env_steps)]
    ) - 1.0 / (1.0 - gamma)


def late_success_loop(success_by_start, k):
    return np.array([row[~np.isnan(row)][-k:].mean() for row in success_by_start])


def late_success_vectorised(success_by_start, k):
    measured = ~np.isnan(success_by_start)
    from_the_end = np.cumsum(measured[:, ::-1], axis=1)[:, ::-1]  # measured values at or after
    keep = measured & (from_the_end <= k)
    return np.where(keep, success_by_start, 0.0).sum(axis=1) / k


def _backup(v, can_move, cost, keep=True, mask=True, shift=ppo.neighbour):
    v_next = v if keep else jnp.full_like(v, -jnp.inf)
    for d in range(4):
        shifted = shift(v, d) - cost
        v_next = jnp.maximum(v_next, jnp.where(can_move[d], shifted, -jnp.inf) if mask else shifted)
    return v_next


def settle_answer(
    v_0,
    can_move,
    cost,
    backup=_backup,
    changed=lambda new, old: jnp.any(new != old),
    count_every=False,
):
    """The chapter's solution; keyword arguments plant mistakes."""

    def body(carry):
        v, _, n = carry
        v_next = backup(v, can_move, cost)
        moved = changed(v_next, v)
        return v_next, moved, n + (1 if count_every else moved.astype(jnp.int32))

    v, _, n = jax.lax.while_loop(lambda c: c[1], body, (v_0, jnp.bool_(True), jnp.int32(0)))
    return v, n


def _settle_test_in_condition(v_0, can_move, cost):
    """The change tested in the loop's condition: one backup fewer."""

    def changes(carry):
        v, _ = carry
        return jnp.any(_backup(v, can_move, cost) != v)

    def body(carry):
        v, n = carry
        return _backup(v, can_move, cost), n + 1

    return jax.lax.while_loop(changes, body, (v_0, jnp.int32(0)))


def reach_answer(success, shortest, iterations, reach=lambda k: k + 1):
    near = shortest <= reach(iterations)
    return jnp.stack([jnp.mean(success, where=near), jnp.mean(success, where=~near)])


def _reach_sums(success, shortest, iterations):
    near = (shortest <= iterations + 1).astype(jnp.float32)
    won = success.astype(jnp.float32)
    return jnp.array([won @ near / near.sum(), won @ (1 - near) / (1 - near).sum()])


def bend_answer(sweep, slope=0.5, order=lambda s: sorted(s, key=int)):
    sizes = order(sweep)
    for a, b in zip(sizes, sizes[1:]):
        gain = sweep[b]["steps_per_s"] / sweep[a]["steps_per_s"]
        if np.log(gain) / np.log(int(b) / int(a)) < slope:
            return int(a)
    return int(sizes[-1])


def _bend_numpy(sweep, slope=0.5):
    sizes = np.array(sorted(int(k) for k in sweep))
    rates = np.array([sweep[str(n)]["steps_per_s"] for n in sizes])
    flat = np.flatnonzero(np.diff(np.log(rates)) / np.diff(np.log(sizes)) < slope)
    return int(sizes[flat[0]]) if flat.size else int(sizes[-1])


def checkpointed_class(where="body", policy=None, activation=jnp.tanh, extra=0):
    """A subclass of ppo.PropagationActorCritic with jax.checkpoint ``where``: around the
    scan's ``body`` (right), the whole ``scan``, the whole ``call``, only the ``messages``
    summed inside the body, only the body's last ``tanh``, an ``identity`` on the body's
    output, around the body of a Python ``loop`` in place of the scan, or ``none``; the scan
    runs ``extra`` iterations more than the original."""

    class Copy(ppo.PropagationActorCritic):
        def __call__(self, image):
            x = jnp.moveaxis(image, 0, -1)
            free = 1.0 - x[..., :1]
            open_to = [ppo.neighbour(free, d) * free for d in range(4)]
            injected = x @ self.w_in + self.bias

            def gather(h):
                return sum(ppo.neighbour(h, d) * open_to[d] for d in range(4))

            def propagate(h, _):
                messages = (jax.checkpoint(gather) if where == "messages" else gather)(h)
                pre = h @ self.w_self + messages @ self.w_nbr + injected
                new = (jax.checkpoint(activation) if where == "tanh" else activation)(pre)
                return (jax.checkpoint(lambda c: c)(new) if where == "identity" else new), None

            wrapped = where in ("body", "loop")
            body = jax.checkpoint(propagate, policy=policy) if wrapped else propagate

            def run(h):
                if where == "loop":
                    for _ in range(self.iterations):
                        h, _ = body(h, None)
                    return h
                return jax.lax.scan(body, h, length=self.iterations + extra)[0]

            h = (jax.checkpoint(run) if where == "scan" else run)(jnp.tanh(x @ self.embed))
            cols = image.shape[2]
            agent = jnp.argmax(image[1].reshape(-1))
            row, col = agent // cols, agent % cols
            around = [h[row, col]] + [
                ppo.neighbour(h, d)[row, col] * open_to[d][row, col] for d in range(4)
            ]
            z = jnp.concatenate(around)
            for layer in self.dense:
                z = jax.nn.relu(layer(z))
            return self.policy_head(z), self.value_head(z)

    if where == "call":
        Copy.__call__ = jax.checkpoint(Copy.__call__)
    return Copy


def pays_answer(ratios, above=1.0):
    start = None
    for n in sorted(ratios):
        start = (n if start is None else start) if ratios[n] > above else None
    return start


def _pays_suffix(ratios, above=1.0):
    sizes = sorted(ratios)
    return next((n for i, n in enumerate(sizes) if all(ratios[m] > above for m in sizes[i:])), None)


COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


#: jax.monitoring removes listeners from JAX 0.8.1 on (the package allows older versions).
NEEDS_UNREGISTER = pytest.mark.skipif(
    not hasattr(jax.monitoring, "unregister_event_duration_listener"),
    reason="this JAX cannot remove a jax.monitoring listener",
)


def _mixed_block(loss, values, targets):
    """d/dt (dL/dv) as a (values.size, targets.size) matrix."""
    jac = jax.jacfwd(jax.grad(loss, argnums=0), argnums=1)(values, targets)
    return np.asarray(jac).reshape(values.size, targets.size)


def cross_talk_jacobian(loss, values, targets):
    """The chapter's solution: one Jacobian, NumPy's mask of the diagonal."""
    block = _mixed_block(loss, values, targets)
    return float(np.abs(block[~np.eye(values.size, targets.size, dtype=bool)]).max())


def cross_talk_hessian(loss, values, targets):
    """jax.hessian of both arguments, its (values, targets) block, masked with jnp.where."""
    block = jax.hessian(loss, argnums=(0, 1))(values, targets)[0][1]
    block = block.reshape(values.size, targets.size)
    return jnp.max(jnp.where(jnp.eye(values.size, dtype=bool), 0.0, jnp.abs(block)))


_log: list = []  # every compilation's duration since this module's import (the solution's)


jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kwargs: _log.append(duration) if event == COMPILE_EVENT else None
)


_all_events: list = []  # every duration event, named: for the answers that keep the wrong ones


jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **kwargs: _all_events.append((event, duration))
)


@contextlib.contextmanager
def compilations_once():
    """The chapter's solution: one listener registered at import, a slice at the end."""
    start, seen = len(_log), []
    try:
        yield seen
    finally:
        seen.extend(_log[start:])


@contextlib.contextmanager
def compilations_unregister():
    """A listener of its own for each block, removed when the block ends (JAX >= 0.8.1)."""
    seen = []

    def listener(event, duration, **kwargs):
        if event == COMPILE_EVENT:
            seen.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield seen
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


class Compilations:
    """A class with __enter__ and __exit__, reading the log of the listener registered once."""

    def __enter__(self):
        self.start, self.seen = len(_log), []
        return self.seen

    def __exit__(self, *exc_info):
        self.seen.extend(_log[self.start :])
        return False


def _fixed(notebook, name, old, new, namespace):
    return _definitions(_one_line_fix(_cell(notebook, name), old, new), namespace)[name]


def _collect():
    return _fixed(
        "07_dqn", "collect", "terminated=terminated_t,", "terminated=timestep.terminated,", DQN
    )


def _rollout():
    return _fixed(
        "08_ppo_maze",
        "rollout_with_a_bug",
        "return (env_state, timestep, key), transition",
        "return (env_state, timestep, next_key), transition",
        PPO,
    )


def _q_learning():
    return _fixed(
        "05_rl_foundations",
        "q_learning_buggy",
        "td_target = r + gamma * best_next",
        "td_target = r + gamma * (1.0 - d) * best_next",
        FOUNDATIONS,
    )


def _decayed():
    return _fixed(
        "02_neural_networks",
        "train_decayed",
        "learning_rate = 0.1 * 0.97**step",
        "learning_rate = jnp.asarray(0.1 * 0.97**step)",
        NETWORKS,
    )


def _returns_flipped(rewards, gamma):
    def body(g, r):
        g = r + gamma * g
        return g, g

    return jnp.flip(jax.lax.scan(body, jnp.zeros_like(rewards[0]), jnp.flip(rewards, 0))[1], 0)


def _noisy_a(key, n):
    key, sub = jax.random.split(key)
    return jax.random.normal(sub, (n,)), key


def _noisy_b(key, n):
    keys = jax.random.split(key, 3)
    return jax.random.normal(keys[2], (n,)), keys[0]


def _mlp_recursive(params, x):
    (w, b), rest = params[0], params[1:]
    return x @ w + b if not rest else _mlp_recursive(rest, jnp.tanh(x @ w + b))


def _grad_norms_ravel(model, x, y):
    def one(x_i, y_i):
        grads = eqx.filter_grad(lambda m: jnp.sum((m(x_i) - y_i) ** 2))(model)
        flat, _ = jax.flatten_util.ravel_pytree(eqx.filter(grads, eqx.is_array))
        return jnp.linalg.norm(flat)

    return jax.vmap(one)(x, y)


def _classify(reward, last, next_mask):
    terminated = last & ((reward > 0) | ~jnp.any(next_mask, axis=-1))
    return terminated, last & ~terminated


def _classify_where(reward, last, next_mask):
    stuck = jnp.sum(next_mask, axis=-1) == 0
    terminated = jnp.where(last, (reward == 1.0) | stuck, False)
    return terminated, jnp.where(last, ~terminated, False)


def _count_endings(timesteps):
    flags = _classify(timesteps.reward, timesteps.last(), timesteps.extras["next_obs"].action_mask)
    return tuple(jnp.sum(flag) for flag in flags)


def _count_endings_by_position(timesteps):
    end, last = timesteps.extras["next_obs"], timesteps.last()
    on_target = (end.agent_position.row == end.target_position.row) & (
        end.agent_position.col == end.target_position.col
    )
    terminated = last & (on_target | ~end.action_mask.any(-1))
    return terminated.sum(), (last & ~terminated).sum()


def _euler_by_hand(physics, action):
    p = cartpole.DEFAULT_PARAMS
    x, x_dot, theta, theta_dot = physics
    force = jnp.where(action == 1, p.force_mag, -p.force_mag)
    cos, sin = jnp.cos(theta), jnp.sin(theta)
    temp = (force + p.polemass_length * theta_dot**2 * sin) / p.total_mass
    theta_acc = (p.gravity * sin - cos * temp) / (
        p.length * (4.0 / 3.0 - p.masspole * cos**2 / p.total_mass)
    )
    x_acc = temp - p.polemass_length * theta_acc * cos / p.total_mass
    x_dot, theta_dot = x_dot + p.tau * x_acc, theta_dot + p.tau * theta_acc
    return jnp.stack([x + p.tau * x_dot, x_dot, theta + p.tau * theta_dot, theta_dot])


def _action_values(mdp, v, gamma):
    return mdp.reward + gamma * (1.0 - mdp.terminal) * v[mdp.next_state]


def _action_values_where(mdp, v, gamma):
    return jnp.where(mdp.terminal, mdp.reward, mdp.reward + gamma * v[mdp.next_state])


def _reinforce(rewards, baselines, gamma):
    g = _reverse_scan_returns(rewards, gamma)
    return gamma ** jnp.arange(rewards.shape[0]) * (g - baselines)


def _reinforce_loop(rewards, baselines, gamma):
    g, out = 0.0, []
    for t in reversed(range(rewards.shape[0])):
        g = rewards[t] + gamma * g
        out.append(gamma**t * (g - baselines[t]))
    return jnp.stack(out[::-1])


def _double_dqn(reward, terminated, q_online, q_target, gamma):
    a = jnp.argmax(q_online, axis=-1)
    chosen = jnp.take_along_axis(q_target, a[:, None], axis=-1)[:, 0]
    return reward + gamma * (1.0 - terminated) * chosen


def _double_dqn_one_hot(reward, terminated, q_online, q_target, gamma):
    one_hot = jax.nn.one_hot(jnp.argmax(q_online, -1), q_online.shape[-1])
    return reward + gamma * jnp.where(terminated, 0.0, jnp.sum(q_target * one_hot, -1))


def _dual_clip_where(ratio, adv, eps, c):
    standard = jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - eps, 1 + eps) * adv)
    return jnp.where(adv < 0, jnp.maximum(standard, c * adv), standard)


def _eps_probs_log(logits, mask, eps):
    log_p = jax.nn.log_softmax(jnp.where(mask, logits, -jnp.inf), axis=-1)
    uniform = mask / jnp.sum(mask, axis=-1, keepdims=True)
    return jnp.where(mask, (1 - eps) * jnp.exp(log_p) + eps * uniform, 0.0)


def _gae_loop(reward, value, value_last, value_final, terminated, truncated, gamma, lam):
    advantages, carried = [], jnp.zeros_like(value_last)
    for t in reversed(range(reward.shape[0])):
        v_next = value_last if t == reward.shape[0] - 1 else value[t + 1]
        v_next = jnp.where(truncated[t], value_final[t], v_next)
        delta = reward[t] + gamma * (1.0 - terminated[t]) * v_next - value[t]
        carried = delta + gamma * lam * (1.0 - (terminated[t] | truncated[t])) * carried
        advantages.append(carried)
    return jnp.stack(advantages[::-1])


def _fill_loss_masked_entropy(model, batch, **args):
    loss, metrics = fill_loss(model, batch, **args)
    logits, _ = jax.vmap(model)(batch.image)
    filled = jnp.where(batch.action_mask, logits, 1.0)
    delta = jnp.mean(ppo.entropy(filled)) - jnp.mean(
        ppo.entropy(ppo.masked_logits(logits, batch.action_mask))
    )
    return loss + args["ent_coef"] * delta, metrics


def _summed_parts_gradient(w, x, y, mesh):
    from jax.sharding import PartitionSpec as P

    from companion import parallel

    def on_each_device(w, x, y):
        part = jax.grad(lambda w: jnp.sum((x @ w - y) ** 2))(w)
        return jax.lax.psum(part, "devices") / (x.shape[0] * jax.lax.psum(1, "devices"))

    specs = (P(), P("devices"), P("devices"))
    return parallel.shard_map(on_each_device, mesh, specs, P())(w, x, y)


def _bytes_by_fields(num_steps, num_envs):
    image = 3 * 10 * 10  # bool
    per = image + 4 + 2 * 4 + 4 * 4 + 2
    return per * num_steps * num_envs


#: Two right answers per check.
RIGHT = {
    "check_softplus_grad": [
        lambda w, x: x * jax.nn.sigmoid(w * x),
        jax.grad(lambda w, x: jnp.sum(jnp.log1p(jnp.exp(w * x)))),
    ],
    "check_discounted_returns": [_reverse_scan_returns, _returns_flipped],
    "check_noisy_batch": [_noisy_a, _noisy_b],
    "check_mlp_apply": [any_depth_mlp, _mlp_recursive],
    "check_frozen_constant": [
        lambda key: StaticScale(jax.random.normal(key, (4,)), 2.0),
        lambda key: FloatScale(jax.random.normal(key, (4,)), 2.0),
    ],
    "check_per_example_grad_norms": [grad_norms, _grad_norms_ravel],
    "check_decayed_training": [_decayed(), _decayed()],
    "check_legal_fraction": [
        lambda m: jnp.mean(m, axis=0),
        lambda m: jnp.sum(m.astype(jnp.float32), axis=0) / m.shape[0],
    ],
    "check_up_first_policy": [
        lambda k, m: jnp.where(m[0], 0, jax.random.categorical(k, jnp.where(m, 0.0, -jnp.inf))),
        lambda k, m: jnp.where(m[0], 0, jax.random.choice(k, 4, p=m / m.sum())),
    ],
    "check_termination_and_truncation": [_classify, _classify_where],
    "check_count_endings": [_count_endings, _count_endings_by_position],
    "check_semi_implicit_step": [_semi_implicit, _euler_by_hand],
    "check_balancing_policy": [
        lambda obs: (10 * obs[2] + 2 * obs[3] > 0).astype(jnp.int32),
        lambda obs: jnp.where(obs[2] + 0.5 * obs[3] > 0, 1, 0),
    ],
    "check_action_values": [_action_values, _action_values_where],
    "check_reinforce_weights": [_reinforce, _reinforce_loop],
    "check_q_learning": [_q_learning(), _q_learning()],
    "check_double_dqn_target": [_double_dqn, _double_dqn_one_hot],
    "check_n_step_target": [n_step_answer, lambda *a: n_step_with_powers(*a, mode=None)],
    "check_sample_windows": [
        windows_with(uniform_start),
        windows_with(
            lambda b, k, size, n: jnp.floor(
                jax.random.uniform(k, (size,)) * (b.size - n + 1)
            ).astype(jnp.int32)
        ),
    ],
    "check_collector": [_collect(), _collect()],
    "check_epsilon_masked_probs": [eps_probs, _eps_probs_log],
    "check_dual_clip_objective": [dual_clip, _dual_clip_where],
    "check_gae_from_values": [gae_from_values_answer, _gae_loop],
    "check_fill_one_loss": [fill_loss, _fill_loss_masked_entropy],
    "check_rollout_keys": [_rollout(), _rollout()],
    "check_q_overshoot": [q_overshoot_by_steps, q_overshoot_loop],
    "check_late_success": [late_success_loop, late_success_vectorised],
    "check_batched_rollout": [
        batched_scan,
        jax.vmap(scan_rollout, in_axes=(0, 1), out_axes=(0, 1)),
    ],
    "check_rollout_bytes": [lambda t, n: 330 * t * n, _bytes_by_fields],
    "check_allreduce_bytes": [ring, lambda p, n: int(8 * p * (n - 1) // n)],
    "check_data_parallel_grad": [mean_gradient, _summed_parts_gradient],
    "check_settle": [settle_answer, _settle_test_in_condition],
    "check_success_by_reach": [reach_answer, _reach_sums],
    "check_bend": [bend_answer, _bend_numpy],
    "check_checkpointed_propagation": [
        checkpointed_class(),
        checkpointed_class(policy=jax.checkpoint_policies.nothing_saveable),
    ],
    "check_pays_from": [pays_answer, _pays_suffix],
    "check_cross_talk": [cross_talk_jacobian, cross_talk_hessian],
    "check_compilations": [compilations_once, Compilations],
}


# --- the checks' own case sets -----------------------------------------------------------


def _alternatives(value) -> list:
    return value if isinstance(value, list) else [value]


def _distinguishable(cases: list) -> None:
    """Every named mistake differs from the right answer on some case (else the check could
    not fail it), and any two mistakes differ on some case (else the first would be named for
    both)."""
    from companion.checks.core import close

    names = list(dict.fromkeys(m for case in cases for m in case.mistakes))

    def same(a, b):  # the two give the same result on every case, for some alternatives
        return all(
            any(
                close(x, y)
                for x in _alternatives(case.mistakes.get(a, case.expected))
                for y in _alternatives(case.mistakes.get(b, case.expected))
            )
            for case in cases
        )

    for name in names:
        assert not all(
            any(close(x, case.expected) for x in _alternatives(case.mistakes[name]))
            for case in cases
        ), f"never differs from the right answer: {name}"
    for a, b in itertools.combinations(names, 2):
        assert not same(a, b), f"indistinguishable: {a!r} and {b!r}"
