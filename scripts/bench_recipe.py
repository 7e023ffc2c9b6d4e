"""A recipe run of ``ocml pack`` against a plain run of the same input: the cost of the split,
dedup, weights and the two-pass shuffle, as a ratio measured in one process.

    python scripts/bench_recipe.py [--records 4000] [--seq-len 4096] [--reps 3] [--workers 1]

Input: clean chat records from ``scripts/make_sample.py``'s generator as two JSONL sources.
Plain: ``ocml pack a.jsonl b.jsonl`` (one streaming pass, rows in packer order).  Recipe: the
same sources, weight 1 each, ``validation: 0.01``, ``dedup: exact``, shuffle on (so the same
documents are rendered; the recipe adds the spool, the plan, a second packing pass over the
spool and the row permutation).  Also: the spool's peak size on disk per document token, and
the documents-per-row correlation of both outputs (the shuffle's effect).
Interleaved repetitions, medians; a shared VM is noisy, read the ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from bench_pipeline import write_jsonl  # noqa: E402

from ocml.encoder.pipeline.recipe import resolve_recipe  # noqa: E402
from ocml.encoder.pipeline.recipe_run import run_recipe  # noqa: E402
from ocml.encoder.pipeline.run import PackOptions, run  # noqa: E402
from ocml.encoder.pipeline.shuffle import order_correlation  # noqa: E402


def docs_per_row(out: Path) -> list[int]:
    import pyarrow.parquet as pq

    return [len(x) for f in sorted((out / "data").glob("train-*.parquet"))
            for x in pq.read_table(f, columns=["seq_lengths"]).column("seq_lengths").to_pylist()]


def spool_peak(folder: Path, stop: threading.Event, peak: list[int]) -> None:
    while not stop.is_set():
        try:
            peak[0] = max(peak[0], sum(p.stat().st_size for p in folder.rglob("*.bin")))
        except OSError:
            pass
        time.sleep(0.02)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=4000)
    ap.add_argument("--seq-len", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        write_jsonl(tmp / "a.jsonl", args.records // 2, seed=1)
        write_jsonl(tmp / "b.jsonl", args.records - args.records // 2, seed=2)
        inputs = [str(tmp / "a.jsonl"), str(tmp / "b.jsonl")]
        recipe = resolve_recipe({"seq_len": args.seq_len, "workers": args.workers, "plot": False, "seed": 1,
                                 "validation": 0.01, "dedup": "exact", "overwrite": True,
                                 "sources": [{"path": p} for p in inputs]})
        plain_t, recipe_t, peak = [], [], [0]
        rep_plain = rep_recipe = None
        for _ in range(args.reps):
            t0 = time.perf_counter()
            rep_plain = run(PackOptions(inputs=tuple(inputs), out=tmp / "plain", seq_len=args.seq_len,
                                        workers=args.workers, plot=False, overwrite=True)).report
            plain_t.append(time.perf_counter() - t0)
            stop = threading.Event()
            watcher = threading.Thread(target=spool_peak, args=(tmp / "recipe" / ".ocml" / "spool", stop, peak))
            watcher.start()
            t0 = time.perf_counter()
            rep_recipe = run_recipe(recipe, tmp / "recipe").report
            recipe_t.append(time.perf_counter() - t0)
            stop.set()
            watcher.join()
        assert rep_plain is not None and rep_recipe is not None
        tokens = rep_plain["counts"]["tokens"]
        p, r = statistics.median(plain_t), statistics.median(recipe_t)
        print(json.dumps({
            "records": args.records, "document_tokens": tokens, "workers": args.workers,
            "plain_s": round(p, 3), "recipe_s": round(r, 3), "recipe_over_plain": round(r / p, 3),
            "spool_peak_bytes_per_token": round(peak[0] / tokens, 2),
            "row_docs_correlation": {"plain": round(order_correlation(docs_per_row(tmp / "plain")), 3),
                                     "recipe": round(order_correlation(docs_per_row(tmp / "recipe")), 3)},
            "rows": {"plain": rep_plain["pack"]["rows"], "recipe": rep_recipe["pack"]["rows"]},
        }, indent=2))


if __name__ == "__main__":
    main()
