"""Diagrams of the two agents: DQN's data flow (chapter 7) and PPO's iteration (chapter 8)."""

from __future__ import annotations

from companion._validate import positive_int
from companion.diagrams._draw import SIZE, arrow, box, canvas, label, path_arrow
from companion.figure_words import N_


def dqn_data_flow(target_update_period: int | None = None):
    """DQN's data flow: the online network ``Q_theta`` acts epsilon-greedily, transitions go
    into the replay buffer, a minibatch gets its TD target from the target network
    ``Q_theta^-``, the loss takes a gradient step on ``theta``, and ``theta`` is copied into
    ``theta^-`` every ``target_update_period`` gradient steps (``None``: "periodically").

    Returns a :class:`matplotlib.figure.Figure`.

    Raises:
        TypeError, ValueError: ``target_update_period`` is not a positive int or None.
    """
    if target_update_period is not None:
        target_update_period = positive_int(target_update_period, "target_update_period")
    fig, ax = canvas(5.2, 5.6)
    left, right, w, h = 1.3, 4.05, 2.0, 0.9
    rows = (4.75, 3.05, 1.35)
    env = box(ax, left, rows[0], w, h, "Environments", "CartPole", kind="env")
    target = box(
        ax, left, rows[1], w, h, r"Target net $Q_{\theta^-}$", "a slow copy", kind="target"
    )
    online = box(ax, left, rows[2], w, h, r"Online net $Q_\theta$", "acts, learns", kind="agent")
    buffer = box(ax, right, rows[0], w, h, "Replay buffer", "past transitions", kind="data")
    td = box(
        ax,
        right,
        rows[1],
        w,
        h,
        "TD target $y$",
        r"$\mathrm{max}_{a'}\, Q_{\theta^-}(s', a')$",
        kind="compute",
    )
    loss = box(ax, right, rows[2], w, h, "Loss", r"$(Q_\theta(s, a) - y)^2$", kind="compute")

    arrow(ax, env.right, buffer.left)
    label(ax, (env.right[0] + buffer.left[0]) / 2, rows[0] + 0.25, "store")
    arrow(ax, buffer.bottom, td.top)
    label(ax, right + 0.1, (rows[0] + rows[1]) / 2, "minibatch", ha="left")
    arrow(ax, target.right, td.left)
    arrow(ax, td.bottom, loss.top)
    label(ax, right + 0.1, (rows[1] + rows[2]) / 2, "$y$", ha="left", size=SIZE)
    arrow(ax, loss.left, online.right)
    label(ax, (online.right[0] + loss.left[0]) / 2, rows[2] + 0.25, r"$\nabla_\theta$", size=SIZE)
    arrow(ax, online.top, target.bottom)
    every = (
        N_("periodically")
        if target_update_period is None
        else N_(f"every {target_update_period} gradient steps")
    )
    label(
        ax,
        left + 0.12,
        (rows[1] + rows[2]) / 2,
        r"copy $\theta^- \leftarrow \theta$" + f"\n{every}",
        ha="left",
        linespacing=1.3,
    )
    x_out = left - w / 2 - 0.18
    path_arrow(ax, [online.left, (x_out, rows[2]), (x_out, rows[0]), env.left])
    label(ax, x_out + 0.1, (rows[0] + rows[1]) / 2 + 0.05, r"$\epsilon$-greedy $a$", ha="left")
    label(
        ax,
        2.6,
        0.35,
        r"$y = r + \gamma\,(1 - \mathrm{terminated})\,\mathrm{max}_{a'}\, Q_{\theta^-}(s', a')$",
        size=SIZE,
    )
    return fig


def ppo_iteration():
    """One PPO iteration (chapter 8): a rollout of ``T`` steps in ``N`` environments with
    ``pi_theta_old``, GAE advantages ``A_t``, epochs x minibatches of clipped-surrogate
    gradient steps on ``theta``, then the next rollout with the new policy.
    Returns a :class:`matplotlib.figure.Figure`."""
    fig, ax = canvas(5.2, 4.5)
    x, w, h = 3.25, 3.7, 0.95
    rows = (3.8, 2.25, 0.7)
    rollout = box(
        ax,
        x,
        rows[0],
        w,
        h,
        "Rollout",
        r"$T$ steps $\times$ $N$ envs, with $\theta_\mathrm{old}$",
        kind="env",
    )
    gae = box(
        ax, x, rows[1], w, h, "GAE", r"advantages $A_t$ ($\gamma$, $\lambda$)", kind="compute"
    )
    update = box(
        ax,
        x,
        rows[2],
        w,
        h,
        "epochs × minibatches",
        r"clipped-surrogate steps on $\theta$",
        kind="agent",
    )
    arrow(ax, rollout.bottom, gae.top)
    arrow(ax, gae.bottom, update.top)
    x_out = x - w / 2 - 0.3
    path_arrow(ax, [update.left, (x_out, rows[2]), (x_out, rows[0]), rollout.left])
    label(
        ax,
        x_out - 0.12,
        rows[1],
        "$\\theta_\\mathrm{old}$\n$\\leftarrow \\theta$",
        size=SIZE,
        ha="right",
        linespacing=1.4,
    )
    return fig
