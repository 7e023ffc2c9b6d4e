"""What a pack run tells its user: ``report.json``, ``manifest.json``, ``lengths.png`` and the
printed summary, from the run's counters (computed in ``run``)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from .errorfile import ERRORS, format_error

OVERLONG = "overlong.jsonl"  # every dropped / truncated / split document, by file and line


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
            ax.hist(nz, bins=edges.tolist(), weights=self.counts[nz], color="#4C72B0", edgecolor="white", linewidth=0.4)
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


def log_summary(path: Path, key: str, limit: int = 10) -> dict[str, Any]:
    """Counts by ``key`` of a JSON Lines log and its first entries (read back: the log may
    hold far more than memory should)."""
    counts: Counter[str] = Counter()
    first: list[dict[str, Any]] = []
    if path.exists():
        with open(path, encoding="utf-8") as f:
            for line in f:
                e = json.loads(line)
                counts[e[key]] += 1
                if len(first) < limit:
                    first.append(e)
    return {f"by_{key}": dict(counts.most_common()), "first": first}


def error_summary(errors_path: Path, limit: int = 10) -> dict[str, Any]:
    """Counts by code from ``errors.jsonl``."""
    return log_summary(errors_path, "code", limit)


def format_report(r: dict[str, Any]) -> str:
    """The summary printed at the end of ``ocml pack`` (also what ``report.json`` holds)."""
    c = r["counts"]
    lines = [f"ocml pack: {c['records']:,} records from {len(r['inputs'])} input(s) -> {r['out']}",
             f"  format      {r['format']} on {r['tokenizer']}, mask {r['mask']}, cot {r['cot']}"]
    bad = c["bad_records"]
    by_code = ", ".join(f"{k} {v}" for k, v in r["errors"]["by_code"].items())
    pieces = c.get("pieces", c["documents"])
    lines.append(f"  documents   {c['documents']:,} rendered"
                 + (f" ({pieces:,} pieces: text split at --seq-len)" if pieces != c["documents"] else "")
                 + f", {bad:,} bad record(s) skipped" + (f" ({by_code}) -> errors.jsonl" if bad else ""))
    u = r.get("untrained")
    if u is not None:
        why = ", ".join(f"{k} {v}" for k, v in u["by_reason"].items())
        lines.append(f"  untrained   {u['count']:,} document(s) with nothing to train "
                     + ("kept (--keep-untrained)" if u["kept"] else "skipped")
                     + (f" ({why}) -> {u['file']}" if u["count"] else ""))
    ign = r.get("columns", {}).get("ignored")
    if ign:
        lines.append("  columns     ignored: " + ", ".join(f"{k} ({v:,} records)" for k, v in list(ign.items())[:8])
                     + (f", +{len(ign) - 8} more" if len(ign) > 8 else "") + " (--extra-columns error refuses them)")
    tok, trained = c["tokens"], c["trained_tokens"]
    share = f" ({trained / tok:.1%})" if tok else ""
    lines.append(f"  tokens      {tok:,} in documents, {trained:,} trained after every policy{share}")
    t = r.get("trained")
    if t is not None and t["removed"]:
        removed = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in t["removed"].items())
        lines.append(f"  trained     {t['rendered']:,} rendered; removed by policy: {removed}")
    p = r.get("pack")
    if p is not None:
        lines.append(f"  rows        {p['rows']:,} x {p['seq_len']:,}, fill {p['fill_rate']:.2%}, "
                     f"padding {p['padding_tokens']:,} tokens"
                     + (f" (documents padded to multiples of {p['pad_to_multiple_of']})"
                        if p.get("pad_to_multiple_of") else ""))
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

# -- the finished run -------------------------------------------------------------------------------

def trained_summary(packed: bool, rendered: int, tot: Any, start_trained: int) -> dict[str, Any]:
    """Trained tokens as rendered, what each policy removed, and what the rows train
    (``tot``: the packers' ``run.PackTotals``; plain and recipe runs both report this)."""
    removed = ({"overlong_drop": tot.dropped_trained, "overlong_truncate": tot.truncated_trained,
                "overlong_split": tot.split_trained, "document_start": start_trained} if packed else {})
    after = tot.trained_tokens if packed else rendered
    return {"rendered": rendered, "removed": removed, "after": after}


def overlong_entries(where: Any, report: Any, **extra: Any) -> list[str]:
    """The ``overlong.jsonl`` lines of a packer report (``where(index)``: the document's file,
    line, source and record)."""
    lines = []
    for kind, recs in (("dropped", report.dropped), ("truncated", report.truncated), ("split", report.split)):
        for r in recs:
            lines.append(json.dumps({**where(r.index), **extra, "action": kind, "length": r.length, "kept": r.kept,
                                     "pieces": r.pieces, "reason": r.reason, "trained": r.trained,
                                     "trained_kept": r.trained_kept}, ensure_ascii=False) + "\n")
    return lines


def errors_section(out: Path, max_bad_fraction: float, bad: int, records: int) -> dict[str, Any]:
    """The report's ``errors``: counts by code, the first bad records, the gate's limit and the fraction."""
    return {"file": ERRORS, **error_summary(out / ERRORS), "max_bad_fraction": max_bad_fraction,
            "bad_fraction": bad / records if records else 0.0}


def timing_section(seconds: float, records: int, tokens: int, workers: int, resumed_from_shard: int) -> dict[str, Any]:
    """The report's ``timing``: this run's own work (a resumed run counts from its checkpoint)."""
    return {"seconds": round(seconds, 3), "records": records, "tokens": tokens,
            "records_per_s": records / seconds if seconds else 0.0,
            "tokens_per_s": tokens / seconds if seconds else 0.0, "workers": workers,
            "resumed_from_shard": resumed_from_shard}


def shard_dirs(outputs: Any) -> list[str]:
    """The output folders of ``outputs`` (``data/``, ``npy/``, ``megatron/``)."""
    from .shards import MEGATRON_DIR, NPY_DIR, PARQUET_DIR

    return [d + "/" for d, o in ((PARQUET_DIR, "parquet"), (NPY_DIR, "npy"), (MEGATRON_DIR, "megatron"))
            if o in outputs]


def plot_lengths(hist: LengthHistogram, path: Path, seq_len: int | None, documents: int, format_name: str) -> None:
    """``lengths.png``: the document-length histogram with ``seq_len`` marked (both drivers)."""
    title = f"{documents:,} documents, {format_name}" + (f", seq_len {seq_len:,}" if seq_len else "")
    hist.plot(path, seq_len, title)


def manifest_base(opts: Any, enc: Any, fp: str, smap: Any, pad_id: int | None, shards: list[str]) -> dict[str, Any]:
    """The keys every ``manifest.json`` has, whichever driver wrote it: what was rendered with
    what, the row layout, the sources, and the shard paths (``shards``: shard names)."""
    from .options import mask_name, ocml_version
    from .shards import MEGATRON_DIR, NPY_DIR, PARQUET_DIR

    outs = opts.outputs
    return {
        "ocml_version": ocml_version(), "fingerprint": fp, "format": enc.format_name,
        "tokenizer": {"name": enc.tokenizer.name, "vocab_hash": enc.tokenizer.fingerprint,
                      "n_vocab": enc.tokenizer.n_vocab},
        "mask": mask_name(enc.mask), "cot": enc.cot.value, "packed": opts.pack, "seq_len": opts.seq_len,
        "overlong": opts.overlong_policy.value if opts.pack else None, "pad_id": pad_id,
        "columns": manifest_columns(opts.pack, opts.seq_idx, opts.shape, opts.pair_columns),
        "shape": opts.shape, "pad_to_multiple_of": opts.pad_to_multiple_of,
        "sources": smap.manifest(),
        "shards": {"parquet": [f"{PARQUET_DIR}/{n}.parquet" for n in shards] if "parquet" in outs else [],
                   "npy": [f"{NPY_DIR}/{n}" for n in shards] if "npy" in outs else [],
                   "megatron": [f"{MEGATRON_DIR}/{n}" for n in shards] if "megatron" in outs else []},
    }


def manifest_columns(packed: bool, seq_idx: bool, shape: str = "auto", pair_columns: str = "dpo") -> list[str]:
    """The columns of the rows (Parquet / .npy), as the manifest lists them."""
    if shape in ("preference", "kto"):
        return _row_columns(shape, pair_columns)
    if not packed:
        return ["input_ids", "labels", "assistant_masks", "source", "record"]
    return ["input_ids", "labels", "position_ids", "seq_lengths", "doc_source", "doc_record"] + \
        (["seq_idx"] if seq_idx else [])


def untrained_summary(out: Path, kept: bool, count: int) -> dict[str, Any]:
    """The report's ``untrained`` section (documents with nothing to train, ``untrained.jsonl``)."""
    from .untrained import UNTRAINED

    return {"file": UNTRAINED, "kept": kept, "count": count, **log_summary(out / UNTRAINED, "reason")}


def counts_section(c: Any) -> dict[str, int]:
    """The run's counters (numbers only: the ignored columns are the report's ``columns``)."""
    from dataclasses import asdict

    return {k: v for k, v in asdict(c).items() if k != "ignored_columns"}


def columns_section(per_source: list[dict[str, int]], opts: Any) -> dict[str, Any]:
    """The report's ``columns``: extra columns ignored (column -> records carrying one, summed
    over ``per_source``), the rule's settings (``ocml.encoder.inputs.columns``)."""
    so = opts.shape_options()
    ignored: Counter[str] = Counter()
    for d in per_source:
        ignored.update(d)
    return {"ignored": dict(sorted(ignored.items(), key=lambda kv: (-kv[1], kv[0]))),
            "extra_columns": so.extra_columns, "ignore_columns": list(so.ignore_columns)}


def _trained(opts: Any, state: Any) -> dict[str, Any]:
    c = state.counters
    return trained_summary(opts.pack, c.trained_tokens, state.pack_total, c.start_trained)


def final_report(opts: Any, enc: Any, state: Any, inputs: list[dict[str, Any]],
                 n_shards: int, seconds: float) -> dict[str, Any]:
    """Write ``report.json``, ``manifest.json``, ``lengths.png`` and the final progress of a
    finished run (``state``: ``run._Run``); returns the report."""
    from dataclasses import asdict

    from .options import mask_name
    from .resume import PROGRESS, STATE_DIR
    from .shards import shard_name

    out = opts.out
    c = state.counters
    pack = None
    if opts.pack:
        tot = state.pack_total
        with open(out / OVERLONG, encoding="utf-8") as f:
            first = [json.loads(line) for _, line in zip(range(20), f)]
        pack = {**asdict(tot), "fill_rate": tot.fill_rate, "overlong": opts.overlong_policy.value,
                "pad_id": state.packer.pad_id if state.packer is not None else None,
                "pad_to_multiple_of": opts.pad_to_multiple_of,
                "overlong_file": OVERLONG, "overlong_documents": first}
    dirs = shard_dirs(opts.outputs)
    rows = pack["rows"] if pack else c.pieces
    trained = _trained(opts, state)
    run_records, run_tokens = c.records - state.start_counts[0], c.tokens - state.start_counts[1]
    report = {
        "out": str(out), "format": enc.format_name, "tokenizer": enc.tokenizer.name, "mask": mask_name(enc.mask),
        "cot": enc.cot.value, "inputs": list(opts.inputs),
        "counts": counts_section(c) | {"rows": rows, "trained_tokens": trained["after"]},
        "columns": columns_section([c.ignored_columns], opts),
        "trained": trained,
        "untrained": untrained_summary(out, opts.keep_untrained, c.untrained),
        "pack": pack, "lengths": state.hist.stats(opts.seq_len),
        "errors": errors_section(out, opts.max_bad_fraction, c.bad_records, c.records),
        "shards": {"count": n_shards, "outputs": list(opts.outputs), "dirs": dirs,
                   "names": [shard_name(k) for k in range(n_shards)]},
        # This run's own work: a resumed run counts from the checkpoint it started at.
        "timing": timing_section(seconds, run_records, run_tokens, state.workers, state.resumed_shards),
    }
    if opts.plot:
        png = out / "lengths.png"
        state.od.claim([png, png.with_name("." + png.name + ".tmp.png")])
        plot_lengths(state.hist, png, opts.seq_len, c.documents, enc.format_name)
    manifest = {
        **manifest_base(opts, enc, state.fp, state.smap, pack["pad_id"] if pack else None,
                        [shard_name(k) for k in range(n_shards)]),
        "shard_size": opts.shard_size,
        "counts": report["counts"] | ({"trained_labels": pack["trained_tokens"], "fill_rate": pack["fill_rate"]}
                                      if pack else {}),
        "inputs": inputs, "options": opts.output_key(enc),
        "model": state.detection,
    }
    state.od.write_json("manifest.json", manifest)
    state.od.write_json("report.json", report)
    state.od.write_json(f"{STATE_DIR}/{PROGRESS}", {"fingerprint": state.fp, "status": "done", "shards": n_shards,
                                                    "rows": rows, "checkpoint": None})
    return report


def _row_columns(shape: str, pair_columns: str) -> list[str]:
    """The columns of preference / KTO rows (``ocml.encoder.inputs.rows``)."""
    from ..inputs.rows import columns

    return columns(shape, pair_columns)
