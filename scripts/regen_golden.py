"""Rewrite the golden matrix's expected files from the current code.

    python scripts/regen_golden.py [--check]

Renders every (variant, case) of ``tests/fixtures/golden`` (``tests/support/golden.py`` describes the
layout) and writes ``tests/fixtures/golden/<variant>/<case>.json``; files of cells that no
longer exist are removed.  Review the diff before committing: the goldens pin behaviour, they
do not derive it.  ``--check`` writes nothing and exits 1 if any file would change (what
``tests/formats/test_golden.py`` checks, one cell per test).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support import golden  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file would change")
    args = ap.parse_args()
    want = {c.path: golden.dumps(golden.compute(c)) for c in golden.cells()}
    stale = [p for p in golden.ROOT.glob("*/*.json") if p.parent.name != "cases" and p not in want]
    changed = [p for p, text in want.items() if not p.exists() or p.read_text("utf-8") != text]
    for p in changed + stale:
        print(("stale " if p in stale else "changed ") + str(p.relative_to(golden.ROOT)))
    if args.check:
        return 1 if changed or stale else 0
    for p in changed:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(want[p], "utf-8")
    for p in stale:
        p.unlink()
    print(f"{len(want)} cells, {len(changed)} written, {len(stale)} removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
