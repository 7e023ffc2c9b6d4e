"""Chunks of raw records -> rendered documents, in worker processes, in input order.

A worker gets the encoder once (it pickles as a few hundred bytes: format name,
tokenizer recipe, options; see ``Encoder.__reduce__``) and rebuilds it from its own
per-process vocabulary cache.  Each chunk comes back as flat arrays (ids, mask, offsets,
location of each document) plus its bad records: a chunk is rendered whole with
``inputs.render_records(errors="collect")`` (records of every sequence shape, read by the input
layer), so a bad record never costs its neighbours.

Order and memory: at most ``in_flight`` chunks are read ahead of the one being consumed,
and results are consumed strictly in chunk order, so the output does not depend on the
number of workers or on their timing.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import OcmlError
from ..jsonlimits import SLOW, loads_line, loads_record, pathology
from ..inputs.shapes import PAIR_SHAPES
from ..packing.docs import concat_results
from ..gcpolicy import after_worker_setup, rendering
from .readers import Chunk, Kind, LongLine
from .records import conversation_from_record, drop_nulls
from .untrained import untrained_reason


PAIR_SHAPE_NAMES = frozenset(s.value for s in PAIR_SHAPES)


@dataclass(frozen=True)
class RecordError:
    """One bad record: where it is and what is wrong with it."""

    source: int
    location: int
    code: str
    message: str
    field: str | None = None
    message_index: int | None = None
    hint: str | None = None

    @classmethod
    def of(cls, source: int, location: int, exc: OcmlError) -> RecordError:
        return cls(source, location, exc.code, exc.message, exc.field, exc.index, exc.hint)


@dataclass
class Rendered:
    """One chunk, rendered: documents as flat arrays plus the chunk's bad records."""

    seq: int
    source: int
    ids: np.ndarray            # int32, all documents back to back
    mask: np.ndarray           # bool
    offsets: np.ndarray        # int64 [docs+1]
    locations: np.ndarray      # int64 [docs]: location of each document's record
    message_index: np.ndarray | None  # int32 (only when the packer truncates at message ends)
    errors: list[RecordError] = field(default_factory=list)
    records: int = 0           # records read (blank JSONL lines are not records)
    #: (location, reason) of documents with nothing to train (``untrained``): left out of the
    #: arrays unless ``RenderSpec.keep_untrained``
    untrained: list[tuple[int, str]] = field(default_factory=list)
    rows: Any = None           # preference / KTO rows (encoder.inputs.rows.PairBlock), written as they are
    presplit: list[Any] = field(default_factory=list)  # text documents split here (encoder.inputs.overlong_text)
    #: extra columns ignored (``encoder.inputs.columns``): column -> records that carried it
    ignored: dict[str, int] = field(default_factory=dict)

    @property
    def documents(self) -> int:
        return int(self.locations.shape[0])


@dataclass(frozen=True)
class RenderSpec:
    """What a worker needs besides the encoder (pickled once per worker)."""

    messages_field: str = "messages"
    tools_field: str = "tools"
    message_index: bool = False
    keep_untrained: bool = False  # keep documents with no trained token (else skipped, listed in ``untrained``)
    split_text: int = 0  # > 0: split text documents longer than this here (encoder.inputs.overlong_text)


def json_error(exc: json.JSONDecodeError) -> str:
    """``Unterminated string starting at column 40`` (json's messages end in "at" or not)."""
    return f"{exc.msg}{'' if exc.msg.endswith(' at') else ' at'} column {exc.colno}"


def decode_records(chunk: Chunk, tools_field: str = "tools") -> list[tuple[int, Any]]:
    """(location, record or OcmlError) for every record of the chunk (blank lines skipped).
    Records from Arrow lose the null keys of their ``tools_field`` (``records.drop_nulls``)."""
    out: list[tuple[int, Any]] = []
    if chunk.kind is Kind.JSONL:
        for k, line in enumerate(chunk.payload):
            if type(line) is LongLine:
                out.append((chunk.first + k, OcmlError(
                    f"line is {line.size:,} bytes, over the {line.limit:,}-byte limit (skipped unread)",
                    code="E-INPUT-LINE-TOO-LONG",
                    hint="split the record, or raise --max-line-bytes if it really is one conversation")))
                continue
            fast = loads_line(line)
            if fast is not SLOW:
                out.append((chunk.first + k, fast))
                continue
            if not line.strip():
                continue
            try:
                # Decoded as UTF-8 explicitly: json.loads(bytes) would guess UTF-16/32 from the bytes.
                out.append((chunk.first + k, loads_record(line.decode("utf-8").lstrip("\ufeff").rstrip("\r\n"),
                                                          "the line")))
            except OcmlError as exc:  # too deep, too long a number (jsonlimits)
                out.append((chunk.first + k, exc))
            except UnicodeDecodeError as exc:
                out.append((chunk.first + k, OcmlError(
                    f"line is not UTF-8 ({exc.reason} at byte {exc.start})", code="E-INPUT-UTF8",
                    hint="re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)")))
            except json.JSONDecodeError as exc:
                out.append((chunk.first + k, OcmlError(
                    f"line is not valid JSON ({json_error(exc)})", code="E-INPUT-JSON",
                    hint="JSON Lines needs one complete JSON value per line")))
    elif chunk.kind is Kind.JSON:
        out = [(chunk.first + k, rec) for k, rec in enumerate(chunk.payload)]
    else:
        import pyarrow as pa

        table = pa.ipc.open_stream(chunk.payload).read_all()
        rows = table.to_pylist()
        if tools_field in table.schema.names:  # Arrow structs: nulls for absent keys
            for rec in rows:
                if rec.get(tools_field) is not None:
                    rec[tools_field] = drop_nulls(rec[tools_field])
        out = [(chunk.first + k, rec) for k, rec in enumerate(rows)]
    return out


def render_chunk(enc: Any, chunk: Chunk, spec: RenderSpec) -> Rendered:
    """Decode, adapt and render one chunk; bad records become ``RecordError``s."""
    errors: list[RecordError] = []
    convs: list[Any] = []
    locs: list[int] = []
    decoded = decode_records(chunk, spec.tools_field)
    ignored: Counter[str] = Counter()
    for loc, rec in decoded:
        if isinstance(rec, OcmlError):
            errors.append(RecordError.of(chunk.source, loc, rec))
            continue
        try:
            convs.append(conversation_from_record(rec, messages_field=spec.messages_field,
                                                  tools_field=spec.tools_field, shape=enc.shape,
                                                  shape_options=enc.shape_options, ignored=ignored))
            locs.append(loc)
        except OcmlError as exc:
            errors.append(RecordError.of(chunk.source, loc, exc))
        except (RecursionError, ValueError) as exc:  # a pathological value (jsonlimits): this record's error
            typed = pathology(exc, "the record")
            if typed is None:
                raise
            errors.append(RecordError.of(chunk.source, loc, typed))
    if enc.shape in PAIR_SHAPE_NAMES:
        return _render_rows(enc, chunk, list(zip(locs, convs)), errors, len(decoded), dict(ignored))
    results = _render_all(enc, convs)
    ok: list[Any] = []
    ok_locs: list[int] = []
    ok_convs: list[Any] = []
    untrained: list[tuple[int, str]] = []
    for loc, conv, res in zip(locs, convs, results):
        if isinstance(res, OcmlError):
            errors.append(RecordError.of(chunk.source, loc, res))
            continue
        why = untrained_reason(conv, res)
        if why is not None:
            untrained.append((loc, why.value))
            if not spec.keep_untrained:
                continue
        ok.append(res)
        ok_locs.append(loc)
        ok_convs.append(conv)
    presplit: list[Any] = []
    if spec.split_text:
        from ..inputs.overlong_text import split_text

        ok_locs, ok, presplit = split_text(enc, ok_convs, ok_locs, ok, spec.split_text)
    errors.sort(key=lambda e: e.location)
    ids, mask, offsets, message_index = concat_results(ok, spec.message_index)
    return Rendered(seq=chunk.seq, source=chunk.source, ids=ids, mask=mask, offsets=offsets,
                    locations=np.asarray(ok_locs, dtype=np.int64), message_index=message_index,
                    errors=errors, records=len(decoded), untrained=untrained, presplit=presplit,
                    ignored=dict(ignored))


def _render_rows(enc: Any, chunk: Chunk, good: list[tuple[int, Any]], errors: list[RecordError], records: int,
                 ignored: dict[str, int]) -> Rendered:
    """A chunk of preference / KTO records (read by the column rule) -> one row each
    (``ocml.encoder.inputs.rows``)."""
    from ..inputs.rows import render_row_chunk

    locs, block, bad, ids, mask, offsets = render_row_chunk(enc, good)
    errors += [RecordError.of(chunk.source, loc, exc) for loc, exc in bad]
    errors.sort(key=lambda e: e.location)
    return Rendered(seq=chunk.seq, source=chunk.source, ids=ids, mask=mask, offsets=offsets,
                    locations=np.asarray(locs, dtype=np.int64), message_index=None, errors=errors,
                    records=records, rows=block, ignored=ignored)


def _render_all(enc: Any, convs: list[Any]) -> list[Any]:
    """One ``render_records`` for the chunk; per record (naming the failure) if it raises anyway."""
    from ..inputs.render_record import render_record, render_records

    try:
        batch = render_records(enc, convs, errors="collect")
        out: list[Any] = list(batch.results)
        for i, exc in batch.errors:
            out[i] = exc
        return out
    except Exception:  # noqa: BLE001 - a record that breaks the batch path must not stop the run
        pass
    out = []
    for conv in convs:
        try:
            out.append(render_record(enc, conv))
        except OcmlError as exc:
            out.append(exc)
        except Exception as exc:  # noqa: BLE001 - reported as a bad record, never a crash mid-run
            out.append(OcmlError(f"internal error while rendering: {type(exc).__name__}: {exc}", code="E-INTERNAL",
                                 hint="this is a bug in ocml: please report it with this record"))
    return out


# -- the pool ------------------------------------------------------------------------------------

_WORKER: dict[str, Any] = {}


def _init_worker(enc: Any, spec: RenderSpec) -> None:
    import signal

    # Ctrl-C is the main process's to handle (it stops the pool): no traceback per worker.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER["enc"], _WORKER["spec"] = enc, spec
    parent = multiprocessing.parent_process()
    if parent is not None:
        # If the main process is killed (kill -9, OOM), exit instead of waiting forever on a
        # task queue whose write end this worker itself holds open.
        import threading
        from multiprocessing.connection import wait

        def watch() -> None:
            wait([parent.sentinel])
            os._exit(1)

        threading.Thread(target=watch, daemon=True, name="ocml-parent-watch").start()
    after_worker_setup()


def _work(chunk: Chunk) -> Rendered:
    with rendering():
        return render_chunk(_WORKER["enc"], chunk, _WORKER["spec"])


def default_workers() -> int:
    """All the cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _ping() -> int:
    return os.getpid()


def _context() -> Any:
    """``fork`` on Linux while this process has one thread: workers start at once with the
    encoder and its parsed vocabulary already in memory (shared copy-on-write).  Otherwise
    (threads exist: forking could copy a held lock; other systems) ``forkserver`` with this
    module imported once in the server, or ``spawn``.  Either way the encoder reaches each
    worker through the pool's initializer (``_init_worker``), like every other argument.

    No encoder is preloaded into the forkserver (it once was, from a pickled environment
    variable unpickled at import): that saved each forkserver worker its vocabulary load,
    measured ~1 s of CPU per worker once per run (``python scripts/bench_pool_start.py``),
    and cost an import-time ``pickle.loads`` of the environment."""
    import threading

    methods = multiprocessing.get_all_start_methods()
    if sys.platform == "linux" and "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" not in methods:
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["ocml.encoder.pipeline.workers"])
    return ctx


class RenderPool:
    """Renders chunks with ``workers`` processes (1 = in this process), results in order."""

    def __init__(self, enc: Any, spec: RenderSpec, workers: int, in_flight: int | None = None) -> None:
        self.enc, self.spec, self.workers = enc, spec, max(1, workers)
        self.in_flight = in_flight or 2 * self.workers + 1
        self._pool: ProcessPoolExecutor | None = None
        if self.workers > 1:
            ctx = _context()
            self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_init_worker,
                                             initargs=(enc, spec))
            self._pool.submit(_ping).result()  # start the workers now (fork: before any thread of ours)

    def map(self, chunks: Iterator[Chunk]) -> Iterator[Rendered]:
        if self._pool is None:
            for chunk in chunks:
                with rendering():
                    rendered = render_chunk(self.enc, chunk, self.spec)
                yield rendered
            return
        pending: deque[Future[Rendered]] = deque()
        try:
            for chunk in chunks:
                pending.append(self._pool.submit(_work, chunk))
                if len(pending) >= self.in_flight:
                    yield self._result(pending.popleft())
            while pending:
                yield self._result(pending.popleft())
        finally:
            for f in pending:
                f.cancel()

    @staticmethod
    def _result(fut: Future[Rendered]) -> Rendered:
        try:
            return fut.result()
        except BrokenProcessPool:
            raise OcmlError("a worker process died (out of memory, or killed)", code="E-WORKER",
                            hint="rerun the same command to resume; use fewer --workers if memory is short") from None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> RenderPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
