"""Packing speed and fill: ``ocml.encoder.pack`` vs TRL ``pack_dataset``, same lengths, one run.

    .venv/bin/python scripts/bench_pack.py [--docs 100000] [--seq-len 4096] [--reps 1] [--quick]

Two length mixes (seeded):

* ``lognormal``: the reference note's mix (training-ecosystem.md §9): median 401, sigma 1.0,
  clipped to 1..12,288 (~66M tokens for 100k documents, ~1% longer than 4096);
* ``short-chat``: median 160, sigma 0.7, clipped to 8..4,096 (short SFT chats, many
  segments per row: the per-segment costs show here).

Every document alternates untrained / trained runs of 200 tokens (prompt, assistant,
user, ...) with a message index per run, so ``truncate`` has message ends to cut at.

Timed (best of ``--reps``, after one warm-up call so first-touch page faults are not
counted for either side):

* ours, global BFD (``window=None``), ``overlong="truncate"`` and ``"split"`` (one of
  them, and one TRL strategy, when no document is overlong: they are then the same): dense
  ``[rows, seq_len]`` ids / int64 labels / positions, padding, segment table;
* ours, streaming: a ``Packer(window=10_000)`` fed the same ragged arrays, chunks taken
  from ``ready()`` / ``finish()`` as the pipeline does (``overlong="split"``);
* TRL ``pack_dataset(ds, seq_len, strategy="bfd")`` (its default: BFD per 1,000-row
  ``map`` batch; overlong truncated at seq_len) and ``"bfd_split"``, plus ``bfd`` with
  ``map_kwargs={"batch_size": None}`` (TRL global: one timed call, no warm-up), on a ``datasets.Dataset`` with the same
  ids (``input_ids`` int32 and ``labels`` int64 list columns, as after TRL's tokenization).
  TRL rows are unpadded and carry no ``position_ids`` (its collator builds them).

tokens/s = input tokens / time.  fill = document tokens / (rows * seq_len); TRL rows are
unpadded, so its fill is counted the same way (its total tokens over rows * seq_len).

``--epochs``: the fill ``ocml pack`` gets from its epochs (the packer flushed every so many
documents / tokens, so that a kill loses at most one epoch), against global BFD, for the
old schedule (flush every 4 Mi tokens, windows of 100,000 documents) and epochs of
``--epoch-docs`` (default: ``ocml pack``'s ``--window``) documents or 4 Mi tokens.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from ocml.encoder.pack import Packer, pack  # noqa: E402

TURN = 200  # tokens per message in the synthetic documents
MIXES: dict[str, tuple[float, float, int, int]] = {  # median, sigma, min, max
    "lognormal": (401.0, 1.0, 1, 12_288),
    "short-chat": (160.0, 0.7, 8, 4_096),
}


def lengths_for(mix: str, n: int, seed: int) -> np.ndarray:
    median, sigma, lo, hi = MIXES[mix]
    rng = np.random.default_rng(seed)
    return np.clip(np.rint(rng.lognormal(np.log(median), sigma, n)), lo, hi).astype(np.int64)


def ragged_for(lengths: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """Flat ids, a mask alternating 200-token untrained / trained runs, message indices."""
    rng = np.random.default_rng(seed + 1)
    offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    pos = np.arange(total, dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    msg = (pos // TURN).astype(np.int32)
    return {"ids": rng.integers(0, 200_000, total, dtype=np.int32), "mask": (msg % 2) == 1,
            "offsets": offsets, "message_index": msg}


def trl_dataset(r: dict[str, np.ndarray]) -> Any:
    import datasets
    import pyarrow as pa

    offs = pa.array(r["offsets"].astype(np.int32))
    labels = np.where(r["mask"], r["ids"], -100).astype(np.int64)
    table = pa.table({"input_ids": pa.ListArray.from_arrays(offs, pa.array(r["ids"])),
                      "labels": pa.ListArray.from_arrays(offs, pa.array(labels))})
    return datasets.Dataset(datasets.table.InMemoryTable(table))


def best(fn: Callable[[], Any], reps: int, warm: bool = True) -> tuple[float, Any]:
    if warm:
        fn()  # warm-up: allocator / page faults, import costs
    times, out = [], None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def trl_fill(ds: Any, seq_len: int) -> tuple[float, int, int]:
    import pyarrow.compute as pc

    lens = pc.list_value_length(ds.data.column("input_ids")).to_numpy()
    return float(lens.sum()) / (len(lens) * seq_len), len(lens), int(lens.sum())


def run_mix(mix: str, n: int, seq_len: int, reps: int, trl_global: bool) -> None:
    import datasets
    from trl.data_utils import pack_dataset

    datasets.disable_progress_bars()
    lengths = lengths_for(mix, n, seed=0)
    r = ragged_for(lengths, seed=0)
    tokens = int(lengths.sum())
    over = int(np.count_nonzero(lengths > seq_len))
    print(f"\n== {mix}: {n:,} documents, {tokens / 1e6:.1f}M tokens, mean {lengths.mean():.0f}, "
          f"{over:,} longer than seq_len={seq_len}")
    ds = trl_dataset(r)
    rows: list[tuple[str, float, float, int, str]] = []

    def streamed(window: int) -> Any:
        packer = Packer(seq_len, pad_id=0, overlong="split", window=window)
        packer.add_ragged(r["ids"], r["mask"], r["offsets"], None, r["message_index"])
        chunks = list(packer.ready())
        chunks.append(packer.finish())
        return packer

    def ours(label: str, window: int | None = None, **kw: Any) -> float:
        if window is None:
            dt, p = best(lambda: pack(r, seq_len, pad_id=0, **kw), reps)
        else:
            dt, p = best(lambda: streamed(window), reps)
        rep = p.report
        note = (f"dropped {rep.dropped_tokens / tokens:.2%} tok ({len(rep.dropped)} docs), "
                f"truncated {len(rep.truncated)}, split {len(rep.split)}")
        rows.append((label, dt, rep.fill_rate, rep.rows, note))
        return dt

    def trl(label: str, strategy: str, **map_kwargs: Any) -> float:
        slow = "batch_size" in map_kwargs  # TRL global: ~10 s per call at 100k documents, timed once
        dt, out = best(lambda: pack_dataset(ds, seq_len, strategy=strategy, map_kwargs=map_kwargs or None),
                       1 if slow else reps, warm=not slow)
        fill, n_rows, kept = trl_fill(out, seq_len)
        rows.append((label, dt, fill, n_rows, f"dropped {1 - kept / tokens:.2%} tok (head kept)"
                     if kept < tokens else "dropped 0"))
        return dt

    # Without overlong documents truncate == split for both packers: time them once.
    t_ours_tr = ours("ocml pack global, truncate", overlong="truncate") if over else None
    t_ours_sp = ours("ocml pack global, split", overlong="split")
    ours("ocml Packer window=10000, split", window=10_000)
    t_trl = trl("TRL pack_dataset bfd (batch 1000)", "bfd") if over else None
    t_trl_sp = trl("TRL pack_dataset bfd_split (1000)", "bfd_split")
    t_trl_g = trl("TRL pack_dataset bfd (global)", "bfd", batch_size=None) if trl_global else None
    w = max(len(x[0]) for x in rows)
    print(f"{'':{w}}  {'time':>8}  {'M tok/s':>8}  {'fill':>8}  {'rows':>7}  notes")
    for label, dt, fill, n_rows, note in rows:
        print(f"{label:{w}}  {dt:8.3f}  {tokens / dt / 1e6:8.1f}  {fill:8.4%}  {n_rows:7,}  {note}")
    fills = {x[0]: x[2] for x in rows}
    if t_trl is not None and t_ours_tr is not None:
        print(f"ratio ocml global truncate / TRL bfd (1000):  {t_trl / t_ours_tr:5.2f}x faster")
    print(f"ratio ocml global split / TRL bfd_split (1000): {t_trl_sp / t_ours_sp:5.2f}x faster")
    if t_trl_g is not None and t_ours_tr is not None:
        print(f"ratio ocml global truncate / TRL bfd (global): {t_trl_g / t_ours_tr:5.2f}x faster")
    print(f"fill window=10000 vs global (split): "
          f"{(fills['ocml pack global, split'] - fills['ocml Packer window=10000, split']) * 100:+.4f} points")


def epoch_fill(r: dict[str, np.ndarray], seq_len: int, overlong: str, epoch_docs: int | None,
               epoch_tokens: int, window: int | None) -> tuple[float, int, int]:
    """(fill, rows, epochs) when documents are packed in epochs as ``ocml pack`` does."""
    lengths = np.diff(r["offsets"])
    n = lengths.shape[0]
    tokens = rows = epochs = 0
    a = 0
    while a < n:
        cum = np.cumsum(lengths[a:])
        b = a + int(np.searchsorted(cum, epoch_tokens, side="left")) + 1  # the document that crosses the limit
        if epoch_docs is not None:
            b = min(b, a + epoch_docs)
        b = min(b, n)
        t0, t1 = int(r["offsets"][a]), int(r["offsets"][b])
        packer = Packer(seq_len, pad_id=0, overlong=overlong, window=window)
        packer.add_ragged(r["ids"][t0:t1], r["mask"][t0:t1], r["offsets"][a:b + 1] - t0, None,
                          r["message_index"][t0:t1])
        list(packer.ready())
        packer.finish()
        tokens += packer.report.tokens
        rows += packer.report.rows
        epochs += 1
        a = b
    return tokens / (rows * seq_len), rows, epochs


def run_epochs(mix: str, n: int, seq_len: int, epoch_docs: int) -> None:
    from ocml.encoder.pipeline.options import DEFAULT_EPOCH_TOKENS

    lengths = lengths_for(mix, n, seed=0)
    r = ragged_for(lengths, seed=0)
    print(f"\n== {mix}: {n:,} documents, {int(lengths.sum()) / 1e6:.1f}M tokens, seq_len {seq_len}")
    for overlong in ("truncate", "split"):
        g = pack(r, seq_len, pad_id=0, overlong=overlong).report
        old = epoch_fill(r, seq_len, overlong, None, DEFAULT_EPOCH_TOKENS, 100_000)
        new = epoch_fill(r, seq_len, overlong, epoch_docs, DEFAULT_EPOCH_TOKENS, None)
        print(f"{overlong:8}  global {g.fill_rate:.4%} ({g.rows:,} rows) | before: 4 Mi-token epochs "
              f"{old[0]:.4%} ({old[2]} epochs) | now: {epoch_docs:,}-document / 4 Mi-token epochs {new[0]:.4%} "
              f"({new[2]} epochs) | now - before {(new[0] - old[0]) * 100:+.4f} points, "
              f"now - global {(new[0] - g.fill_rate) * 100:+.4f} points")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--seq-len", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--mix", choices=[*MIXES, "all"], default="all")
    ap.add_argument("--no-trl-global", action="store_true", help="skip TRL's slow global BFD")
    ap.add_argument("--quick", action="store_true", help="20,000 documents, 1 rep (smoke run)")
    ap.add_argument("--epochs", action="store_true", help="only the fill of ocml pack's epochs (see the doc)")
    ap.add_argument("--epoch-docs", type=int, default=None, help="documents per epoch (default: ocml pack's)")
    a = ap.parse_args()
    if a.quick:
        a.docs, a.reps = 20_000, 1
    if a.epochs:
        from ocml.encoder.pipeline.options import DEFAULT_WINDOW

        for mix in (MIXES if a.mix == "all" else [a.mix]):
            run_epochs(mix, a.docs, a.seq_len, a.epoch_docs or DEFAULT_WINDOW)
        return
    for mix in (MIXES if a.mix == "all" else [a.mix]):
        run_mix(mix, a.docs, a.seq_len, a.reps, trl_global=not a.no_trl_global and mix == "lognormal")


if __name__ == "__main__":
    main()
