"""Data parallelism across devices (chapter 12): the minibatch split over the devices, the
same parameters on each, the gradients averaged by an all-reduce, the same update
everywhere."""

from __future__ import annotations

from companion.diagrams._draw import SIZE, arrow, box, canvas, label


def data_parallel():
    """One data-parallel gradient step on ``D`` devices: each device holds the same
    parameters ``theta`` and differentiates the loss on its ``1/D`` of the minibatch;
    ``jax.lax.pmean`` (an all-reduce) replaces every gradient by their mean; every device
    applies the same Adam step and keeps the same ``theta``. Returns a Figure."""
    fig, ax = canvas(5.2, 5.3)
    xs = (0.85, 2.45, 4.35)
    names = ("1", "2", "D")
    w = 1.45
    rows = (4.55, 3.2, 1.85, 0.55)
    label(ax, 2.6, 5.12, "minibatch, split in $D$ parts", size=SIZE)
    for x, k in zip(xs, names):
        part = box(ax, x, rows[0], w, 0.55, f"part {k}", kind="data", bold=False)
        grad = box(
            ax,
            x,
            rows[1],
            w,
            0.85,
            f"device {k}",
            rf"$\theta$, $g_{k} = \nabla L_{k}$",
            kind="agent",
        )
        step = box(ax, x, rows[3], w, 0.75, "Adam step", r"same new $\theta$", kind="agent")
        arrow(ax, part.bottom, grad.top)
        arrow(ax, grad.bottom, (x, rows[2] + 0.425))
        arrow(ax, (x, rows[2] - 0.425), step.top)
    for y in (rows[0], rows[1], rows[3]):
        label(ax, (xs[1] + w / 2 + xs[2] - w / 2) / 2, y, "…", size=SIZE)
    box(
        ax,
        2.6,
        rows[2],
        4.95,
        0.85,
        "all-reduce: pmean",
        r"every device gets $\bar g = (g_1 + \cdots + g_D) / D$",
        kind="compute",
        size=SIZE,
    )
    return fig
