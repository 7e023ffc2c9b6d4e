"""The ``ocml pack`` pipeline: inputs -> rendered documents -> packed rows -> shards.

Order: records are read in input order in chunks (``readers``), rendered by worker
processes (``workers``), and consumed strictly in chunk order: the packer and the shard
writer see the same documents in the same order whatever ``workers`` is, so the output is
byte-identical for any worker count.

Epochs: the packer is flushed (its last rows written) and the open shard is closed every
``window`` documents (default 10,000) or ``epoch_tokens`` document tokens (default 4 Mi),
whichever comes first.  That bounds both memory (the main process peaks near 60 bytes x
``epoch_tokens``, ~240 MB, above its ~175 MB of imports and vocabulary; a worker stays
near 110 MB: ``scripts/bench_pipeline.py``) and the work a kill loses (one epoch), for
about one partly filled row per epoch.

Resume (``resume``): an epoch boundary is a point where the packer is empty; when shard k
is renamed into place, ``.ocml/progress.json`` records k and the last epoch boundary whose
rows all lie in complete shards.  A rerun of the same command restarts there, drops the
rows it re-derives that are already in complete shards, and writes the rest: the final
output is the same as an uninterrupted run.

The other jobs live in their own modules: ``options`` (options, defaults, checks),
``outdir`` (what ocml may write and delete in ``--out``), ``errorfile`` (``errors.jsonl``,
``--strict``), ``gates`` (``--max-bad-fraction``), ``untrained`` (documents with nothing
to train), ``provenance`` (source / record of every document), ``resume``, ``report``,
``faults`` (the test-only kill hook).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import IO, Any

import numpy as np

from ..packing.packed import Overlong, fill_rate
from .errorfile import ERRORS, ErrorLog, StrictStop
from .faults import FAULT_ENV, fault
from .gates import BadFractionGate, TooManyBadRecords
from .options import BAD_SAMPLE, PackOptions, check
from .outdir import OutDir, is_shard, prepare
from .provenance import LOC_BITS, SourceMap
from ..inputs.overlong_text import presplit_lines
from .readers import Position, count_records, iter_chunks
from .report import OVERLONG, LengthHistogram, final_report, format_report, overlong_entries
from .resume import PROGRESS, STATE_DIR, Checkpoint, fingerprint, input_fingerprint, reopen_log
from .shards import IGNORE, Block, ShardWriter
from .untrained import UNTRAINED
from .workers import RecordError, Rendered, RenderPool, RenderSpec, default_workers

WRITE_TOKENS = 1 << 20  # tokens converted / written at a time (bounds the conversion copies)


@dataclass
class Counters:
    records: int = 0
    documents: int = 0       # records rendered (untrained ones only with --keep-untrained); records =
    #                          bad_records + documents + untrained skipped
    pieces: int = 0          # documents packed / written: a text record split in the worker is several
    bad_records: int = 0
    untrained: int = 0       # documents with nothing to train (skipped unless --keep-untrained)
    tokens: int = 0          # tokens of those documents, as rendered
    trained_tokens: int = 0  # their trained tokens, as rendered (before the packing policies)
    start_trained: int = 0   # trained tokens at the first position of a document that fits a row
    #: extra columns ignored by the column rule (``encoder.inputs.columns``): column -> records
    ignored_columns: dict[str, int] = field(default_factory=dict)


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
    dropped_trained: int = 0    # trained tokens removed by each overlong policy
    truncated_trained: int = 0
    split_trained: int = 0

    def add(self, rep: Any) -> None:
        for k in ("documents", "segments", "tokens", "trained_tokens", "rows", "padding_tokens", "dropped_tokens"):
            setattr(self, k, getattr(self, k) + getattr(rep, k))
        for kind in ("dropped", "truncated", "split"):
            recs = getattr(rep, kind)
            setattr(self, kind, getattr(self, kind) + len(recs))
            setattr(self, f"{kind}_trained",
                    getattr(self, f"{kind}_trained") + sum(r.trained - r.trained_kept for r in recs))

    @property
    def fill_rate(self) -> float:
        return fill_rate(self.tokens, self.rows, self.seq_len)


@dataclass
class RunResult:
    report: dict[str, Any]
    exit_code: int = 0
    text: str = ""
    resumed: bool = False
    already_done: bool = False
    errors: list[RecordError] = field(default_factory=list)


class _Run:
    def __init__(self, opts: PackOptions, enc: Any, smap: SourceMap, fp: str, od: OutDir,
                 progress: dict[str, Any] | None, log: IO[str]) -> None:
        self.opts, self.enc, self.smap, self.fp, self.od, self.log = opts, enc, smap, fp, od, log
        self.out = opts.out
        self.detection: dict[str, Any] | None = None   # --model: the manifest's record of format detection
        self.workers = opts.workers or default_workers()
        resume = progress if progress and progress.get("checkpoint") else None
        ck = Checkpoint(**resume["checkpoint"]) if resume else None
        self.resumed_shards = resume["shards"] if resume else 0
        self.counters = Counters(**ck.counters) if ck else Counters()
        self.start_counts = (self.counters.records, self.counters.tokens)  # this run's speed counts from here
        if ck:
            smap.file_records = list(ck.file_records)
        self.hist = LengthHistogram.from_dict(ck.lengths) if ck else LengthHistogram()
        self.start = Position.from_dict(ck.position) if ck else None
        self.pack_total = PackTotals(**ck.pack) if ck else PackTotals(opts.seq_len or 0)
        logs = ck.logs if ck else {}
        od.claim([self.out / n for n in (ERRORS, OVERLONG, UNTRAINED)])
        self.errors = ErrorLog(self.out, smap.files, logs.get(ERRORS, 0), strict=opts.strict)
        self.overlong_file = reopen_log(self.out / OVERLONG, logs.get(OVERLONG, 0))
        self.untrained_file = reopen_log(self.out / UNTRAINED, logs.get(UNTRAINED, 0))
        # A resumed run checked its sample already if it had read that far.
        self.gate = BadFractionGate(opts.max_bad_fraction, checked_early=self.counters.records >= BAD_SAMPLE)
        od.remove(lambda key: is_shard(key, self.resumed_shards))  # stale after a crash
        self.writer = ShardWriter(self.out, packed=opts.pack, seq_len=opts.seq_len or 0, shard_rows=opts.shard_size,
                                  parquet="parquet" in opts.outputs, npy="npy" in opts.outputs,
                                  skip_rows=resume["rows"] if resume else 0, first_shard=self.resumed_shards,
                                  on_shard=self._on_shard, claim=od.claim,
                                  megatron="megatron" in opts.outputs, vocab_size=enc.tokenizer.n_vocab,
                                  seq_idx=opts.seq_idx)
        self.writer.rows = ck.rows if ck else 0
        # Checkpoints not yet covered by complete shards (the first one always is).
        first = Position(0, smap.files[0].kind.first_location, 0)
        self.checkpoints: list[Checkpoint] = [ck or self._checkpoint(first)]
        self.saved_rows = self.checkpoints[0].rows
        self.packer = self._new_packer() if opts.pack else None
        self.epoch_tokens = self.epoch_docs = 0
        self.epochs = 0

    def _new_packer(self) -> Any:
        from ..pack import Packer

        assert self.opts.seq_len is not None, "check_options: packing needs --seq-len"
        # One window per epoch: the epoch already bounds the documents held (``window``).
        return Packer(self.opts.seq_len, pad_id=self.opts.pad_id, encoder=self.enc,
                      overlong=self.opts.overlong_policy, window=None,
                      pad_to_multiple_of=self.opts.pad_to_multiple_of)

    # -- checkpoints ---------------------------------------------------------------------
    def _checkpoint(self, pos: Position) -> Checkpoint:
        self.overlong_file.flush()
        self.untrained_file.flush()
        return Checkpoint(position=pos.to_dict(), rows=self.writer.rows, counters=asdict(self.counters),
                          logs={ERRORS: self.errors.tell(), OVERLONG: self.overlong_file.tell(),
                                UNTRAINED: self.untrained_file.tell()},
                          lengths=self.hist.to_dict(), pack=asdict(self.pack_total),
                          file_records=list(self.smap.file_records))

    def _on_shard(self, k: int, rows: int) -> None:
        fault("shard", k)
        self._save_progress(k + 1, rows)
        fault("progress", k)

    def _save_progress(self, shards: int, rows: int) -> None:
        """Record ``shards`` complete shards (``rows`` rows) and the last checkpoint inside them."""
        best = [c for c in self.checkpoints if c.rows <= rows][-1]
        self.checkpoints = [c for c in self.checkpoints if c.rows >= best.rows]
        self.saved_rows = best.rows
        self.od.write_json(f"{STATE_DIR}/{PROGRESS}", {
            "fingerprint": self.fp, "status": "running", "shards": shards, "rows": rows,
            "checkpoint": asdict(best)})

    # -- consuming rendered chunks ----------------------------------------------------------
    def consume(self, r: Rendered, end: Position) -> None:
        c = self.counters
        c.records += r.records
        for col, n in r.ignored.items():
            c.ignored_columns[col] = c.ignored_columns.get(col, 0) + n
        self.smap.seen(end)
        if r.errors:
            c.bad_records += len(r.errors)
            self.errors.add(r.errors)
        if r.untrained:
            c.untrained += len(r.untrained)
            for loc, why in r.untrained:
                self.untrained_file.write(json.dumps({**self.smap.where(r.source, loc), "reason": why,
                                                      "kept": self.opts.keep_untrained}, ensure_ascii=False) + "\n")
        self.gate.early(c.records, c.bad_records, self.errors.by_code)
        n_tok = int(r.ids.shape[0])
        lengths = np.diff(r.offsets)
        c.documents += r.documents - sum(p.pieces - 1 for p in r.presplit)
        c.pieces += r.documents
        # text documents split in the worker (encoder.inputs.overlong_text)
        self.overlong_file.writelines(presplit_lines(r.presplit, lambda loc: self.smap.where(r.source, loc),
                                                     self.opts.seq_len or 0))
        self.pack_total.split += len(r.presplit)
        c.tokens += n_tok
        c.trained_tokens += int(np.count_nonzero(r.mask))
        self.hist.add(lengths)
        index = (np.int64(r.source) << LOC_BITS) | r.locations
        if self.packer is not None:
            fits = (lengths > 0) & (lengths <= (self.opts.seq_len or 0))  # overlong ones: in their record
            c.start_trained += int(np.count_nonzero(r.mask[r.offsets[:-1][fits]]))
            self.packer.add_ragged(r.ids, r.mask, r.offsets, index, r.message_index)
            for packed in self.packer.ready():
                self._write_packed(packed)
        elif r.rows is not None:  # preference / KTO rows (encoder.inputs.rows)
            if r.rows.rows:
                self._write(r.rows)
        elif r.documents:
            labels = np.where(r.mask, r.ids, IGNORE)
            source, record = self.smap.translate(index)
            self._write(Block(r.documents, r.ids, labels, offsets=r.offsets, mask=r.mask,
                              doc_source=source, doc_record=record))
        self.epoch_tokens += n_tok
        self.epoch_docs += r.documents
        if self.epoch_tokens >= self.opts.epoch_tokens or self.epoch_docs >= self.opts.window:
            self._end_epoch(end)

    def _say(self, text: str) -> None:
        from tqdm import tqdm

        tqdm.write(text, file=self.log)

    def _write_packed(self, p: Any) -> None:
        source, record = self.smap.translate(p.segment_doc)
        self._write(Block(p.rows, p.input_ids, p.labels, p.position_ids, p.segment_offsets, p.segment_lengths,
                          p.segment_doc, doc_source=source, doc_record=record))

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
            self.overlong_file.writelines(overlong_entries(self.doc_where, rep))
            self.pack_total.add(rep)
            self.packer = self._new_packer()
        self.epoch_tokens = self.epoch_docs = 0
        self.epochs += 1
        fault("epoch", self.epochs)
        self.checkpoints.append(self._checkpoint(end))
        self.writer.cut()  # the epoch's rows are saved: a kill from here on loses at most the next epoch
        if self.writer.in_shard == 0 and self.checkpoints[-1].rows > self.saved_rows:
            self._save_progress(self.writer.shard, self.writer.rows)  # its rows ended exactly on a full shard

    def finish(self) -> int:
        self._end_epoch(Position(len(self.smap.files), 0, 0))
        shards = self.writer.finish()
        self.close()
        return shards

    def close(self) -> None:
        self.errors.close()
        self.overlong_file.close()
        self.untrained_file.close()

    def doc_where(self, index: int) -> dict[str, Any]:
        """``{"file": ..., "line": 17, "source": 0, "record": 16}`` for a packer document index."""
        return self.smap.where(index >> LOC_BITS, index & ((1 << LOC_BITS) - 1))


def run(opts: PackOptions, log: IO[str] | None = None) -> RunResult:
    """Run (or resume) one pack job; raises ``OcmlError`` for bad arguments / inputs,
    ``TooManyBadRecords`` past ``--max-bad-fraction``, ``StrictStop`` under ``--strict``."""
    from .pack_encoder import pack_encoder

    log = log or sys.stderr
    t0 = time.perf_counter()
    check(opts)
    smap = SourceMap(opts.inputs)
    enc, detection = pack_encoder(opts, log)
    inputs = input_fingerprint(smap.files)
    fp = fingerprint(inputs, opts.output_key(enc))
    od, progress = prepare(opts.out, fp, opts.overwrite, smap.files, opts.wait_lock, log)
    with od:  # the --out lock is held to the end, whatever happens (outlock)
        if progress and progress.get("status") == "done":
            report = json.loads((opts.out / "report.json").read_text("utf-8"))
            return RunResult(report, 0, format_report(report), already_done=True)
        return _run_locked(opts, log, t0, enc, detection, smap, inputs, fp, od, progress)


def _run_locked(opts: PackOptions, log: IO[str], t0: float, enc: Any, detection: dict[str, Any] | None,
                smap: SourceMap, inputs: list[dict[str, Any]], fp: str, od: OutDir,
                progress: dict[str, Any] | None) -> RunResult:
    state = _Run(opts, enc, smap, fp, od, progress, log)
    state.detection = detection
    if state.resumed_shards:
        state._say(f"ocml: resuming {opts.out} after shard {state.resumed_shards - 1} "
                   f"({state.resumed_shards} complete shard(s) kept)")
    from ..inputs.overlong_text import split_text_seq_len

    spec = RenderSpec(opts.messages_field, opts.tools_field, keep_untrained=opts.keep_untrained,
                      message_index=opts.pack and opts.overlong_policy is Overlong.TRUNCATE,
                      split_text=split_text_seq_len(opts.shape, opts.overlong is not None, opts.overlong_policy.value,
                                                    opts.pack, opts.seq_len))
    chunks = iter_chunks(smap.files, messages_field=opts.messages_field, tools_field=opts.tools_field,
                         start=state.start, chunk_records=opts.chunk_records, max_line_bytes=opts.max_line_bytes)
    ends: dict[int, Position] = {}

    def tracked() -> Iterator[Any]:
        for ch in chunks:
            ends[ch.seq] = ch.end
            yield ch

    bar = None
    try:
        with RenderPool(enc, spec, state.workers) as pool:  # before the bar: its thread would block fork
            bar = _bar(opts, smap, log, state.counters.records)
            if bar is not None:
                state.errors.say = state._say
            for r in pool.map(tracked()):
                state.consume(r, ends.pop(r.seq))
                if bar is not None:
                    bar.update(r.records)
                    el = max(time.perf_counter() - t0, 1e-9)
                    bar.set_postfix_str(f"{(state.counters.tokens - state.start_counts[1]) / el / 1e3:,.0f}k tok/s, "
                                        f"{state.counters.bad_records} bad", refresh=False)
        c = state.counters
        state.gate.final(c.records, c.bad_records, state.errors.by_code, documents=c.documents)
        n_shards = state.finish()
    except BaseException:
        state.writer.abort()
        state.close()
        raise
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0
    report = final_report(opts, enc, state, inputs, n_shards, seconds)
    return RunResult(report, 0, format_report(report), resumed=progress is not None)


def _bar(opts: PackOptions, smap: SourceMap, log: IO[str], done: int, desc: str = "ocml pack") -> Any:
    show = opts.progress if opts.progress is not None else log.isatty()
    if not show:
        return None
    from tqdm import tqdm

    counts = [count_records(s) for s in smap.files]
    known = [c for c in counts if c is not None]
    total = sum(known) if len(known) == len(counts) else None
    return tqdm(total=total, initial=done, unit=" rec", file=log, dynamic_ncols=True, smoothing=0.1,
                desc=desc)


__all__ = ["FAULT_ENV", "PackOptions", "RunResult", "StrictStop", "TooManyBadRecords", "run"]
