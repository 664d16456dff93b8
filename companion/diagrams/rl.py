"""Diagrams of reinforcement learning's vocabulary: the agent-environment loop, a small MDP,
and how an episode ends (termination against truncation)."""

from __future__ import annotations

from matplotlib.patches import Circle, FancyBboxPatch

from companion.diagrams._draw import COLORS, INK, MUTED, SIZE, SMALL, arrow, box, canvas, label
from companion.figure_words import N_


def agent_environment_loop():
    """The loop of chapter 5: the agent sees ``s_t`` and picks ``a_t`` with its policy; the
    environment returns the reward ``r_t`` and the next state ``s_{t+1}``; ``t`` moves on.
    Returns a :class:`matplotlib.figure.Figure`."""
    fig, ax = canvas(5.2, 3.2)
    agent = box(ax, 0.95, 1.6, 1.7, 0.85, "Agent", r"$a_t \sim \pi(\cdot \mid s_t)$", kind="agent")
    env = box(
        ax, 4.07, 1.6, 2.06, 0.85, "Environment", r"$p(s_{t+1}, r_t \mid s_t, a_t)$", kind="env"
    )
    arrow(ax, agent.at(0.3, 1), env.at(-0.3, 1), rad=-0.45)
    label(ax, 2.55, 2.88, r"action $a_t$", size=SIZE)
    arrow(ax, env.at(-0.3, -1), agent.at(0.3, -1), rad=-0.45)
    label(ax, 2.55, 0.3, r"reward $r_t$, next state $s_{t+1}$", size=SIZE)
    label(ax, 2.42, 1.6, r"$t \leftarrow t + 1$", size=SMALL, color=MUTED)
    return fig


def _state(ax, x, y, text, *, kind="plain", square=False, r=0.36):
    fill, edge = COLORS[kind]
    if square:
        patch = FancyBboxPatch(
            (x - r, y - r),
            2 * r,
            2 * r,
            boxstyle="round,pad=0,rounding_size=0.06",
            facecolor=fill,
            edgecolor=edge,
            linewidth=3.2,
            zorder=2,
        )
    else:
        patch = Circle((x, y), r, facecolor=fill, edgecolor=edge, linewidth=1.8, zorder=2)
    ax.add_patch(patch)
    label(ax, x, y, text, size=SIZE)
    return patch


def corridor_mdp():
    """A three-cell corridor of the Maze as an MDP graph: states ``s_1``, ``s_2`` and the
    target ``T``, each arrow an action with its reward; every transition has probability 1
    (the Maze is deterministic) and the target ends the episode. Returns a Figure."""
    fig, ax = canvas(5.2, 3.2)
    y, r = 1.75, 0.36
    xs = (1.35, 3.0, 4.6)
    _state(ax, xs[0], y, "$s_1$", kind="agent", r=r)
    _state(ax, xs[1], y, "$s_2$", kind="agent", r=r)
    _state(ax, xs[2], y, "T", kind="target", square=True, r=r)
    # right: s_1 -> s_2 -> T, over the top; left: s_2 -> s_1 under, s_1 into the border
    arrow(ax, (xs[0] + 0.25, y + 0.27), (xs[1] - 0.25, y + 0.27), rad=-0.3)
    label(ax, (xs[0] + xs[1]) / 2, y + 0.78, "right, $r = 0$")
    arrow(ax, (xs[1] + 0.25, y + 0.27), (xs[2] - 0.2, y + r), rad=-0.3)
    label(ax, (xs[1] + xs[2]) / 2 + 0.05, y + 0.78, "right, $r = 1$")
    arrow(ax, (xs[1] - 0.25, y - 0.27), (xs[0] + 0.25, y - 0.27), rad=-0.3)
    label(ax, (xs[0] + xs[1]) / 2, y - 0.78, "left, $r = 0$")
    arrow(ax, (xs[0] - 0.5 * r, y + 0.87 * r), (xs[0] - 0.5 * r, y - 0.87 * r), rad=1.5)
    label(ax, 0.62, y + 0.72, "left, $r = 0$")
    label(ax, 0.55, y - 0.72, "(a wall)", size=SMALL, color=MUTED)
    label(ax, xs[2], y - 0.72, "episode\nends", size=SMALL, color=MUTED, linespacing=1.1)
    label(ax, 2.6, 0.3, "each arrow has probability $p = 1$", size=SMALL, color=MUTED)
    return fig


def episode_endings():
    """Termination against truncation on a timeline (chapter 4): an episode that reaches
    the target has no future, so its last target is ``r_t``; one cut by the time limit
    bootstraps from ``V(s_{t+1})``, the true final observation (``extras["next_obs"]``);
    either way an auto-reset starts the next episode. Returns a Figure."""
    fig, ax = canvas(5.2, 4.3)
    rows = (
        (3.05, N_("terminated: target reached"), "target", N_(r"target $r_t$: no future")),
        (
            1.0,
            N_("truncated: the clock ran out"),
            "plain",
            N_(r"target $r_t + \gamma\, V(s_{t+1})$"),
        ),
    )
    for y, title, kind, target in rows:
        label(ax, 0.1, y + 0.78, title, size=SIZE, weight="bold", ha="left")
        _state(ax, 0.5, y, "$s_t$", kind="agent", r=0.34)
        _state(ax, 2.15, y, "$s_{t+1}$", kind=kind, r=0.34, square=kind == "target")
        arrow(ax, (0.84, y), (1.81, y))
        label(ax, 1.32, y + 0.22, "$a_t,\\ r_t$", size=SMALL)
        ax.plot([2.75, 2.75], [y - 0.45, y + 0.45], color=INK, lw=2.4, zorder=3)
        arrow(ax, (2.85, y), (3.8, y), dashed=True, color=MUTED)
        label(ax, 3.32, y + 0.22, "reset", size=SMALL, color=MUTED)
        _state(ax, 4.14, y, "$s_0$", kind="agent", r=0.34)
        label(ax, 4.8, y, "…", size=SIZE)
        label(ax, 0.1, y - 0.62, target, size=SIZE, ha="left")
        label(ax, 4.3, y - 0.62, "next episode", size=SMALL, color=MUTED)
    return fig
