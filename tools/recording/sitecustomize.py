"""Record which files of the book a Python process reads (``tools/book_cache.py``).

Python imports ``sitecustomize`` at start-up from ``sys.path``. ``tools/execute_notebooks.py``
puts this folder first on each notebook kernel's ``PYTHONPATH`` and names a file in
``BOOK_READS`` and the checkout in ``BOOK_READS_ROOT``; every file under that root which the
process opens for reading (a module it imports, a result file, a quiz, a trained agent) is
then appended to the file, one path relative to the root a line, once per process. A Python
process that the kernel starts inherits both variables and appends to the same file. Without
``BOOK_READS`` nothing is installed.
"""

import os
import sys


def _install(record: str, root: str) -> None:
    root = os.path.realpath(root) + os.sep
    seen: set[str] = set()
    out = open(record, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 (open for the process's life)
    writing = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT

    def hook(event: str, args: tuple) -> None:
        if event != "open":
            return
        path, mode, flags = args
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):  # an open file descriptor
            return
        if mode is not None and any(c in mode for c in "wax+"):
            return
        if mode is None and isinstance(flags, int) and flags & writing:
            return
        full = os.path.realpath(path)
        if full.startswith(root) and full not in seen:
            seen.add(full)
            out.write(full[len(root) :] + "\n")

    sys.addaudithook(hook)


if os.environ.get("BOOK_READS"):
    _install(os.environ["BOOK_READS"], os.environ.get("BOOK_READS_ROOT", os.getcwd()))
