"""Stream decoder vs ``Encoder.parse`` differential run at any size (issue 15 item 4).

    python scripts/stream_parse_agreement.py [--cases 3300] [--seed 1] [--show 3] [--format F ...]

Reads ``--cases`` id sequences per format x {registered, fallback} (renders, mutated
renders, soups; see ``tests/support/agreement.py``) with both readers and prints the number of
disagreements per pair and in total, with the first ``--show`` disagreements of each pair.
Exit status 1 if any.  The CI test (``tests/decode/test_stream_parse_agreement.py``) runs the same
harness with 300 cases per pair and seed 0.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support import agreement as A  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=3300, help="cases per format x mode (default 3300: 33,000 in all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--show", type=int, default=3, help="disagreements printed per format x mode")
    ap.add_argument("--format", action="append", choices=list(A.FORMATS), help="only these formats")
    args = ap.parse_args()
    keys = [k for k in A.KEYS if not args.format or k[0] in args.format]
    shown: dict[tuple[str, str], int] = {}

    def report(fmt: str, mode: str, case: A.Case, diff: str) -> None:
        if shown.get((fmt, mode), 0) < args.show:
            shown[(fmt, mode)] = shown.get((fmt, mode), 0) + 1
            print(f"--- {fmt} {mode} {case.kind} role={case.role}\nids={case.ids}\n{diff}\n", flush=True)

    t0 = time.perf_counter()
    res = A.run(keys, args.cases, seed=args.seed, report=report)
    bad = sum(b for b, _ in res.values())
    total = sum(n for _, n in res.values())
    for (fmt, mode), (b, n) in res.items():
        print(f"{fmt:16} {mode:10} {b:6} / {n}")
    print(f"disagreements: {bad} of {total} id sequences ({time.perf_counter() - t0:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
