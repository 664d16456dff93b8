"""Run a notebook's cells up to a target cell, many times, and count the runs in which the
target cell completes.

Each run starts a fresh kernel of ``--python`` (default: this interpreter) under nbclient, as
the tests do, in the notebook's folder with ``DRLJAX_BUDGET=tiny``. A target cell that has not
completed within ``--timeout`` seconds counts as not completed (nbclient finds a reply it
missed only when its poll times out, so such a cell "completes" at the timeout). When the
target cell runs past ``--dump-after`` seconds, the tool writes into ``--out`` whether a
message waits unread in the client's shell and IOPub sockets, the kernel's threads (with
``--py-spy``), the kernel's stderr and nbclient's record of when the kernel sent each message.

    python tools/repeat_cell.py notebooks/07_dqn.ipynb --contains "step_explorer(" \\
        --runs 20 --python /path/to/colab-env/bin/python --out /tmp/repeat
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import zmq
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError


def run_once(
    nb,
    python: str,
    cwd: Path,
    timeout: float,
    out: Path,
    tag: str,
    py_spy: str | None,
    dump_after: float,
    again: int = 0,
):
    """Execute ``nb``'s cells in order, then the last one ``again`` more times; return, for
    each execution of the last cell, whether it completed in time.

    A target cell still running after ``dump_after`` seconds has its diagnosis written into
    ``out`` (see the module's docstring).
    """
    with tempfile.TemporaryDirectory() as jupyter:
        spec = Path(jupyter) / "kernels" / "repeat"
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": "repeat",
                    "language": "python",
                }
            )
        )
        os.environ["JUPYTER_PATH"] = jupyter
        os.environ["DRLJAX_BUDGET"] = "tiny"
        client = NotebookClient(
            nb, timeout=timeout, kernel_name="repeat", resources={"metadata": {"path": str(cwd)}}
        )
        stderr_path = out / f"{tag}-kernel-stderr.txt"
        slow = False
        results = []
        with open(stderr_path, "w") as stderr, client.setup_kernel(stderr=stderr):
            cells = list(enumerate(nb.cells)) + [(len(nb.cells) - 1, nb.cells[-1])] * (again)
            for n, (index, cell) in enumerate(cells):

                def dump(index=index, n=n):
                    nonlocal slow
                    slow = True
                    # does a message wait, unread, in the client's sockets? (EVENTS is read
                    # through a plain shadow socket; the client's loop is idle, waiting)
                    waiting = {}
                    for channel in ("shell_channel", "iopub_channel"):
                        sock = getattr(client.kc, channel).socket
                        shadow = zmq.Socket.shadow(sock.underlying)
                        waiting[channel] = bool(shadow.get(zmq.EVENTS) & zmq.POLLIN)
                    (out / f"{tag}-{n}-cell{index}-client.txt").write_text(
                        f"after {dump_after} s, a message waits unread in: {waiting}\n"
                    )
                    if py_spy:
                        pid = client.km.provisioner.pid
                        text = subprocess.run(
                            [py_spy, "dump", "--pid", str(pid), "--locals"],
                            capture_output=True,
                            text=True,
                        )
                        (out / f"{tag}-{n}-cell{index}-py-spy.txt").write_text(
                            text.stdout + text.stderr
                        )

                watchdog = threading.Timer(dump_after, dump)
                target = n >= len(nb.cells) - 1
                if target:
                    watchdog.start()
                start = time.perf_counter()
                try:
                    client.execute_cell(cell, index)
                except CellTimeoutError:
                    results.append(False)
                    break
                finally:
                    watchdog.cancel()
                seconds = time.perf_counter() - start
                if target:
                    # nbclient finds a reply that it missed when its poll times out: a cell
                    # that took the whole timeout did not complete either
                    results.append(seconds < timeout - 1)
                    if seconds >= dump_after:  # when did the kernel write its messages?
                        (out / f"{tag}-{n}-cell{index}-timing.txt").write_text(
                            json.dumps(cell.metadata.get("execution", {}), indent=1) + "\n"
                        )
    if not slow:
        stderr_path.unlink()
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--contains", required=True, help="text that identifies the target cell")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--python", default=sys.executable, help="the kernel's interpreter")
    parser.add_argument("--timeout", type=float, default=120, help="seconds a cell may take")
    parser.add_argument("--py-spy", default=None, help="py-spy executable, to dump a stuck kernel")
    parser.add_argument("--dump-after", type=float, default=30, help="seconds before a dump")
    parser.add_argument(
        "--again",
        type=int,
        default=0,
        help="run the target cell this many more times in each kernel",
    )
    parser.add_argument("--out", type=Path, default=Path("_build/repeat"))
    args = parser.parse_args(argv)

    nb = nbformat.read(args.notebook, as_version=4)
    target = next(
        i for i, c in enumerate(nb.cells) if c.cell_type == "code" and args.contains in c.source
    )
    args.out.mkdir(parents=True, exist_ok=True)
    outcomes = []
    for run in range(args.runs):
        trimmed = nbformat.from_dict(json.loads(json.dumps(nb)))
        trimmed.cells = trimmed.cells[: target + 1]
        results = run_once(
            trimmed,
            args.python,
            args.notebook.resolve().parent,
            args.timeout,
            args.out,
            f"run{run:02d}",
            args.py_spy,
            args.dump_after,
            args.again,
        )
        outcomes += results
        print(
            f"run {run + 1:2d}: cell {target} completed {sum(results)} of {len(results)} times",
            flush=True,
        )
    print(f"{sum(outcomes)} of {len(outcomes)} executions completed cell {target}")
    return 0 if all(outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
