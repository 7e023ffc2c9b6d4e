"""The ``ocml pack`` pipeline: inputs -> rendered documents -> packed rows -> shards.

Order: records are read in input order in chunks (``readers``), rendered by worker
processes (``workers``), and consumed strictly in chunk order: the packer and the shard
writer see the same documents in the same order whatever ``workers`` is, so the output is
byte-identical for any worker count.

Memory bound, whatever the input size: ``in_flight`` (2 x workers + 1) chunks of at most
``chunk_records`` records / 4 MiB of input, plus one *epoch* of documents in the packer:
the packer is flushed (its last rows written) every ``epoch_tokens`` document tokens
(default 4 Mi; about one row of fill is lost per flush), and its output is converted to
shards 1 Mi tokens at a time.  The main process peaks near 60 bytes x ``epoch_tokens``
(~240 MB) above its ~175 MB of imports and vocabulary; a worker stays near 110 MB
(measured in ``scripts/bench_pipeline.py``: the same peak for 7.6 M and 15 M tokens).

Resume: an epoch boundary is a point where the packer is empty, so the run's state there
is small: the input position after the chunk that ended it, the rows written so far, the
counters, the size of ``errors.jsonl`` and the length histogram.  When shard k is renamed
into place, ``.ocml/progress.json`` records k and the last epoch boundary whose rows all
lie in complete shards.  A rerun of the same command (same fingerprint of input +
options) restarts at that boundary, drops the rows it re-derives that are already in
complete shards, and writes the rest: the final output is the same as an uninterrupted
run.  Work redone: at most one epoch plus one shard.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import InputError, OcmlError
from ..packing.packed import fill_rate
from .readers import Position, Source, count_records, iter_chunks, resolve
from .report import LengthHistogram, error_summary, format_error, format_report, write_json
from .shards import IGNORE, NPY_DIR, PARQUET_DIR, Block, ShardWriter, remove_shards_from, shard_name
from .workers import RecordError, Rendered, RenderPool, RenderSpec, default_workers

STATE_DIR = ".ocml"
PROGRESS = "progress.json"
ERRORS = "errors.jsonl"
OVERLONG = "overlong.jsonl"  # every dropped / truncated / split document, by file and line
ARTEFACTS = (PARQUET_DIR, NPY_DIR, STATE_DIR, "manifest.json", "report.json", ERRORS, OVERLONG, "lengths.png")
OUTPUTS = ("parquet", "npy")
LOC_BITS = 40           # document index = source << 40 | location (what the packer reports back)
WRITE_TOKENS = 1 << 20  # tokens converted / written at a time (bounds the conversion copies)
SHOW_ERRORS = 10        # bad records printed as they come; all go to errors.jsonl
# Test hook: "shard:N" (shard N renamed, progress not yet saved), "progress:N" (saved), "epoch:N"
# (epoch N's rows handed to the writer: mid-shard, temporary files open) -> SIGKILL there.
FAULT_ENV = "OCML_PACK_FAULT"


class StrictStop(OcmlError):
    """``--strict`` met a bad record."""

    code = "E-STRICT"


@dataclass(frozen=True)
class PackOptions:
    """Everything ``ocml pack`` takes (see ``encoder.cli`` for the user-facing help)."""

    inputs: tuple[str, ...]
    out: Path
    format: str = "openchatml-2.2"
    tokenizer: str | None = None
    seq_len: int | None = None
    mask: str = "default"
    cot: str = "default"
    #: ChatML's reasoning policy (``encoder.reasoning``); None = the format's default, any other format refuses it
    reasoning: str | None = None
    workers: int = 0                 # 0 = all cores
    messages_field: str = "messages"
    tools_field: str = "tools"
    overlong: str = "split"
    strict: bool = False
    shard_size: int = 8192           # rows per shard
    pack: bool = True
    outputs: tuple[str, ...] = ("parquet",)
    window: int = 100_000            # documents per best-fit window (the packer's)
    pad_id: int | None = None
    overwrite: bool = False
    progress: bool | None = None     # None = when stderr is a terminal
    chunk_records: int = 256
    epoch_tokens: int = 1 << 22
    plot: bool = True                # write lengths.png (matplotlib costs ~0.3 s a run)

    def output_key(self, enc: Any) -> dict[str, Any]:
        """The options the output depends on (part of the fingerprint; workers / progress /
        strict / overwrite are not: they never change a byte of the output)."""
        return {
            "format": enc.format_name, "tokenizer": enc.tokenizer.name, "vocab": enc.tokenizer.fingerprint,
            "mask": _policy(enc.mask), "cot": enc.cot.value, "seq_len": self.seq_len, "pack": self.pack,
            "overlong": self.overlong, "window": self.window, "pad_id": self.pad_id, "shard_size": self.shard_size,
            "outputs": list(self.outputs), "messages_field": self.messages_field, "tools_field": self.tools_field,
            "chunk_records": self.chunk_records, "epoch_tokens": self.epoch_tokens, "ocml": ocml_version(),
            **({"reasoning": self.reasoning} if self.reasoning else {}),
        }


@dataclass
class Counters:
    records: int = 0
    documents: int = 0
    bad_records: int = 0
    tokens: int = 0
    trained_tokens: int = 0


@dataclass
class PackTotals:
    """The packers' reports summed over epochs (counts only: the overlong documents
    themselves go to ``overlong.jsonl``, so the state stays small however many there are)."""

    seq_len: int = 0
    documents: int = 0
    segments: int = 0
    tokens: int = 0
    trained_tokens: int = 0
    rows: int = 0
    padding_tokens: int = 0
    dropped: int = 0
    truncated: int = 0
    split: int = 0
    dropped_tokens: int = 0

    def add(self, rep: Any) -> None:
        for k in ("documents", "segments", "tokens", "trained_tokens", "rows", "padding_tokens", "dropped_tokens"):
            setattr(self, k, getattr(self, k) + getattr(rep, k))
        self.dropped += len(rep.dropped)
        self.truncated += len(rep.truncated)
        self.split += len(rep.split)

    @property
    def fill_rate(self) -> float:
        return fill_rate(self.tokens, self.rows, self.seq_len)


@dataclass
class Checkpoint:
    """The run's state at an epoch boundary (the packer is empty there)."""

    position: dict[str, int]
    rows: int
    counters: dict[str, int]
    errors_bytes: int
    overlong_bytes: int
    lengths: dict[str, list[int]]
    pack: dict[str, int]


@dataclass
class RunResult:
    report: dict[str, Any]
    exit_code: int = 0
    text: str = ""
    resumed: bool = False
    already_done: bool = False
    errors: list[RecordError] = field(default_factory=list)


def ocml_version() -> str:
    from ocml import __version__  # one home for the version

    return __version__


def _policy(mask: Any) -> Any:
    from ..masks import NAMED_MASKS

    for name, pol in sorted(NAMED_MASKS.items(), key=lambda kv: kv[0] != "default"):
        if pol == mask:
            return name
    d = asdict(mask)
    return {k: sorted(v) if isinstance(v, frozenset) else v for k, v in d.items()}


def input_fingerprint(sources: list[Source]) -> list[dict[str, Any]]:
    """Per input: name, kind, size and a hash of its first and last MiB (cheap on any size;
    a same-size edit in the middle of a huge file goes unnoticed)."""
    out = []
    for s in sources:
        h = hashlib.sha256()
        with open(s.path, "rb") as f:
            h.update(f.read(1 << 20))
            if s.size > 2 << 20:
                f.seek(s.size - (1 << 20))
                h.update(f.read())
        out.append({"path": s.display, "kind": s.kind.value, "compression": s.compression, "size": s.size,
                    "sha256_head_tail": h.hexdigest()[:32]})
    return out


def fingerprint(inputs: list[dict[str, Any]], key: dict[str, Any]) -> str:
    blob = json.dumps({"inputs": [{k: v for k, v in i.items() if k != "path"} | {"name": Path(i["path"]).name}
                                  for i in inputs], "options": key}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


# -- the output folder ------------------------------------------------------------------------------

def _prepare_out(out: Path, fp: str, overwrite: bool) -> dict[str, Any] | None:
    """Create / check the output folder; the saved progress when resuming, else None."""
    progress_path = out / STATE_DIR / PROGRESS
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} exists and is not a directory", code="E-OUT", field="--out")
    if overwrite and out.exists():
        for name in ARTEFACTS:
            p = out / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
    if progress_path.exists():
        try:
            progress = json.loads(progress_path.read_text("utf-8"))
        except ValueError:
            progress = {}
        if progress.get("fingerprint") != fp:
            raise InputError(f"{out} holds the output of a different input or options", code="E-OUT-MISMATCH",
                             field="--out", hint="use a new --out, or --overwrite to replace it")
        return progress
    if out.exists() and not overwrite and any(out.iterdir()):
        raise InputError(f"{out} is not empty and holds no ocml pack run", code="E-OUT", field="--out",
                         hint="use a new or empty --out, or --overwrite (removes only ocml's files there)")
    (out / STATE_DIR).mkdir(parents=True, exist_ok=True)
    # Claim the folder for this fingerprint at once: a run killed before its first shard resumes too.
    write_json(progress_path, {"fingerprint": fp, "status": "running", "shards": 0, "rows": 0, "checkpoint": None})
    return None


def _fault(point: str, n: int) -> None:
    if os.environ.get(FAULT_ENV) == f"{point}:{n}":
        os.kill(os.getpid(), signal.SIGKILL)


# -- the run ----------------------------------------------------------------------------------------

class _Run:
    def __init__(self, opts: PackOptions, enc: Any, sources: list[Source], fp: str, inputs: list[dict[str, Any]],
                 progress: dict[str, Any] | None, log: IO[str]) -> None:
        self.opts, self.enc, self.sources, self.fp, self.inputs, self.log = opts, enc, sources, fp, inputs, log
        self.out = opts.out
        self.workers = opts.workers or default_workers()
        ck = progress["checkpoint"] if progress else None
        self.resumed_shards = progress["shards"] if ck else 0
        self.counters = Counters(**ck["counters"]) if ck else Counters()
        self.hist = LengthHistogram.from_dict(ck["lengths"]) if ck else LengthHistogram()
        self.start = Position.from_dict(ck["position"]) if ck else None
        self.pack_total = PackTotals(**ck["pack"]) if ck else PackTotals(opts.seq_len or 0)
        self.errors_file = _reopen(self.out / ERRORS, ck["errors_bytes"] if ck else 0)
        self.overlong_file = _reopen(self.out / OVERLONG, ck["overlong_bytes"] if ck else 0)
        self.shown = 0
        self.live = False  # print bad records as they come (set when a progress bar is shown)
        remove_shards_from(self.out, self.resumed_shards)
        self.writer = ShardWriter(self.out, packed=opts.pack, seq_len=opts.seq_len or 0, shard_rows=opts.shard_size,
                                  parquet="parquet" in opts.outputs, npy="npy" in opts.outputs,
                                  skip_rows=self.resumed_shards * opts.shard_size, on_shard=self._on_shard)
        self.writer.rows = ck["rows"] if ck else 0
        # Checkpoints not yet covered by complete shards (the first one always is).
        first = Position(0, sources[0].kind.first_location, 0)
        self.checkpoints: list[Checkpoint] = [Checkpoint(**ck) if ck else self._checkpoint(first)]
        self.packer = self._new_packer() if opts.pack else None
        self.epoch_tokens = 0
        self.epochs = 0

    def _new_packer(self) -> Any:
        from ..pack import Packer

        return Packer(self.opts.seq_len, pad_id=self.opts.pad_id, encoder=self.enc, overlong=self.opts.overlong,
                      window=self.opts.window)

    # -- checkpoints ---------------------------------------------------------------------
    def _checkpoint(self, pos: Position) -> Checkpoint:
        self.errors_file.flush()
        self.overlong_file.flush()
        return Checkpoint(position=pos.to_dict(), rows=self.writer.rows, counters=asdict(self.counters),
                          errors_bytes=self.errors_file.tell(), overlong_bytes=self.overlong_file.tell(),
                          lengths=self.hist.to_dict(), pack=asdict(self.pack_total))

    def _on_shard(self, k: int, rows: int) -> None:
        _fault("shard", k)
        usable = [c for c in self.checkpoints if c.rows <= rows]
        best = usable[-1]
        self.checkpoints = [c for c in self.checkpoints if c.rows >= best.rows]
        write_json(self.out / STATE_DIR / PROGRESS, {
            "fingerprint": self.fp, "status": "running", "shards": k + 1, "rows": rows,
            "checkpoint": asdict(best)})
        _fault("progress", k)

    # -- consuming rendered chunks ----------------------------------------------------------
    def consume(self, r: Rendered, end: Position) -> None:
        c = self.counters
        c.records += r.records
        if r.errors:
            self._bad(r.errors)
        n_tok = int(r.ids.shape[0])
        c.documents += r.documents
        c.tokens += n_tok
        c.trained_tokens += int(np.count_nonzero(r.mask))
        self.hist.add(np.diff(r.offsets))
        if self.packer is not None:
            index = (np.int64(r.source) << LOC_BITS) | r.locations
            self.packer.add_ragged(r.ids, r.mask, r.offsets, index, r.message_index)
            for packed in self.packer.ready():
                self._write_packed(packed)
        elif r.documents:
            labels = np.where(r.mask, r.ids, IGNORE)
            self._write(Block(r.documents, r.ids, labels, offsets=r.offsets, mask=r.mask))
        self.epoch_tokens += n_tok
        if self.epoch_tokens >= self.opts.epoch_tokens:
            self._end_epoch(end)

    def _bad(self, errors: list[RecordError]) -> None:
        for e in errors:
            d = self.error_dict(e)
            self.errors_file.write(json.dumps(d, ensure_ascii=False) + "\n")
            self.counters.bad_records += 1
            if self.opts.strict:
                self.errors_file.flush()
                raise StrictStop(f"stopped at the first bad record (--strict): {format_error(d)}",
                                 hint="fix or remove the record, then rerun with --overwrite "
                                      "(or drop --strict to skip bad records)")
            if self.live and self.shown < SHOW_ERRORS:  # else the report lists them (no duplicates)
                self._say(f"ocml: bad record {format_error(d)}")
                self.shown += 1
                if self.shown == SHOW_ERRORS:
                    self._say(f"ocml: further bad records are only written to {self.out / ERRORS}")

    def error_dict(self, e: RecordError) -> dict[str, Any]:
        src = self.sources[e.source]
        return {"file": src.display, src.kind.location: e.location, "code": e.code, "message": e.message,
                "field": e.field, "message_index": e.message_index, "hint": e.hint}

    def _say(self, text: str) -> None:
        from tqdm import tqdm

        tqdm.write(text, file=self.log)

    def _write_packed(self, p: Any) -> None:
        self._write(Block(p.rows, p.input_ids, p.labels, p.position_ids, p.segment_offsets, p.segment_lengths,
                          p.segment_doc))

    def _write(self, block: Block) -> None:
        step = max(1, WRITE_TOKENS // (self.opts.seq_len or WRITE_TOKENS)) if block.packed else block.rows
        for a in range(0, block.rows, step):
            b = min(block.rows, a + step)
            self.writer.write(block if (a, b) == (0, block.rows) else block.slice(a, b))

    def _end_epoch(self, end: Position) -> None:
        if self.packer is not None:
            for packed in self.packer.ready():
                self._write_packed(packed)
            self._write_packed(self.packer.finish())
            rep = self.packer.report
            for kind, recs in (("dropped", rep.dropped), ("truncated", rep.truncated), ("split", rep.split)):
                for r in recs:
                    self.overlong_file.write(json.dumps({**self.doc_where(r.index), "action": kind, "length": r.length,
                                                         "kept": r.kept, "pieces": r.pieces, "reason": r.reason},
                                                        ensure_ascii=False) + "\n")
            self.pack_total.add(rep)
            self.packer = self._new_packer()
        self.epoch_tokens = 0
        self.checkpoints.append(self._checkpoint(end))
        self.epochs += 1
        _fault("epoch", self.epochs)

    def finish(self) -> int:
        self._end_epoch(Position(len(self.sources), 0, 0))
        shards = self.writer.finish()
        self.close()
        return shards

    def close(self) -> None:
        self.errors_file.close()
        self.overlong_file.close()

    def doc_where(self, index: int) -> dict[str, Any]:
        """``{"file": ..., "line": 17}`` for a packer document index (source << 40 | location)."""
        src = self.sources[index >> LOC_BITS]
        return {"file": src.display, src.kind.location: index & ((1 << LOC_BITS) - 1)}


def run(opts: PackOptions, log: IO[str] | None = None) -> RunResult:
    """Run (or resume) one pack job; raises ``OcmlError`` for bad arguments / inputs."""
    from ..encoder import Encoder

    log = log or sys.stderr
    t0 = time.perf_counter()
    _check(opts)
    sources = resolve(opts.inputs)
    enc = Encoder(opts.format, opts.tokenizer, mask=opts.mask, cot=opts.cot,
                  **({"reasoning": opts.reasoning} if opts.reasoning else {}))
    inputs = input_fingerprint(sources)
    fp = fingerprint(inputs, opts.output_key(enc))
    progress = _prepare_out(opts.out, fp, opts.overwrite)
    if progress and progress.get("status") == "done":
        report = json.loads((opts.out / "report.json").read_text("utf-8"))
        return RunResult(report, 0, format_report(report), already_done=True)
    state = _Run(opts, enc, sources, fp, inputs, progress, log)
    if state.resumed_shards:
        state._say(f"ocml: resuming {opts.out} after shard {state.resumed_shards - 1} "
                   f"({state.resumed_shards} complete shard(s) kept)")
    spec = RenderSpec(opts.messages_field, opts.tools_field, message_index=opts.overlong == "truncate")
    chunks = iter_chunks(sources, messages_field=opts.messages_field, tools_field=opts.tools_field,
                         start=state.start, chunk_records=opts.chunk_records)
    ends: dict[int, Position] = {}

    def tracked() -> Iterator[Any]:
        for ch in chunks:
            ends[ch.seq] = ch.end
            yield ch

    bar = None
    try:
        with RenderPool(enc, spec, state.workers) as pool:  # before the bar: its thread would block fork
            bar = _bar(opts, sources, log, state.counters.records)
            state.live = bar is not None
            for r in pool.map(tracked()):
                state.consume(r, ends.pop(r.seq))
                if bar is not None:
                    bar.update(r.records)
                    el = max(time.perf_counter() - t0, 1e-9)
                    bar.set_postfix_str(f"{state.counters.tokens / el / 1e3:,.0f}k tok/s, "
                                        f"{state.counters.bad_records} bad", refresh=False)
        n_shards = state.finish()
    except BaseException:
        state.writer.abort()
        state.close()
        raise
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0
    report = _final_report(opts, enc, state, sources, inputs, n_shards, seconds)
    return RunResult(report, 0, format_report(report), resumed=progress is not None)


def _check(opts: PackOptions) -> None:
    if opts.pack and opts.seq_len is None:
        raise InputError("--seq-len is required when packing", code="E-USAGE", field="--seq-len",
                         hint="e.g. --seq-len 4096, or --no-pack for one row per conversation")
    if opts.workers < 0:
        raise InputError(f"--workers must be >= 0, got {opts.workers}", code="E-USAGE", field="--workers",
                         hint="0 = all cores")
    for name, value in (("--seq-len", opts.seq_len), ("--shard-size", opts.shard_size), ("--window", opts.window)):
        if value is not None and value < 1:
            raise InputError(f"{name} must be >= 1, got {value}", code="E-USAGE", field=name)
    bad = [o for o in opts.outputs if o not in OUTPUTS]
    if bad or not opts.outputs:
        raise InputError(f"unknown output {bad}", code="E-USAGE", field="--output", hint="parquet, npy or both")


def _bar(opts: PackOptions, sources: list[Source], log: IO[str], done: int) -> Any:
    show = opts.progress if opts.progress is not None else log.isatty()
    if not show:
        return None
    from tqdm import tqdm

    counts = [count_records(s) for s in sources]
    total = sum(counts) if all(c is not None for c in counts) else None  # type: ignore[misc]
    return tqdm(total=total, initial=done, unit=" rec", file=log, dynamic_ncols=True, smoothing=0.1,
                desc="ocml pack")


def _final_report(opts: PackOptions, enc: Any, state: _Run, sources: list[Source], inputs: list[dict[str, Any]],
                  n_shards: int, seconds: float) -> dict[str, Any]:
    out = opts.out
    c = state.counters
    errors = error_summary(out / ERRORS)
    pack = None
    if opts.pack:
        tot = state.pack_total
        with open(out / OVERLONG, encoding="utf-8") as f:
            first = [json.loads(line) for _, line in zip(range(20), f)]
        pack = {**asdict(tot), "fill_rate": tot.fill_rate, "overlong": opts.overlong,
                "pad_id": state.packer.pad_id if state.packer is not None else None,
                "overlong_file": OVERLONG, "overlong_documents": first}
    dirs = [d + "/" for d, o in ((PARQUET_DIR, "parquet"), (NPY_DIR, "npy")) if o in opts.outputs]
    rows = pack["rows"] if pack else c.documents
    report = {
        "out": str(out), "format": enc.format_name, "tokenizer": enc.tokenizer.name, "mask": _policy(enc.mask),
        "cot": enc.cot.value, "inputs": [i["path"] for i in inputs], "counts": asdict(c) | {"rows": rows},
        "pack": pack, "lengths": state.hist.stats(opts.seq_len),
        "errors": {"file": ERRORS, **errors},
        "shards": {"count": n_shards, "outputs": list(opts.outputs), "dirs": dirs,
                   "names": [shard_name(k) for k in range(n_shards)]},
        "timing": {"seconds": round(seconds, 3), "records_per_s": c.records / seconds if seconds else 0.0,
                   "tokens_per_s": c.tokens / seconds if seconds else 0.0, "workers": state.workers,
                   "resumed_from_shard": state.resumed_shards},
    }
    title = f"{c.documents:,} documents, {enc.format_name}" + (f", seq_len {opts.seq_len:,}" if opts.seq_len else "")
    if opts.plot:
        state.hist.plot(out / "lengths.png", opts.seq_len, title)
    manifest = {
        "ocml_version": ocml_version(), "fingerprint": state.fp, "format": enc.format_name,
        "tokenizer": {"name": enc.tokenizer.name, "vocab_hash": enc.tokenizer.fingerprint,
                      "n_vocab": enc.tokenizer.n_vocab},
        "mask": _policy(enc.mask), "cot": enc.cot.value, "packed": opts.pack, "seq_len": opts.seq_len,
        "overlong": opts.overlong if opts.pack else None, "pad_id": pack["pad_id"] if pack else None,
        "columns": (["input_ids", "labels", "position_ids", "seq_lengths"] if opts.pack
                    else ["input_ids", "labels", "assistant_masks"]),
        "shards": {"parquet": [f"{PARQUET_DIR}/{shard_name(k)}.parquet" for k in range(n_shards)]
                   if "parquet" in opts.outputs else [],
                   "npy": [f"{NPY_DIR}/{shard_name(k)}" for k in range(n_shards)] if "npy" in opts.outputs else []},
        "shard_size": opts.shard_size,
        "counts": report["counts"] | ({"trained_labels": pack["trained_tokens"], "fill_rate": pack["fill_rate"]}
                                      if pack else {}),
        "inputs": inputs, "options": opts.output_key(enc),
    }
    write_json(out / "manifest.json", manifest)
    write_json(out / "report.json", report)
    write_json(out / STATE_DIR / PROGRESS, {"fingerprint": state.fp, "status": "done", "shards": n_shards,
                                            "rows": rows, "checkpoint": None})
    return report


def _reopen(path: Path, size: int) -> IO[str]:
    """An append-only log cut back to ``size`` bytes (its length at the checkpoint resumed from)."""
    if size:
        with open(path, "ab") as f:
            f.truncate(size)
    else:
        path.unlink(missing_ok=True)
    return open(path, "a", encoding="utf-8")


__all__ = ["PackOptions", "RunResult", "StrictStop", "run"]
