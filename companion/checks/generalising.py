"""Self-checks for the exercises of the chapter on generalising (random and larger mazes).

:func:`check_settle`: the max-plus backup repeated in a ``jax.lax.while_loop`` until it changes
nothing, against breadth-first search; :func:`check_success_by_reach`: the success rates of
the targets within a planner's reach and beyond it.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from companion.checks._contract import require_array
from companion.checks._messages import N_, _
from companion.checks.core import (
    Case,
    _Differs,
    _program_lacks,
    close,
    fail,
    passed,
    require_function,
    require_pair,
    run_answer,
    self_check,
    verdict,
)
from companion.envs.grid import MOVES

# --- exercise 1: settle(v_0, can_move, cost) ----------------------------------------------


def _maze(rows: list[str]) -> tuple[np.ndarray, tuple[int, int]]:
    """Walls bool ``(rows, cols)`` and the target's cell from strings: ``#`` wall, ``T`` target."""
    walls = np.array([[ch == "#" for ch in row] for row in rows])
    (target,) = [(r, c) for r, row in enumerate(rows) for c, ch in enumerate(row) if ch == "T"]
    return walls, target


#: The check's mazes: a 5 x 7 one with a pocket cut off from the target, a 7 x 7 corridor
#: whose farthest cell is many more moves away than the grid is wide, a target walled in (no
#: backup changes anything) and a 4 x 6 grid without walls.
_MAZES = {
    N_("a 5 x 7 maze with a pocket cut off from the target"): [
        ".....#.",
        ".###.#.",
        ".#T..##",
        ".####..",
        ".......",
    ],
    N_("a 7 x 7 winding corridor"): [
        "T......",
        "######.",
        ".......",
        ".######",
        ".......",
        "######.",
        ".......",
    ],
    N_("a 3 x 4 maze whose target is walled in"): [
        "..#.",
        ".#T#",
        "..#.",
    ],
    N_("a 4 x 6 grid without walls"): [
        "......",
        "......",
        "...T..",
        "......",
    ],
}
_COSTS = (1.5, 0.5, 2.0, 1.0)


def _can_move(walls: np.ndarray) -> np.ndarray:
    """bool ``(4, rows, cols)``: from a free cell to a free neighbour, up, right, down, left."""
    free = ~walls
    return np.stack([free & _shift(free, d, False) for d in range(4)])


def _shift(a: np.ndarray, direction: int, fill) -> np.ndarray:
    """``out[r, c] = a[r + dr, c + dc]``, ``fill`` off the grid (``ppo.neighbour``'s shift)."""
    dr, dc = MOVES[direction]
    padded = np.pad(a, 1, constant_values=fill)
    rows, cols = a.shape
    return padded[1 + dr : 1 + dr + rows, 1 + dc : 1 + dc + cols]


def _bfs(walls: np.ndarray, target: tuple[int, int]) -> np.ndarray:
    """Moves from every cell to the target, -1 where it cannot be reached (walls too)."""
    dist = np.full(walls.shape, -1)
    dist[target] = 0
    queue = deque([target])
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVES:
            nr, nc = r + dr, c + dc
            if (
                0 <= nr < walls.shape[0]
                and 0 <= nc < walls.shape[1]
                and not walls[nr, nc]
                and dist[nr, nc] < 0
            ):
                dist[nr, nc] = dist[r, c] + 1
                queue.append((nr, nc))
    return dist


def _settle_model(
    v_0, can_move, cost, bound, keep=True, mask=True, opposite=False, until="any", wrap=False
):
    """The values and the count of a settle loop with one mistake planted: the backup without
    ``max(v, ...)`` (``keep``), without ``can_move`` (``mask``), with each mask paired with the
    opposite neighbour, or a loop that goes on while ``all`` cells change; stopped after
    ``bound`` backups as the check stops the answer's loop; ``wrap`` shifts with ``np.roll``
    (round the grid's edges) instead of ``ppo.neighbour``'s padding."""
    v, count, changed, backups = v_0.astype(np.float64), 0, True, 0
    with np.errstate(invalid="ignore"):
        while changed and backups < bound:
            out = v.copy() if keep else np.full_like(v, -np.inf)
            for d in range(4):
                direction = (d + 2) % 4 if opposite else d
                if wrap:
                    shifted = np.roll(v, tuple(-k for k in MOVES[direction]), (0, 1)) - cost
                else:
                    shifted = _shift(v, direction, 0.0) - cost
                out = np.maximum(out, np.where(can_move[d], shifted, -np.inf) if mask else shifted)
            changed = bool(np.any(out != v) if until == "any" else np.all(out != v))
            count += changed
            v, backups = out, backups + 1
    return v, count


#: What the check says for each mistake it models.
_COUNT_LAST = N_(
    "the count is one more than the backups that changed something: it includes the last "
    "backup, which changed nothing, or starts at 1; start it at jnp.int32(0) and add only "
    "the backups that changed something (n + changed)"
)
_STOPS_EARLY = N_(
    "the loop stops after one backup while cells are still changing: its condition "
    "turns False too early (jnp.all where jnp.any belongs; or a difference of two "
    "-inf cells, -inf - (-inf) = nan, where v_next != v belongs)"
)
_NO_COST = N_("the backup subtracts 1, not cost: a move costs cost, v(s') - cost")
_NO_MASK = N_(
    "moves go through walls and off the grid: mask each direction with can_move[d] "
    "(jnp.where(can_move[d], shifted, -jnp.inf))"
)
_OPPOSITE = N_(
    "each direction's mask is paired with the neighbour in the opposite direction: "
    "can_move[d] allows the move to ppo.neighbour(v, d) (jnp.roll(v, 1, axis=0) is "
    "the neighbour above, direction 0)"
)
_COUNT_CELLS = N_(
    "the count adds up the cells that changed (a sum of v_next != v), not the backups that "
    "changed something: add 1 for a backup that changed any cell (jnp.any)"
)
_NO_KEEP = N_(
    "the backup forgets what a cell already has, so the values never settle (the check "
    "stopped the loop): v_{i+1} = max(v_i, max over moves of v_i(s') - cost) keeps v_i, "
    "and the target stays at 0"
)


def _settle_case(label: str, rows: list[str], cost: float):
    """The inputs, the expected values and count, the bound on backups and the mistakes."""
    walls, target = _maze(rows)
    can_move = _can_move(walls)
    v_0 = np.full(walls.shape, -np.inf, np.float32)
    v_0[target] = 0.0
    dist = _bfs(walls, target)
    expected_v = np.where(dist >= 0, -cost * dist, -np.inf)
    count = int(dist.max())
    bound = 2 * walls.size + 4
    model = lambda **kw: _settle_model(v_0, can_move, cost, bound, **kw)  # noqa: E731
    mistakes = {
        _(_COUNT_LAST): [(expected_v, count + 1)],
        _(_STOPS_EARLY): [(model(until="all")[0], n) for n in (0, 1)],
        _(_NO_COST): [(np.where(dist >= 0, -1.0 * dist, -np.inf), count)],
        _(_NO_MASK): [model(mask=False)],
        _(_OPPOSITE): [model(opposite=True), model(opposite=True, wrap=True)],
        _(_NO_KEEP): [model(keep=False)],
        _(_COUNT_CELLS): [(expected_v, int((dist > 0).sum()))],
    }
    inputs = {"walls": walls.astype(int), "cost": cost}
    case = Case(label, inputs, (expected_v, count), mistakes)
    return case, (jnp.asarray(v_0), jnp.asarray(can_move), jnp.float32(cost)), bound


@contextlib.contextmanager
def _bounded_while_loops(bound: int, iterations: list):
    """``jax.lax.while_loop`` that also stops after ``bound`` iterations, while the block runs;
    each loop appends how many iterations it ran to ``iterations`` (when it runs)."""
    original = jax.lax.while_loop

    def bounded(cond_fun, body_fun, init_val):
        def cond(carry):
            i, inner = carry
            return jnp.logical_and(i < bound, cond_fun(inner))

        def body(carry):
            i, inner = carry
            return i + 1, body_fun(inner)

        i, out = original(cond, body, (jnp.int32(0), init_val))
        jax.debug.callback(lambda i: iterations.append(int(i)), i)
        return out

    jax.lax.while_loop = bounded
    try:
        yield
    finally:
        jax.lax.while_loop = original


def _pair_close(out, pair) -> bool:
    return close(out[0], pair[0]) and int(out[1]) == int(pair[1])


def _settle_property(entries: list, cases: list, outputs: list) -> None:
    """Fail naming the property that the answer's values break on every maze where they
    differ: v_0 returned as it came, values above the target's 0, a finite value where the
    target cannot be reached, or every value the same multiple of the expected one."""
    starts = [np.asarray(args[0]) for _case, args, _bound in entries]
    if all(
        np.array_equal(values, v_0) and count == 0 for (values, count), v_0 in zip(outputs, starts)
    ):
        fail(
            _(
                "settle: it returns v_0 as it came, with a count of 0: the loop ran no backup, "
                "since its condition is False from the start; start the flag that says whether "
                "the last backup changed something at True (jnp.bool_(True))"
            )
        )
    differ = [
        (case, values)
        for case, (values, _count) in zip(cases, outputs)
        if not close(values, case.expected[0])
    ]
    for case, values in differ:
        finite = np.isfinite(values)
        if np.any(values[finite] > 0):
            cell = tuple(int(i) for i in np.argwhere(finite & (values > 0))[0])
            fail(
                _(
                    "settle: on {case} the value at row {row} and column {column} is {value}, "
                    "above the target's 0: a move adds cost instead of subtracting it; the "
                    "backup is v(s') - cost, and no value rises above 0"
                ).format(case=case.label, row=cell[0], column=cell[1], value=f"{values[cell]:.4g}")
            )
    for case, values in differ:
        cut_off = np.isfinite(values) & np.isneginf(case.expected[0])
        if np.any(cut_off):
            cell = tuple(int(i) for i in np.argwhere(cut_off)[0])
            where = _("a wall") if case.inputs["walls"][cell] else _("a free cell")
            fail(
                _(
                    "settle: on {case} {where} at row {row} and column {column}, from which "
                    "the target cannot be reached, has the value {value}, not -inf: a move "
                    "that can_move forbids must give -inf (jnp.where(can_move[d], shifted, "
                    "-jnp.inf)), so that the max never takes it"
                ).format(
                    case=case.label,
                    where=where,
                    row=cell[0],
                    column=cell[1],
                    value=f"{values[cell]:.4g}",
                )
            )
    ratios = set()
    for case, values in differ:
        expected_v = case.expected[0]
        moved = np.isfinite(expected_v) & (expected_v != 0)
        if not (np.array_equal(np.isfinite(values), np.isfinite(expected_v)) and moved.any()):
            return
        ratio = values[moved] / expected_v[moved]
        if not np.allclose(ratio, ratio[0], rtol=1e-5) or np.any(values[expected_v == 0] != 0):
            return
        ratios.add(round(float(ratio[0]), 4))
    if len(ratios) == 1:
        fail(
            _(
                "settle: every value is {ratio} times the expected one (-cost x the moves to "
                "the target): each move must subtract cost exactly once, v(s') - cost"
            ).format(ratio=f"{ratios.pop():g}")
        )


@self_check
def check_settle(settle: Callable) -> None:
    """Check ``settle(v_0, can_move, cost) -> (values, count)``: max-plus backups in a
    ``jax.lax.while_loop`` until one changes nothing.

    ``v_0`` float32 ``(rows, cols)``, 0 at the target and -inf elsewhere; ``can_move`` bool
    ``(4, rows, cols)``, the moves up, right, down, left from a free cell to a free one; ``cost``
    a positive float32 scalar. Returns the settled values, float32 ``(rows, cols)``: ``-cost``
    times the breadth-first-search distance to the target, -inf where the target cannot be
    reached; and the number of backups that changed something, int32 ``()``: the largest such
    distance. Runs the answer under ``jax.jit`` (``cost`` traced) on four mazes, 3 x 4 to
    7 x 7 (one with cells cut off from the target, one whose target is walled in), with its
    ``jax.lax.while_loop`` stopped after 2 x rows x cols + 4 backups if it has not settled.

    Raises:
        CheckFailed: naming the mistake (no while_loop, more backups than settling takes, a
            count one too many (the last backup counted, or a count from 1), the changed cells
            counted, a loop that stops after one backup or runs none, cost taken as 1, walls
            or directions ignored or swapped, a backup that forgets v and never settles), or
            the property the values break (above the target's 0: cost added; finite where
            the target cannot be reached; a multiple of the expected values), else the first
            maze and cell that differ; or wrong types, shapes, dtypes.
    """
    require_function(settle, "settle")
    entries = [
        _settle_case(_(label), rows, cost) for (label, rows), cost in zip(_MAZES.items(), _COSTS)
    ]
    if _program_lacks(settle, entries[0][1], "while"):
        fail(
            _(
                "settle runs a fixed number of backups (there is no while_loop in its program; a "
                "scan or a fori_loop with fixed bounds runs them all): repeat the backup in "
                "jax.lax.while_loop, whose condition reads whether the last backup changed something"
            )
        )
    cases, outputs = [], []
    for case, args, bound in entries:
        call = _("settle(v_0, can_move, cost) on {case}").format(case=case.label)
        iterations: list = []
        with _bounded_while_loops(bound, iterations):
            got = run_answer(  # a new function each time: traced here, in the bounded loop
                lambda v_0, can_move, cost: settle(v_0, can_move, cost),
                *args,
                call=call,
            )
            jax.effects_barrier()
        require_pair(got, call, _("values, count"))
        values, count = got
        values = require_array(
            values,
            _("the values of {call}").format(call=call),
            args[0].shape,
            np.float32,
            why=_("the grid's, as v_0"),
            returns=False,
            finite=False,
        )
        count = require_array(
            count,
            _("the count of {call}").format(call=call),
            (),
            np.int32,
            why=_("the number of backups that changed something"),
            dtype_hint=_("jnp.int32(0) as the initial count, changed.astype(jnp.int32) added"),
            returns=False,
        )
        expected = np.asarray(case.expected[0])
        reached = np.isfinite(expected)
        if (
            np.any(expected[reached] != 0)
            and np.allclose(values[reached], -expected[reached])
            and np.all(values[~reached] == np.inf)
        ):
            fail(
                _(
                    "the values of {call} are the expected ones with their sign flipped (+inf "
                    "where the target cannot be reached): it returns the cost of the way to the "
                    "target, cost times the distance; a value is minus that, 0 at the target and "
                    "lower farther away"
                ).format(call=call)
            )
        if np.any(np.isnan(values)) or np.any(values == np.inf):
            fail(
                _(
                    "the values of {call} contain nan or +inf: a cell's value is -inf until the "
                    "target is in reach, and -inf - cost is -inf"
                ).format(call=call)
            )
        cases.append(
            case._replace(
                inputs={**case.inputs, "bound": bound, "ran": iterations[0] if iterations else None}
            )
        )
        outputs.append((values, int(count)))
    if all(_pair_close(out, case.expected) for case, out in zip(cases, outputs)):
        for case in cases:
            ran, settled = case.inputs["ran"], case.expected[1]
            if ran is not None and ran > settled + 1:
                fail(
                    _(
                        "settle's values and count are right, but on {case} it ran {ran} "
                        "backups, where the values settle after {settled} and one more shows "
                        "it: stop as soon as a backup changes nothing (the loop's condition "
                        "reads whether the last backup changed something, not a number of "
                        "backups)"
                    ).format(case=case.label, ran=ran, settled=settled)
                )
        passed(
            _("settle gives -cost x the BFS distance and counts the changing backups, on 4 mazes")
        )
        return
    for message in dict.fromkeys(m for case in cases for m in case.mistakes):
        if all(
            any(_pair_close(out, alt) for alt in case.mistakes.get(message, [case.expected]))
            for case, out in zip(cases, outputs)
        ):
            fail(_("{name}: {mistake}.").format(name="settle", mistake=message))
    _settle_property(entries, cases, outputs)
    for case, (values, count) in zip(cases, outputs):
        expected_v, expected_n = case.expected
        if case.inputs["ran"] is not None and case.inputs["ran"] >= case.inputs["bound"]:
            fail(
                _(
                    "settle never settles on {case}: the check stopped its loop after {bound} "
                    "backups, where {needed} settle the values and show it"
                ).format(case=case.label, bound=case.inputs["bound"], needed=expected_n + 1)
            )
        if not close(values, expected_v):
            walls = case.inputs["walls"].astype(bool)
            wrong = np.argwhere(~np.isclose(values, expected_v))[0]
            cell = tuple(int(i) for i in wrong)
            where = _("a wall") if walls[cell] else _("a free cell")
            fail(
                _(
                    "settle's values differ on {case} (cost {cost}): at {where}, row {row} and "
                    "column {column}, it gives {got}, expected {expected} (-cost x the moves to "
                    "the target, -inf where it cannot be reached). The maze, 1 for a wall:"
                ).format(
                    case=case.label,
                    cost=case.inputs["cost"],
                    where=where,
                    row=cell[0],
                    column=cell[1],
                    got=f"{values[cell]:.4g}",
                    expected=f"{expected_v[cell]:.4g}",
                )
                + "\n"
                + "\n".join("  " + " ".join(str(x) for x in row) for row in case.inputs["walls"])
            )
        if count != expected_n:
            fail(
                _(
                    "settle's values are right on {case} but the count is {count}, expected "
                    "{expected}: the backups that changed something, as many as the farthest "
                    "reachable cell is moves away"
                ).format(case=case.label, count=count, expected=expected_n)
            )


# --- exercise 2: success_by_reach(success, shortest, iterations) ---------------------------


def _reach_rates(success, shortest, reach, divide_by_all=False):
    within = shortest <= reach
    parts = (within, ~within)
    if divide_by_all:
        return np.array([np.sum(success & p) / success.size for p in parts])
    return np.array([np.mean(success[p]) for p in parts])


def _reach_case(success, shortest, iterations, label) -> Case:
    success, shortest = np.asarray(success, bool), np.asarray(shortest, np.int32)
    expected = _reach_rates(success, shortest, iterations + 1)
    mistakes = {
        _(
            "the split is at K = iterations moves: the policy also reads the agent's neighbours, "
            "so a target iterations + 1 moves away is within reach"
        ): _reach_rates(success, shortest, iterations),
        _("the reach is fixed at 9 moves (8 backups + 1); it is iterations + 1"): _reach_rates(
            success, shortest, 9
        ),
        _("the two rates are swapped: the rate within reach comes first"): expected[::-1],
        _(
            "each part's successes are divided by all the episodes, not by the part's own"
        ): _reach_rates(success, shortest, iterations + 1, divide_by_all=True),
        _("these are failure rates: return the share of episodes that succeeded"): 1 - expected,
    }
    inputs = {"success": success, "shortest": shortest, "iterations": iterations}
    return Case(label, inputs, expected, mistakes)


#: Sets of episodes a rate may be taken over by mistake, as code: the split one move off, or
#: the episodes at iterations + 1 moves in both parts or in neither.
_PARTS = (
    ("shortest <= iterations", lambda d, k: d <= k),
    ("shortest <= iterations + 2", lambda d, k: d <= k + 2),
    ("shortest < iterations", lambda d, k: d < k),
    ("shortest >= iterations + 1", lambda d, k: d >= k + 1),
    ("shortest > iterations + 2", lambda d, k: d > k + 2),
    ("shortest >= iterations", lambda d, k: d >= k),
)


def _reach_part_models(success, shortest, iterations) -> dict:
    """What each rate is with one mistake of its own: message -> ``(within, beyond)``."""
    within = shortest <= iterations + 1
    own = np.array([np.mean(success[within]), np.mean(success[~within])])
    total = np.full(2, np.mean(success))
    models = {
        _("the success rate of all the episodes, not of its part's own"): total,
        _("the other part's rate: each rate averages its own part's episodes"): own[::-1],
        _(
            "one minus the other part's rate: the two parts are different episodes, each "
            "with a rate of its own"
        ): 1 - own[::-1],
        _("its part's failure rate: return the share that succeeded"): 1 - own,
        _("its part's successes divided by all the episodes, not by its part's own"): np.array(
            [np.sum(success & p) / success.size for p in (within, ~within)]
        ),
    }
    for condition, part in _PARTS:
        chosen = part(shortest, iterations)
        if chosen.any():
            models[
                _(
                    "taken over the episodes with {condition}: within reach is shortest <= "
                    "iterations + 1, beyond it the rest"
                ).format(condition=condition)
            ] = np.full(2, np.mean(success[chosen]))
    return models


def _reach_by_part(cases: list, outputs: list) -> None:
    """Fail naming what one of the two rates is, where it is the same mistake on every case."""
    models = [
        _reach_part_models(
            case.inputs["success"], case.inputs["shortest"], case.inputs["iterations"]
        )
        for case in cases
    ]
    for i, which in enumerate((_("within reach"), _("beyond reach"))):
        if all(close(out[i], case.expected[i]) for case, out in zip(cases, outputs)):
            continue
        for message in models[0]:
            if all(
                message in found and close(out[i], found[message][i])
                for found, out in zip(models, outputs)
            ):
                fail(
                    _("success_by_reach: the rate {which} is {mistake}").format(
                        which=which, mistake=message
                    )
                )


@self_check
def check_success_by_reach(success_by_reach: Callable) -> None:
    """Check ``success_by_reach(success, shortest, iterations)``: float32 ``(2,)``, the success
    rate of the episodes whose target is within reach of a planner with ``iterations``
    backups (a shortest path of at most ``iterations + 1`` moves: the backups reach
    ``iterations`` moves, and the policy reads the agent's neighbours), then of the others.

    ``success`` bool ``(E,)``, ``shortest`` int32 ``(E,)`` (``ppo.shortest_path_lengths``), both
    parts non-empty; ``iterations`` a Python int. Runs the answer under ``jax.jit``
    (``iterations`` static) with 8 and 3 backups, on distances at and around the reach.

    Raises:
        CheckFailed: naming the mistake (split at ``iterations`` moves or at a fixed 9, rates
            swapped, divided by all episodes, failure rates), or what one of the two rates is
            instead (the rate of all the episodes, the other part's rate or one minus it, a
            failure rate, a division by all, a part one move off or sharing the episodes at
            the reach); else the first case that differs; or a wrong shape or dtype.
    """
    require_function(success_by_reach, "success_by_reach")
    cases = [
        _reach_case(
            [1, 1, 1, 0, 1, 0, 1, 0, 0, 1, 1, 0],
            [3, 8, 9, 9, 10, 10, 11, 15, 7, 2, 9, 12],
            8,
            _("{episodes} episodes and {backups} backups (reach {reach} moves)").format(
                episodes=12, backups=8, reach=9
            ),
        ),
        _reach_case(
            [1, 1, 0, 1, 0, 1, 0, 0, 1, 1],
            [2, 3, 4, 4, 5, 6, 9, 4, 1, 12],
            3,
            _("{episodes} episodes and {backups} backups (reach {reach} moves)").format(
                episodes=10, backups=3, reach=4
            ),
        ),
    ]
    outputs = []
    for case in cases:
        call = f"success_by_reach(success, shortest, {case.inputs['iterations']})"
        got = run_answer(
            success_by_reach,
            jnp.asarray(case.inputs["success"]),
            jnp.asarray(case.inputs["shortest"]),
            case.inputs["iterations"],
            call=call,
        )
        got = require_array(
            got,
            call,
            (2,),
            np.float32,
            why=_("two success rates: within reach, then beyond"),
            dtype_hint=_("The mean of a bool array is float32"),
        )
        outputs.append(got)
    try:
        verdict("success_by_reach", cases, outputs)
    except _Differs:
        _reach_by_part(cases, outputs)
        raise
    passed(_("success_by_reach splits at iterations + 1 moves, each part's success rate"))
