"""What a pack run tells its user: ``report.json``, ``manifest.json``, ``lengths.png`` and the
printed summary.  Pure functions of the run's counters (computed in ``run``)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np


def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically (temp file + rename): readers never see half a file."""
    tmp = path.with_name("." + path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class LengthHistogram:
    """Exact document-length counts (a growing ``bincount``): percentiles and the plot."""

    def __init__(self) -> None:
        self.counts = np.zeros(0, dtype=np.int64)

    def add(self, lengths: np.ndarray) -> None:
        if lengths.size == 0:
            return
        c = np.bincount(lengths)
        if c.shape[0] > self.counts.shape[0]:
            c[: self.counts.shape[0]] += self.counts
            self.counts = c.astype(np.int64)
        else:
            self.counts[: c.shape[0]] += c

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def to_dict(self) -> dict[str, list[int]]:
        nz = np.flatnonzero(self.counts)
        return {"length": nz.tolist(), "count": self.counts[nz].tolist()}

    @classmethod
    def from_dict(cls, d: dict[str, list[int]]) -> LengthHistogram:
        h = cls()
        if d["length"]:
            h.counts = np.zeros(max(d["length"]) + 1, dtype=np.int64)
            h.counts[np.asarray(d["length"], dtype=np.int64)] = d["count"]
        return h

    def stats(self, seq_len: int | None = None) -> dict[str, Any]:
        n = self.total
        if n == 0:
            return {"documents": 0}
        cum = np.cumsum(self.counts)
        pct = {f"p{p}": int(np.searchsorted(cum, p / 100 * n)) for p in (50, 90, 99)}
        nz = np.flatnonzero(self.counts)
        out = {"documents": n, "min": int(nz[0]), **pct, "max": int(nz[-1]),
               "mean": round(float((np.arange(self.counts.shape[0]) * self.counts).sum() / n), 1)}
        if seq_len is not None:
            out["over_seq_len"] = int(self.counts[seq_len + 1:].sum())
        return out

    def plot(self, path: Path, seq_len: int | None, title: str) -> None:
        """Histogram of document lengths (log-spaced bins when lengths span decades), seq_len marked."""
        # The object API with the Agg canvas: no pyplot global state, no GUI backend, ever.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(8, 4.2), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        fig.subplots_adjust(left=0.08, right=0.98, top=0.92, bottom=0.12)  # fixed: tight_layout costs a draw
        nz = np.flatnonzero(self.counts)
        if nz.size:
            lo, hi = max(1, int(nz[0])), int(nz[-1]) + 1
            log = hi / lo > 50
            width = max(1, -(-(hi - lo) // 50))  # integer-wide bins: each holds the same number of lengths
            edges = (np.unique(np.geomspace(lo, hi, 50).astype(np.int64)) if log
                     else np.arange(lo, hi + width, width))
            ax.hist(nz, bins=edges, weights=self.counts[nz], color="#4C72B0", edgecolor="white", linewidth=0.4)
            if log:
                ax.set_xscale("log")
            st = self.stats(seq_len)
            ax.axvline(st["p50"], color="#555555", linestyle=":", linewidth=1.2, label=f"median {st['p50']:,}")
        if seq_len is not None:
            over = int(self.counts[seq_len + 1:].sum())
            ax.axvline(seq_len, color="#C44E52", linewidth=2,
                       label=f"seq_len {seq_len:,} ({over:,} longer)")
        ax.set_xlabel("document length (tokens)")
        ax.set_ylabel("documents")
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(frameon=False)
        tmp = path.with_name("." + path.name + ".tmp.png")
        fig.savefig(tmp)
        os.replace(tmp, path)


def error_summary(errors_path: Path, limit: int = 10) -> dict[str, Any]:
    """Counts by code from ``errors.jsonl`` (read back: it may hold far more than memory should)."""
    codes: Counter[str] = Counter()
    first: list[dict[str, Any]] = []
    if errors_path.exists():
        with open(errors_path, encoding="utf-8") as f:
            for line in f:
                e = json.loads(line)
                codes[e["code"]] += 1
                if len(first) < limit:
                    first.append(e)
    return {"by_code": dict(codes.most_common()), "first": first}


def where(e: dict[str, Any]) -> str:
    """``file:line 17`` / ``file:row 16`` for one errors.jsonl entry."""
    for key in ("line", "row", "item"):
        if key in e:
            return f"{e['file']}:{key} {e[key]}" if key != "line" else f"{e['file']}:{e[key]}"
    return str(e.get("file"))


def format_error(e: dict[str, Any]) -> str:
    text = f"{where(e)}: [{e['code']}] {e['message']}"
    loc = []
    if e.get("message_index") is not None:
        loc.append(f"message {e['message_index']}")
    if e.get("field") is not None:
        loc.append(f"field {e['field']!r}")
    if loc:
        text += f" (at {', '.join(loc)})"
    if e.get("hint"):
        text += f". Hint: {e['hint']}"
    return text


def format_report(r: dict[str, Any]) -> str:
    """The summary printed at the end of ``ocml pack`` (also what ``report.json`` holds)."""
    c = r["counts"]
    lines = [f"ocml pack: {c['records']:,} records from {len(r['inputs'])} input file(s) -> {r['out']}",
             f"  format      {r['format']} on {r['tokenizer']}, mask {r['mask']}, cot {r['cot']}"]
    bad = c["bad_records"]
    by_code = ", ".join(f"{k} {v}" for k, v in r["errors"]["by_code"].items())
    lines.append(f"  documents   {c['documents']:,} rendered, {bad:,} bad record(s) skipped"
                 + (f" ({by_code}) -> errors.jsonl" if bad else ""))
    tok, trained = c["tokens"], c["trained_tokens"]
    share = f" ({trained / tok:.1%})" if tok else ""
    lines.append(f"  tokens      {tok:,} in documents, {trained:,} trained{share}")
    p = r.get("pack")
    if p is not None:
        lines.append(f"  rows        {p['rows']:,} x {p['seq_len']:,}, fill {p['fill_rate']:.2%}, "
                     f"padding {p['padding_tokens']:,} tokens")
        n_over = p["split"] + p["truncated"] + p["dropped"]
        lines.append(f"  overlong    split {p['split']}, truncated {p['truncated']}, dropped {p['dropped']} "
                     f"({p['dropped_tokens']:,} tokens lost)" + (f" -> {p['overlong_file']}" if n_over else ""))
    else:
        unit = {"preference": "pair", "kto": "example"}.get(r.get("shape", "auto"), "conversation")
        lines.append(f"  rows        {c['documents']:,} (one per {unit}, not packed)")
    st = r["lengths"]
    if st.get("documents"):
        lines.append(f"  lengths     min {st['min']:,}  median {st['p50']:,}  p90 {st['p90']:,}  p99 {st['p99']:,}  "
                     f"max {st['max']:,}  -> lengths.png")
    shards = r["shards"]
    lines.append(f"  shards      {shards['count']} x {', '.join(shards['outputs'])} "
                 f"({', '.join(shards['dirs'])}), manifest.json, report.json")
    t = r["timing"]
    lines.append(f"  time        {t['seconds']:.1f} s, {t['records_per_s']:,.0f} records/s, "
                 f"{t['tokens_per_s']:,.0f} tokens/s, {t['workers']} worker(s)"
                 + (f", resumed at shard {t['resumed_from_shard']}" if t.get("resumed_from_shard") else ""))
    if bad:
        lines.append("  first bad records:")
        lines += [f"    {format_error(e)}" for e in r["errors"]["first"][:5]]
    return "\n".join(lines)
