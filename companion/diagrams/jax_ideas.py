"""Diagrams of JAX's transformations (chapter 1) and of where a network keeps its
parameters (chapter 2)."""

from __future__ import annotations

from matplotlib.patches import Rectangle

from companion.diagrams._draw import COLORS, INK, MUTED, SIZE, SMALL, arrow, box, canvas, label


def jit_compile():
    """What ``jax.jit`` does: the first call with a new shape and dtype traces the Python
    function with tracers and compiles the traced computation with XLA; later calls with the
    same shape and dtype run the compiled program. Returns a Figure."""
    fig, ax = canvas(5.2, 4.3)
    x, w, h = 1.45, 2.7, 0.85
    rows = (3.7, 2.15, 0.6)
    python = box(ax, x, rows[0], w, h, "Python function", "f(x)", kind="plain", sub_mono=True)
    traced = box(ax, x, rows[1], w, h, "traced computation", "jnp operations only", kind="compute")
    program = box(ax, x, rows[2], w, h, "compiled program", "run on the device", kind="agent")
    arrow(ax, python.bottom, traced.top)
    label(ax, x + 0.12, (rows[0] + rows[1]) / 2, "trace: shape, dtype", ha="left")
    arrow(ax, traced.bottom, program.top)
    label(ax, x + 0.12, (rows[1] + rows[2]) / 2, "compile: XLA", ha="left")
    # later calls with the same shape and dtype go straight to the program
    x_side = 4.45
    label(ax, x_side, rows[0] + 0.15, "first call:\nnew shape", ha="center", linespacing=1.2)
    label(ax, x_side, rows[1] + 0.05, "later calls:\nsame shape,\nsame dtype", linespacing=1.2)
    arrow(ax, (x_side, rows[1] - 0.55), (program.right[0] + 0.05, rows[2]), rad=-0.35)
    arrow(ax, (x_side - 0.7, rows[0] + 0.15), (python.right[0] + 0.05, rows[0]), rad=0.0)
    return fig


def _cells(ax, x, y, n, *, kind="data", size=0.32, axis="x"):
    """``n`` small squares in a row (``axis="x"``) centred at ``(x, y)``: an array."""
    fill, edge = COLORS[kind]
    for i in range(n):
        offset = (i - (n - 1) / 2) * size
        cx, cy = (x + offset, y) if axis == "x" else (x, y - offset)
        ax.add_patch(
            Rectangle(
                (cx - size / 2, cy - size / 2),
                size,
                size,
                facecolor=fill,
                edgecolor=edge,
                linewidth=1.4,
                zorder=2,
            )
        )


def vmap_batch():
    """What ``jax.vmap`` does: ``predict`` maps one example ``(4,)`` to ``(3,)``;
    ``jax.vmap(predict)`` maps a batch ``(batch, 4)`` to ``(batch, 3)``, the same function
    on every row. Returns a Figure."""
    fig, ax = canvas(5.2, 4.1)
    s = 0.3
    # one example
    xl = 1.05
    label(ax, xl, 3.8, "one example", size=SIZE, weight="bold")
    _cells(ax, xl, 3.2, 4, size=s)
    label(ax, xl + 0.8, 3.2, "(4,)", ha="left")
    f = box(ax, xl, 2.05, 1.5, 0.6, "predict", kind="compute", mono=True, bold=False)
    arrow(ax, (xl, 3.2 - s / 2 - 0.02), f.top)
    _cells(ax, xl, 0.9, 3, size=s, kind="env")
    label(ax, xl + 0.65, 0.9, "(3,)", ha="left")
    arrow(ax, f.bottom, (xl, 0.9 + s / 2 + 0.02))
    # a batch: every row through the same function
    xr = 3.6
    label(ax, xr, 3.8, "a batch", size=SIZE, weight="bold")
    for j, y in enumerate((3.37, 3.09, 2.81)):
        _cells(ax, xr + 0.06 * j, y, 4, size=0.26)
    label(ax, xr + 0.06, 2.48, "(batch, 4)")
    g = box(ax, xr, 1.75, 2.2, 0.6, "vmap(predict)", kind="compute", mono=True, bold=False)
    arrow(ax, (xr, 2.31), g.top)
    for j, y in enumerate((1.13, 0.87, 0.61)):
        _cells(ax, xr + 0.06 * j, y, 3, size=0.26, kind="env")
    label(ax, xr + 0.06, 0.27, "(batch, 3)")
    arrow(ax, g.bottom, (xr, 1.28))
    return fig


def scan_carry():
    """What ``lax.scan(body, init, xs)`` does: ``carry, y = body(carry, x)`` at every step,
    the carry passed on, every ``y`` stacked into ``ys``; one body is compiled whatever
    the number of steps. Returns a Figure."""
    fig, ax = canvas(5.2, 3.5)
    y, w, h = 1.95, 0.8, 0.7
    xs = (1.3, 2.45, 3.6)
    label(ax, 0.32, y, "init", size=SIZE)
    for i, x in enumerate(xs):
        body = box(ax, x, y, w, h, "body", kind="compute", mono=True, bold=False)
        label(ax, x, 3.25, f"$x_{i}$", size=SIZE)
        arrow(ax, (x, 3.05), body.top)
        label(ax, x, 0.72, f"$y_{i}$", size=SIZE)
        arrow(ax, body.bottom, (x, 0.9))
        start = (0.6, y) if i == 0 else (xs[i - 1] + w / 2, y)
        arrow(ax, start, body.left)
    arrow(ax, (xs[-1] + w / 2, y), (4.45, y))
    label(ax, 4.5, y, "carry", size=SIZE, ha="left")
    label(ax, 0.35, 3.25, "xs", size=SIZE, mono=True)
    # the ys, stacked into one array
    left, right, base = xs[0] - 0.35, xs[-1] + 0.35, 0.45
    ax.plot([left, left, right, right], [base + 0.1, base, base, base + 0.1], color=INK, lw=1.6)
    label(ax, (left + right) / 2, 0.2, "ys: every y stacked", size=SMALL)
    return fig


def init_apply_and_module():
    """Where a network's parameters live: with init-apply (haiku), ``init`` returns a params
    pytree that lives outside the model and goes into ``apply(params, x)``; an equinox
    module holds its parameters in its fields, and ``eqx.partition`` splits it into the
    arrays to train and the static rest. Returns a Figure."""
    fig, ax = canvas(5.2, 4.6)
    xl, xr = 1.15, 3.95
    label(ax, xl, 4.3, "init-apply (haiku)", size=SIZE, weight="bold")
    code = {"kind": "compute", "mono": True, "bold": False, "size": SMALL}
    init = box(ax, xl, 3.5, 2.1, 0.7, "init(key, x)", **code)
    params = box(ax, xl, 2.2, 2.1, 0.8, "params", "a dict of arrays", kind="data")
    apply = box(ax, xl, 0.9, 2.1, 0.7, "apply(params, x)", **code)
    arrow(ax, init.bottom, params.top)
    arrow(ax, params.bottom, apply.top)
    label(ax, xl, 0.3, "params go in", size=SMALL, color=MUTED)

    label(ax, xr, 4.3, "equinox", size=SIZE, weight="bold")
    module_box = box(ax, xr, 3.15, 2.4, 1.4, "", kind="agent")
    label(ax, xr, 3.6, "model", size=SIZE, mono=True)
    box(ax, xr - 0.6, 2.95, 1.1, 0.6, "arrays", kind="data", bold=False)
    box(ax, xr + 0.6, 2.95, 1.1, 0.6, "tanh, ...", kind="plain", bold=False)
    arrow(ax, module_box.bottom, (xr, 1.32))
    label(ax, xr - 0.1, 1.9, "eqx.partition", size=SMALL, mono=True, ha="right")
    box(ax, xr - 0.6, 0.9, 1.1, 0.65, "params", kind="data", bold=False)
    box(ax, xr + 0.6, 0.9, 1.1, 0.65, "static", kind="plain", bold=False)
    label(ax, xr - 0.6, 0.3, "trained", size=SMALL, color=MUTED)
    label(ax, xr + 0.6, 0.3, "left alone", size=SMALL, color=MUTED)
    return fig
