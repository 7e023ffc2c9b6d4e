"""Main-process memory of ``ocml pack`` as the input grows: peak RSS, split into anonymous memory
and file-backed pages (the recipe spool's memory maps), for the default (recipe) run and the
streaming ``--no-shuffle`` run.

    python scripts/mem_pack.py [--records 10000,20000,40000,80000] [--seq-len 4096] [--workers 1]
                               [--kinds recipe,plain]

Each run is a fresh subprocess (``ocml.encoder.pipeline`` API, ``--workers`` render processes,
no plot); this process samples the child's ``/proc/PID/status`` (``VmRSS``, ``RssAnon``,
``RssFile``) every 20 ms and prints the peaks, and the child's ``VmHWM``.  Input: clean chat
records from ``scripts/make_sample.py``'s generator.  File-backed pages are the kernel's page
cache mapped into the process: reclaimable, not the process's own allocations.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from bench_pipeline import write_jsonl  # noqa: E402

CHILD = r"""
import sys
from pathlib import Path
from ocml.encoder.pipeline.recipe import resolve_recipe
from ocml.encoder.pipeline.recipe_run import run_recipe
from ocml.encoder.pipeline.run import PackOptions, run
if __name__ == "__main__":
    kind, path, out, seq_len, workers = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    if kind == "recipe":
        run_recipe(resolve_recipe({"sources": [{"path": path}], "seq_len": seq_len, "workers": workers,
                                   "plot": False, "progress": False}), out)
    else:
        run(PackOptions(inputs=(path,), out=out, seq_len=seq_len, workers=workers, plot=False, progress=False))
    print(open("/proc/self/status").read())
"""
FIELDS = ("VmRSS", "RssAnon", "RssFile")


def status(pid: int) -> dict[str, int]:
    try:
        with open(f"/proc/{pid}/status") as f:
            return {k: int(v.split()[0]) for k, _, v in (line.partition(":") for line in f) if k in FIELDS}
    except (OSError, ValueError):
        return {}


def measure(kind: str, path: Path, out: Path, seq_len: int, workers: int) -> dict[str, float]:
    p = subprocess.Popen([sys.executable, "-c", CHILD, kind, str(path), str(out), str(seq_len), str(workers)],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = dict.fromkeys(FIELDS, 0)
    t0 = time.perf_counter()
    while p.poll() is None:
        for k, v in status(p.pid).items():
            peak[k] = max(peak[k], v)
        time.sleep(0.02)
    out_text, err = p.communicate()
    if p.returncode:
        raise SystemExit(f"{kind} run failed: {err[-2000:]}")
    hwm = next(int(line.split()[1]) for line in out_text.splitlines() if line.startswith("VmHWM:"))
    return {**{k: v / 1024 for k, v in peak.items()}, "VmHWM": hwm / 1024, "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", default="10000,20000,40000,80000")
    ap.add_argument("--seq-len", type=int, default=4096)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--kinds", default="recipe,plain")
    args = ap.parse_args()
    print(f"{'run':8} {'records':>8} {'VmHWM':>7} {'RSS':>7} {'anon':>7} {'file':>7}   MB (peaks)  seconds")
    with tempfile.TemporaryDirectory() as t:
        for n in map(int, args.records.split(",")):
            path = Path(t) / f"in-{n}.jsonl"
            write_jsonl(path, n, seed=7)
            for kind in args.kinds.split(","):
                r = measure(kind, path, Path(t) / f"out-{kind}-{n}", args.seq_len, args.workers)
                print(f"{kind:8} {n:>8,} {r['VmHWM']:>7.0f} {r['VmRSS']:>7.0f} {r['RssAnon']:>7.0f} "
                      f"{r['RssFile']:>7.0f}   {r['seconds']:>18.1f}", flush=True)


if __name__ == "__main__":
    main()
