"""Self-checks for the exercises of the DQN chapter."""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from companion.checks._contract import require_array
from companion.checks._messages import N_, _
from companion.checks.core import (
    Case,
    _Differs,
    fail,
    passed,
    run_answer,
    self_check,
    verdict,
)


def _gather(q, action):
    return np.take_along_axis(q, action[:, None], -1)[:, 0]


def _double_dqn_case(reward, terminated, q_online, q_target, gamma, label) -> Case:
    reward, q_online, q_target = (np.asarray(a, np.float64) for a in (reward, q_online, q_target))
    keep = gamma * (1.0 - np.asarray(terminated))
    chosen = _gather(q_target, q_online.argmax(-1))
    one_hot = np.eye(q_online.shape[-1])[q_online.argmax(-1)]
    return Case(
        label,
        {
            "reward": reward,
            "terminated": terminated,
            "q_next_online": q_online,
            "q_next_target": q_target,
            "gamma": gamma,
        },
        reward + keep * chosen,
        {
            _(
                "this is the plain DQN target: choose the action with the ONLINE network's argmax"
            ): reward + keep * q_target.max(-1),
            _(
                "the chosen action is evaluated with the online network; evaluate it with the "
                "target network"
            ): reward + keep * q_online.max(-1),
            _(
                "the roles are swapped: the target network chooses and the online network evaluates"
            ): reward + keep * _gather(q_online, q_target.argmax(-1)),
            _("termination is ignored: after it the target is the reward alone"): reward
            + gamma * chosen,
            _(
                "the target network's values are masked by a one-hot product and then maxed: "
                "with negative values the 0 of the other actions wins. Gather the chosen "
                "action's value (jnp.take_along_axis) or sum the product"
            ): reward + keep * (q_target * one_hot).max(-1),
            _(
                "gamma multiplies the whole target, the reward too: the target is r + gamma * "
                "(1 - terminated) * Q_target(s', a*), with r undiscounted"
            ): gamma * (reward + (1.0 - np.asarray(terminated)) * chosen),
            _(
                "the reward is dropped at a termination: (1 - terminated) multiplies only the "
                "bootstrap, the target after a termination is the reward"
            ): ((1.0 - np.asarray(terminated)) * (reward + gamma * chosen)),
            _(
                "gamma is missing: the bootstrap is discounted, r + gamma * (1 - terminated) * ..."
            ): (reward + (1.0 - np.asarray(terminated)) * chosen),
            _(
                "this is the smaller of the two networks' values of the chosen action (clipped "
                "double Q-learning, as in TD3): double DQN evaluates it with the target network "
                "alone"
            ): reward + keep * _gather(np.minimum(q_online, q_target), q_online.argmax(-1)),
            _(
                "the two networks' values are averaged, then maxed: the online network chooses "
                "the action (its argmax), the target network alone evaluates it"
            ): reward + keep * (0.5 * (q_online + q_target)).max(-1),
        },
    )


def _name_wrong_action(cases: list, outputs: list) -> None:
    """Fail, naming the row, where every target is ``r + gamma (1 - d) q_next_target[a]`` of some
    action ``a`` but ``a`` is not the online network's argmax on some row of every case."""
    first, cases_wrong = None, 0
    for case, out in zip(cases, outputs):
        reward, terminated = np.asarray(case.inputs["reward"]), case.inputs["terminated"]
        q_online, q_target = case.inputs["q_next_online"], case.inputs["q_next_target"]
        keep = case.inputs["gamma"] * (1.0 - np.asarray(terminated))
        options = reward[:, None] + keep[:, None] * q_target  # (B, actions)
        fits = np.isclose(np.asarray(out)[:, None], options, rtol=1e-5, atol=1e-6)
        if not fits.any(axis=1).all():
            return
        best = q_online.argmax(-1)
        wrong = [row for row in range(len(reward)) if not fits[row, best[row]]]
        cases_wrong += bool(wrong)
        if first is None and wrong:
            row = wrong[0]
            first = (case.label, row, int(np.argmax(fits[row])), int(best[row]))
    if cases_wrong == len(cases):  # on some cases only it may be a special case
        fail(
            _(
                "double_dqn_target evaluates another action than the online network's argmax: "
                "on {case}, row {row} takes q_next_target's value of action {action}, where "
                "argmax q_next_online is {best}"
            ).format(case=first[0], row=first[1], action=first[2], best=first[3])
        )


@self_check
def check_double_dqn_target(double_dqn_target: Callable) -> None:
    """Check ``double_dqn_target(reward, terminated, q_next_online, q_next_target, gamma)``.

    Double DQN (van Hasselt et al., 2016): ``reward + gamma * (1 - terminated) *
    q_next_target[argmax(q_next_online)]``. ``reward`` float32 ``(B,)``, ``terminated`` bool
    ``(B,)``, Q-values float32 ``(B, num_actions)``; returns float32 ``(B,)``.

    Runs the answer under ``jax.jit`` (``gamma`` a static Python float).

    Raises:
        CheckFailed: naming the mistake (the plain DQN target, the online network's values, the
            roles swapped, termination ignored or dropping the reward, gamma on the reward or
            missing, a one-hot product maxed, the smaller of the two networks' values, the two
            averaged and maxed, the row whose evaluated action is not the online argmax,
            wrong shape or dtype).
    """
    cases = [
        _double_dqn_case(
            [1.0, 1.0, 1.0],
            [False, False, True],
            [[1.0, 2.0], [5.0, 3.0], [0.0, 9.0]],
            [[4.0, 3.0], [2.0, 6.0], [7.0, 8.0]],
            0.5,
            _("a batch of {size} with {actions} actions, gamma {gamma}").format(
                size=3, actions=2, gamma=0.5
            ),
        ),
        _double_dqn_case(
            [0.0, -1.0, 1.0, 0.5],
            [False, False, False, True],
            [[-1.0, -3.0, -2.0], [2.0, 2.0, 0.0], [0.5, -0.5, 1.5], [1.0, 0.0, 0.0]],
            [[-4.0, -0.5, -1.0], [-2.0, 3.0, 1.0], [-3.0, -2.0, -6.0], [2.0, 5.0, 1.0]],
            0.99,
            _("a batch of 4 with 3 actions, negative values and a tie, gamma 0.99"),
        ),
        _double_dqn_case(
            [-1.0, 2.0],
            [False, False],
            [[-300.0, -450.0], [-820.0, -610.0]],
            [[-520.0, -130.0], [-240.0, -990.0]],
            0.9,
            _("large negative values, gamma {gamma}").format(gamma=0.9),
        ),
    ]
    outputs = []
    for case in cases:
        args = [
            jnp.asarray(case.inputs[k], jnp.float32 if k != "terminated" else bool)
            for k in ("reward", "terminated", "q_next_online", "q_next_target")
        ]
        call = _("double_dqn_target(...) for {case}").format(case=case.label)
        got = run_answer(double_dqn_target, *args, case.inputs["gamma"], call=call)
        outputs.append(
            require_array(
                got,
                call,
                args[0].shape,
                np.float32,
                why=_("one target per transition, like reward"),
            )
        )
    try:
        verdict("double_dqn_target", cases, outputs)
    except _Differs:
        _name_wrong_action(cases, outputs)
        raise
    passed(_("double_dqn_target: the online network chooses, the target network evaluates"))


def _n_step_reference(reward, terminated, truncated, q_next, gamma, mistakes=()):
    """The n-step target by a plain loop; each name in ``mistakes`` plants a known error."""
    reward, terminated, truncated = (np.asarray(a) for a in (reward, terminated, truncated))
    q_next = np.asarray(q_next, np.float64)
    best = q_next.max(axis=-1)
    if "mean_actions" in mistakes:
        best = q_next.mean(axis=-1)
    if "argmax_actions" in mistakes:
        best = q_next.argmax(axis=-1).astype(np.float64)
    batch, n = reward.shape
    out = np.zeros(batch)
    for b in range(batch):
        total, discount = 0.0, 1.0
        ends = terminated[b] | truncated[b]
        for k in range(n):
            weight = {"undiscounted": 1.0, "rewards_shift": discount * gamma}
            total += next((weight[m] for m in mistakes if m in weight), discount) * reward[b, k]
            discount *= gamma
            term = terminated[b, k] and "through_termination" not in mistakes
            trunc = truncated[b, k] and "through_truncation" not in mistakes
            stop_early = "argmax_no_end" in mistakes and not ends.any()  # argmax of no end: 0
            if term or trunc or k == n - 1 or stop_early:
                boot = best[b, n - 1] if "last_step" in mistakes else best[b, k]
                boot = best[b, 0] if "first_step" in mistakes else boot
                if "rewards_after" in mistakes:
                    total += sum(gamma**j * reward[b, j] for j in range(k + 1, n))
                power = {"gamma_n": gamma**n, "gamma_m": discount / gamma}
                power = next((power[m] for m in mistakes if m in power), discount)
                flag = {"any_terminated": terminated[b].any(), "last_flag": terminated[b, -1]}
                flag = next((flag[m] for m in mistakes if m in flag), term)
                bootstraps = not flag or "boot_termination" in mistakes
                if trunc and "truncation_as_termination" in mistakes:
                    bootstraps = False
                total += power * boot * bootstraps
                break
        out[b] = total * (gamma if "gamma_outside" in mistakes else 1.0)
    return out


_N_STEP_MISTAKES = {
    ("through_termination", "through_truncation"): N_(
        "the n-step target runs through every episode end: stop the sum at the first termination or truncation of the window"
    ),
    ("through_termination",): N_(
        "the n-step target does not stop at a termination: the rewards after it belong to the next episode, and nothing is bootstrapped"
    ),
    ("boot_termination",): N_(
        "after a termination the target bootstraps: it must be the discounted rewards up to the termination alone"
    ),
    ("truncation_as_termination",): N_(
        "a truncation is treated as a termination: a truncated episode still has a future, bootstrap from q_next_target of the truncated step"
    ),
    ("through_truncation",): N_(
        "the sum runs through a truncation into the next episode: stop at the truncated step and bootstrap from its true next observation"
    ),
    ("last_step",): N_(
        "the bootstrap always comes from the window's last step; take it from the step where the episode ended (q_next_target[:, m])"
    ),
    ("last_step", "gamma_n"): N_(
        "the bootstrap is gamma ** n times the last step's value even when the window stops early at step m: take q_next_target[:, m] with gamma ** (m + 1)"
    ),
    ("gamma_n",): N_(
        "the bootstrap is discounted by gamma ** n even when the window stops early; a stop at step m gives gamma ** (m + 1)"
    ),
    ("gamma_m",): N_(
        "the bootstrap's discount is one power short: after the rewards r_0..r_m it is gamma ** (m + 1), not gamma ** m"
    ),
    ("undiscounted",): N_(
        "the rewards are not discounted: the sum is r_0 + gamma * r_1 + gamma**2 * r_2 and so on"
    ),
    ("rewards_shift",): N_(
        "the rewards are discounted one power too far: r_k gets gamma ** k (r_0 undiscounted), not gamma ** (k + 1); only the bootstrap gets gamma ** (m + 1)"
    ),
    ("gamma_outside",): N_(
        "gamma multiplies the whole target, r_0 included: r_0 is not discounted, only the later rewards and the bootstrap are"
    ),
    ("any_terminated",): N_(
        "the bootstrap is dropped whenever the window holds a termination anywhere (terminated read with any): a window that stops at an earlier truncation still bootstraps. Read the flag at the step m where the window stops, terminated[:, m]"
    ),
    ("last_flag",): N_(
        "the bootstrap's termination flag is read at the window's last step; read it at the step m where the window stops, terminated[:, m]"
    ),
    ("through_termination", "through_truncation", "last_flag"): N_(
        "the window always runs to its last step, reading terminated there: m is the FIRST step that ends the episode (argmax of terminated | truncated), and the sum and the bootstrap stop there"
    ),
    ("mean_actions",): N_(
        "the bootstrap averages q_next_target over the actions: Q-learning bootstraps from the best action, the max over the last axis"
    ),
    ("argmax_actions",): N_(
        "the bootstrap is the argmax of q_next_target, an action's index, not its value: take the max over the actions"
    ),
    ("rewards_after",): N_(
        "the rewards after the step m where the episode ends are summed too: they belong to the next episode, or lie past the bootstrap; keep the rewards r_0..r_m"
    ),
    ("first_step",): N_(
        "the bootstrap always comes from the window's first step, q_next_target[:, 0]; take it from the step m where the window stops"
    ),
    ("argmax_no_end",): N_(
        "a window with no episode end stops at step 0: argmax of an all-False row is 0. Where no step ends the episode, m = n - 1"
    ),
}


def _windows_label(windows: int, steps: int, gamma: float) -> str:
    return _("{windows} windows of {steps} steps, gamma {gamma}").format(
        windows=windows, steps=steps, gamma=gamma
    )


def _n_step_case(terminated, truncated, gamma, seed, label) -> Case:
    rng = np.random.default_rng(seed)
    terminated, truncated = np.asarray(terminated, bool), np.asarray(truncated, bool)
    reward = rng.uniform(-0.5, 1.5, terminated.shape).astype(np.float32)
    q_next = rng.uniform(-5.0, 15.0, terminated.shape + (2,)).astype(np.float32)
    args = (reward, terminated, truncated, q_next, gamma)
    mistakes = {
        _(message): _n_step_reference(*args, names) for names, message in _N_STEP_MISTAKES.items()
    }
    mistakes[_("this is the one-step target: sum the rewards of all n steps of the window")] = (
        reward[:, 0] + gamma * (1 - terminated[:, 0]) * q_next[:, 0].max(-1)
    )
    inputs = dict(zip(("reward", "terminated", "truncated", "q_next_target", "gamma"), args))
    return Case(label, inputs, _n_step_reference(*args), mistakes)


@self_check
def check_n_step_target(n_step_target: Callable) -> None:
    """Check ``n_step_target(reward, terminated, truncated, q_next_target, gamma)``.

    ``reward`` float32, ``terminated``, ``truncated`` bool (never both): ``(batch, n)`` windows;
    ``q_next_target`` float32 ``(batch, n, num_actions)``. Returns float32 ``(batch,)``:
    ``sum_{k<=m} gamma^k r_k + gamma^(m+1) (1 - terminated_m) max_a q_next_target[m, a]``, ``m``
    the first episode end or ``n - 1`` (n-step return, Sutton and Barto, 2018, section 7.1).

    Runs the answer under ``jax.jit`` (``gamma`` a static Python float): jax.numpy, not NumPy.

    Raises:
        CheckFailed: naming the mistake (a sum through episode ends, a wrong bootstrap at an end,
            the termination flag read with ``any`` or at the last step, the wrong bootstrap step
            or gamma power, ``gamma ** (k + 1)`` on the rewards, gamma outside the whole target,
            no discount, ``argmax``'s 0 for a window with no end, the last end for the first,
            the rewards after ``m`` summed, the mean or the argmax over the actions, the first
            step's bootstrap, the one-step target), or a result that is not float32
            ``(batch,)``.
    """
    # rows: no ending; termination at step 0, 1, 2; truncation at step 0 (and a termination
    # in the next episode), at step 1, at step 2
    term_a, trunc_a = np.zeros((7, 3), bool), np.zeros((7, 3), bool)
    term_a[[1, 2, 3, 4], [0, 1, 2, 2]] = True
    trunc_a[[4, 5, 6], [0, 1, 2]] = True
    # windows of 4: a termination then a truncation, a truncation at step 0, an ending at
    # step 3, none, a termination at step 2
    term_b, trunc_b = np.zeros((5, 4), bool), np.zeros((5, 4), bool)
    term_b[[0, 2, 4], [1, 3, 2]] = True
    trunc_b[[0, 1], [3, 0]] = True
    cases = [
        _n_step_case(term_a, trunc_a, 0.9, 6, _windows_label(7, 3, 0.9)),
        _n_step_case(term_b, trunc_b, 0.5, 7, _windows_label(5, 4, 0.5)),
    ]
    outputs = []
    for case in cases:
        reward, terminated, truncated, q_next, gamma = case.inputs.values()
        call = _("n_step_target(...) for {case}").format(case=case.label)
        got = run_answer(
            n_step_target,
            *map(jnp.asarray, (reward, terminated, truncated, q_next)),
            gamma,
            call=call,
        )
        outputs.append(
            require_array(
                got,
                call,
                reward.shape[:1],
                np.float32,
                why=_("one target per window"),
                hint=lambda got, batch=reward.shape[:1]: (
                    _(
                        "Take the max over the action axis (the last one), not over the "
                        "window's steps"
                    )
                    if np.ndim(got) == 2 and np.shape(got)[0] == batch[0]
                    else ""
                ),
            )
        )
    verdict("n_step_target", cases, outputs, rtol=1e-4, atol=1e-5)
    passed(_("n_step_target stops at terminations and truncations and bootstraps correctly"))


def _late_spread(length: int) -> np.ndarray:
    """Offsets of sum 0 for the end of a last quarter: no suffix of them averages 0, and their
    median is not 0."""
    fixed = {4: [6.0, -1.0, -2.0, -3.0], 8: [15.0, -1.0, -2.0, -3.0, -4.0, -5.0, 2.0, -2.0]}
    if length in fixed:
        return np.asarray(fixed[length])
    rest = -np.arange(1.0, length)
    return np.concatenate([[-rest.sum()], rest])


def _overshoot_case(env_steps, warmup, late, gamma, seed, label) -> Case:
    """``q_mean`` of runs with ``env_steps`` ``(seeds, iterations)``: 0 in the warm-up, a
    climb, then a last quarter of the steps of mean ``late[s]`` whose first iterations (and
    the one before) equal ``late[s]``, so every usual way of cutting the last quarter of the
    steps (of the last count or of the total, > or >=) gives that mean."""
    rng = np.random.default_rng(seed)
    env_steps = np.asarray(env_steps, np.int32)
    num_seeds, iterations = env_steps.shape
    mask = env_steps > 0.75 * env_steps.max(axis=1, keepdims=True)  # each seed's last quarter
    q = np.zeros((num_seeds, iterations), np.float32)
    for s in range(num_seeds):
        start = int(np.argmax(mask[s]))
        q[s, warmup : start - 1] = np.sort(rng.uniform(5.0, late[s], start - 1 - warmup))
        q[s, start - 1 : start + 2] = late[s]
        q[s, start + 2 :] = late[s] + _late_spread(iterations - start - 2)
    bound = 1.0 / (1.0 - gamma)
    q64 = q.astype(np.float64)
    learned = np.where(q64 != 0, q64, np.nan)

    def over(cut, how=np.mean):
        return np.array([how(row[keep]) for row, keep in zip(q64, cut)])

    by_index = np.zeros_like(mask)
    by_index[:, iterations - iterations // 4 :] = True
    by_all = env_steps > 0.75 * env_steps.max()
    mean = over(mask)
    longer = {
        cut: over(env_steps > fraction * env_steps.max(axis=1, keepdims=True)) - bound
        for cut, fraction in (("1/4", 0.25), ("1/2", 0.5))
    }
    return Case(
        label,
        {"q_mean": q, "env_steps": env_steps, "gamma": gamma},
        mean - bound,
        {
            _(
                "this is the mean over the whole run, the warm-up's zeros included: average "
                "over the last quarter of training only"
            ): q64.mean(1) - bound,
            _(
                "this is the mean over all of training after the warm-up, not over its last quarter"
            ): np.nanmean(learned, 1) - bound,
            _(
                "this is the mean over the first quarter of training; the question is about "
                "its last quarter"
            ): q64[:, : iterations // 4].mean(1) - bound,
            _("this is the mean Q-value itself: subtract the bound 1 / (1 - gamma)"): mean,
            _(
                "the difference is reversed: the overshoot is Q minus the bound 1 / (1 - gamma), "
                "positive above it"
            ): bound - mean,
            _(
                "the bound is 1 / (1 - gamma), the discounted sum of a reward of 1 from now on, "
                "not gamma / (1 - gamma)"
            ): mean - gamma * bound,
            _(
                "the overshoot is clipped at 0: report the signed difference, negative where "
                "the values stay below the bound"
            ): np.maximum(mean - bound, 0),
            _("this is the largest value of the last quarter; average it"): (
                over(mask, np.max) - bound
            ),
            _("this is the median of the last quarter, not its mean"): (
                over(mask, np.median) - bound
            ),
            _("this is the last iteration's value alone; average the last quarter"): (
                q64[:, -1] - bound
            ),
            _(
                "the bound is the number 100, which is 1 / (1 - gamma) for gamma 0.99 only: "
                "compute it from gamma"
            ): mean - 100.0,
            _(
                "the last quarter is cut by iteration index, not by environment steps: where "
                "the iterations take unequal numbers of steps, the last quarter of the "
                "iterations is not the last quarter of the steps. Keep the iterations whose "
                "env_steps pass 3/4 of the seed's last"
            ): over(by_index) - bound,
            _(
                "the last quarter is cut at 3/4 of the largest env_steps of all seeds: cut each "
                "seed at 3/4 of its own env_steps (the max of its row)"
            ): over(by_all) - bound,
            **{
                _(
                    "this averages the iterations whose env_steps pass {cut} of the last: the "
                    "last quarter starts at 3/4"
                ).format(cut=cut): value
                for cut, value in longer.items()
            },
            _(
                "this averages |Q - bound|, the distance from the bound: report the signed "
                "difference, negative where the values stay below the bound"
            ): over(mask, lambda row: np.abs(row - bound).mean()),
            _(
                "the late values are summed over all seeds together (a sum without axis=1): "
                "sum each seed's row, then divide by its count"
            ): (q64 * mask).sum() / mask.sum(1) - bound,
        },
    )


def _even_steps(num_seeds: int, iterations: int, num_envs: int) -> np.ndarray:
    """``env_steps`` of runs whose iterations each take ``num_envs`` steps."""
    return np.tile(np.arange(iterations) * num_envs, (num_seeds, 1))


def _overshoot_label(num_seeds: int, iterations: int, num_envs: int, gamma: float) -> str:
    return _("{seeds} seeds of {iterations} iterations of {steps} steps, gamma {gamma}").format(
        seeds=num_seeds, iterations=iterations, steps=num_envs, gamma=gamma
    )


@self_check
def check_q_overshoot(q_overshoot: Callable) -> None:
    """Check ``q_overshoot(q_mean, env_steps, gamma)``: how far late Q-values pass the bound.

    ``q_mean`` float32 and ``env_steps`` int32 ``(seeds, iterations)``, as ``dqn.make_train``'s
    metrics (``q_mean`` is 0 in the warm-up; ``env_steps`` counts the steps before each
    iteration); ``gamma`` a float. Returns a float array ``(seeds,)``: each seed's mean
    ``q_mean`` over the last quarter of its environment steps, minus ``1 / (1 - gamma)`` (negative where
    the values stay below). Called on NumPy arrays, not under ``jit``; the cases agree for
    every usual cut of the last quarter of the steps (> or >=, of the last count or of the
    total), and one case takes unequal steps per iteration, and more of them in one seed.

    Raises:
        CheckFailed: naming the mistake (the whole run, all of training after the warm-up or
            its first quarter, a cut at 1/4 or 1/2, by iteration index or at 3/4 of all seeds'
            steps, no bound or the bound reversed, ``gamma / (1 - gamma)``, clipped at 0, the
            distance, the largest, the median or the last value, a sum over all seeds), or a
            result that is not a float array ``(seeds,)`` (one value for all seeds, say).
    """
    # the second seed of the third case takes 1 step an iteration, then 9: its last quarter of
    # steps is its last 5 iterations, and its steps reach further than the first seed's
    uneven = np.stack([np.arange(32) * 4, np.r_[np.arange(17), 16 + 9 * np.arange(1, 16)]])
    cases = [
        _overshoot_case(
            _even_steps(3, 40, 2),
            6,
            (112.0, 96.5, 104.0),
            0.99,
            41,
            _overshoot_label(3, 40, 2, 0.99),
        ),
        _overshoot_case(
            _even_steps(2, 24, 4), 4, (9.0, 13.5), 0.9, 42, _overshoot_label(2, 24, 4, 0.9)
        ),
        _overshoot_case(
            uneven,
            4,
            (11.0, 8.5),
            0.9,
            43,
            _("2 seeds of 32 iterations whose steps per iteration differ, gamma {gamma}").format(
                gamma=0.9
            ),
        ),
    ]
    outputs = []
    for case in cases:
        q, steps, gamma = case.inputs.values()
        call = _("q_overshoot(q_mean, env_steps, {gamma}) for {case}").format(
            gamma=gamma, case=case.label
        )
        got = run_answer(
            q_overshoot,
            q.copy(),
            steps.copy(),
            gamma,
            call=call,
            jit=False,
            hint=_(
                "q_mean float32 and env_steps int32 {shape}, NumPy arrays; gamma a float"
            ).format(shape=q.shape),
        )
        outputs.append(
            require_array(
                got,
                call,
                q.shape[:1],
                "float",
                why=_("one value per seed"),
                hint=lambda got, shape=q.shape: (
                    _("Average over the iterations (axis 1), not over the seeds")
                    if np.shape(got) in ((), shape[1:])
                    else ""
                ),
            )
        )
    verdict("q_overshoot", cases, outputs, rtol=1e-4, atol=1e-4)
    passed(_("q_overshoot: each seed's last-quarter mean Q, minus 1 / (1 - gamma)"))
