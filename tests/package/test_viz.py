import base64
import re
import struct

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import pytest

from companion.envs.autoreset import env_reset  # jumanji gets raw keys (see its notes)
from companion.envs.maze import make_maze
from companion.trees import unstack
from companion.viz import animate_frames, animate_maze, animate_mazes, show_maze


def _pngs(html: str) -> list[bytes]:
    """The embedded PNG frames, decoded (the player splits base64 over lines)."""
    chunks = re.findall(r'"data:image/png;base64,([^"]+)"', html)
    return [base64.b64decode(re.sub(r"[^A-Za-z0-9+/=]", "", c)) for c in chunks]


def _frame_count(html: str) -> int:
    declared = re.findall(r"new Array\((\d+)\)", html)
    assert len(declared) == 1
    return int(declared[0])


@pytest.fixture(autouse=True)
def one_language(monkeypatch):
    """One player per animation, as in a notebook outside the book's build (the build's
    player per edition: tests/book/test_figure_words.py)."""
    from companion import viz

    monkeypatch.setattr(viz, "editions", lambda: ("en",))


@pytest.fixture(scope="module")
def episode():
    """A 12-step random episode of the Maze as a list of single states."""
    env = make_maze()
    state, timestep = env.reset(jax.random.key(0))

    def body(carry, key):
        state, timestep = carry
        logits = jnp.where(timestep.observation.action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(key, logits)
        state, timestep = env.step(state, action)
        return (state, timestep), state

    _, states = jax.lax.scan(body, (state, timestep), jax.random.split(jax.random.key(1), 11))
    return [state] + unstack(states)


def test_every_frame_is_embedded_and_the_figure_closed(episode):
    before = plt.get_fignums()
    html = animate_maze(episode).data
    assert _frame_count(html) == len(episode) == 12
    assert len(_pngs(html)) == 12
    assert plt.get_fignums() == before
    # Play controls are part of the player, and it loads nothing from the network (matplotlib
    # links FontAwesome from a CDN; the book works offline)
    assert "anim_step_forward" in html or "Play" in html
    assert "fa-play" in html and "<link" not in html and "https://" not in html


def test_frames_differ_when_the_agent_moves(episode):
    html = animate_maze(episode).data
    pngs = _pngs(html)
    moved = [
        (int(a.agent_position.row), int(a.agent_position.col))
        != (int(b.agent_position.row), int(b.agent_position.col))
        for a, b in zip(episode, episode[1:])
    ]
    assert any(moved)
    for t, m in enumerate(moved):
        if m:
            assert pngs[t] != pngs[t + 1], f"frame {t + 1} does not show the agent's move"


def test_long_episodes_keep_every_frame(episode):
    long_episode = episode * 30  # 360 frames: more than a small embed limit would keep
    html = animate_maze(long_episode, panel_inches=1.5).data
    assert len(_pngs(html)) == 360


def test_sensible_size(episode):
    """Frames are small PNGs (jumanji's own viewer draws very large figures)."""
    html = animate_maze(episode).data
    raw = _pngs(html)[0]
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", raw[16:24])  # the PNG's IHDR chunk
    assert 100 <= width <= 400 and 100 <= height <= 400, (width, height)


def test_side_by_side_pads_shorter_episodes(episode):
    html = animate_mazes([episode, episode[:5]], titles=["a", "b"]).data
    assert _frame_count(html) == 12


def test_empty_list_is_a_clear_error():
    with pytest.raises(ValueError, match=r"states: expected a non-empty list"):
        animate_maze([])
    with pytest.raises(ValueError, match="non-empty"):
        animate_mazes([])
    with pytest.raises(ValueError, match="frames: expected a non-empty"):
        animate_frames([])


def test_batched_state_is_a_clear_error():
    open_before = plt.get_fignums()
    env = make_maze()
    batched, _ = jax.vmap(lambda k: env_reset(env, k))(jax.random.split(jax.random.key(0), 4))
    with pytest.raises(ValueError, match=r"states\[0\].*batched.*unstack"):
        animate_maze([batched])
    with pytest.raises(TypeError, match="unstack"):
        animate_maze(batched)
    assert plt.get_fignums() == open_before


def test_episode_errors_name_the_episode(episode):
    with pytest.raises(ValueError, match=r"episodes\[1\]: expected a non-empty"):
        animate_mazes([episode, []])


def test_animate_frames_checks_panels_and_labels():
    img = np.zeros((4, 4, 3))
    with pytest.raises(ValueError, match=r"frames\[1\] has 1 panels, expected 2"):
        animate_frames([[img, img], [img]])
    with pytest.raises(ValueError, match="titles: expected 1"):
        animate_frames([[img]], titles=["a", "b"])
    with pytest.raises(ValueError, match="captions: expected 1"):
        animate_frames([[img]], captions=[])


def test_show_maze_draws_on_given_axis(episode):
    fig, ax = plt.subplots()
    assert show_maze(episode[0], ax=ax, title="t") is ax
    assert ax.get_title() == "t" and len(ax.images) == 1
    plt.close(fig)


# --- CartPole --------------------------------------------------------------------------------

from companion.envs import cartpole  # noqa: E402
from companion.viz import animate_cartpole, show_cartpole  # noqa: E402


def _cartpole_episode(n=15):
    state, _ = cartpole.reset(jax.random.key(0))
    states = [state]
    for t in range(n - 1):
        state, _ = cartpole.step(state, t % 2)
        states.append(state)
    return states


def test_cartpole_animation_has_every_frame_and_closes_its_figure():
    before = plt.get_fignums()
    states = _cartpole_episode()
    html = animate_cartpole(states).data
    assert _frame_count(html) == 15 and len(_pngs(html)) == 15
    assert plt.get_fignums() == before
    # observations work as well as states
    html = animate_cartpole([s.physics for s in states[:4]]).data
    assert _frame_count(html) == 4


def test_each_frame_is_drawn_only_to_be_saved(monkeypatch):
    """Saving a frame draws the figure twice (savefig's draw, and a draw it stops at once to
    find the renderer); FuncAnimation's redraw after each frame (``draw_idle``), which
    nothing sees, is skipped: 2 draws a frame, not 3."""
    from matplotlib.figure import Figure

    draws, draw = [], Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda fig, r: draws.append(1) or draw(fig, r))
    states = _cartpole_episode()
    html = animate_cartpole(states).data
    assert _frame_count(html) == 15
    assert len(draws) == 2 * 15


def _frame_interval_ms(html: str) -> float:
    (interval,) = re.findall(r"new Animation\(frames, img_id, slider_id, ([\d.]+),", html)
    return float(interval)


def test_long_cartpole_episodes_are_thinned_to_max_frames_and_keep_their_speed():
    physics = [np.array([0.01 * t, 0.0, 0.0, 0.0], np.float32) for t in range(103)]
    html = animate_cartpole(physics, max_frames=25, interval_ms=40).data
    # stride ceil(103 / 25) = 5: steps 0, 5, ..., 100, then the last step, 102
    assert _frame_count(html) == 22 and len(_pngs(html)) == 22
    assert _frame_interval_ms(html) == 200  # 5 x 40 ms per frame: the same playing speed
    short = animate_cartpole(physics[:20], max_frames=25).data
    assert _frame_count(short) == 20  # short episodes keep every step
    assert _frame_interval_ms(short) == 40
    with pytest.raises(ValueError, match="max_frames: expected a positive int, got 0"):
        animate_cartpole(physics, max_frames=0)


def test_cartpole_pole_is_drawn_at_its_angle():
    fig, ax = plt.subplots()
    show_cartpole(jnp.array([1.0, 0.0, 0.3, 0.0]), ax=ax)
    (pole,) = [line for line in ax.lines if line.get_linewidth() == 5]
    xs, ys = pole.get_data()
    assert xs[0] == pytest.approx(1.0)
    assert xs[1] - xs[0] == pytest.approx(np.sin(0.3), rel=1e-6)  # pole length 1 m
    assert ys[1] - ys[0] == pytest.approx(np.cos(0.3), rel=1e-6)
    plt.close(fig)


def test_cartpole_animation_errors():
    with pytest.raises(ValueError, match="non-empty"):
        animate_cartpole([])
    batched, _ = jax.vmap(cartpole.reset)(jax.random.split(jax.random.key(0), 3))
    with pytest.raises(ValueError, match=r"states\[0\].*shape \(3, 4\).*unstack"):
        animate_cartpole([batched])
    with pytest.raises(TypeError, match="unstack"):
        animate_cartpole(batched)


def _explorer_draw(step):
    fig, ax = plt.subplots(figsize=(2, 1))
    ax.bar([0], [step])
    ax.set_ylim(0, 10)
    return fig


def test_step_explorer_redraws_the_figure_when_the_slider_moves():
    ipywidgets = pytest.importorskip("ipywidgets")
    from companion.viz import step_explorer

    before = plt.get_fignums()
    explorer = step_explorer(_explorer_draw, 5)
    slider, image = explorer.children
    assert isinstance(slider, ipywidgets.IntSlider) and isinstance(image, ipywidgets.Image)
    assert (slider.min, slider.max, slider.value, slider.description) == (0, 4, 0, "step")
    first = bytes(image.value)
    assert first.startswith(b"\x89PNG\r\n\x1a\n") and image.format == "png"
    slider.value = 3
    third = bytes(image.value)
    assert third.startswith(b"\x89PNG") and third != first  # a taller bar: another picture
    slider.value = 0
    assert bytes(image.value) == first  # the same step draws the same picture
    assert plt.get_fignums() == before  # every figure was closed
    with pytest.raises(ValueError, match="num_steps: expected a positive int"):
        step_explorer(_explorer_draw, 0)


def test_animation_frames_are_palette_pngs_that_keep_the_picture():
    """Frames are re-encoded with at most FRAME_COLORS colours: a page holds a 500-step
    episode in under 0.8 MB, and a frame still shows the pole's colour and the caption."""
    import io

    from PIL import Image

    from companion.viz import FRAME_COLORS

    physics = [np.array([0.0, 0.0, 0.1, 0.0], np.float32)] * 500
    html = animate_cartpole(physics).data
    assert len(html) < 0.8e6
    frames = _pngs(html)
    assert len(frames) == 168  # stride 3 for at most 200 frames, and the last step
    image = Image.open(io.BytesIO(frames[0]))
    assert image.mode == "P" and len(image.getcolors()) <= FRAME_COLORS
    rgb = np.asarray(image.convert("RGB")).reshape(-1, 3).astype(int)
    # the pole (matplotlib's orange, #ff7f0e) and dark caption text survive the palette
    assert (np.abs(rgb - [255, 127, 14]).sum(axis=1) < 30).sum() > 50
    assert (rgb.sum(axis=1) < 100).sum() > 50
