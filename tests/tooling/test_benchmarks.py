"""The benchmark scripts keep working (tiny sizes; no timing assertions)."""

import json
import math
import re
import socket
import subprocess
import sys

import numpy as np
import pytest
from conftest import TEST_XLA_FLAGS
from notebook_runner import ROOT

from companion.agents import dqn
from companion.bench import hardware, step_rates, throughput, timed

sys.path.insert(0, str(ROOT / "benchmarks"))  # the scripts' shared module, as they import it
import dqn_stability  # noqa: E402
import measure  # noqa: E402


def test_timed_reports_median_and_spread():
    calls = []
    result = timed(lambda: calls.append(1), repeats=3)
    assert len(calls) == 4  # one warm-up call, three timed
    assert result["min_s"] <= result["median_s"] <= result["max_s"]
    assert result["compile_s"] >= 0 and result["repeats"] == 3
    with pytest.raises(ValueError, match="repeats: expected a positive int"):
        timed(lambda: None, repeats=0)


def test_throughput_divides_steps_by_time():
    result = throughput(lambda: sum(range(1000)), steps_per_call=500, repeats=2)
    assert result["steps_per_s"] == pytest.approx(500 / result["median_s"])
    assert result["steps_per_s_low"] <= result["steps_per_s"] <= result["steps_per_s_high"]


def test_step_rates_by_hand():
    timing = {"median_s": 0.5, "min_s": 0.25, "max_s": 2.0}
    assert step_rates(timing, 1000) == {
        "steps_per_s": 2000.0,
        "steps_per_s_low": 500.0,
        "steps_per_s_high": 4000.0,
    }


def test_hardware_names_the_machine():
    hw = hardware()
    assert hw["cpu"] and hw["cpu_cores"] >= 1 and hw["backend"] in ("cpu", "gpu", "tpu")


def test_env_throughput_quick_mode_writes_json(run_quick):
    result = run_quick("env_throughput.py")
    assert result["quick"] is True
    assert set(result["jax_cartpole"]) == {"1", "8"}
    for r in result["jax_cartpole"].values():
        assert r["steps_per_s"] > 0 and r["compile_s"] >= 0
    assert result["maze"]["pooled_reset"]["steps_per_s"] > 0
    assert "gym.make" in result["gymnasium"]
    assert result["hardware"]["jax"]
    assert "maze_pooled_vs_per_step" in result["ratios"]
    if not result["gymnax_cartpole"]:
        assert "gymnax_skipped" in result


def test_dqn_benchmark_quick_mode_writes_json(run_quick):
    result = run_quick("dqn_cartpole.py")
    assert result["quick"] is True and result["hardware"]["jax"]
    (book,) = result["book"]
    assert book["compile_s"] > 0 and book["run_s"] > 0 and book["env_steps"] > 0
    assert result["book_all_seeds"]["num_seeds"] == 2
    assert len(result["book_all_seeds"]["mean_returns"]) == 2
    assert "rejax" in result or "rejax_skipped" in result


def test_dqn_stability_quick_mode_writes_json(run_quick):
    result = run_quick("dqn_stability.py")
    assert result["quick"] is True and result["hardware"]["jax"]
    rows = result["configs"]
    chapter = rows["chapter"]
    # the chapter's row is DQNConfig() (on quick sizes); each other row takes one lever away
    changed = {
        name: {k for k in chapter["config"] if row["config"][k] != chapter["config"][k]}
        for name, row in rows.items()
    }
    assert changed == {
        "chapter": set(),
        "without LayerNorm": set(),
        "1 gradient step per iteration": {"updates_per_iteration"},
        "batch 64": {"batch_size"},
        "constant learning rate": {"lr_final_fraction"},
        "Polyak τ = 0.005 every step": {"target_update_period", "target_tau"},
        "buffer 10,000": {"buffer_capacity"},
    }
    assert [r["layer_norm"] for r in rows.values()] == [True, False, True, True, True, True, True]
    assert rows["Polyak τ = 0.005 every step"]["config"]["target_tau"] == 0.005
    assert rows["constant learning rate"]["config"]["lr_final_fraction"] == 1.0
    # the grid: five targets by their mean lag, with and without LayerNorm, one quick budget;
    # a configuration the levers already trained is not trained again
    grid = result["grid"]
    assert len(grid) == 10 and {r["budget"] for r in grid.values()} == {1_200}
    assert {(r["target"], r["layer_norm"]) for r in grid.values()} == {
        (t, ln) for t, _, _ in dqn_stability.TARGETS for ln in (True, False)
    }
    same = grid["copy every 10, LayerNorm, 1,200 steps"]
    assert same["final_returns"] == chapter["final_returns"] and same["mean_lag"] == 4.5
    assert grid["Polyak, lag of a copy every 200, LayerNorm, 1,200 steps"]["mean_lag"] == (
        pytest.approx(199 / 2)
    )
    assert {len(r["q_mean_by_block_quantiles"]["50"]) for r in grid.values()} == {
        len(chapter["eval_env_steps"])
    }
    for row in [*rows.values(), *grid.values()]:
        assert (
            row["keys"] == [33, 34] and len(row["final_returns"]) == len(row["best_returns"]) == 2
        )
        final = np.asarray(row["final_returns"])
        assert row["final_solved"] == int((final >= result["solved_at"]).sum())
        assert sum(row["final_solved_by_keys"].values()) == row["final_solved"]
        evals = np.asarray(row["eval_returns"])
        quarter = max(1, evals.shape[1] // 4)
        assert row["last_quarter_eval_mean"] == pytest.approx(evals[:, -quarter:].mean(), abs=0.1)
        # the first evaluation at 475 is an evaluation's step, one per key (None: never)
        for first, e in zip(row["steps_to_475"], evals):
            assert (
                first is None
                if (e < 475).all()
                else first == row["eval_env_steps"][int(np.argmax(e >= 475))]
            )
        # the values' scale: a largest mean Q and TD error per key, per-block curves
        assert len(row["q_max"]) == len(row["td_abs_max"]) == 2
        assert len(row["q_mean_by_block"]) == len(row["td_abs_max_by_block"]) == evals.shape[1]
        assert row["median_q_max"] == pytest.approx(float(np.median(row["q_max"])))
        assert max(row["td_abs_max_by_block"]) <= max(row["td_abs_max"]) + 1e-3
        assert all(t > 0 for t in row["td_abs_max"])


def test_load_result_reads_local_results_and_rejects_bad_names(tmp_path):
    from companion.bench import find_results_dir, load_result

    (tmp_path / "demo.json").write_text('{"benchmark": "demo", "x": 3}')
    assert load_result("demo", tmp_path) == {"benchmark": "demo", "x": 3}
    with pytest.raises(FileNotFoundError, match="no result 'other'"):
        load_result("other", tmp_path)
    with pytest.raises(ValueError, match="name: expected a benchmark name"):
        load_result("../secrets", tmp_path)
    assert find_results_dir(ROOT / "notebooks") == ROOT / "benchmarks" / "results"
    assert load_result("env_throughput")["benchmark"] == "env_throughput"


@pytest.fixture
def results_server(tmp_path):
    """A local web server for ``tmp_path/served``: stands in for the repository's host."""
    import functools
    import http.server
    import threading

    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def test_without_a_checkout_results_are_downloaded_or_the_note_says_why(
    tmp_path, monkeypatch, results_server
):
    """Outside a checkout (Colab): the committed file is downloaded; when it cannot be, the
    error and the notebooks' note say whether the file is missing or the host unreachable."""
    from companion import bench

    served, url = results_server
    (served / "demo.json").write_text('{"benchmark": "demo", "x": 3}')
    outside = tmp_path / "content"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert bench.find_results_dir() is None
    monkeypatch.setattr(bench, "RESULTS_URL", url)
    assert bench.load_result("demo") == {"benchmark": "demo", "x": 3}
    assert bench.load_result_or_note("demo") == ({"benchmark": "demo", "x": 3}, "")

    with pytest.raises(FileNotFoundError, match="the repository has no such file .*HTTP 404"):
        bench.load_result("missing")
    result, note = bench.load_result_or_note("missing")
    assert result is None
    assert note.startswith("The committed result of `benchmarks/missing.py` cannot be shown: ")
    assert "not a checkout" in note and "HTTP 404" in note and "make bench" not in note

    # a closed port: the host cannot be reached
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    monkeypatch.setattr(bench, "RESULTS_URL", f"http://127.0.0.1:{closed}")
    result, note = bench.load_result_or_note("demo")
    assert result is None
    assert f"127.0.0.1:{closed} could not be reached (no network?" in note
    assert "no such file" not in note


def test_dispatch_quick_mode_writes_json(run_quick):
    result = run_quick("dispatch.py")
    assert result["quick"] is True and result["hardware"]["jax"]
    loops = result["loops"]
    assert loops["same_final_state"] is True  # the four styles compute the same thing
    for name in ("eager", "python loop, jit(step)", "jit(lax.scan)"):
        r = loops[name]
        assert r["min_s"] <= r["median_s"] <= r["max_s"] and r["steps_per_s"] > 0
    assert set(result["compile"]) == {"python for loop", "lax.scan"}
    # one trace per batch size; later calls with the same size reuse it
    assert result["recompile"]["traces"] == [4, 8]
    for a in result["async"].values():
        assert a["with_block_until_ready"]["median_s"] >= a["without_block_until_ready"]["min_s"]


def test_scaling_measures_the_chosen_sections_and_keeps_each_point_as_it_goes(
    tmp_path, monkeypatch
):
    """``--sections`` measures only those; the file is rewritten after every point, so a run
    stopped part-way (a time-limited machine) keeps the points it measured."""
    import scaling

    calls = []

    def fake_point(config, num_seeds, repeats):
        if len(calls) == 1:
            raise KeyboardInterrupt  # stopped during the second point
        calls.append(config.num_envs)
        return {"steps_per_s": 1.0, "median_s": 2.0, "compile_s": 3.0, "memory": {"total_bytes": 4}}

    monkeypatch.setattr(scaling, "dqn_point", fake_point)
    monkeypatch.setattr(scaling, "ppo_point", fake_point)
    out = tmp_path / "part.json"
    with pytest.raises(KeyboardInterrupt):
        scaling.main(["--quick", "--sections", "ppo_envs", "--out", str(out)])
    kept = json.loads(out.read_text())
    assert kept["sections"] == ["ppo_envs"]
    assert list(kept["ppo_envs"]) == ["1"] and kept["ppo_envs"]["1"]["steps_per_s"] == 1.0
    assert kept["dqn_envs"] == {} and kept["dqn_seeds"] == {} and "wall_s" not in kept
    with pytest.raises(SystemExit):
        scaling.main(["--quick", "--sections", "dqn_env", "--out", str(out)])  # no such section


def test_scaling_quick_mode_writes_json(run_quick):
    result = run_quick("scaling.py")
    assert result["quick"] is True and result["hardware"]["jax"]
    for key in ("dqn_envs", "ppo_envs", "dqn_seeds", "ppo_seeds"):
        assert len(result[key]) == 2
        for r in result[key].values():
            assert r["compile_s"] > 0 and r["steps_per_s"] > 0 and r["repeats"] >= 2
            assert r["min_s"] <= r["median_s"] <= r["max_s"]
            assert r["memory"]["total_bytes"] > 0
    # vmapping two seeds runs twice the environment steps
    seeds = result["ppo_seeds"]
    assert seeds["2"]["env_steps"] == 2 * seeds["1"]["env_steps"]
    # a DQN replay buffer of float32 obs/next_obs (4 each), int32 action, float32 reward and
    # bool terminated holds 41 bytes per transition, and the program's memory shows it
    caps = result["memory"]["dqn_buffer_capacity"]
    small, large = sorted(caps, key=int)
    grown = caps[large]["memory"]["total_bytes"] - caps[small]["memory"]["total_bytes"]
    assert grown == 41 * (int(large) - int(small))


def test_profile_ppo_quick_mode_writes_json(run_quick):
    result = run_quick("profile_ppo.py")
    assert result["quick"] is True
    (agent,) = result["agents"].values()
    for reset in ("per_step", "pooled"):
        r = agent[reset]
        assert r["rollout_s"] > 0 and r["update_s"] > 0 and r["steps_per_s"] > 0
    assert agent["training_speedup_pooled_over_per_step"] > 0


def test_ppo_width_quick_mode_times_each_part_of_an_update(run_quick):
    result = run_quick("ppo_width.py")
    assert result["quick"] is True and [r["num_envs"] for r in result["widths"]] == [8, 16]
    for row in result["widths"]:
        assert row["batch_size"] == row["num_envs"] * result["config"]["num_steps"]
        for part in ("collect", "episode_stats", "shuffle", "shuffle_unflattened"):
            timing = row["parts"][part]
            assert 0 < timing["min_s"] <= timing["median_s"] <= timing["max_s"], part
            assert timing["cost"]["bytes_accessed"] > 0, part
        assert row["steps_per_s"] == pytest.approx(row["batch_size"] / row["update_s"])
        assert row["steps_per_s_low"] <= row["steps_per_s_high"]
        assert 0 <= row["gradients_s"] <= row["update_s"]
    # a wider batch moves more bytes through the rollout
    collect = [r["parts"]["collect"]["cost"]["bytes_accessed"] for r in result["widths"]]
    assert collect[1] > collect[0]


def test_ppo_width_committed_runs_do_not_lose_throughput_as_environments_are_added():
    """In every committed ``ppo_width*.json`` of an accelerator, a wider batch is not slower
    than a narrower one beyond the spread of the runs: the fastest run of the wider
    batch reaches at least the slowest of the narrower. (A TPU run lost half its
    throughput past 1,024 environments while the minibatch shuffle gathered padded images.
    A CPU has no such target: its caches can make a wide gradient step cost more per
    transition.)"""
    files = sorted((ROOT / "benchmarks" / "results").glob("ppo_width*.json"))
    results = [(path, json.loads(path.read_text())) for path in files]
    results = [(p, r) for p, r in results if r["hardware"]["backend"] != "cpu"]
    assert results, "no committed ppo_width result of an accelerator"
    for path, result in results:
        rows = sorted(result["widths"], key=lambda r: r["num_envs"])
        assert len(rows) >= 3 and not result["quick"], path.name
        for narrow, wide in zip(rows, rows[1:]):
            assert wide["steps_per_s_high"] >= narrow["steps_per_s_low"], (
                f"{path.name}: {wide['num_envs']} environments run at most "
                f"{wide['steps_per_s_high']:,.0f} steps/s, below the slowest run at "
                f"{narrow['num_envs']} ({narrow['steps_per_s_low']:,.0f})"
            )


def test_maze_sizes_quick_mode_writes_json(run_quick):
    result = run_quick("maze_sizes.py")
    assert result["quick"] is True and result["trained_iterations"] == 32
    points = result["points"]
    assert {(p["size"], p["greedy"]) for p in points} == {
        (6, False),
        (6, True),
        (8, False),
        (8, True),
    }
    for p in points:
        assert 0.0 <= p["success_rate"] <= 1.0 and p["episodes"] == 4
        if p["success_rate"] > 0:  # no successful episode is shorter than a shortest path
            assert p["length_over_shortest"] >= 1.0
            assert p["mean_length_successful"] >= p["mean_shortest_successful"] > 0


def test_maze_sizes_changes_the_iterations_and_keeps_the_weights():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import jax
    import jax.numpy as jnp
    import maze_sizes

    trained = maze_sizes.load_saved_agent("propagation")
    network = maze_sizes.saved_network("propagation")
    image = jax.random.bernoulli(jax.random.key(0), 0.3, (3, 9, 14)).astype(jnp.float32)
    same = maze_sizes.with_iterations(trained, network, trained.iterations)
    fewer = maze_sizes.with_iterations(trained, network, 3)
    assert fewer.iterations == 3 and trained.iterations == 32
    assert jnp.array_equal(same(image)[0], trained(image)[0])
    assert not jnp.allclose(fewer(image)[0], trained(image)[0], atol=1e-4)
    assert jnp.array_equal(fewer.embed, trained.embed)  # the weights are the trained ones


def test_maze_sizes_committed_result_shows_what_the_benchmark_is_for():
    """The committed benchmarks/results/maze_sizes.json shows the pattern the benchmark was
    built to measure (chapter 9 quotes it through glue, so its prose follows any re-run; a
    re-run that breaks the pattern is a finding to read, not a figure to update)."""
    from companion.bench import load_result

    r = load_result("maze_sizes")
    assert r["quick"] is False and r["trained_iterations"] == 32
    sizes = [10, 12, 15, 20]
    at = {(p["size"], p["iterations"], p["greedy"]): p for p in r["points"]}
    sampled = [at[n, 32, False] for n in sizes]
    greedy = [at[n, 32, True] for n in sizes]
    assert {p["episodes"] for p in sampled + greedy} == {1000}
    assert {p["episodes"] for k, p in at.items() if k[1] != 32} == {200}
    # success falls with size, the greedy policy's faster, and greedy is below sampled
    for points in (sampled, greedy):
        rates = [p["success_rate"] for p in points]
        assert rates == sorted(rates, reverse=True) and rates[0] > rates[-1]
    gaps = [s["success_rate"] - g["success_rate"] for s, g in zip(sampled, greedy)]
    assert all(gap > 0 for gap in gaps) and gaps == sorted(gaps)
    # greedy successes take a shortest path; sampled ones are longer
    assert all(round(p["length_over_shortest"], 2) == 1.0 for p in greedy)
    assert all(p["length_over_shortest"] > 1.0 for p in sampled)
    # reach: over a third of 20 x 20 targets lie beyond 33 moves, and greedy reaches none
    assert greedy[-1]["share_beyond_reach"] > 1 / 3
    assert greedy[-1]["success_beyond_reach"] == 0.0
    within = [p["success_within_reach"] for p in greedy]
    assert within == sorted(within, reverse=True) and within[0] > within[-1]
    # other iteration counts fail in almost every maze, even at 10 x 10
    others = {k for _, k, _ in at} - {32}
    assert others == {16, 24, 48, 64}
    assert all(p["success_rate"] < 0.15 for k, p in at.items() if k[1] != 32)


def test_planning_sizes_quick_mode_writes_json(run_quick):
    result = run_quick("planning_sizes.py")
    assert result["quick"] is True and result["iterations_swept"] == [2, 4]
    points = result["points"]
    settled = {(p["size"], p["greedy"]) for p in points if p["iterations"] is None}
    assert settled == {(6, False), (6, True), (8, False), (8, True)}
    assert {p["iterations"] for p in points} == {None, 2, 4}
    for p in points:
        assert 0.0 <= p["success_rate"] <= 1.0 and p["episodes"] == 4
        if p["success_rate"] > 0:  # no successful episode is shorter than a shortest path
            assert p["length_over_shortest"] >= 1.0
    # to convergence, greedy: every small maze solved along a shortest path
    for p in points:
        if p["iterations"] is None and p["greedy"]:
            assert p["success_rate"] == 1.0 and p["length_over_shortest"] == 1.0


def test_planning_sizes_committed_result_shows_what_the_benchmark_is_for():
    """The committed benchmarks/results/planning_sizes.json and the saved agent's run meet
    the targets the planning agent was built for (chapter 9 quotes them through glue)."""
    from companion.agents.ppo.saved import saved_summary
    from companion.bench import load_result

    r = load_result("planning_sizes")
    assert r["quick"] is False and r["iterations_swept"] == [4, 8, 16, 32, 64]
    at = {(p["size"], p["iterations"], p["greedy"]): p for p in r["points"]}
    sizes = [10, 12, 15, 20, 30]
    # every maze solved up to 30 x 30, greedy along shortest paths, sampled longer
    for n in sizes:
        sampled, greedy = at[n, None, False], at[n, None, True]
        assert sampled["episodes"] == greedy["episodes"] == (1000 if n <= 20 else 200)
        assert sampled["success_rate"] == greedy["success_rate"] == 1.0
        assert greedy["length_over_shortest"] == 1.0 and sampled["length_over_shortest"] > 1.0
    # a fixed number of backups: every target within reach found, failures only beyond it;
    # success rises with K and stays once K covers the longest shortest path
    for n in (10, 15, 20):
        rates = [at[n, k, True]["success_rate"] for k in r["iterations_swept"]]
        assert rates == sorted(rates) and rates[0] < 0.5
        for k in r["iterations_swept"]:
            p = at[n, k, True]
            assert p["success_within_reach"] == 1.0
            if p["success_rate"] < 1.0:
                assert p["share_beyond_reach"] > 0 and p["success_beyond_reach"] < 1.0
        assert at[n, 64, True]["success_rate"] >= 0.99
    # the saved run: trained on 10 x 10 in under 10 minutes, 1,000 unseen mazes per size
    run = saved_summary("value_iteration")
    assert run["compile_s"] + run["train_s"] < 600 and run["env_steps"] == 131_072
    assert run["hardware"]["cpu_cores"] == 2
    for name in (
        "evaluation_1000_unseen",
        "evaluation_1000_unseen_15x15",
        "evaluation_1000_unseen_20x20",
    ):
        greedy, sampled = run[name]["greedy"], run[name]["sampled"]
        assert greedy["success_rate"] >= 0.98 and sampled["success_rate"] >= 0.98
        assert greedy["mean_length_successful"] <= 1.05 * greedy["mean_shortest_successful"]


def test_lab_times_quick_mode_runs_a_student_copy_to_its_first_stub(run_quick):
    result = run_quick("lab_times.py")
    assert result["quick"] is True and result["budget"] == "tiny"
    (chapter,) = result["chapters"].values()
    assert chapter["seconds"] > 0 and chapter["cells"] > 5
    assert 1 <= len(chapter["slowest"]) <= 3
    assert sum(c["seconds"] for c in chapter["slowest"]) <= chapter["seconds"]
    assert all(set(c) == {"id", "seconds", "first_line"} for c in chapter["slowest"])


def test_lab_times_cover_every_chapter():
    """The committed table of the teacher's guide has a row for every chapter."""
    result = json.loads((ROOT / "benchmarks" / "results" / "lab_times.json").read_text())
    assert result["quick"] is False and result["budget"] == "tiny"
    assert set(result["chapters"]) == {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}


def test_lab_times_name_slow_cells_that_still_exist():
    """Each slow cell of the teacher's table is named by its cell id alone (an index shifts
    when a cell is added above it), and that cell still starts with the line the table
    shows: a cell rewritten since it was timed fails here (time the chapter again:
    ``python benchmarks/lab_times.py --only STEM``)."""
    result = json.loads((ROOT / "benchmarks" / "results" / "lab_times.json").read_text())
    stale = []
    for stem, chapter in result["chapters"].items():
        cells = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())["cells"]
        first_lines = {
            c.get("id"): "".join(c["source"]).strip().splitlines()[0][:80]
            for c in cells
            if c["cell_type"] == "code" and "".join(c["source"]).strip()
        }
        for row in chapter["slowest"]:
            assert set(row) == {"id", "seconds", "first_line"}, (stem, row)
            if first_lines.get(row.get("id")) != row["first_line"]:
                stale.append(f"{stem}: {row['first_line']!r}")
    assert not stale, "timed cells that no longer exist as timed:\n" + "\n".join(stale)


def test_run_all_lists_every_benchmark_script():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import run_all

    # post_ppo, post_maze, post_dqn and book_agents are modules that source_posts imports;
    # measure is what every script imports
    # device_notebooks runs the notebooks on an accelerator (the book's build runs them here)
    not_scripts = {
        "run_all",
        "post_ppo",
        "post_maze",
        "post_dqn",
        "book_agents",
        "measure",
        "device_notebooks",
    }
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py")} - not_scripts
    assert set(run_all.SCRIPTS) == scripts
    assert "benchmarks/run_all.py" in (ROOT / "Makefile").read_text()


def test_compile_and_time_compiles_apart_and_reports_program_memory():
    import jax.numpy as jnp

    x = jnp.ones((1000,), jnp.float32)
    timing, out = measure.compile_and_time(lambda v: v * 2.0, (x,), repeats=3)
    assert float(out[0]) == 2.0 and timing["repeats"] == 3 and timing["compile_s"] > 0
    assert timing["min_s"] <= timing["median_s"] <= timing["max_s"]
    # 4,000 bytes in and 4,000 bytes out (float32), unless the output reuses the input
    m = timing["memory"]
    assert m["argument_bytes"] == 4000 and m["output_bytes"] == 4000
    assert m["total_bytes"] == 8000 + m["temp_bytes"] - m["alias_bytes"]
    stopped, _ = measure.compile_and_time(lambda v: v + 1.0, (x,), repeats=5, max_total_s=0.0)
    assert stopped["repeats"] == 2  # at least two runs, then the time limit stops it


def test_measure_names_the_bad_argument():
    import jax
    import jax.numpy as jnp

    x = jnp.ones(3)
    with pytest.raises(ValueError, match="repeats: expected a positive int, got 0"):
        measure.compile_and_time(lambda v: v, (x,), repeats=0)
    with pytest.raises(TypeError, match="repeats: expected a positive int, got 2.0"):
        measure.compile_and_time(lambda v: v, (x,), repeats=2.0)
    with pytest.raises(TypeError, match="args: expected a tuple"):
        measure.compile_and_time(jnp.sin, x)
    with pytest.raises(TypeError, match="fn: expected a function, got int"):
        measure.compile_and_time(3, (x,))
    with pytest.raises(TypeError, match="compiled: expected a compiled JAX program"):
        measure.memory_bytes(jnp.sin)
    compiled = jax.jit(jnp.sin).lower(x).compile()
    assert measure.memory_bytes(compiled)["argument_bytes"] == 12  # three float32 numbers
    with pytest.raises(ValueError, match="name: expected a benchmark name"):
        measure.result_header("", False)
    with pytest.raises(ValueError, match="name: expected a benchmark name"):
        measure.result_header("../scaling", False)
    head = measure.result_header("scaling", True)
    assert head["benchmark"] == "scaling" and head["quick"] is True
    assert head["hardware"] == hardware() and head["date"].endswith("+00:00")


def test_sharding_benchmark_quick_mode_writes_json(run_quick):
    """The script sets 8 simulated CPU devices for itself and measures meshes of 1 and 2."""
    result = run_quick("sharding.py")
    assert result["quick"] is True and len(result["hardware"]["devices"]) == 8
    assert set(result["data_parallel"]) == set(result["seeds"]) == {"1", "2"}
    for r in (*result["data_parallel"].values(), *result["seeds"].values()):
        assert r["steps_per_s_low"] <= r["steps_per_s"] <= r["steps_per_s_high"]
    c = result["config"]
    assert result["parameters"] > 0
    assert result["gradient_steps_per_update"] == c["num_epochs"] * c["num_minibatches"]
    base = result["single_device"]["steps_per_s"]
    ratio = result["ratios"]["data_parallel_over_single_device"]["2"]
    assert ratio == pytest.approx(result["data_parallel"]["2"]["steps_per_s"] / base)


def test_loop_writes_scale_linearly(run_quick):
    """A scan with stacked outputs and a replay-buffer write loop at 4x the length take less
    than ``MAX_RATIO`` (8) times as long: linear is 4, jaxlib 0.11.1's whole-buffer writes
    (jax-ml/jax#40101) gave 16.9 and 15.6 here."""
    result = run_quick("loop_writes.py")
    assert result["quick"] is True and result["max_ratio"] == 8.0
    assert set(result["loops"]) == {"scan_stacked", "replay_writes"}
    for name, row in result["loops"].items():
        short, long = row["times"][str(row["n"])], row["times"][str(4 * row["n"])]
        assert long["steps"] == 4 * short["steps"] > 0
        assert row["ratio"] == pytest.approx(long["min_s"] / short["min_s"])
        assert row["ratio"] < result["max_ratio"], (
            f"{name}: {row['ratio']:.1f}x the time at 4x the steps: each write inside the loop "
            "costs more than its own row (jax-ml/jax#40101 in jaxlib 0.11.1 was 16x)"
        )


def test_compile_level_quick_mode_writes_json(run_quick):
    result = run_quick("compile_level.py")
    assert result["quick"] is True and result["default"] == "3" and result["tests"] == "2"
    assert set(result["settings"]) == {"3", "2"}
    expected = {
        "3": {"--xla_backend_optimization_level": "3"},
        "2": TEST_XLA_FLAGS,  # the benchmark measures what this test session sets
    }
    assert TEST_XLA_FLAGS == {"--xla_backend_optimization_level": "2"}
    for name, r in result["settings"].items():
        assert r["flags"] == expected[name]
        # each setting ran in its own process, each flag set once (the tests' own replaced)
        for flag, value in expected[name].items():
            assert r["xla_flags"].split().count(f"{flag}={value}") == 1
            assert r["xla_flags"].count(flag) == 1
        assert set(r["programs"]) == {"ppo_tiny", "dqn_tiny"}
        for p in r["programs"].values():
            assert p["compile_s"] > 0 and p["min_s"] <= p["median_s"] <= p["max_s"]
    base, tests = result["settings"]["3"]["programs"], result["settings"]["2"]["programs"]
    for name, p in base.items():
        assert p["compile_vs_default"] == 1.0 and p["run_vs_default"] == 1.0
        assert tests[name]["compile_vs_default"] == pytest.approx(
            tests[name]["compile_s"] / p["compile_s"]
        )
        assert tests[name]["env_steps"] == p["env_steps"] > 0


def test_lean_programs_quick_mode_writes_json(run_quick):
    """The baseline's programs carry equinox's run-time checks as host callbacks; today's
    carry none, and the ratio is of compile times measured in the same run."""
    baseline = "e23cb47"
    known = subprocess.run(["git", "cat-file", "-e", f"{baseline}^{{commit}}"], cwd=ROOT)
    if known.returncode != 0:
        pytest.skip(f"this clone does not hold the baseline commit {baseline}")
    result = run_quick("lean_programs.py")
    assert result["quick"] is True and result["baseline"] == baseline
    for name in ("ppo", "dqn"):
        row = result["programs"][name]
        assert row["baseline"]["callbacks"] > 0 and row["current"]["callbacks"] == 0
        assert row["ratio"] == pytest.approx(
            row["current"]["compile_s"] / row["baseline"]["compile_s"]
        )


def _post_run(variant, task, seed, steps, time_s, sampled):
    final = {
        t: {"sampled": sampled, "greedy": sampled / 2}
        for t in ("post-medium", "post-medium-9", "book-medium")
    }
    return {
        "variant": variant,
        "task": task,
        "seed": seed,
        "steps_to_target": steps,
        "time_to_target_s": time_s,
        "final_success": final,
    }


def _dqn_run(variant, final, best, time_s):
    return {
        "variant": variant,
        "final_return": final,
        "best_return": best,
        "time_to_target_s": time_s,
    }


def _table_rows(markdown):
    rows = [line for line in markdown.splitlines() if line.startswith("|")]
    widths = {line.count("|") for line in rows}
    assert len(widths) == 1, rows  # header, separator and rows: one number of columns
    return rows[2:]


#: Words the Japanese tables keep as they are: names of programs, agents, hardware and code.
KEPT_NAMES = {
    *"AMD EPYC Intel CartPole DQN PPO JAX PRNG LayerNorm Polyak Python Maze medium".split(),
    *"cpu gpu gymnasium gymnax rejax Some CPU".split(),
    # two tests' names; a TPU's device kind ("TPU v5 lite") and JAX's name of its backend
    *"McNemar Holm lite tpu".split(),
}
_FIGURE = re.compile(r"\d[\d,.]*\d|\d")


def _same_table_in_japanese(en: str, ja: str) -> None:
    """``ja`` is ``en`` in Japanese: line by line the same tables (columns) and figures; each
    header cell and each sentence in Japanese; no English word but :data:`KEPT_NAMES`."""
    from companion.bench.words import _label
    from companion.glue import english_words

    en_lines, ja_lines = en.strip().splitlines(), ja.strip().splitlines()
    assert len(en_lines) == len(ja_lines), (en, ja)
    for i, (e, j) in enumerate(zip(en_lines, ja_lines)):
        assert e.startswith("|") == j.startswith("|"), (e, j)
        if e.startswith("|"):
            assert e.count("|") == j.count("|"), (e, j)
        header = i + 1 < len(en_lines) and en_lines[i + 1].startswith("|---")
        if not header:  # a header may word a figure its own way ("last-quarter": 4 分の 1)
            e_figures, j_figures = e, j
            if e.startswith("|"):  # a translated row label may name a chapter
                e_label, j_label = e.split("|")[1].strip(), j.split("|")[1].strip()
                if e_label != j_label and _label(e_label, "ja") == j_label:
                    e_figures, j_figures = e.split("|", 2)[2], j.split("|", 2)[2]
            assert sorted(_FIGURE.findall(e_figures)) == sorted(_FIGURE.findall(j_figures)), (e, j)
        if header:  # every header cell translated
            cells = j.strip("|").split("|")
            assert all(re.search("[\u3040-\u30ff\u4e00-\u9fff]", c) for c in cells), j
        elif e.strip() and not e.startswith("|"):  # a sentence or a caption
            assert re.search("[\u3040-\u30ff\u4e00-\u9fff]", j) and j != e, j
    assert set(english_words(ja)) <= KEPT_NAMES, set(english_words(ja)) - KEPT_NAMES


def test_source_post_tables_by_hand():
    from companion import bench

    posts = {
        "date": "2026-11-30T22:58:56+00:00",
        "hardware": {"cpu": "Some CPU", "cpu_cores": 2, "jax": "0.10.2", "backend": "cpu"},
        "ppo_runs": [
            _post_run("post", "post-medium", 0, 557_056, 21.14, 0.987),
            _post_run("post", "post-medium", 1, None, None, 0.5),
            _post_run("all 9 pairs drawn", "post-medium-9", 0, None, None, 0.75),
        ],
        "book_ppo_runs": [_post_run("book", "book-medium", 0, 98_304, 8.04, 0.999)],
        "comparisons": {
            "ppo": {
                "post-medium": {"post_over_book_time": 2.8159},
                "book-medium": {"post_over_book_time": None},
            }
        },
        "dqn_runs": [
            _dqn_run("post", 480.0, 500.0, 1.5),
            _dqn_run("post", 100.0, 474.9, None),
            _dqn_run("post", 100.0, 490.0, 2.5),
        ],
        "book_dqn_runs": [_dqn_run("book", 475.0, 500.0, 6.0)],
    }
    assert bench.measured_on(posts) == (
        "Measured 2026-11-30 on Some CPU (2 cores), JAX 0.10.2 (cpu)."
    )
    runs = _table_rows(bench.post_ppo_table(posts))
    assert len(runs) == 3  # the two post runs and the book's; variants belong to the ablation
    assert runs[0] == (
        "| post | post's maze, 4 pairs | 0 | 557,056 | 21.1 | 0.987 / 0.493 | "
        "0.987 / 0.493 | 0.987 / 0.493 |"
    )
    assert "| 1 | not reached | not reached |" in runs[1]
    assert "post / book: 2.82 (same run" in bench.post_ppo_table(posts)
    ablation = _table_rows(bench.post_ppo_ablation_table(posts))
    assert [r.split(" | ")[0] for r in ablation] == ["| post", "| all 9 pairs drawn"]
    assert "post's maze, 9 pairs" in ablation[1]
    dqn_rows = _table_rows(bench.post_dqn_table(posts))
    # post: final >= 475 on 1 of 3, kept-best on 2 (474.9 is not 475), 2 reached; the median
    # time over all 3 keys is 2.5 s (1.5, 2.5, never), not 2.0 over the 2 that got there
    assert dqn_rows == ["| post | 3 | 1 | 2 | 2 | 2.5 |", "| book | 1 | 1 | 1 | 1 | 6.0 |"]
    for table in (bench.post_ppo_table, bench.post_ppo_ablation_table, bench.post_dqn_table):
        with pytest.raises(ValueError, match="posts: expected the source_posts result"):
            table({"date": "x"})
    with pytest.raises(ValueError, match="result: expected a benchmark result"):
        bench.measured_on({"hardware": {}})
    # in Japanese: the same rows and figures under Japanese headers
    for table in (bench.measured_on, bench.post_ppo_table, bench.post_ppo_ablation_table):
        _same_table_in_japanese(table(posts), table(posts, "ja"))
    assert bench.measured_on(posts, "ja") == (
        "2026-11-30 に Some CPU（2 コア）、JAX 0.10.2（cpu）で測定しました。"
    )
    assert _table_rows(bench.post_ppo_table(posts, "ja"))[1].startswith("| 記事 | 記事の迷路")
    assert "| 未到達 | 未到達 |" in bench.post_ppo_table(posts, "ja")
    assert "9 組すべてを引く" in bench.post_ppo_ablation_table(posts, "ja")
    assert _table_rows(bench.post_dqn_table(posts, "ja")) == [
        "| 記事 | 3 | 1 | 2 | 2 | 2.5 |",
        "| 本書 | 1 | 1 | 1 | 1 | 6.0 |",
    ]
    # the committed result lays out as well-formed tables, in both languages
    committed = bench.load_result("source_posts")
    for table in (bench.post_ppo_table, bench.post_ppo_ablation_table, bench.post_dqn_table):
        assert _table_rows(table(committed))
        _same_table_in_japanese(table(committed), table(committed, "ja"))


def test_dqn_cartpole_and_comparison_tables_by_hand():
    from companion import bench

    dqn = {
        "book": [
            {
                "seed": 0,
                "compile_s": 4.0,
                "run_s": 5.04,
                "solve_steps": 46_000,
                "time_to_solve_s": 7.25,
            },
            {"seed": 1, "compile_s": 3.9, "run_s": 4.7},
        ],  # never solved
        "rejax": [
            {
                "seed": 0,
                "compile_s": 4.1,
                "run_s": 80.2,
                "solve_steps": 32_768,
                "time_to_solve_s": 46.9,
            }
        ],
        "rejax_version": "0.1.3",
        "book_time_to_solve_median_s": 7.25,
        "rejax_time_to_solve_median_s": 46.9,
        "ratio_rejax_over_book_time_to_solve": 6.469,
        "book_all_seeds": {"num_seeds": 10, "compile_s": 6.0, "run_s": 33.8, "solved": 9},
    }
    text = bench.dqn_cartpole_table(dqn)
    rows = _table_rows(text)
    assert rows == [
        "| this book | 0 | 4.0 | 5.0 | 46,000 | 7.2 |",
        "| this book | 1 | 3.9 | 4.7 | not reached | not reached |",
        "| rejax 0.1.3 | 0 | 4.1 | 80.2 | 32,768 | 46.9 |",
    ]
    assert "All 10 seeds at once: compile 6.0 s, training 33.8 s, 9 solved." in text
    assert "this book's median: 6.5x (same run)." in text
    env = {
        "gymnasium": {"gym.make": {"steps_per_s": 100_000.0}},
        "jax_cartpole": {"1": {"steps_per_s": 450_000.0}, "64": {"steps_per_s": 6.4e6}},
        "gymnax_cartpole": {"64": {"steps_per_s": 3.2e6}},
        "ratios": {"jax_best_vs_gym_make": 64.0},
    }
    posts = {
        "ppo_target": 0.99,
        "ppo_runs": [
            {"task": "post-medium", "variant": "post", "steps_per_s": 30_000.0},
            {"task": "post-medium", "variant": "mask fixed (-inf in the loss)", "steps_per_s": 1.0},
        ],
        "book_ppo_runs": [
            {"task": "post-medium", "variant": "book", "steps_per_s": 20_000.0},
            {"task": "post-medium", "variant": "book", "steps_per_s": 24_000.0},
        ],
        "comparisons": {
            "ppo": {
                "post-medium": {
                    "book_median_time_to_target_s": 7.0,
                    "post_median_time_to_target_s": 19.7,
                    "book_reached": "2 of 2",
                    "post_reached": "1 of 1",
                    "post_over_book_time": 2.814,
                }
            }
        },
    }
    text = bench.benchmarks_against_others(env, dqn, posts)
    assert "| book's JAX CartPole, 1 env | 450,000 | 4.5 |" in text
    assert "| book's JAX CartPole, 64 envs | 6,400,000 | 64.0 |" in text
    assert "| gymnax CartPole, 64 envs | 3,200,000 | 32.0 |" in text
    assert "| this book | 7.2 | 1 of 2 |" in text and "| rejax 0.1.3 | 46.9 | 1 of 1 |" in text
    # the post's ablation variant is not its agent: the median is of the post's run alone
    assert "| post's maze, 4 pairs | the post | 30,000 | 19.7 | 1 of 1 |" in text
    assert "| post's maze, 4 pairs | this book | 22,000 | 7.0 | 2 of 2 |" in text
    assert "post / this book: 2.8x." in text and "/ gymnasium: 64x steps/s" in text
    with pytest.raises(ValueError, match="result: expected the env_throughput result, missing"):
        bench.benchmarks_against_others({}, dqn, posts)
    with pytest.raises(
        ValueError, match="result: expected the dqn_cartpole result, missing book_all_seeds"
    ):
        bench.dqn_cartpole_table({"book": []})
    committed = {
        n: bench.load_result(n) for n in ("env_throughput", "dqn_cartpole", "source_posts")
    }
    assert _table_rows(bench.dqn_cartpole_table(committed["dqn_cartpole"]))
    assert "| task | agent |" in bench.benchmarks_against_others(*committed.values())
    # in Japanese: the same rows and figures under Japanese headers
    _same_table_in_japanese(text, bench.benchmarks_against_others(env, dqn, posts, "ja"))
    _same_table_in_japanese(bench.dqn_cartpole_table(dqn), bench.dqn_cartpole_table(dqn, "ja"))
    assert "| 本書 | 1 | 3.9 | 4.7 | 未到達 | 未到達 |" in bench.dqn_cartpole_table(dqn, "ja")
    ja = bench.benchmarks_against_others(env, dqn, posts, "ja")
    assert "| 記事の迷路（4 組） | 記事 | 30,000 | 19.7 | 1 個中 1 個 |" in ja
    assert "| 本書 | 7.2 | 2 個中 1 個 |" in ja and "| 本書の JAX CartPole、64 環境 |" in ja
    _same_table_in_japanese(
        bench.dqn_cartpole_table(committed["dqn_cartpole"]),
        bench.dqn_cartpole_table(committed["dqn_cartpole"], "ja"),
    )
    _same_table_in_japanese(
        bench.benchmarks_against_others(*committed.values()),
        bench.benchmarks_against_others(*committed.values(), language="ja"),
    )


def test_the_japanese_tables_check_can_fail():
    """The check of the Japanese tables rejects a table left in English, a changed figure and
    a dropped row; the tables reject a language they are not written in."""
    from companion import bench

    posts = bench.load_result("source_posts")
    en, ja = bench.post_dqn_table(posts), bench.post_dqn_table(posts, "ja")
    with pytest.raises(AssertionError):
        _same_table_in_japanese(en, en)
    with pytest.raises(AssertionError):
        _same_table_in_japanese(en, ja.replace("| 33 |", "| 34 |", 1))
    with pytest.raises(AssertionError):
        _same_table_in_japanese(en, ja.rsplit("\n", 1)[0])
    with pytest.raises(AssertionError):  # a label left in English
        _same_table_in_japanese(en, ja.replace("| 本書 |", "| book |"))
    for table in (bench.post_ppo_table, bench.post_dqn_table, bench.measured_on):
        with pytest.raises(ValueError, match="language: expected one of \\('en', 'ja'\\)"):
            table(posts, "fr")


def test_dqn_levers_table_in_japanese():
    """Chapter 10's lever table: every configuration of the committed result has its Japanese
    label, with the same counts and figures."""
    from companion import bench

    stability = bench.load_result("dqn_stability")
    en, ja = bench.dqn_levers_table(stability), bench.dqn_levers_table(stability, "ja")
    _same_table_in_japanese(en, ja)
    _same_table_in_japanese(bench.measured_on(stability), bench.measured_on(stability, "ja"))
    labels = [row.split(" | ")[0].lstrip("| ") for row in _table_rows(ja)]
    assert labels == [bench.words._label(name, "ja") for name in stability["configs"]]
    assert not set(labels) & set(stability["configs"])  # every one translated
    n = len(next(iter(stability["configs"].values()))["keys"])
    first = next(iter(stability["configs"].values()))
    assert f"| {n} 個中 {first['final_solved']} 個（" in _table_rows(ja)[0]
    en, ja = bench.dqn_grid_table(stability), bench.dqn_grid_table(stability, "ja")
    _same_table_in_japanese(en, ja)
    assert len(_table_rows(ja)) == 5 and "| ターゲットネットワークなし | 0 | 28（" in ja


def _chapter_glue(monkeypatch, stem: str, cells: tuple[str, ...]) -> tuple[dict, str]:
    """A chapter's hidden cells that glue the committed results' figures, run here with a
    ``glue`` that records: ``(the glued texts by name, the prose on one line)``."""
    import json

    import companion.glue
    from companion import bench
    from companion.bench import load_result_or_note

    glued: dict = {}
    monkeypatch.setattr(companion.glue, "glue", lambda **texts: glued.update(texts))
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
    source = {c.get("id"): "".join(c["source"]) for c in nb["cells"]}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for cell in cells:
        exec(
            source[cell],
            {
                "np": np,
                "dqn": dqn,
                "bench": bench,
                "glue": companion.glue.glue,
                "load_result_or_note": load_result_or_note,
                "plt": plt,
            },
        )
    plt.close("all")
    prose = " ".join(
        " ".join("".join(c["source"]).split()) for c in nb["cells"] if c["cell_type"] == "markdown"
    )
    return glued, prose


def _dqn_chapter_glue(monkeypatch) -> tuple[dict, str]:
    """Chapter 7's hidden cells that glue the committed results' figures."""
    cells = ("dqn-stability-glue", "dqn-layernorm-glue", "dqn-grid-glue")
    return _chapter_glue(monkeypatch, "07_dqn", cells)


def test_dqn_chapter_quotes_the_committed_stability_results(monkeypatch):
    """The figures chapter 7's prose quotes from the lever benchmark (dqn_stability) and
    those chapter 10 quotes from it (its section 7 lays it out) are those of the committed
    results, computed by the book's statistics rule (companion.stats), and the directions the
    prose states are the rule's."""
    import json

    from companion import stats

    results = ROOT / "benchmarks" / "results"
    stability = json.loads((results / "dqn_stability.json").read_text())
    rows = stability["configs"]
    posts = json.loads((results / "source_posts.json").read_text())
    glued, prose = _dqn_chapter_glue(monkeypatch)
    levers, levers_prose = _chapter_glue(monkeypatch, "10_silent_bugs", ("silent-levers-glue",))
    chapter = rows["chapter"]
    # the chapter's row is the chapter's configuration and network, on keys it was not tuned on
    default = dqn.DQNConfig()._asdict()
    assert chapter["layer_norm"] is True
    assert {k: v for k, v in chapter["config"].items() if k != "eval_episodes"} == {
        k: v for k, v in default.items() if k != "eval_episodes"
    }
    assert chapter["keys"] == list(range(33, 66)) and len(rows) == 7
    low, high = stats.share_interval(chapter["final_solved"], 33)
    in_both = {
        "stab_keys": "33",
        "stab_chapter_solved": str(chapter["final_solved"]),
        "stab_noln_solved": str(rows["without LayerNorm"]["final_solved"]),
    }
    assert {name: glued[name] for name in in_both} == in_both
    assert glued["stab_chapter_ci"] == f"{low:.2f}–{high:.2f}"
    # the median over all keys, the keys that never reach 475 counted as later than any step
    steps = sorted(float("inf") if s is None else s for s in chapter["steps_to_475"])
    assert glued["stab_chapter_steps"] == f"{steps[16]:,.0f}"
    expected = in_both | {
        "stab_run_steps": f"{dqn.DQNConfig().env_steps_run:,}",
        "stab_chapter_quarter": f"{chapter['last_quarter_eval_mean']:.0f}",
        "stab_buffer_solved": str(rows["buffer 10,000"]["final_solved"]),
    }
    assert {name: levers[name] for name in expected} == expected
    # each lever's p: McNemar on the shared keys, Holm over the six, as written out here
    chapter_solved = np.asarray(chapter["final_returns"]) >= 475
    names = [n for n in rows if n != "chapter"]
    raw = []
    for name in names:
        solved = np.asarray(rows[name]["final_returns"]) >= 475
        only_lever, only_chapter = (
            int((solved & ~chapter_solved).sum()),
            int((~solved & chapter_solved).sum()),
        )
        k, m = min(only_lever, only_chapter), only_lever + only_chapter
        raw.append(min(1.0, 2 * sum(math.comb(m, i) for i in range(k + 1)) / 2**m) if m else 1.0)
    order = np.argsort(raw)
    adjusted = np.empty(len(raw))
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, raw[i] * (len(raw) - rank)))
        adjusted[i] = running
    shorts = {"without LayerNorm": "noln", "1 gradient step per iteration": "one"}
    shorts |= {"batch 64": "batch", "constant learning rate": "constant"}
    shorts |= {"Polyak τ = 0.005 every step": "polyak", "buffer 10,000": "buffer"}
    for name, p in zip(names, adjusted):
        assert levers[f"stab_{shorts[name]}_p"] == f"{p:.2g}", name
        said = "fewer" if p < 0.05 else "within the spread"
        assert f"{{glue:md}}`stab_{shorts[name]}_solved`, {said} (p =" in levers_prose, name
    # the LayerNorm lesson: every key's values pass the bound without it
    on, off = chapter, rows["without LayerNorm"]
    assert glued["stab_ln_q_min_off"] == f"{min(off['q_max']):,.0f}"
    assert glued["stab_ln_q_max_on"] == f"{max(on['q_max']):,.0f}"
    assert min(off["q_max"]) > 100
    # one key at a time (source_posts, keys 0-32) against the table (Fisher, other keys)
    book = posts["comparisons"]["dqn"]["book"]
    assert levers["stab_one_key_solved"] == str(book["final_solved"])
    fisher = stats.unpaired_solved(book["final_solved"], 33, chapter["final_solved"], 33)
    assert levers["stab_one_key_p"] == f"{fisher.p_value:.2f}"
    # the grid: what the reading quotes, from the committed rows
    grid = stability["grid"]
    assert len(grid) == 20 and {r["budget"] for r in grid.values()} == {40_000, 120_000}
    slow = [r for r in grid.values() if r["mean_lag"] > 50]
    slow_short = [r for r in slow if r["budget"] == 40_000]
    assert glued["grid_slow_short_max"] == str(max(r["final_solved"] for r in slow_short))
    grid_glued, grid_prose = _chapter_glue(monkeypatch, "10_silent_bugs", ("silent-grid-glue",))
    assert grid_glued["grid_form_pairs"] == "8"
    assert {k: grid_glued[k] for k in glued if k.startswith("grid_")} == {
        k: v for k, v in glued.items() if k.startswith("grid_")
    }  # the two chapters quote the same readings
    for row in grid.values():  # the mean lag the table prints is the configuration's
        period, tau = row["config"]["target_update_period"], row["config"]["target_tau"]
        lag = (period - 1) / 2 if tau == 1.0 else (1 - tau) / tau
        assert row["mean_lag"] == pytest.approx(lag)
        assert row["config"]["total_steps"] == row["budget"]
        assert row["config"]["buffer_capacity"] >= row["budget"]
    # the prose quotes them where they belong
    for phrase in (
        "{glue:md}`stab_noln_solved` without LayerNorm against",
        "the final parameters of {glue:md}`page_final_solved` of this page's",
        "(Fisher's exact test, p = {glue:md}`stab_page_p`)",
        "within the spread (McNemar, p = {glue:md}`huber_p`)",
    ):
        assert phrase in prose, phrase
    for key in ("pegoud2023gentle", "gallici2025simplifying", "liesen2024rejax"):
        assert f"{{cite}}`{key}`" in prose, key
    for key in ("henderson2018deep", "agarwal2021deep", "mcnemar1947note", "holm1979simple"):
        assert f"{{cite}}`{key}`" in prose, key


def test_a_flipped_lever_fails_the_chapter(monkeypatch, tmp_path):
    """Chapter 10's lever glue stops when the committed result no longer says what its prose
    says (here: the batch of 64 made to lose every key the chapter solves)."""
    import json

    import companion.bench

    stability = json.loads((ROOT / "benchmarks" / "results" / "dqn_stability.json").read_text())
    stability["configs"]["batch 64"]["final_returns"] = [0.0] * 33
    real = companion.bench.load_result_or_note
    monkeypatch.setattr(
        companion.bench,
        "load_result_or_note",
        lambda name: (stability, "") if name == "dqn_stability" else real(name),
    )
    with pytest.raises(AssertionError, match="batch 64: as the list below says"):
        _chapter_glue(monkeypatch, "10_silent_bugs", ("silent-levers-glue",))


def test_silent_bugs_chapter_quotes_the_book_dqns_two_configurations(monkeypatch):
    """Chapter 10's hidden cell on chapter 7's two DQN configurations (the chapter's and the
    earlier Polyak one) glues the committed source_posts figures, and its words say what they
    say."""
    import json

    import companion.glue

    posts = json.loads((ROOT / "benchmarks" / "results" / "source_posts.json").read_text())
    glued: dict = {}
    monkeypatch.setattr(companion.glue, "glue", lambda **texts: glued.update(texts))
    nb = json.loads((ROOT / "notebooks" / "10_silent_bugs.ipynb").read_text())
    source = {c.get("id"): "".join(c["source"]) for c in nb["cells"]}
    exec(source["silent-polyak-glue"], {"posts": posts, "glue": companion.glue.glue, "np": np})
    cmp = posts["comparisons"]["dqn"]
    post, polyak = cmp["post"], cmp["earlier"]
    assert glued["dqn_polyak_final"] == (
        f"{polyak['final_solved']} of the {polyak['seeds']}",
        f"{polyak['seeds']} 個中 {polyak['final_solved']} 個",
    )
    # medians over all 33 keys, a key that never reached 475 counted as later than any
    chapter_steps = sorted(
        float("inf") if r["steps_to_target"] is None else r["steps_to_target"]
        for r in posts["book_dqn_runs"]
    )[16]
    polyak_time = sorted(
        float("inf") if r["time_to_target_s"] is None else r["time_to_target_s"]
        for r in posts["earlier_dqn_runs"]
    )[16]
    assert glued["dqn_chapter_steps"] == f"{chapter_steps:,.0f}"
    assert glued["dqn_polyak_time"] == f"{polyak_time:.1f} s"
    assert glued["dqn_post_quarter"] == f"{post['last_quarter_eval_mean']:.0f}"
    book_time = sorted(
        float("inf") if r["time_to_target_s"] is None else r["time_to_target_s"]
        for r in posts["book_dqn_runs"]
    )[16]
    # the ratio of the two medians over all keys, and a paired interval that holds it
    ratio = book_time / polyak_time
    assert glued["dqn_polyak_time_ratio"] == f"{ratio:.2f}"
    low, high = (float(x) for x in glued["dqn_polyak_time_ci"].split("–"))
    assert low <= float(f"{ratio:.2f}") <= high < 1  # the prose: less time
    from companion import stats

    by_seed = {r["seed"]: r["final_return"] >= 475 for r in posts["earlier_dqn_runs"]}
    book_by_seed = {r["seed"]: r["final_return"] >= 475 for r in posts["book_dqn_runs"]}
    seeds = sorted(by_seed)
    mcnemar = stats.paired_solved(
        np.array([by_seed[k] for k in seeds]), np.array([book_by_seed[k] for k in seeds])
    )
    assert glued["dqn_polyak_p"] == f"{mcnemar.p_value:.2f}"
    prose = " ".join(
        " ".join("".join(c["source"]).split()) for c in nb["cells"] if c["cell_type"] == "markdown"
    )
    assert "holds 475 on {glue:md}`dqn_polyak_final` keys" in prose


def test_silent_bugs_chapter_reads_what_source_posts_holds():
    """Chapter 10 glues every figure of its prose from the committed results in a hidden cell;
    here: the fields that cell reads are in source_posts (and chapter 7's dqn_stability), and
    the benchmark settings its prose states (prose_settings) are the configuration that
    source_posts ran."""
    import json

    results = ROOT / "benchmarks" / "results"
    posts = json.loads((results / "source_posts.json").read_text())
    stability = json.loads((results / "dqn_stability.json").read_text())
    nb = json.loads((ROOT / "notebooks" / "10_silent_bugs.ipynb").read_text())
    # what the glue cell reads
    key0 = {r["variant"] for r in posts["ppo_runs"] if r["seed"] == 0}
    assert {
        "post",
        "mask fixed (-inf in the loss)",
        "value broadcast fixed",
        "all 9 pairs drawn",
    } <= key0
    for r in posts["ppo_runs"]:
        assert {"steps_to_target", "time_to_target_s", "eval_episodes"} <= set(r)
        for task in ("post-medium", "post-medium-9", "book-medium"):
            assert {"sampled", "greedy"} <= set(r["final_success"][task])
    dqn_variants = {r["variant"] for r in posts["dqn_runs"]}
    assert {"post", "CartPole-v1 reward and truncation"} <= dqn_variants
    for r in posts["dqn_runs"] + posts["book_dqn_runs"]:
        assert {"final_return", "steps_to_target", "time_to_target_s", "eval_episodes"} <= set(r)
    assert all("post_solved_step" in r for r in posts["dqn_runs"])
    chapter = [c for name, c in stability["configs"].items() if name.startswith("chapter")]
    assert chapter and all({"final_solved", "keys"} <= set(c) for c in chapter)
    # the settings the prose states are those the benchmark ran
    settings = {s["phrase"] for s in nb["metadata"]["prose_settings"]}
    ppo, post_dqn = posts["ppo_config"], posts["dqn_config"]
    book_ppo, book_dqn = posts["book_ppo_config"], posts["book_dqn_config"]
    every = posts["ppo_eval_every_updates"] * ppo["num_envs"] * ppo["num_steps"]
    stated = [
        f"{ppo['num_envs']} environments × {ppo['num_steps']} steps per update",
        f"{ppo['num_epochs']} epochs of minibatches of {ppo['minibatch_size']:,}",
        f"Adam at {ppo['learning_rate']:.0e}".replace("e-04", "e-4"),
        f"{ppo['total_timesteps']:,} steps",
        f"trains for {book_ppo['total_timesteps']:,}",
        f"Every {every:,} steps",
        f"time to {posts['ppo_target']}",
        f"MLP [{', '.join(str(n) for n in post_dqn['hidden_sizes'] + [2])}]",
        f"γ = {post_dqn['gamma']}",
        f"{post_dqn['total_steps']:,} steps of one environment",
        f"a {post_dqn['buffer_size']}-transition buffer",
        f"copied every {post_dqn['target_period']} steps",
        f"Every {posts['dqn_eval_every_steps']:,} steps",
        f"every {book_dqn['num_envs'] * book_dqn['eval_every']:,}-step block",
        f"time to {posts['dqn_target']:.0f}",
        f"more than {post_dqn['solved_length']} steps",
    ]
    assert not [s for s in stated if s not in settings], [s for s in stated if s not in settings]
    assert {r["eval_episodes"] for r in posts["ppo_runs"] + posts["book_ppo_runs"]} == {1000}
    assert {r["eval_episodes"] for r in posts["dqn_runs"] + posts["book_dqn_runs"]} == {100}
    assert "plays 1,000 fresh episodes" in settings and "100 greedy episodes" in settings
    assert {r["seed"] for r in posts["ppo_runs"] if r["variant"] != "post"} == {0}  # "key 0"
    # "the book's [DQN], which trains four environments with a larger budget and a longer
    # warm-up"
    assert book_dqn["num_envs"] == 4 and book_dqn["total_steps"] > post_dqn["total_steps"]
    assert book_dqn["learning_starts"] > post_dqn["prefill_steps"]


def test_lab_times_only_times_the_named_chapters_and_keeps_the_other_rows(tmp_path, monkeypatch):
    import lab_times

    stems = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    old = {
        "date": "2026-01-02T03:04:05+00:00",
        "quick": False,
        "budget": "tiny",
        "chapters": {s: {"seconds": 1.0, "cells": 2, "slowest": []} for s in stems},
    }
    old["chapters"]["99_removed"] = {"seconds": 5.0, "cells": 1, "slowest": []}
    out = tmp_path / "lab_times.json"
    out.write_text(json.dumps(old))
    timed = []

    def fake(path):
        timed.append(path.stem)
        return {"seconds": 7.0, "cells": 3, "slowest": []}

    monkeypatch.setattr(lab_times, "time_to_first_exercise", fake)
    result = lab_times.main(["--only", stems[1], "--out", str(out)])
    assert timed == [stems[1]]
    assert list(result["chapters"]) == stems  # the notebooks' order; the removed row dropped
    assert result["chapters"][stems[1]]["seconds"] == 7.0
    assert result["chapters"][stems[1]]["measured"] == result["date"] != old["date"]
    assert result["chapters"][stems[0]] == {"measured": old["date"], **old["chapters"][stems[0]]}
    assert result["rows_kept_from"] == old["date"]
    assert json.loads(out.read_text()) == result
    with pytest.raises(SystemExit, match="no notebook named"):
        lab_times.main(["--only", "99_removed", "--out", str(out)])


def test_a_flipped_grid_reading_fails():
    """The grid's readings stop a page whose committed result no longer says what they say:
    a slow target that suddenly solves every key in the short budget is not 'fewer'."""
    import copy

    from companion import bench

    stability = bench.load_result("dqn_stability")
    readings = bench.dqn_grid_readings(stability)
    assert readings["grid_form_pairs"] == "8" and readings["grid_slow_short_max"] == str(
        max(
            r["final_solved"]
            for r in stability["grid"].values()
            if r["mean_lag"] > 50 and r["budget"] == 40_000
        )
    )
    flipped = copy.deepcopy(stability)
    flipped["grid"]["copy every 200, LayerNorm, 40,000 steps"]["final_returns"] = [500.0] * 33
    with pytest.raises(AssertionError, match="with copy every 200 for 40,000 steps, fewer keys"):
        bench.dqn_grid_readings(flipped)


def test_dqn_expected_times_compile_once_then_runs_over_the_share_that_solves():
    from companion import bench

    def run(variant, seed, run_s, final):
        return {
            "variant": variant,
            "seed": seed,
            "compile_s": 1.0,
            "run_s": run_s,
            "final_return": final,
        }

    posts = {
        # post: every key solves, runs of median 2.5 s: 1 + 2.5 / 1 = 3.5 s
        "dqn_runs": [run("post", k, 1.0 + k, 500.0) for k in range(4)]
        + [run("CartPole-v1 reward and truncation", 0, 9.0, 0.0)],
        # book: every key solves, runs of median 5.5 s: 1 + 5.5 = 6.5 s
        "book_dqn_runs": [run("book", k, 4.0 + k, 480.0) for k in range(4)],
    }
    post_s, book_s, ratio, low, high = bench.dqn_expected_times(posts)
    assert (post_s, book_s) == (3.5, 6.5)
    assert ratio == pytest.approx(6.5 / 3.5) and low <= ratio <= high
    # three of the book's four keys solve: 1 + 5.5 / 0.75, the compile not repeated per retry
    posts["book_dqn_runs"][0]["final_return"] = 0.0
    assert bench.dqn_expected_times(posts)[1] == pytest.approx(1 + 5.5 / 0.75)
    for r in posts["book_dqn_runs"]:
        r["final_return"] = 0.0
    with pytest.raises(ValueError, match="solving final policy for both agents"):
        bench.dqn_expected_times(posts)


def _notebook(path, cells):
    import nbformat

    notebook = nbformat.v4.new_notebook()
    for source, tags in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = tags
        notebook.cells.append(cell)
    nbformat.write(notebook, path)
    return path


def test_device_notebooks_records_a_pass_and_names_the_failing_cell(tmp_path):
    import device_notebooks
    import nbformat

    good = _notebook(
        tmp_path / "good.ipynb",
        [
            ("import os\nbudget = os.environ['DRLJAX_BUDGET']", []),
            ("raise RuntimeError('a build skips this cell')", ["skip-execution"]),
            ("%time assert budget == 'tiny'", []),  # IPython syntax runs, as in a kernel
        ],
    )
    record = device_notebooks._run_in_process(good, "tiny", timeout=120)
    assert record["passed"] and record["cells"] == 2, record
    ids = [c.id for c in nbformat.read(good, as_version=4).cells]
    assert record["slowest"]["id"] in (ids[0], ids[2]) and "last_cell" not in record
    assert "cell" not in record["slowest"]  # an index shifts when a cell is added above

    bad = _notebook(
        tmp_path / "bad.ipynb",
        [
            ("x = 1", []),
            ("def f():\n    raise ValueError('wrong sign')\nf()", ["solution"]),
            ("x = 2", []),
        ],
    )
    record = device_notebooks._run_in_process(bad, "tiny", timeout=120)
    assert not record["passed"] and record["cells"] == 2
    stable_id = nbformat.read(bad, as_version=4).cells[1].id  # survives cells added above
    assert record["failed_cell"] == {"id": stable_id, "first_line": "def f():"}
    assert record["error"].splitlines()[-1] == "ValueError: wrong sign"

    slow = _notebook(tmp_path / "slow.ipynb", [("x = 1", []), ("import time; time.sleep(60)", [])])
    record = device_notebooks._run_in_process(slow, "tiny", timeout=8)
    assert not record["passed"] and "ran past --timeout 8 s" in record["error"]
    first_id = nbformat.read(slow, as_version=4).cells[0].id
    assert record["last_cell"]["id"] == first_id  # the last cell that finished


def test_device_notebooks_committed_rows_name_the_device_and_every_notebook_they_ran():
    committed = json.loads((ROOT / "benchmarks/results/device_notebooks.json").read_text())
    stems = {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}
    for device, entry in committed["devices"].items():
        assert entry["hardware"]["devices"][0] == device and entry["budget"] in ("tiny", "full")
        assert set(entry["notebooks"]) <= stems, "a row names a notebook that no longer exists"
        for stem, row in entry["notebooks"].items():
            assert row["seconds"] > 0 and row["compilation_cache"] in ("on", "off"), stem
            assert row["passed"] or row["error"], stem
