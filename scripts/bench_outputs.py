"""Cost of the issue-17 outputs, as ratios against the plain path in the same run.

    .venv/bin/python scripts/bench_outputs.py [--docs 50000] [--seq-len 4096] [--reps 3]

* ``pack(..., pad_to_multiple_of=N)`` vs ``pack(...)`` (global BFD, same documents; the
  lognormal and short-chat mixes of ``bench_pack.py``): time ratio, and fill (document
  tokens / row capacity) with and without the per-document padding;
* ``Packed.seq_idx`` (the per-token segment index) vs building the dense rows;
* the Megatron writer (``IndexedWriter``: ids .bin + .idx) vs ``np.save`` of the same
  flat ids + offsets (the unpacked ``.npy`` layout), on the same documents.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from bench_pack import best, lengths_for, ragged_for  # noqa: E402

from ocml.encoder.pack import pack  # noqa: E402
from ocml.encoder.pipeline.megatron import IndexedWriter, token_dtype  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=50_000)
    ap.add_argument("--seq-len", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    for mix in ("lognormal", "short-chat"):
        r = ragged_for(lengths_for(mix, a.docs, 0), 0)
        tokens = int(r["offsets"][-1])
        base_t, base = best(lambda: pack(r, a.seq_len, pad_id=0), a.reps)
        print(f"{mix}: {a.docs:,} docs, {tokens / 1e6:.1f} M tokens; plain pack {base_t:.3f} s "
              f"({tokens / base_t / 1e6:.0f} M tok/s), fill {base.report.fill_rate:.4%}")
        for n in (8, 64, 256):
            t, p = best(lambda: pack(r, a.seq_len, pad_id=0, pad_to_multiple_of=n), a.reps)
            print(f"  pad_to_multiple_of={n:<4} time x{t / base_t:.2f}  fill {p.report.fill_rate:.4%}  "
                  f"rows {p.rows:,} vs {base.rows:,}")
        t, _ = best(lambda: base.seq_idx, a.reps)
        print(f"  seq_idx: {t:.3f} s = x{t / base_t:.2f} of the pack")
        with tempfile.TemporaryDirectory() as d:
            def megatron() -> None:
                w = IndexedWriter(Path(d) / "m", token_dtype(201_088))
                w.add(r["ids"], r["offsets"])
                w.commit()

            def npy() -> None:
                np.save(Path(d) / "ids.npy", r["ids"].astype(np.int32))
                np.save(Path(d) / "offsets.npy", r["offsets"])

            tm, _ = best(megatron, a.reps)
            tn, _ = best(npy, a.reps)
            print(f"  Megatron .bin/.idx write {tm:.3f} s vs .npy {tn:.3f} s: x{tm / tn:.2f}")


if __name__ == "__main__":
    main()
