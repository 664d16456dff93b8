"""Keep the book's execution cache honest about the companion package.

jupyter-cache (behind ``make book``) re-executes a notebook when its code cells change, but
it does not see the ``companion`` package the notebooks import: after a change to a helper,
the cached outputs would show what the old helper did. This script fingerprints the package
(every file under ``companion/``, sources and data) and, when the fingerprint differs from
the one stored with the cache, clears the cache and Sphinx's saved environment
(``_build/.doctrees``; without it Sphinx would not even read the unchanged notebooks again),
so that the next build executes every notebook again (they all import the package). The
data files the notebooks read (the quizzes in ``notebooks/quizzes``) are part of the same
fingerprint. With all of it unchanged it does nothing, and jupyter-cache re-executes only
the notebooks whose code changed.

    python tools/book_cache.py [--cache _build/.jupyter_cache]   # run by ``make book``
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAMP = "companion.sha256"


def fingerprint(package: Path, *data: Path) -> str:
    """SHA-256 over the relative paths and contents of every file in ``package`` and in the
    ``data`` folders (``__pycache__`` folders and ``.pyc`` files left out)."""
    digest = hashlib.sha256()
    for folder in (package, *data):
        digest.update(folder.name.encode() + b"\0\0")
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            digest.update(str(path.relative_to(folder)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def refresh(
    cache: Path, package: Path, doctrees: Path | None = None, data: tuple[Path, ...] = ()
) -> bool:
    """Clear ``cache`` (and ``doctrees``, when given) if ``package`` or a ``data`` folder
    changed since the fingerprint stored in ``cache``.

    Returns:
        True if the cache was cleared (or did not exist), False if it was kept.
    """
    current = fingerprint(package, *data)
    stamp = cache / STAMP
    if stamp.is_file() and stamp.read_text().strip() == current:
        return False
    if cache.exists():
        shutil.rmtree(cache)
    if doctrees is not None and doctrees.exists():
        shutil.rmtree(doctrees)
    cache.mkdir(parents=True)
    stamp.write_text(current + "\n")
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=ROOT / "_build" / ".jupyter_cache")
    parser.add_argument("--package", type=Path, default=ROOT / "companion")
    parser.add_argument("--doctrees", type=Path, default=ROOT / "_build" / ".doctrees")
    parser.add_argument(
        "--data", type=Path, nargs="*", default=[ROOT / "notebooks" / "quizzes"],
        help="folders of data files that the notebooks read",
    )
    args = parser.parse_args(argv)
    if refresh(args.cache, args.package, args.doctrees, tuple(args.data)):
        print(f"companion or notebook data changed (or no cache yet): {args.cache} starts empty")
    else:
        print("companion unchanged: cached notebooks whose code did not change are reused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
