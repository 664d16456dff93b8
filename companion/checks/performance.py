"""Self-checks for the exercises of the performance chapter (exercise 4's is in
:mod:`companion.checks.checkpointing`)."""

from __future__ import annotations

import functools
import string
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import describe, require_array, require_number
from companion.checks._messages import N_, _
from companion.checks.bugs import _COLLECTOR_MAX_STEPS, _short_episodes
from companion.checks.core import (
    Case,
    close,
    fail,
    passed,
    require_function,
    require_pair,
    run_answer,
    self_check,
    unrolled,
    verdict,
)
from companion.envs import cartpole


def _loop_reference(state, actions, step_fn, flag="done"):
    dones = []
    for a in np.asarray(actions):
        state, timestep = step_fn(state, jnp.int32(a))
        dones.append(bool(getattr(timestep, flag)))
    return state, np.array(dones)


def _batched_loop_reference(make_states, actions, step_fn, flag="done"):
    """Step each environment on its own with ``step_fn``: the final physics (N, 4), step
    counts (N,) and the flags (T, N)."""
    finals, counts, dones = [], [], []
    num_envs = actions.shape[1]
    for e in range(num_envs):
        state = jax.tree.map(lambda leaf, e=e: leaf[e], make_states())
        state, done = _loop_reference(state, actions[:, e], step_fn, flag)
        finals.append(np.asarray(state.physics))
        counts.append(int(state.step_count))
        dones.append(done)
    return np.stack(finals), np.array(counts), np.stack(dones, axis=1)


def _first_difference(
    got, expected, what, where=N_("step {step}, environment {environment}")
) -> str:
    """Where ``got`` first differs from ``expected``: ``where`` names its axes, one placeholder
    each in the order of the axes ("step 3, environment 1")."""
    wrong = (
        ~np.isclose(got, expected, rtol=1e-5, atol=1e-6)
        if got.dtype.kind == "f"
        else (got != expected)
    )
    index = tuple(int(i) for i in np.argwhere(wrong)[0])
    axes = [field for _text, field, _spec, _conversion in string.Formatter().parse(where) if field]
    return _("{what} first differs at {where}: it gives {got}, expected {expected}").format(
        what=what,
        where=_(where).format(**dict(zip(axes, index))),
        got=got[index],
        expected=expected[index],
    )


def _batched_actions_mixed(physics, make_states, actions, step_fn) -> None:
    """Fail when every environment's final physics is another environment's actions stepped
    (``actions[t, e]`` read as ``actions[e, t]``'s column swapped), or the actions in reverse
    time order."""
    num_envs = actions.shape[1]
    actions = np.asarray(actions)

    def final(e, sequence):
        state = jax.tree.map(lambda leaf: leaf[e], make_states())
        return np.asarray(_loop_reference(state, sequence, step_fn)[0].physics)

    if all(close(physics[e], final(e, actions[::-1, e])) for e in range(num_envs)):
        fail(
            _(
                "the actions are taken in reverse time order: scan over actions as they come, "
                "actions[0] first (no reverse=True, no actions[::-1])"
            )
        )
    columns = []
    for e in range(num_envs):
        found = [c for c in range(num_envs) if close(physics[e], final(e, actions[:, c]))]
        if not found:
            return
        columns.append(e if e in found else found[0])
    if columns != list(range(num_envs)):
        e = next(e for e, c in enumerate(columns) if c != e)
        fail(
            _(
                "environment {env} is stepped with the actions of environment {other}: "
                "actions[t, e] is the action of environment e at step t, so each step's row "
                "actions[t] goes to the vmapped step as it is, its e-th action to environment e"
            ).format(env=e, other=columns[e])
        )


@self_check
def check_batched_rollout(batched_rollout: Callable) -> None:
    """Check ``batched_rollout(states, actions) -> (final_states, done_t)`` for N CartPoles.

    ``states`` a :class:`companion.envs.cartpole.CartPoleState`, leaves with leading axis N;
    ``actions`` int32 ``(T, N)``, time first. Steps ``jax.vmap(cartpole.step_autoreset)`` in one
    ``jax.lax.scan``; returns the final states and ``timestep.done``, bool ``(T, N)``. Runs the
    answer under ``jax.jit`` for 60 steps of 3 environments with a time limit of 30 steps (so
    that episodes end by truncation as well as by falling), and looks at its program at 20 and
    40 steps.

    Raises:
        CheckFailed: naming the mistake (no auto-reset, ``terminated`` for ``done``, done flags
            environment-first, one step late or not bool, a Python loop unrolled, the states
            passed in returned, the actions in reverse time or given to other environments,
            final states or step counts that differ, wrong types or shapes).
    """
    require_function(batched_rollout, "batched_rollout")
    num_steps, num_envs = 60, 3

    def make_states():  # fresh keys for every use
        return jax.vmap(cartpole.reset)(jax.random.split(jax.random.key(5), num_envs))[0]

    actions = jax.random.bernoulli(jax.random.key(6), shape=(num_steps, num_envs))
    actions = actions.astype(jnp.int32)
    sizes = unrolled(batched_rollout, *[(make_states(), actions[:n]) for n in (20, 40)])
    if sizes is not None:
        growth = (
            _(" (scan's unroll)")
            if sizes[1] < 0
            else _(" ({short} operations for 20 steps, {long} for 40)").format(
                short=sizes[0], long=sizes[1]
            )
        )
        fail(
            _(
                "batched_rollout unrolls its loop into the program{growth}: a Python loop (even "
                "under an inner jax.jit) copies the step once per time step; use jax.lax.scan"
            ).format(growth=growth)
        )
    call = "batched_rollout(states, actions)"
    traces: list = []
    with _short_episodes(traces):  # a time limit of 30 steps, so that episodes truncate
        got = run_answer(
            batched_rollout,
            make_states(),
            actions,
            call=call,
            hint=_(
                "states: a CartPoleState with leaves (3, ...); actions: int32 (60, 3), time first"
            ),
        )
    limit = cartpole.DEFAULT_PARAMS._replace(max_steps=_COLLECTOR_MAX_STEPS if traces else 500)
    reference_step = functools.partial(cartpole.step_autoreset, params=limit)
    require_pair(got, call, "final_states, done_t")
    final, dones = got
    if not isinstance(final, cartpole.CartPoleState):
        fail(
            _(
                "the first result of {call} should be the final states, a "
                "cartpole.CartPoleState whose leaves have a leading axis {num_envs}; it is {got}"
            ).format(call=call, num_envs=num_envs, got=describe(final))
        )
    physics = require_array(
        final.physics, "final_states.physics", (num_envs, 4), np.float32, returns=False
    )
    counts = require_array(
        final.step_count, "final_states.step_count", (num_envs,), np.int32, returns=False
    )
    dones = require_array(
        dones,
        _("done_t of {call}").format(call=call),
        (num_steps, num_envs),
        bool,
        why=_("one flag per step and environment, time first"),
        hint=lambda dones: (
            _("It is environment first: return it time first, as lax.scan stacks its outputs")
            if np.shape(dones) == (num_envs, num_steps)
            else ""
        ),
        dtype_hint=_("Return timestep.done as it is"),
        returns=False,
    )
    ref_physics, ref_counts, ref_dones = _batched_loop_reference(
        make_states, actions, reference_step
    )
    if (
        close(physics, ref_physics)
        and np.array_equal(counts, ref_counts)
        and np.array_equal(dones, ref_dones)
    ):
        passed(_("batched_rollout matches stepping each environment alone, in one loop body"))
        return
    no_reset = _batched_loop_reference(
        make_states, actions, functools.partial(cartpole.step, params=limit)
    )[0]
    if close(physics, no_reset):
        fail(_("the episodes never restart: step with cartpole.step_autoreset, not cartpole.step"))
    start = make_states()
    if close(physics, start.physics) and np.array_equal(counts, start.step_count):
        fail(
            _(
                "the final states are the states passed in: return the scan's final carry, "
                "the first of jax.lax.scan's results, not the states it started from"
            )
        )
    if not close(physics, ref_physics):
        _batched_actions_mixed(physics, make_states, actions, reference_step)
        difference = _first_difference(
            physics,
            ref_physics,
            "final_states.physics",
            N_("environment {environment}, component {component}"),
        )
        fail(
            _(
                "the final states differ from stepping each environment on its own with "
                "step_autoreset (actions[t, e] is the action of environment e at step t): "
                "{difference}"
            ).format(difference=difference)
        )
    if not np.array_equal(dones, ref_dones):
        terminated = _batched_loop_reference(make_states, actions, reference_step, "terminated")
        if np.array_equal(dones, terminated[2]):
            fail(
                _(
                    "done_t is timestep.terminated: it misses the truncations (here the time "
                    "limit is 30 steps); done = terminated | truncated, timestep.done"
                )
            )
        late = [
            np.concatenate([fill, ref_dones[:-1]])
            for fill in (np.zeros_like(ref_dones[:1]), ref_dones[-1:])
        ]
        if any(np.array_equal(dones, x) for x in late):
            fail(
                _(
                    "done_t is not the flag of the step just taken: it is one step late (each "
                    "step's output is the flag of the step before); return the timestep.done "
                    "that the step returns"
                )
            )
        fail(
            _(
                "the final states are right but done_t is not: return timestep.done of every "
                "step as the scanned output, in order. {difference}"
            ).format(difference=_first_difference(dones, ref_dones, "done_t"))
        )
    difference = _first_difference(
        counts, ref_counts, "step_count", N_("environment {environment}")
    )
    fail(
        _(
            "the final physics and flags are right but final_states.step_count is not: return "
            "the states the last step returned. {difference}"
        ).format(difference=difference)
    )


def _rollout_bytes_per_step() -> int:
    """Bytes of one step of one environment of the PPO rollout on the 10 x 10 Maze."""
    return sum(size * itemsize for _name, _shape, _dtype, size, itemsize in _rollout_fields())


def _rollout_fields() -> list:
    """``(name, shape, dtype, size, itemsize)`` of each array of one step of one environment
    of the PPO rollout on the 10 x 10 Maze."""
    from companion.agents import ppo
    from companion.envs import maze
    from companion.envs.autoreset import make_reset_pool, reset_with_next_obs

    env = maze.make_maze_task("empty")

    def one_step_rollout():
        model = ppo.ActorCritic(jax.random.key(0), channels=(2,), hidden_sizes=(4,))
        state, ts = reset_with_next_obs(env, jax.random.key(1))
        batch = jax.tree.map(lambda leaf: leaf[None], (state, ts))
        pool = make_reset_pool(env, jax.random.key(2), 1)
        return ppo.rollout(model, env, pool, *batch, jax.random.key(3), 1)[2]

    shapes = jax.tree_util.tree_flatten_with_path(jax.eval_shape(one_step_rollout))[0]
    return [
        (
            jax.tree_util.keystr(path).lstrip("."),
            leaf.shape[2:],
            str(leaf.dtype),
            leaf.size,
            leaf.dtype.itemsize,
        )
        for path, leaf in shapes
    ]


def _bytes_explanations(per: int, got: int) -> list:
    """What makes ``got`` bytes a step out of the rollout's ``per``: one field (or each field
    of one dtype) counted at another size an element, left out, counted as one element, or
    counted in bits."""
    fields = _rollout_fields()
    found = []

    def add(value, message, group, **values):
        if value == got:
            names = " / ".join(
                f"{name} {shape or '()'} {dtype}" for name, shape, dtype, *_ in group
            )
            found.append(message.format(fields=names, **values))

    kinds: dict = {}
    for field in fields:
        kinds.setdefault((field[3], field[4]), []).append(field)
    for (n, size), group in kinds.items():  # one field of those alike
        one = len(group) == 1
        add(per - n * size, _("{fields} left out") if one else _("one of {fields} left out"), group)
        if n > 1:
            add(per - (n - 1) * size, _("{fields} counted as one element, not {n}"), group, n=n)
        for other in (1, 2, 4, 8):
            if other == size:
                continue
            if other == 1:
                message = (
                    _("{fields} counted at 1 byte an element, not {size}")
                    if one
                    else _("one of {fields} counted at 1 byte an element, not {size}")
                )
            else:
                message = (
                    _("{fields} counted at {other} bytes an element, not {size}")
                    if one
                    else _("one of {fields} counted at {other} bytes an element, not {size}")
                )
            add(per + n * (other - size), message, group, other=other, size=size)
        if one and n * size >= 8:
            for bits in {n * size // 8, -(-n * size // 8)}:
                add(per - n * size + bits, _("{fields} counted in bits, not bytes"), group)
    for dtype in sorted({field[2] for field in fields}):
        group = [field for field in fields if field[2] == dtype]
        total = sum(field[3] * field[4] for field in group)
        for bits in {total // 8, -(-total // 8)}:
            add(
                per - total + bits,
                _("every {dtype} field ({fields}) counted in bits, not bytes"),
                group,
                dtype=dtype,
            )
    return list(dict.fromkeys(found))[:2]


@self_check
def check_rollout_bytes(rollout_bytes: Callable) -> None:
    """Check ``rollout_bytes(num_steps, num_envs) -> int``: bytes of a PPO rollout's arrays.

    Per step and environment :func:`companion.agents.ppo.rollout` (10 x 10 Maze) stores ``image``
    bool (3, 10, 10), ``action_mask`` bool (4,), ``action``, ``step_count`` int32, ``log_prob``,
    ``value``, ``reward``, ``next_value`` float32, ``terminated``, ``done`` bool: 330 bytes.

    Raises:
        CheckFailed: for a result that is not an int (a float too), or naming the mistake
            (wrong dtype sizes, 64-bit numbers, a next image, a 4-byte or 1-byte field
            missing, one image channel, bits, not ``num_steps * num_envs`` transitions).
    """
    require_function(rollout_bytes, "rollout_bytes")
    per = _rollout_bytes_per_step()
    next_value = _("no next image is stored: next_value (4 bytes) replaces it")
    mistakes = {
        per + 900: _("the image is stored as bool, 1 byte a cell and channel, not float32"),
        per + 18: _("a bool takes 1 byte, not 4 (action_mask, terminated, done)"),
        per + 918: _("a bool takes 1 byte, not 4 (the image, action_mask, terminated, done)"),
        per + 300: _(
            "no next image is stored: next_value, V(s_{t+1}) (4 bytes), is what GAE needs of "
            "the next state"
        ),
        per + 296: next_value,
        per + 1196: next_value,
        per - 4: _(
            "4 bytes a step are missing: one float32 or int32 field (log_prob, value, reward, "
            "next_value, action, step_count) or the action mask (4 bools)"
        ),
        per - 8: _(
            "8 bytes a step are missing: two float32 or int32 fields (log_prob, value, reward, "
            "next_value, action, step_count) or the action mask (4 bools)"
        ),
        per - 1: _("1 byte a step is missing: terminated and done are both stored, bool"),
        per + 16: _("the floats are float32 (4 bytes), not float64"),
        per + 8: _("action and step_count are int32 (4 bytes), not int64"),
        per + 24: _("JAX's ints and floats are 32-bit (4 bytes) by default, not 64-bit"),
        per - 200: _("an image has 3 channels (walls, agent, target): 3 * 10 * 10 cells"),
        per * 8: _("these are bits: a byte is 8 bits"),
    }
    shapes = ((1, 1), (32, 64), (128, 16))
    answers = []
    for num_steps, num_envs in shapes:
        call = f"rollout_bytes({num_steps}, {num_envs})"
        raw = run_answer(rollout_bytes, num_steps, num_envs, call=call, jit=False)
        got = require_number(
            raw,
            call,
            "int",
            why=_("a whole number of bytes"),
            hint=lambda raw: (
                _(
                    "It is {value}: a whole number of bytes was expected ({per} bytes per step "
                    "and environment)"
                ).format(value=f"{raw:,}", per=f"{per:,}")
                if isinstance(raw, float) and raw != int(raw)
                else ""
            ),
        )
        answers.append((call, got, num_steps, num_envs))
    if all(got == per * t * n for _, got, t, n in answers):
        passed(
            _(
                "rollout_bytes counts {per} bytes per step and environment, as the arrays hold"
            ).format(per=f"{per:,}")
        )
        return
    # a mistake is named only when it gives the answer's bytes for every shape
    for per_step, message in mistakes.items():
        if all(got == per_step * t * n for _call, got, t, n in answers):
            call, got, t, n = answers[-1]
            fail(
                _("{call} = {value}: {mistake}").format(
                    call=call, value=f"{got:,}", mistake=message
                )
            )
    call, got, t, n = answers[0]
    if all(g == got * tt * nn for _call, g, tt, nn in answers):
        explained = _bytes_explanations(per, got)
        if explained:
            fail(
                _(
                    "{call} = {value}, where {per} bytes a step and environment are expected: "
                    "the difference, {difference} bytes a step, is exactly {explanation}"
                ).format(
                    call=call,
                    value=f"{got:,}",
                    per=f"{per:,}",
                    difference=f"{got - per:+,}",
                    explanation=functools.reduce(
                        lambda a, b: _("{first}, or {second}").format(first=a, second=b),
                        explained,
                    ),
                )
            )
    if all(got in (per * t, per * n) for _call, got, t, n in answers):
        call, got, _t, _n = answers[-1]
        fail(
            _("{call} = {value}: the rollout stores num_steps * num_envs transitions").format(
                call=call, value=f"{got:,}"
            )
        )
    call, got, t, n = next(a for a in answers if a[1] != per * a[2] * a[3])
    fail(
        _("{call} = {value}, expected {expected} ({per} bytes per step and environment)").format(
            call=call, value=f"{got:,}", expected=f"{per * t * n:,}", per=f"{per:,}"
        )
    )


# --- exercise 3: where a scaling curve bends ------------------------------------------------


def _bend_reference(
    sweep: dict,
    slope: float,
    order=None,
    past=False,
    linear=False,
    log_gain=False,
    from_first=False,
    steep=False,
    last=False,
    rate="steps_per_s",
    unbent=-1,
) -> int:
    """The bend of ``sweep``; the keywords plant one mistake each: the sizes in ``order``
    (a function of the keys) instead of numeric order, the size past the bend, the gain over
    the size's growth or the log of the gain alone instead of the log-log slope, every slope
    from the first size, the first segment at least as steep as ``slope``, the last flat
    segment instead of the first, another entry of the sweep for steps per second, the size
    at index ``unbent`` of a curve that never bends."""
    sizes = order(sweep) if order else sorted(sweep, key=int)
    segments = [(sizes[0] if from_first else a, b) for a, b in zip(sizes, sizes[1:])]
    bend = None
    for a, b in segments:
        gain = sweep[b][rate] / sweep[a][rate]
        growth = int(b) / int(a)
        if linear:
            measured = gain / growth
        elif log_gain:
            measured = np.log(gain)
        else:
            measured = np.log(gain) / np.log(growth)
        if (measured >= slope) if steep else (measured < slope):
            bend = int(b if past else a)
            if not last:
                return bend
    return int(sizes[unbent]) if bend is None else bend


def _loglog_slopes(rates: dict) -> list:
    """The log-log slope of each segment between neighbouring sizes, to 2 decimals."""
    sizes = sorted(rates)
    return [
        round(float(np.log(rates[b] / rates[a]) / np.log(b / a)), 2)
        for a, b in zip(sizes, sizes[1:])
    ]


def _sweep(steps_per_s: dict, order: list) -> dict:
    """A sweep as ``benchmarks/scaling.py`` writes it (keys are strings), in ``order``."""
    return {
        str(n): {
            "steps_per_s": float(steps_per_s[n]),
            "env_steps": 1000 * n,
            "median_s": 1000 * n / steps_per_s[n],
        }
        for n in order
    }


#: The check's sweeps: the committed DQN and PPO curves (rounded), a curve whose bend comes
#: before its peak, and one that never bends; given out of order, as a dict may be.
_BEND_CASES = (
    (
        N_("DQN's committed curve"),
        {1: 4185, 8: 25840, 64: 172763, 512: 977194, 4096: 1815688},
        [64, 1, 4096, 8, 512],
        0.5,
    ),
    (
        N_("PPO's committed curve"),
        {1: 10316, 8: 14675, 64: 9572, 512: 6483, 4096: 6066},
        [8, 512, 1, 4096, 64],
        0.5,
    ),
    (
        N_("a curve that bends before its peak"),
        {1: 100, 2: 190, 4: 370, 8: 500, 16: 560, 32: 540},
        [4, 32, 1, 16, 2, 8],
        0.5,
    ),
    (
        N_("the same curve with slope 0.25"),
        {1: 100, 2: 190, 4: 370, 8: 500, 16: 560, 32: 540},
        [1, 2, 4, 8, 16, 32],
        0.25,
    ),
    (N_("a curve that never bends"), {1: 5, 10: 50, 100: 480}, [100, 10, 1], 0.5),
)


@self_check
def check_bend(bend: Callable) -> None:
    """Check ``bend(sweep, slope=0.5) -> int``: where a throughput curve bends.

    ``sweep`` maps sizes, as the strings ``benchmarks/scaling.py`` writes (``results["scaling"]
    ["dqn_envs"]``: ``"1"``, ``"8"``, ...), in any order, to dicts with ``"steps_per_s"``. The
    bend is the size at which the curve first flattens on a log-log plot: the first size
    ``a`` whose next size ``b`` (in numeric order) has ``log(steps_per_s[b] /
    steps_per_s[a]) / log(b / a) < slope`` (1: steps per second grow with the size; 0: not at
    all); the largest size if no segment is that flat. Runs the answer as Python (no jit) on
    five sweeps, given out of order.

    Raises:
        CheckFailed: for a result that is not an int (a str, a float), or naming the mistake
            (sizes sorted as strings or not sorted, the size past the bend, the peak, the gain
            over the growth or log(gain) alone for the slope, every slope from the first size,
            the first steep segment (or median_s read), the last flat one, the smallest size
            for a curve that never bends, ``slope`` ignored),
            else the first sweep that differs, with its log-log slopes.
    """
    require_function(bend, "bend")
    cases, outputs = [], []
    for label, rates, order, slope in _BEND_CASES:
        sweep, label = _sweep(rates, order), _(label)
        call = _("bend(sweep, slope={slope}) on {label}").format(slope=slope, label=label)
        got = run_answer(
            bend,
            sweep,
            slope,
            call=call,
            jit=False,
            hint=_("sweep's keys are strings ('1', '8', ...)"),
        )
        got = require_number(
            got,
            call,
            "int",
            why=_("a size"),
            hint=lambda got: (
                _("Return the size as an int, int(size)") if isinstance(got, str) else ""
            ),
        )
        outputs.append(got)
        mistakes = {
            _(
                "the sizes are sorted as strings ('1', '4096', '512', ...): sort them as "
                "numbers, sorted(sweep, key=int)"
            ): _bend_reference(sweep, slope, order=sorted),
            _(
                "the sizes are taken in the dict's order, not sorted: sort them as numbers, "
                "sorted(sweep, key=int)"
            ): _bend_reference(sweep, slope, order=list),
            _(
                "it returns the size after the bend, where the flat segment ends: the bend is "
                "where that segment starts"
            ): _bend_reference(sweep, slope, past=True),
            _(
                "it returns the size with the most steps per second: the curve bends where its "
                "growth slows, which can be before its peak"
            ): int(max(sweep, key=lambda k: sweep[k]["steps_per_s"])),
            _(
                "the slope is taken as the gain over the size's growth (gain / growth); on a "
                "log-log plot it is log(gain) / log(growth)"
            ): _bend_reference(sweep, slope, linear=True),
            _(
                "slope is ignored (0.5 throughout): compare with the slope passed in"
            ): _bend_reference(sweep, 0.5),
            _(
                "on a curve that never bends it returns the smallest size: where no segment is "
                "flatter than slope, the bend is the largest size"
            ): _bend_reference(sweep, slope, unbent=0),
            _(
                "the slope is log(gain) alone, without dividing by log(growth): on a log-log "
                "plot a segment's slope is log(gain) / log(growth), and the sizes do not grow "
                "by the same factor everywhere"
            ): [
                _bend_reference(sweep, slope, log_gain=True),
                _bend_reference(sweep, slope, log_gain=True, past=True),
            ],
            _(
                "every slope is measured from the first size: a segment runs between "
                "neighbouring sizes, a and the next size b"
            ): [
                _bend_reference(sweep, slope, from_first=True),
                _bend_reference(sweep, slope, from_first=True, past=True),
            ],
            _(
                "it returns where the curve is steep, not where it flattens: the bend is the "
                "first size whose next segment's log-log slope of steps_per_s is below slope "
                "(<, not >=; and steps_per_s, not median_s, whose slope is 1 minus it)"
            ): [
                _bend_reference(sweep, slope, steep=True),
                _bend_reference(sweep, slope, rate="median_s"),
            ],
            _(
                "it returns the last segment flatter than slope: the bend is the first one, "
                "where the curve first flattens"
            ): _bend_reference(sweep, slope, last=True),
        }
        inputs = {
            "sizes": sorted(rates),
            "steps_per_s": [rates[n] for n in sorted(rates)],
            "slope": slope,
            _("log-log slopes between neighbouring sizes"): _loglog_slopes(rates),
        }
        cases.append(Case(label, inputs, _bend_reference(sweep, slope), mistakes))
    verdict("bend", cases, outputs, rtol=0, atol=0)
    passed(_("bend finds where each curve's log-log slope first falls below the slope given"))
