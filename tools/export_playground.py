"""Export the generalising chapter's saved random-maze agents for the book's playground page.

Reads the planning agent (``companion/data/ppo_value_iteration_maze.eqx``) and the
propagation agent (``ppo_random_maze.eqx``), each with its configuration in the ``.json``
beside it, and writes ``book/_static/playground/weights.js``, which
``book/_static/playground/agent.js`` reads in the browser.

    python tools/export_playground.py          # write weights.js
    python tools/export_playground.py --check  # exit 1 if weights.js is stale

tests/test_playground.py checks that the committed file is what this script writes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from companion import playground

OUT = Path(__file__).resolve().parent.parent / "book" / "_static" / "playground" / "weights.js"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=OUT, help="file to write (default: %(default)s)"
    )
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    text = playground.weights_js()
    if args.check:
        current = args.out.read_text() if args.out.exists() else None
        if current != text:
            print(f"{args.out} is stale: run python tools/export_playground.py", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text.encode()):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
