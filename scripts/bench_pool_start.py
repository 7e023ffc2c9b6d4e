"""Render-pool start-up: time until every worker has rendered its first chunk, per start method.

    python scripts/bench_pool_start.py [--workers 2] [--reps 3] [--format harmony]

Each repetition runs in a fresh interpreter (a forkserver lives as long as its process).
``fork`` is what Linux uses when the main process has one thread; ``forkserver`` is forced
by starting an idle thread first (what happens when a progress bar or a library thread is
up).  The reference in the same run is building the encoder in this process (loading its
vocabulary): a worker that must do that itself pays about that much on its first chunk.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, threading, time
method, fmt, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter()
from ocml import encoder
from ocml.encoder.pipeline.readers import Chunk, Kind, Position
from ocml.encoder.pipeline.workers import RenderPool, RenderSpec
enc = encoder.Encoder(fmt)
enc.render([{"role": "user", "content": "hi"}])
build = time.perf_counter() - t0
if method == "forkserver":
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
line = json.dumps({"messages": [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}]}).encode()
pos = Position(0, 0)
chunks = [Chunk(k, 0, Kind.JSONL, 1, [line] * 8, 8, pos, pos) for k in range(4 * workers)]
t1 = time.perf_counter()
with RenderPool(enc, RenderSpec(), workers) as pool:
    n = sum(r.documents for r in pool.map(iter(chunks)))
assert n == 8 * len(chunks), n
print(json.dumps({"build": build, "pool": time.perf_counter() - t1}))
if method == "forkserver":
    stop.set()
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--format", default="harmony")
    args = ap.parse_args()
    for method in ("fork", "forkserver"):
        runs = [json.loads(subprocess.run([sys.executable, "-c", CHILD, method, args.format, str(args.workers)],
                                          check=True, capture_output=True, text=True).stdout.splitlines()[-1])
                for _ in range(args.reps)]
        build = statistics.median(r["build"] for r in runs)
        pool = statistics.median(r["pool"] for r in runs)
        print(f"{method:>10}: pool start + {4 * args.workers} chunks {pool:.2f} s "
              f"(encoder build in the parent {build:.2f} s; ratio {pool / build:.2f})")


if __name__ == "__main__":
    main()
