"""Figures and inline animations that show in Jupyter, Colab and the static book.

Animations are matplotlib ``FuncAnimation.to_jshtml`` players (no ffmpeg, no kernel needed),
their frames re-encoded as palette PNGs of at most :data:`FRAME_COLORS` colours, their
titles, captions and controls in the reader's language (in the book's build, one player in
each edition's language, which that edition's pages keep: ``companion.figure_words``).
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib
import matplotlib.patches
import matplotlib.pyplot as plt
import numpy as np
from matplotlib import animation

from companion._validate import positive_int
from companion.envs.cartpole import DEFAULT_PARAMS, CartPoleParams
from companion.envs.maze import maze_rgb
from companion.figure_words import (
    N_,
    editions,
    in_language,
    mark_player,
    translate,
    translate_player,
)
from companion.figures import smallest_font_px

#: Largest animation, in MB, that :func:`animate_frames` embeds (matplotlib's
#: default of 20 MB silently drops the frames past the limit).
EMBED_LIMIT_MB = 100.0

#: Most colours in an animation frame (each frame gets its own palette).
FRAME_COLORS = 64

# A frame in the player's script: "data:image/png;base64,<base64 split by backslash-newline>"
_EMBEDDED_PNG = re.compile(r'("data:image/png;base64,)([^"]+)(")')
#: matplotlib's player links FontAwesome 4 from a CDN for its button icons; the book's theme
#: ships FontAwesome and draws them, and an offline page must not reach for the network.
_REMOTE_STYLESHEET = re.compile(r'<link rel="stylesheet"\s+href="https?://[^"]*"\s*/?>\s*')
#: The player's image, which records the frames' smallest type (in px) for the book.
_ANIMATION_IMAGE = re.compile(r'<img id="_anim_img\w+"')


def _check_episode_list(states: Any, argname: str) -> None:
    if not isinstance(states, (list, tuple)) or hasattr(states, "_fields"):  # a NamedTuple state
        raise TypeError(
            f"{argname}: expected a list of single environment states, got "
            f"{type(states).__name__}. A state stacked over time (from jax.lax.scan) or over "
            "environments (from jax.vmap) must be split first: companion.trees.unstack(states)"
        )
    if len(states) == 0:
        raise ValueError(f"{argname}: expected a non-empty list of environment states, got []")


def animate_frames(
    frames: Sequence[Sequence[np.ndarray]],
    *,
    titles: Sequence[str] | None = None,
    captions: Sequence[str] | None = None,
    interval_ms: int = 200,
    panel_inches: float = 2.4,
    dpi: int = 80,
    columns: int = 2,
):
    """An inline HTML animation of images with play controls (``IPython.display.HTML``).

    The panels stand ``columns`` to a row, so that a frame of four 2.4-inch panels is 384 px
    wide at 80 dpi and a phone's 358-px column shows its 11-point titles and caption at 11 px.

    Args:
        frames: non-empty sequence of frames, each a sequence of ``num_panels`` RGB images drawn
            side by side (float in [0, 1] or uint8, ``(height, width, 3)``), alike in every frame.
        titles, captions: ``num_panels`` panel titles; one caption a frame, under the panels.
        columns: most panels in a row.

    Raises:
        TypeError: ``columns`` not an int.
        ValueError: empty ``frames`` or ``frames[0]``, frames with different numbers of panels,
            ``titles`` / ``captions`` of the wrong length, or ``columns`` < 1.
    """
    if len(frames) == 0:
        raise ValueError("frames: expected a non-empty sequence of frames, got an empty one")
    num_panels = len(frames[0])
    if num_panels == 0:
        raise ValueError("frames[0]: expected at least one image panel, got none")
    for t, frame in enumerate(frames):
        if len(frame) != num_panels:
            raise ValueError(f"frames[{t}] has {len(frame)} panels, expected {num_panels}")
    if titles is not None and len(titles) != num_panels:
        raise ValueError(f"titles: expected {num_panels} strings, got {len(titles)}")
    if captions is not None and len(captions) != len(frames):
        raise ValueError(f"captions: expected {len(frames)} strings, got {len(captions)}")
    columns = positive_int(columns, "columns")

    height, width = np.shape(frames[0][0])[:2]
    panel_h = panel_inches * height / width
    cols = min(columns, num_panels)
    rows = -(-num_panels // cols)
    lines = max(t.count("\n") + 1 for t in titles) if titles else 0
    caption_h = 0.3 if captions else 0.05
    fig, axes = plt.subplots(
        rows,
        cols,
        figsize=(cols * panel_inches, rows * (panel_h + 0.2 * lines + 0.15) + caption_h),
        squeeze=False,
        dpi=dpi,
    )
    images = []
    for p, ax in enumerate(axes.ravel()):
        ax.set_xticks([])
        ax.set_yticks([])
        if p >= num_panels:
            ax.axis("off")
            continue
        images.append(ax.imshow(frames[0][p], interpolation="nearest"))
        if titles is not None:
            ax.set_title(titles[p], fontsize=11)
    text = fig.text(0.5, 0.01, captions[0] if captions else "", ha="center", fontsize=11)
    fig.tight_layout(pad=0.3, h_pad=1.0, rect=(0, caption_h / fig.get_figheight(), 1, 1))

    def draw(t: int):
        for p, image in enumerate(images):
            image.set_data(frames[t][p])
        if captions:
            text.set_text(captions[t])
        return (*images, text)

    return _animation_html(fig, draw, len(frames), interval_ms)


def _animation_html(fig, draw: Callable[[int], Any], num_frames: int, interval_ms: int):
    """Render ``draw(t)`` for every frame into an HTML player and close ``fig``: one player in
    each language of :func:`companion.figure_words.editions` (its titles, captions and
    controls in that language), each marked with it where there are several."""
    from IPython.display import HTML

    draw(num_frames - 1)  # the longest caption, whose type is measured below
    languages = editions()
    # While saving, FuncAnimation redraws the whole figure after each frame (draw_idle) and
    # savefig draws it again to store it: the first draw is never seen, and skipping it saves
    # a third of the time. The figure is closed below, so the canvas is not restored.
    fig.canvas.draw_idle = lambda *args, **kwargs: None
    try:
        players = [_player(fig, draw, num_frames, interval_ms, lang) for lang in languages]
    finally:
        plt.close(fig)
    if len(players) == 1:
        return HTML(players[0])
    return HTML("".join(mark_player(html, lang) for html, lang in zip(players, languages)))


def _player(fig, draw: Callable[[int], Any], num_frames: int, interval_ms: int, language: str):
    """One player of ``fig``'s frames with its words in ``language``: the texts a frame
    draws are translated as they are drawn (:func:`companion.figure_words.translate`)."""
    from matplotlib.text import Text

    def drawn(t: int):
        artists = draw(t)
        for artist in artists:
            if language != "en" and isinstance(artist, Text):
                artist.set_text(translate(artist.get_text(), language))
        return artists

    with in_language(fig, language):
        drawn(num_frames - 1)
        font = smallest_font_px([fig], fig.dpi)
        anim = animation.FuncAnimation(
            fig, drawn, frames=num_frames, interval=interval_ms, blit=False
        )
        with matplotlib.rc_context({"animation.embed_limit": EMBED_LIMIT_MB}):
            html = anim.to_jshtml(default_mode="once")
    draw(num_frames - 1)  # the English texts again, for the next language
    html = translate_player(_REMOTE_STYLESHEET.sub("", _palette_frames(html)), language)
    if font is not None:  # the book's site check measures it as a phone draws the frames
        html = _ANIMATION_IMAGE.sub(rf'\g<0> data-font-px="{font}"', html, count=1)
    return html


def _palette_frames(html: str, colors: int = FRAME_COLORS) -> str:
    """``html`` with every embedded PNG frame re-encoded with a palette of ``colors``."""
    from PIL import Image

    def shrink(match: re.Match) -> str:
        png = base64.b64decode(re.sub(r"[\\\s]", "", match.group(2)))
        image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors)
        out = io.BytesIO()
        image.save(out, format="png", optimize=True)
        return match.group(1) + base64.b64encode(out.getvalue()).decode("ascii") + match.group(3)

    return _EMBEDDED_PNG.sub(shrink, html)


def animate_maze(states: Sequence[Any], *, interval_ms: int = 200, panel_inches: float = 2.4):
    """Animate one Maze episode: ``IPython.display.HTML``, one frame per state, play controls.

    Args:
        states: non-empty list of single (not batched) Maze states, one per time step
            (``companion.trees.unstack(states_over_time)``).

    Raises:
        TypeError: ``states`` not a list or tuple (a stacked state), or an item not a Maze state.
        ValueError: if ``states`` is empty or holds a batched state.
    """
    return animate_mazes([states], interval_ms=interval_ms, panel_inches=panel_inches)


def animate_mazes(
    episodes: Sequence[Sequence[Any]],
    *,
    titles: Sequence[str] | None = None,
    interval_ms: int = 200,
    panel_inches: float = 2.4,
):
    """Animate several Maze episodes side by side: ``IPython.display.HTML``, ``max(len(e))`` frames.

    Args:
        episodes: non-empty list of episodes, each a non-empty list of single Maze states; a
            finished episode shows its last state until the longest one ends.
        titles: optional title of each episode's panel.

    Raises:
        TypeError, ValueError: as :func:`animate_maze`, naming the episode; wrong-length ``titles``.
    """
    _check_episode_list(episodes, "episodes")
    images = []
    for e, states in enumerate(episodes):
        _check_episode_list(states, f"episodes[{e}]" if len(episodes) > 1 else "states")
        name = f"episodes[{e}]" if len(episodes) > 1 else "states"
        images.append([maze_rgb(s, argname=f"{name}[{t}]") for t, s in enumerate(states)])
    length = max(len(imgs) for imgs in images)
    frames = [[imgs[min(t, len(imgs) - 1)] for imgs in images] for t in range(length)]
    captions = [N_(f"step {t}") for t in range(length)]
    return animate_frames(
        frames,
        titles=titles,
        captions=captions,
        interval_ms=interval_ms,
        panel_inches=panel_inches,
    )


def show_maze(state: Any, ax=None, title: str | None = None):
    """Draw one Maze state or observation on a matplotlib axis.

    Args:
        state: single Maze ``State`` or ``Observation``.
        ax: axis to draw on; a new 3 x 3 inch figure is made when ``None``.
        title: optional axis title.

    Returns:
        The matplotlib ``Axes``.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(3, 3))
    ax.imshow(maze_rgb(state), interpolation="nearest")
    rows, cols = np.shape(state.walls)
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))
    ax.tick_params(labelsize=9)
    if title:
        ax.set_title(title, fontsize=12)
    return ax


def _cartpole_physics(states: Sequence[Any], argname: str) -> np.ndarray:
    _check_episode_list(states, argname)
    rows = []
    for t, s in enumerate(states):
        physics = np.asarray(getattr(s, "physics", s), dtype=np.float64)
        if physics.shape != (4,):
            raise ValueError(
                f"{argname}[{t}]: expected a CartPoleState or an observation of shape (4,), "
                f"got shape {physics.shape}. A batched state must be split first: "
                "companion.trees.unstack(states)"
            )
        rows.append(physics)
    return np.stack(rows)


def _draw_cartpole(ax, params: CartPoleParams):
    limit = params.x_threshold
    ax.set_xlim(-limit - 0.3, limit + 0.3)
    ax.set_ylim(-0.4, 1.4)
    ax.set_aspect("equal")
    ax.set_yticks([])
    ax.set_xlabel("cart position x (m)", fontsize=11)
    ax.tick_params(labelsize=11)
    ax.axhline(0, color="grey", lw=1)
    for x in (-limit, limit):
        ax.axvline(x, color="tab:red", lw=0.8, ls=":")
    cart = matplotlib.patches.Rectangle((0, 0), 0.5, 0.3, color="tab:blue")
    ax.add_patch(cart)
    (pole,) = ax.plot([], [], lw=5, color="tab:orange", solid_capstyle="round")
    return cart, pole


def _place_cartpole(cart, pole, physics, params: CartPoleParams):
    x, theta = physics[0], physics[2]
    cart.set_xy((x - 0.25, -0.05))
    pole_len = 2 * params.length
    top = 0.25
    pole.set_data([x, x + pole_len * np.sin(theta)], [top, top + pole_len * np.cos(theta)])


def show_cartpole(state: Any, ax=None, params: CartPoleParams = DEFAULT_PARAMS, title=None):
    """Draw one CartPole state (a ``CartPoleState`` or an observation ``(4,)``).

    Dotted red lines: the track limits (``params.x_threshold``, m); the pole: ``2 * params.length``.

    Returns:
        The matplotlib ``Axes``.

    Raises:
        ValueError: if ``state`` is not a single state of shape ``(4,)``.
    """
    (physics,) = _cartpole_physics([state], "state")
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 2))
    cart, pole = _draw_cartpole(ax, params)
    _place_cartpole(cart, pole, physics, params)
    if title:
        ax.set_title(title, fontsize=10)
    return ax


def animate_cartpole(
    states: Sequence[Any],
    *,
    params: CartPoleParams = DEFAULT_PARAMS,
    interval_ms: int = 40,
    width_inches: float = 5.0,
    title: str | None = None,
    max_frames: int = 200,
):
    """Animate a CartPole episode: ``IPython.display.HTML`` with play controls.

    Args:
        states: non-empty list of single ``CartPoleState``s or observations ``(4,)``, one a step.
        max_frames: most frames; a longer episode shows every k-th state (smallest k that fits,
            ending on the last), each frame lasting ``k * interval_ms``, captioned with its step.

    Raises:
        TypeError: ``states`` not a list or tuple, or ``max_frames`` not an int.
        ValueError: empty ``states``, an item not a single state, or ``max_frames`` < 1.
    """
    physics = _cartpole_physics(states, "states")
    max_frames = positive_int(max_frames, "max_frames")
    stride = -(-len(physics) // max_frames)  # ceil
    steps = list(range(0, len(physics), stride))
    if steps[-1] != len(physics) - 1:
        steps.append(len(physics) - 1)
    fig, ax = plt.subplots(figsize=(width_inches, width_inches * 0.5), dpi=80)
    cart, pole = _draw_cartpole(ax, params)
    # room above the pole's highest tip (1.25 m) for the caption, which never covers it
    ax.set_ylim(-0.4, 1.95)
    caption = ax.text(0.02, 0.95, "", transform=ax.transAxes, fontsize=11, va="top")
    if title:
        ax.set_title(title, fontsize=12)
    fig.tight_layout()

    def draw(i: int):
        t = steps[i]
        _place_cartpole(cart, pole, physics[t], params)
        caption.set_text(
            f"step {t}   x = {physics[t, 0]:+.2f} m   theta = {np.degrees(physics[t, 2]):+.1f} deg"
        )
        return cart, pole, caption

    return _animation_html(fig, draw, len(steps), interval_ms * stride)


def figure_png(fig, dpi: int = 80) -> bytes:
    """The PNG bytes of a matplotlib figure, which is then closed.

    Raises:
        TypeError: if ``fig`` is not a matplotlib ``Figure``.
    """
    import io

    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"fig: expected a matplotlib Figure, got {type(fig).__name__}")
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=dpi)
    finally:
        plt.close(fig)
    return buffer.getvalue()


def step_explorer(draw: Callable[[int], Any], num_steps: int, *, description: str = "step"):
    """An ipywidgets ``VBox``: a slider over steps ``0 .. num_steps - 1`` and ``draw(step)``'s PNG.

    Args:
        draw: ``draw(step: int) -> matplotlib.figure.Figure``; shown as a PNG, then closed.

    Raises:
        TypeError: if ``draw`` is not callable or ``num_steps`` is not an int.
        ValueError: if ``num_steps < 1``.
    """
    import ipywidgets as widgets

    if not callable(draw):
        raise TypeError(f"draw: expected a function step -> Figure, got {type(draw).__name__}")
    num_steps = positive_int(num_steps, "num_steps")
    slider = widgets.IntSlider(value=0, min=0, max=num_steps - 1, step=1, description=description)
    image = widgets.Image(value=figure_png(draw(0)), format="png")

    def redraw(change):
        image.value = figure_png(draw(int(change["new"])))

    slider.observe(redraw, names="value")
    return widgets.VBox([slider, image])
