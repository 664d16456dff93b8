"""The planning network's backups (chapter 9): values spread from the target through the
free cells, one move per backup."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.patches import Rectangle

from companion.diagrams._draw import COLORS, INK, MUTED, SIZE, SMALL, canvas, label
from companion.figure_words import N_

#: The default maze: ``#`` a wall, ``T`` the target, ``.`` a free cell.
SMALL_MAZE = (".#T", ".#.", "...")
WALL = "#3b3b3b"


def _distances(maze: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Walls (bool) and moves to the target of every cell (-1 where unreachable or a wall)."""
    if isinstance(maze, str) or not isinstance(maze, Sequence) or len(maze) == 0:
        raise TypeError(f"maze: expected a non-empty sequence of strings, got {maze!r}")
    if any(not isinstance(row, str) or len(row) != len(maze[0]) for row in maze):
        raise ValueError(f"maze: expected strings of one length, got {maze!r}")
    if not 0 < len(maze[0]) <= 4 or len(maze) > 4 or set("".join(maze)) - set(".#T"):
        raise ValueError(f"maze: expected at most 4 x 4 cells of '.', '#', 'T', got {maze!r}")
    grid = np.array([list(row) for row in maze])
    targets = np.argwhere(grid == "T")
    if len(targets) != 1:
        raise ValueError(f"maze: expected exactly one target 'T', got {len(targets)}")
    walls = grid == "#"
    dist = np.full(walls.shape, -1)
    frontier = [tuple(targets[0])]
    dist[frontier[0]] = 0
    while frontier:  # breadth-first search: the values' fixed point
        nxt = []
        for r, c in frontier:
            for dr, dc in ((-1, 0), (0, 1), (1, 0), (0, -1)):
                rr, cc = r + dr, c + dc
                inside = 0 <= rr < walls.shape[0] and 0 <= cc < walls.shape[1]
                if inside and not walls[rr, cc] and dist[rr, cc] < 0:
                    dist[rr, cc] = dist[r, c] + 1
                    nxt.append((rr, cc))
        frontier = nxt
    return walls, dist


def _value_text(d: int) -> str:
    return "$0$" if d == 0 else ("$-c$" if d == 1 else f"$-{d}c$")


def value_backups(maze: Sequence[str] = SMALL_MAZE, iterations: Sequence[int] | None = None):
    """The max-plus backups of chapter 9 on a small maze: ``v_0`` is 0 at the target and
    minus infinity (blank) elsewhere; after ``i`` backups every free cell within ``i``
    moves of the target holds ``-c d(s)``. Walls never take part, so values go around them.

    Args:
        maze: at most 4 x 4 strings of ``.`` (free), ``#`` (wall) and one ``T`` (target).
        iterations: the four backup counts to draw, increasing (default: 0, 1, 2 and the
            count at which the values settle).

    Returns a :class:`matplotlib.figure.Figure`.

    Raises:
        TypeError, ValueError: a malformed ``maze``, or ``iterations`` not four increasing
            counts >= 0.
    """
    walls, dist = _distances(maze)
    settled = int(dist.max())
    if iterations is None:
        iterations = (0, 1, 2, settled)
    iterations = tuple(iterations)
    if (
        len(iterations) != 4
        or any(isinstance(i, bool) or not isinstance(i, (int, np.integer)) for i in iterations)
        or any(i < 0 for i in iterations)
        or any(a >= b for a, b in zip(iterations, iterations[1:]))
    ):
        raise ValueError(f"iterations: expected four increasing counts >= 0, got {iterations!r}")
    rows, cols = walls.shape
    cell = 0.62
    panel_w, panel_h = cols * cell, rows * cell
    gap_x, gap_y = 0.85, 0.75
    width = 2 * panel_w + gap_x + 0.6
    height = 2 * panel_h + 2 * gap_y + 0.55
    fig, ax = canvas(width, height)
    for k, i in enumerate(iterations):
        x0 = 0.3 + (k % 2) * (panel_w + gap_x)
        y0 = 0.55 + (1 - k // 2) * (panel_h + gap_y)
        title = N_(f"$v_{{{i}}}$: settled") if i >= settled else f"$v_{{{i}}}$"
        label(ax, x0 + panel_w / 2, y0 + panel_h + 0.28, title, size=SIZE)
        for r in range(rows):
            for c in range(cols):
                x, y = x0 + c * cell, y0 + (rows - 1 - r) * cell
                d = dist[r, c]
                reached = not walls[r, c] and 0 <= d <= i
                if walls[r, c]:
                    fill = WALL
                elif d == 0:
                    fill = COLORS["target"][0]
                elif reached and d == i:
                    fill = COLORS["compute"][0]
                elif reached:
                    fill = COLORS["agent"][0]
                else:
                    fill = "#ffffff"
                ax.add_patch(
                    Rectangle((x, y), cell, cell, facecolor=fill, edgecolor=INK, lw=1.2, zorder=2)
                )
                if reached:
                    label(ax, x + cell / 2, y + cell / 2, _value_text(int(d)), size=SMALL)
    sw, ys = 0.25, 0.12
    for x, kind, text in (
        (0.3, "target", N_("target")),
        (1.45, "compute", N_("new in this backup")),
    ):
        ax.add_patch(Rectangle((x, ys), sw, sw, facecolor=COLORS[kind][0], edgecolor=INK, lw=1.2))
        label(ax, x + sw + 0.1, ys + sw / 2, text, size=SMALL, ha="left")
    label(ax, width - 0.3, ys + sw / 2, "blank: $-\\infty$", size=SMALL, ha="right", color=MUTED)
    return fig
