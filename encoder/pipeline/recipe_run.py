"""A recipe run of ``ocml pack``: several sources -> split, dedup, weights -> packed, shuffled shards.

Four phases, each a pure function of the recipe, its seed and the input (so the output is
byte-identical for any number of workers, and after a resume):

1. **scan**: every source is read and rendered in input order (``readers`` / ``workers``,
   one encoder per source's mask / cot / reasoning); each document's ids, mask and a row
   of metadata (source, file, location, length, trained tokens, content key) are appended
   to a spool on disk (``recipe_spools``), bad records to ``errors.jsonl``.  Checkpointed every
   ``epoch_tokens`` rendered tokens: a rerun after ``kill -9`` cuts the spool back to the
   last checkpoint and reads on from there.
2. **plan** (``recipe_plan``; in memory, recomputed on every start): the validation split (``split``, by
   content key), duplicates (``dedup``), each source's weighted sample and cap (``mix``)
   and the seeded document order (``shuffle``).
3. **pack**: the training documents, then the validation ones, in planned order, through
   the streaming packer (flushed every ``epoch_tokens``, as a plain run); the rows go to a
   second spool.  Redone whole when interrupted (packing is cheap next to rendering).
4. **write**: rows in a seeded permutation across all shards, ``data/train-NNNNN.parquet``
   and ``data/validation-NNNNN.parquet`` (``npy/train-NNNNN/``, ``npy/validation-NNNNN/``),
   resumed at the last complete shard.  The report adds the recipe's lines (``recipe_report``).

Disk: the spools hold about 9 bytes per document token plus 12 per packed row token; removed when
the run completes (or by the next run into ``--out``: ``outdir.prepare``).  Memory grows with the
input: docs/training/pack.md.

Size: one driver whose four phases share their state (spools, counts, the ``--out`` lock and
ownership); split by phase, that state would travel through every call.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import InputError
from ..packing.packed import Overlong
from .errorfile import ERRORS, ErrorLog
from .faults import fault as _fault
from .gates import BadFractionGate
from .options import BAD_SAMPLE, ocml_version
from .outdir import is_shard, prepare
from ..inputs.overlong_text import presplit_lines, split_text_seq_len
from .pack_encoder import encoder_factory
from .provenance import LOC_BITS, SourceMap
from .readers import Position, Source, iter_chunks, resolve
from .recipe import Recipe, dump_recipe, expand_path
from .recipe_plan import Plan, SourceCounts, plan_documents, summed
from .recipe_report import common_setting, format_recipe_report, row_order_statistic
from .recipe_spools import DocBatch, RecipeSpools
from .report import (OVERLONG, LengthHistogram, columns_section, errors_section, manifest_base, overlong_entries,
                     plot_lengths, shard_dirs, timing_section, trained_summary, untrained_summary, write_json)
from .resume import PROGRESS, STATE_DIR, fingerprint, input_fingerprint, reopen_log as _reopen
from .run import PackTotals, RunResult
from .shards import IGNORE, SPLITS, Block, ShardWriter, shard_name
from .shuffle import permutation
from .spool import Spool
from .untrained import UNTRAINED
from .workers import Rendered, RenderPool, RenderSpec, default_workers

# What this driver writes outside the shards (ShardWriter claims those): --overwrite removes only these.
DRIVER_FILES = (ERRORS, OVERLONG, UNTRAINED, "lengths.png", ".lengths.png.tmp.png", "recipe.yaml", "manifest.json",
                ".manifest.json.tmp", "report.json", ".report.json.tmp")

class RecipeRun:
    def __init__(self, recipe: Recipe, out: Path, log: IO[str] | None = None) -> None:
        self.recipe, self.out, self.log = recipe, out, log or sys.stderr
        self.opts = recipe.pack_options(out)  # the run-wide options, as a plain run has them
        self.overlong = recipe.overlong_policy
        self.t0 = time.perf_counter()
        self.start_counts = (0, 0)  # records, tokens scanned before this run (its speed counts from there)
        # Sources -> files (a source may be a folder or glob of several files).
        self.files: list[Source] = []
        self.file_base: list[int] = []
        self.source_files: list[list[Source]] = []
        for s in recipe.sources:
            found = resolve([p for raw in [s.path] for p in expand_path(raw)])
            self.file_base.append(len(self.files))
            self.source_files.append(found)
            self.files += found
        # Provenance: source = the recipe's source number, record = its index within the source.
        self.smap = SourceMap([s.path for s in recipe.sources], resolved=self.source_files)
        make, self.detection = encoder_factory(recipe.format, recipe.tokenizer, recipe.model, self.log)
        cache: dict[str, Any] = {}
        self.encoders = []
        for s in recipe.sources:
            k = json.dumps(s.encoder_kwargs(), sort_keys=True)
            if k not in cache:
                cache[k] = make(**s.encoder_kwargs(), shape=recipe.shape, shape_options=recipe.shape_options())
            self.encoders.append(cache[k])
        self.enc = self.encoders[0]
        self.inputs = input_fingerprint(self.files)
        key = {"recipe": recipe.output_key(), "vocab": self.enc.tokenizer.fingerprint, "ocml": ocml_version(),
               "run": "recipe", "format": self.enc.format_name, "format_options": self.enc.format.init_options(),
               "overlong": self.overlong.value}
        self.fp = fingerprint(self.inputs, key)
        self.workers = recipe.workers or default_workers()
        self.state = out / STATE_DIR
        self.spools = RecipeSpools(self.state)
        self.progress: dict[str, Any] = {}

    def _save(self, phase: str, **data: Any) -> None:
        self.progress = {**self.progress, "phase": phase, **data}
        write_json(self.state / PROGRESS, {"fingerprint": self.fp, "status": "running", "shards": 0, "rows": 0,
                                           "checkpoint": None, "recipe": self.progress})

    def _say(self, text: str) -> None:
        print(text, file=self.log)

    def run(self) -> RunResult:
        self.od, progress = prepare(self.out, self.fp, self.recipe.overwrite, self.files, self.recipe.wait_lock,
                                    self.log)
        with self.od:  # the --out lock is held to the end, whatever happens (outlock)
            return self._run_locked(progress)

    def _run_locked(self, progress: dict[str, Any] | None) -> RunResult:
        self.od.claim([self.out / n for n in DRIVER_FILES], [self.spools.folder])
        if progress and progress.get("status") == "done":
            report = json.loads((self.out / "report.json").read_text("utf-8"))
            return RunResult(report, 0, format_recipe_report(report), already_done=True)
        self.progress = (progress or {}).get("recipe") or {}
        resumed = bool(self.progress)
        if resumed:
            self._say(f"ocml: resuming the recipe run in {self.out} at its {self.progress.get('phase')} phase")
        phase = self.progress.get("phase", "scan")
        if self.progress.get("scan"):  # this run's speed counts from what was scanned before it
            done = self.progress["scan"]["counts"]
            self.start_counts = (sum(c["records"] for c in done), sum(c["tokens"] for c in done))
        if phase == "scan":
            self._scan(self.progress.get("scan"))
        scan = self.progress["scan"]
        self.smap.file_records = list(scan["file_records"])
        plan = self._plan(scan)
        # The train shards complete before this run (a resumed write phase starts after them).
        self.resumed_from = int(self.progress.get("written", {}).get("train", 0)) \
            if self.progress.get("phase") == "write" else 0
        if self.progress.get("phase") != "write":
            self._pack(plan, scan)
        shards = self._write(plan)
        report = self._finish(plan, scan, shards, resumed)
        return RunResult(report, 0, format_recipe_report(report), resumed=resumed)

    # -- 1. scan -----------------------------------------------------------------------------------
    def _scan(self, ck: dict[str, Any] | None) -> None:
        r = self.recipe
        self.spools.docs.open(ck["docs"] if ck else None)
        self.spools.meta.open(ck["meta"] if ck else None)
        counts = [SourceCounts(**c) for c in ck["counts"]] if ck else [SourceCounts() for _ in r.sources]
        hist = LengthHistogram.from_dict(ck["lengths"]) if ck else LengthHistogram()
        errors = ErrorLog(self.out, self.files, ck["errors_bytes"] if ck else 0, strict=r.strict)
        untrained = _reopen(self.out / UNTRAINED, ck["untrained_bytes"] if ck else 0)
        overlong = _reopen(self.out / OVERLONG, ck.get("overlong_bytes", 0) if ck else 0)  # text split here
        if ck:
            self.smap.file_records = list(ck["file_records"])
        self.start_counts = (sum(c.records for c in counts), sum(c.tokens for c in counts))
        gate = BadFractionGate(r.max_bad_fraction, checked_early=self.start_counts[0] >= BAD_SAMPLE)
        first = ck["source"] if ck else 0
        pos = Position.from_dict(ck["position"]) if ck and ck["position"] else None
        n_ck = 0
        bar: Any = None

        def checkpoint(si: int, at: Position | None) -> None:
            nonlocal n_ck
            untrained.flush()
            overlong.flush()
            self.spools.docs.sync()
            self.spools.meta.sync()
            self._save("scan", scan={"source": si, "position": at.to_dict() if at else None,
                                     "docs": self.spools.docs.sizes(), "meta": self.spools.meta.sizes(),
                                     "counts": [asdict(c) for c in counts], "errors_bytes": errors.tell(),
                                     "untrained_bytes": untrained.tell(), "overlong_bytes": overlong.tell(),
                                     "file_records": self.smap.file_records,
                                     "lengths": hist.to_dict()})
            n_ck += 1
            _fault("scan", n_ck)

        try:
            for si in range(first, len(r.sources)):
                spec = r.sources[si]
                rspec = RenderSpec(spec.messages_field, spec.tools_field, keep_untrained=r.keep_untrained,
                                   message_index=r.pack and self.overlong is Overlong.TRUNCATE,
                                   split_text=split_text_seq_len(r.shape, r.overlong is not None, self.overlong.value,
                                                                 r.pack, r.seq_len))
                errors.sources, errors.extra = self.source_files[si], {"source": spec.name}
                chunks = iter_chunks(self.source_files[si], messages_field=spec.messages_field,
                                     tools_field=spec.tools_field, start=pos if si == first else None,
                                     chunk_records=r.chunk_records, max_line_bytes=r.max_line_bytes)
                ends: dict[int, Position] = {}

                def tracked(chunks: Iterator[Any] = chunks, ends: dict[int, Position] = ends) -> Iterator[Any]:
                    for ch in chunks:
                        ends[ch.seq] = ch.end
                        yield ch

                tokens = 0
                with RenderPool(self.encoders[si], rspec, self.workers) as pool:
                    if bar is None:  # after the first pool has forked: the bar's thread would block fork
                        bar = self._bar(sum(c.records for c in counts))
                        if bar:
                            errors.say = self._say
                    for rendered in pool.map(tracked()):
                        end = ends.pop(rendered.seq)
                        if end.source < len(self.source_files[si]):
                            self.smap.seen(Position(self.file_base[si] + end.source, end.location, end.offset))
                        tokens += self._consume(si, rendered, counts[si], hist, errors, untrained, overlong)
                        gate.early(sum(c.records for c in counts), sum(c.rejected for c in counts), errors.by_code)
                        if bar:
                            bar.update(rendered.records)
                            el = max(time.perf_counter() - self.t0, 1e-9)
                            done = sum(c.tokens for c in counts) - self.start_counts[1]
                            bar.set_postfix_str(f"{done / el / 1e3:,.0f}k tok/s, "
                                                f"{sum(c.rejected for c in counts)} bad", refresh=False)
                        if tokens >= r.epoch_tokens:
                            checkpoint(si, end)
                            tokens = 0
                checkpoint(si + 1, None)
            t = summed(counts)  # over every record (a rerun after this failure fails the same way: the scan stays)
            gate.final(t["records"], t["rejected"], errors.by_code, documents=t["documents"])
        finally:
            if bar:
                bar.close()
            errors.close()
            untrained.close()
            overlong.close()
            self.spools.docs.close()
            self.spools.meta.close()

    def _bar(self, done: int) -> Any:
        """A progress bar over the scan (the phase that renders), as a streaming run shows one."""
        from .run import _bar

        return _bar(self.opts, self.smap, self.log, done, desc="ocml pack (recipe)") or False

    def _consume(self, si: int, rd: Rendered, c: SourceCounts, hist: LengthHistogram, errors: ErrorLog,
                 untrained: IO[str], overlong: IO[str]) -> int:
        c.read(rd.records, rd.ignored)
        if rd.errors:
            c.rejected += len(rd.errors)
            errors.add(rd.errors)  # --strict raises StrictStop here
        if rd.untrained:
            c.untrained += len(rd.untrained)
            for loc, why in rd.untrained:
                untrained.write(json.dumps({**self.where(self.file_base[si] + rd.source, loc), "reason": why,
                                            "kept": self.recipe.keep_untrained}, ensure_ascii=False) + "\n")
        c.text_split += len(rd.presplit)  # their pieces are documents of their own in the spool
        overlong.writelines(presplit_lines(rd.presplit, lambda loc: self.where(self.file_base[si] + rd.source, loc),
                                           self.recipe.seq_len or 0))
        if not rd.documents:
            return 0
        lengths, trained = self.spools.add_documents(rd, self.file_base[si] + rd.source, si)
        c.add_documents(rd.documents, rd.presplit)
        c.tokens += int(lengths.sum())
        c.trained_tokens += int(trained.sum())
        hist.add(lengths)
        return int(lengths.sum())

    def where(self, file: int, location: int) -> dict[str, Any]:
        """``provenance.SourceMap.where`` plus the source's name (the recipe's ``name:``)."""
        d = self.smap.where(file, location)
        return {**d, "name": self.recipe.sources[d["source"]].name}

    # -- 2. plan -----------------------------------------------------------------------------------
    def _plan(self, scan: dict[str, Any]) -> Plan:
        return plan_documents(self.recipe, self.spools.metadata(scan["meta"]), [SourceCounts(**c) for c in scan["counts"]])

    # -- 3. pack -----------------------------------------------------------------------------------
    def _packed(self, split: str) -> bool:
        return self.recipe.pack and (split == "train" or self.recipe.validation_pack)

    def _doc_batches(self, order: np.ndarray, scan: dict[str, Any]) -> Iterator[DocBatch]:
        """(ids, mask, offsets, index, message_index) of the documents ``order``, a batch at a time."""
        return self.spools.doc_batches(order, scan["meta"]["length"],
                                       self.recipe.pack and self.overlong is Overlong.TRUNCATE)

    def _new_packer(self) -> Any:
        from ..pack import Packer

        r = self.recipe
        assert r.seq_len is not None, "the recipe check: packing needs seq_len"
        # One window per epoch (as a plain run): the epoch already bounds the documents held.
        return Packer(r.seq_len, pad_id=r.pad_id, encoder=self.enc, overlong=self.overlong, window=None,
                      pad_to_multiple_of=r.pad_to_multiple_of)

    def _pack(self, plan: Plan, scan: dict[str, Any]) -> None:
        r = self.recipe
        overlong = _reopen(self.out / OVERLONG, scan.get("overlong_bytes", 0))  # after the scan's text splits
        totals: dict[str, Any] = {}
        start_trained: dict[str, int] = {}
        try:
            for split, order in (("train", plan.train), ("validation", plan.validation)):
                spool = self.spools.rows[split].open(None)
                if not self._packed(split) or order.shape[0] == 0:
                    spool.close()
                    totals[split] = None
                    continue
                tot = PackTotals(r.seq_len or 0)
                packer = self._new_packer()
                tokens = docs = starts = 0
                for ids, mask, off, index, mi in self._doc_batches(order, scan):
                    lens = np.diff(off)
                    fits = (lens > 0) & (lens <= (r.seq_len or 0))  # overlong ones: in their record
                    starts += int(np.count_nonzero(mask[off[:-1][fits]]))
                    packer.add_ragged(ids, mask, off, index, mi)
                    for p in packer.ready():
                        RecipeSpools.add_rows(spool, p)
                    tokens += int(ids.shape[0])
                    docs += int(lens.shape[0])
                    if tokens >= r.epoch_tokens or docs >= r.window:  # the epochs of a plain run
                        packer = self._flush(packer, spool, tot, overlong, split)
                        tokens = docs = 0
                self._flush(packer, spool, tot, overlong, split)
                _fault("pack", 1)
                spool.sync()
                spool.close()
                totals[split] = {**asdict(tot), "pad_id": packer.pad_id}
                start_trained[split] = starts
            overlong.flush()
        finally:
            overlong.close()
        self._save("write", pack=totals, start_trained=start_trained, written={s: 0 for s in SPLITS})

    def _flush(self, packer: Any, spool: Spool, tot: PackTotals, overlong: IO[str], split: str) -> Any:
        for p in packer.ready():
            RecipeSpools.add_rows(spool, p)
        RecipeSpools.add_rows(spool, packer.finish())
        rep = packer.report
        overlong.writelines(overlong_entries(self.doc_where, rep, split=split))
        tot.add(rep)
        return self._new_packer()

    def doc_where(self, index: int) -> dict[str, Any]:
        return self.where(int(index) >> LOC_BITS, int(index) & ((1 << LOC_BITS) - 1))

    # -- 4. write ----------------------------------------------------------------------------------
    def _write(self, plan: Plan) -> dict[str, int]:
        return {"train": self._write_split("train", plan.train),
                "validation": self._write_split("validation", plan.validation)}

    def _write_split(self, split: str, order: np.ndarray) -> int:
        r = self.recipe
        done = int(self.progress.get("written", {}).get(split, 0))
        self.od.remove(lambda key: is_shard(key, done, split))  # stale after a crash: ocml's files only
        packed = self._packed(split)
        if packed:
            spool = self.spools.rows[split]
            segs = np.asarray(spool.read("row_segments"))
            n_rows = segs.shape[0]
        else:
            n_rows = int(order.shape[0])
        if n_rows == 0:
            return 0

        def on_shard(k: int, rows: int) -> None:
            _fault("shard" if split == "train" else f"{split}-shard", k)
            written = {**self.progress.get("written", {}), split: k + 1}
            self._save("write", written=written)
            _fault("progress", k)

        writer = ShardWriter(self.out, packed=packed, seq_len=r.seq_len or 0, shard_rows=r.shard_size,
                             parquet="parquet" in r.outputs, npy="npy" in r.outputs,
                             skip_rows=done * r.shard_size, on_shard=on_shard, split=split, claim=self.od.claim,
                             megatron="megatron" in r.outputs, vocab_size=self.enc.tokenizer.n_vocab,
                             seq_idx=r.seq_idx and packed)
        first = done * r.shard_size
        writer.rows = first
        try:
            if packed:
                self._write_rows(writer, split, segs, first)
            else:
                for block in self._doc_blocks(order[first:]):
                    writer.write(block)
            n = writer.finish()
        except BaseException:
            writer.abort()
            raise
        return n

    def _row_order(self, split: str, n_rows: int) -> np.ndarray:
        if not self.recipe.shuffle:
            return np.arange(n_rows, dtype=np.int64)
        return permutation(n_rows, self.recipe.seed, f"{split}-rows")

    def _write_rows(self, writer: ShardWriter, split: str, segs: np.ndarray, first: int) -> None:
        order = self._row_order(split, segs.shape[0])
        for block in self.spools.row_blocks(split, segs, order, first, self.recipe.seq_len or 0, self.smap.translate):
            writer.write(block)

    def _doc_blocks(self, order: np.ndarray) -> Iterator[Block]:
        for ids, mask, off, index, _mi in self._doc_batches(order, self.progress["scan"]):
            source, record = self.smap.translate(index)
            yield Block(off.shape[0] - 1, ids, np.where(mask, ids, IGNORE), offsets=off, mask=mask,
                        doc_source=source, doc_record=record)

    def row_statistic(self, split: str) -> dict[str, Any] | None:
        """Documents per row vs row index, in the packer's order and as written (the shuffle's
        effect: the written correlation is near 0)."""
        if not self._packed(split):
            return None
        spool = self.spools.rows[split]
        segs = np.asarray(spool.read("row_segments"))
        if segs.shape[0] == 0:
            return None
        return row_order_statistic(segs, np.asarray(spool.read("seg_doc")), self._row_order(split, segs.shape[0]))

    def _finish(self, plan: Plan, scan: dict[str, Any], shards: dict[str, int], resumed: bool) -> dict[str, Any]:
        r, out, enc = self.recipe, self.out, self.enc
        seconds = time.perf_counter() - self.t0
        counts = [SourceCounts(**c) for c in scan["counts"]]
        tot = summed(counts)
        pack_tot = self.progress.get("pack", {})
        hist = LengthHistogram.from_dict(scan["lengths"])
        splits: dict[str, Any] = {}
        length = self.spools.meta.read("length")
        trained = self.spools.meta.read("trained")
        for split, order in (("train", plan.train), ("validation", plan.validation)):
            p = pack_tot.get(split)
            rows = p["rows"] if p else int(order.shape[0])
            splits[split] = {
                "documents": int(order.shape[0]), "rows": rows, "packed": self._packed(split),
                "tokens": int(np.asarray(length)[order].sum()) if order.shape[0] else 0,
                "trained_tokens": int(np.asarray(trained)[order].sum()) if order.shape[0] else 0,
                "shards": [shard_name(k, split) for k in range(shards[split])],
                "pack": ({**p, "fill_rate": PackTotals(**{k: v for k, v in p.items() if k != "pad_id"}).fill_rate}
                         if p else None),
                "order": self.row_statistic(split),
            }
        train_pack = splits["train"]["pack"]
        pack = None
        policy = {"overlong": self.overlong.value, "pad_to_multiple_of": r.pad_to_multiple_of,
                  "overlong_file": OVERLONG}
        if train_pack:
            with open(out / OVERLONG, encoding="utf-8") as f:
                firsts = [json.loads(line) for _, line in zip(range(20), f)]
            pack = {**train_pack, **policy, "overlong_documents": firsts,
                    "split": train_pack["split"] + sum(c.text_split for c in counts)}  # + text split in the scan
        elif r.pack:
            pack = {**asdict(PackTotals(r.seq_len or 0)), "fill_rate": 0.0, "pad_id": None, **policy,
                    "overlong_documents": []}
        # What the training rows train: as rendered (documents taken), minus what each policy removed.
        train_tot = PackTotals(**{k: v for k, v in train_pack.items() if k in PackTotals.__dataclass_fields__}) \
            if train_pack else PackTotals(r.seq_len or 0)
        trained_report = trained_summary(r.pack, splits["train"]["trained_tokens"], train_tot,
                                         int(self.progress.get("start_trained", {}).get("train", 0)))
        dirs = shard_dirs(r.outputs)
        run_records, run_tokens = tot["records"] - self.start_counts[0], tot["tokens"] - self.start_counts[1]
        report = {
            "out": str(out), "format": enc.format_name, "tokenizer": enc.tokenizer.name,
            "mask": common_setting([s.mask for s in r.sources]), "cot": common_setting([s.cot for s in r.sources]),
            "inputs": [s.path for s in r.sources],  # as given (a plain run's inputs); files: the manifest
            "counts": {"records": tot["records"], "documents": tot["documents"], "pieces": tot["pieces"],
                       "bad_records": tot["rejected"],
                       "untrained": tot["untrained"], "tokens": tot["tokens"],
                       "trained_tokens": trained_report["after"], "rows": splits["train"]["rows"]},
            "columns": columns_section([c.ignored_columns for c in counts], r.pack_options()),
            "trained": trained_report,
            "untrained": untrained_summary(out, r.keep_untrained, tot["untrained"]),
            "pack": pack, "lengths": hist.stats(r.seq_len),
            "errors": errors_section(out, r.max_bad_fraction, tot["rejected"], tot["records"]),
            "shards": {"count": shards["train"], "outputs": list(r.outputs), "dirs": dirs,
                       "names": splits["train"]["shards"]},
            # This run's own work: a resumed run counts from the scan checkpoint it started at.
            "timing": timing_section(seconds, run_records, run_tokens, self.workers, self.resumed_from),
            "recipe": {
                "seed": r.seed, "sources": plan.per_source, "splits": splits,
                "validation": {"spec": r.validation.to_value() if r.validation else None,
                               "documents": int(plan.validation.shape[0]), "packed": self._packed("validation")},
                "dedup": {"mode": r.dedup, "duplicates_seen": plan.duplicates, "removed": plan.removed},
                "shuffle": r.shuffle,
            },
        }
        if r.plot:
            plot_lengths(hist, out / "lengths.png", r.seq_len, tot["documents"], enc.format_name)
        manifest = {
            **manifest_base(self.opts, enc, self.fp, self.smap, pack["pad_id"] if pack else None,
                            [n for s in SPLITS for n in splits[s]["shards"]]),
            "splits": {s: {"rows": splits[s]["rows"], "documents": splits[s]["documents"],
                           "shards": len(splits[s]["shards"])} for s in SPLITS},
            "shard_size": r.shard_size, "counts": report["counts"], "inputs": self.inputs,
            "recipe": r.to_dict(), "model": self.detection,
            "options": {**self.opts.output_key(enc), "mask": report["mask"], "cot": report["cot"]},
        }
        write_json(out / "manifest.json", manifest)
        (out / "recipe.yaml").write_text(dump_recipe(r), encoding="utf-8")
        write_json(out / "report.json", report)
        write_json(self.state / PROGRESS, {"fingerprint": self.fp, "status": "done", "shards": shards["train"],
                                           "rows": splits["train"]["rows"], "checkpoint": None})
        _fault("done", 1)  # a kill here leaves the spool: the next run into --out removes it (outdir.prepare)
        self.od.remove_spool()
        return report


def run_recipe(recipe: Recipe, out: Path | str | None = None, log: IO[str] | None = None) -> RunResult:
    """Run (or resume) a resolved recipe into ``out`` (default: the recipe's ``out``)."""
    target = out if out is not None else recipe.out
    if target is None:
        raise InputError("no output folder", code="E-USAGE", field="--out", hint="pass --out DIR (or out: in the recipe)")
    state = RecipeRun(recipe, Path(target), log)
    return state.run()


__all__ = ["RecipeRun", "run_recipe"]
