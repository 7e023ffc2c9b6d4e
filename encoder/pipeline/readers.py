"""Input files -> chunks of raw records, streamed with bounded memory.

What an input is, is decided by its bytes (extensions only break ties):
gzip / zstd magic -> decompressed on the fly; ``PAR1`` -> Parquet; Arrow IPC (stream or
file) -> Arrow, as written by ``datasets.Dataset.save_to_disk``; text -> JSON Lines when
its first non-empty line is one JSON value, else one JSON document (an array of records
or a single record: what people mean when they pass a ``.json`` file).  A folder is a
``save_to_disk`` dataset (``state.json``; a ``DatasetDict`` uses its ``train`` split) or a
folder of shards (every data file below it, in path order).

Chunks carry raw payloads (JSONL lines as bytes, Arrow batches as IPC bytes): decoding
JSON and Arrow happens in the workers.  Every record has a *location* inside its source:
``line`` (1-based) for JSON Lines, ``item`` (0-based) in a JSON document, ``row``
(0-based) in Parquet / Arrow.  Record k of a chunk is at ``chunk.first + k``.

Memory: one chunk holds at most ``chunk_records`` records or about ``chunk_bytes`` bytes
of input (a single record larger than that is one chunk); a JSON document (not JSONL) is
read whole, so its size is the bound (refused above ``JSON_DOCUMENT_MAX``).
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO, Any

from ..adapters.options import RECORD_OPTIONS
from ..errors import InputError

JSON_DOCUMENT_MAX = 1 << 30  # a JSON (not JSONL) document is parsed whole: refuse above 1 GiB
_MAGIC = {b"\x1f\x8b": "gz", b"\x28\xb5\x2f\xfd": "zst"}
_TEXT_EXT = (".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz", ".jsonl.zst", ".ndjson.zst",
             ".json.zst")
_TABLE_EXT = (".parquet", ".arrow")
# Options a record may carry next to its messages (read from tabular inputs with them): the adapters' list.
OPTION_COLUMNS = RECORD_OPTIONS


class Kind(str, Enum):
    JSONL = "jsonl"
    JSON = "json"
    PARQUET = "parquet"
    ARROW = "arrow"

    @property
    def location(self) -> str:
        """What a record's location counts: ``line`` (1-based), ``item`` / ``row`` (0-based)."""
        return {"jsonl": "line", "json": "item"}.get(self.value, "row")

    @property
    def first_location(self) -> int:
        return 1 if self is Kind.JSONL else 0


@dataclass(frozen=True)
class Source:
    """One input file, as sniffed."""

    path: Path
    display: str           # the path as the user gave it (for messages)
    kind: Kind
    compression: str | None  # "gz" | "zst" | None
    size: int
    arrow_stream: bool = False  # Arrow IPC stream (save_to_disk) rather than the file format


@dataclass(frozen=True)
class Position:
    """Where reading starts: a source, the location of its first record to read, and for
    plain (seekable) JSON Lines the byte offset of that line."""

    source: int = 0
    location: int = 1
    offset: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"source": self.source, "location": self.location, "offset": self.offset}

    @classmethod
    def from_dict(cls, d: dict[str, int]) -> Position:
        return cls(int(d["source"]), int(d["location"]), int(d["offset"]))


@dataclass
class Chunk:
    """Up to ``chunk_records`` raw records of one source, in input order."""

    seq: int              # chunk number over the whole run (from the start position)
    source: int           # index into the source list
    kind: Kind
    first: int            # location of record 0
    payload: Any          # list[bytes] (JSONL lines), list[Any] (JSON items), bytes (Arrow IPC)
    count: int            # records (JSONL: lines, blank ones included)
    start: Position       # where this chunk starts (a resume point)
    end: Position         # where the next chunk of this source would start (a resume point too)


def input_error(message: str, path: str, hint: str | None = None) -> InputError:
    """A file-level input problem (the message names the path)."""
    return InputError(message, code="E-INPUT-FILE", field="INPUT", hint=hint)


# -- resolving inputs ----------------------------------------------------------------------

def resolve(inputs: Sequence[str]) -> list[Source]:
    """Paths (files or folders) -> sources in reading order; typed errors for bad paths."""
    if not inputs:
        raise input_error("no input given", "INPUT", "pass JSONL / Parquet files, folders or save_to_disk datasets")
    out: list[Source] = []
    for raw in inputs:
        path = Path(raw)
        if not path.exists():
            raise input_error(f"{raw}: no such file or directory", raw)
        if path.is_dir():
            files = _folder_files(path, raw)
            out.extend(sniff(f, os.path.join(raw, str(f.relative_to(path)))) for f in files)
        else:
            out.append(sniff(path, raw))
    return out


def _folder_files(path: Path, raw: str) -> list[Path]:
    if (path / "dataset_dict.json").is_file():
        splits = _json_file(path / "dataset_dict.json", raw).get("splits", [])
        if "train" not in splits:
            raise input_error(f"{raw} is a DatasetDict without a 'train' split (splits: {splits})", raw,
                              f"pass the split's folder, e.g. {os.path.join(raw, str(splits[0]))}" if splits else None)
        path, raw = path / "train", os.path.join(raw, "train")
    if (path / "state.json").is_file():
        state = _json_file(path / "state.json", raw)
        files = [path / f["filename"] for f in state.get("_data_files", [])]
        missing = [str(f) for f in files if not f.is_file()]
        if missing or not files:
            raise input_error(f"{raw}: save_to_disk dataset with missing data files {missing[:3]}", raw)
        return files
    found = sorted(p for p in path.rglob("*") if p.is_file() and not _hidden(p.relative_to(path))
                   and p.name.lower().endswith(_TEXT_EXT + _TABLE_EXT))
    data = [p for p in found if not p.name.lower().endswith((".json", ".json.gz", ".json.zst"))]
    files = data or found  # .json next to .jsonl / .parquet shards is metadata, not records
    if not files:
        raise input_error(f"{raw}: folder holds no .jsonl(.gz/.zst), .json, .parquet or .arrow files", raw)
    return files


def _hidden(rel: Path) -> bool:
    return any(part.startswith((".", "_")) for part in rel.parts)


def _json_file(path: Path, raw: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise input_error(f"{path}: unreadable ({exc})", raw) from None
    return data if isinstance(data, dict) else {}


def sniff(path: Path, display: str) -> Source:
    """Decide what a file is from its first bytes."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as exc:
        raise input_error(f"{display}: cannot read ({exc.strerror or exc})", display) from None
    if head.startswith(b"PAR1"):
        return Source(path, display, Kind.PARQUET, None, size)
    if head.startswith(b"ARROW1"):
        return Source(path, display, Kind.ARROW, None, size)
    if head.startswith(b"\xff\xff\xff\xff"):
        return Source(path, display, Kind.ARROW, None, size, arrow_stream=True)
    compression = _MAGIC.get(head[:2]) or _MAGIC.get(head[:4])
    if size == 0:
        return Source(path, display, Kind.JSONL, None, size)
    try:
        with _open_text(path, compression) as f:
            first = b""
            while not first.strip():
                line = f.readline()
                if not line:
                    break
                first = line
    except (OSError, EOFError, ValueError) as exc:
        raise input_error(f"{display}: cannot read ({exc})", display,
                          "is the file complete? a truncated .gz / .zst cannot be read") from None
    if b"\x00" in first[:4096]:
        raise input_error(f"{display}: binary file, not JSON Lines / JSON / Parquet / Arrow", display)
    kind = Kind.JSONL
    if first.lstrip()[:1] in (b"[", b"{") and not _one_value(first):
        kind = Kind.JSON  # the first line is not a whole value: a pretty-printed document
    if first.lstrip()[:1] == b"[" and _one_value(first) and _is_record_array(first):
        kind = Kind.JSON  # a one-line JSON array of records
    return Source(path, display, kind, compression, size)


def _one_value(line: bytes) -> bool:
    try:
        json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def _is_record_array(line: bytes) -> bool:
    """A JSON array of objects that are records (not a bare message list)."""
    value = json.loads(line)
    return bool(value) and all(isinstance(v, dict) for v in value) and not any("role" in v for v in value)


def _open_text(path: Path, compression: str | None) -> IO[bytes]:
    if compression == "gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if compression == "zst":
        import zstandard

        raw = open(path, "rb")
        reader = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True)
        import io

        return io.BufferedReader(reader, buffer_size=1 << 20)  # type: ignore[arg-type]
    return open(path, "rb", buffering=1 << 20)


# -- reading ---------------------------------------------------------------------------------

def columns_for(source: Source, schema_names: Sequence[str], messages_field: str, tools_field: str) -> list[str]:
    """The columns of a tabular source: all of them (each record then goes through the one
    column rule, ``ocml.encoder.inputs.columns``); a clear error when it has no messages
    column but one that looks like a typo of it."""
    if messages_field not in schema_names and "conversations" not in schema_names:
        from .records import looks_like

        near = [c for c in schema_names if looks_like(c, messages_field)]
        if not near:  # records of another shape (encoder.inputs): each record's shape decides
            return list(schema_names)
        raise InputError(f"{source.display} has no column {messages_field!r} (columns: {list(schema_names)[:12]})",
                         code="E-INPUT-FIELD", field=messages_field,
                         hint=f"pass --messages-field {near[0]}" if near else "pass --messages-field COLUMN")
    return list(schema_names)


def iter_chunks(sources: Sequence[Source], *, messages_field: str = "messages", tools_field: str = "tools",
                start: Position | None = None, chunk_records: int = 256,
                chunk_bytes: int = 4 << 20) -> Iterator[Chunk]:
    """Chunks of every source in order, from ``start`` (a ``Position`` from a previous run)."""
    start = start or Position(0, sources[0].kind.first_location if sources else 1, 0)
    seq = 0
    for si in range(start.source, len(sources)):
        src = sources[si]
        begin = start if si == start.source else Position(si, src.kind.first_location, 0)
        try:
            if src.kind is Kind.JSONL:
                gen = _jsonl_chunks(src, si, begin, chunk_records, chunk_bytes)
            elif src.kind is Kind.JSON:
                gen = _json_chunks(src, si, begin, chunk_records)
            else:
                gen = _table_chunks(src, si, begin, chunk_records, messages_field, tools_field)
            for kind, first, payload, count, pos, end in gen:
                yield Chunk(seq, si, kind, first, payload, count, pos, end)
                seq += 1
        except InputError:
            raise
        except (OSError, EOFError, ValueError) as exc:  # truncated .gz/.zst, corrupt Parquet...
            raise input_error(f"{src.display}: read failed ({type(exc).__name__}: {exc})", src.display,
                              "the file may be truncated or corrupt; complete shards are kept, "
                              "rerun the same command after fixing it to resume") from None


_Part = tuple[Kind, int, Any, int, Position, Position]


def _jsonl_chunks(src: Source, si: int, begin: Position, n: int, nbytes: int) -> Iterator[_Part]:
    with _open_text(src.path, src.compression) as f:
        line_no, offset = 1, 0
        if begin.location > 1:
            if src.compression is None and begin.offset:
                f.seek(begin.offset)
                line_no, offset = begin.location, begin.offset
            else:  # compressed: no seek, skip lines without decoding them
                for _ in range(begin.location - 1):
                    if not f.readline():
                        break
                line_no = begin.location
        lines: list[bytes] = []
        size = 0
        chunk_line, chunk_offset = line_no, offset
        for line in f:
            lines.append(line)
            size += len(line)
            if len(lines) >= n or size >= nbytes:
                yield (Kind.JSONL, chunk_line, lines, len(lines), Position(si, chunk_line, chunk_offset),
                       Position(si, chunk_line + len(lines), chunk_offset + size))
                chunk_line += len(lines)
                chunk_offset += size
                lines, size = [], 0
        if lines:
            yield (Kind.JSONL, chunk_line, lines, len(lines), Position(si, chunk_line, chunk_offset),
                   Position(si, chunk_line + len(lines), chunk_offset + size))


def _json_chunks(src: Source, si: int, begin: Position, n: int) -> Iterator[_Part]:
    if src.compression is None and src.size > JSON_DOCUMENT_MAX:
        raise input_error(f"{src.display}: a {src.size >> 20} MiB JSON document (not JSON Lines) is too large to "
                          "read whole", src.display, "convert it to JSON Lines: jq -c '.[]' FILE > FILE.jsonl")
    with _open_text(src.path, src.compression) as f:
        data = f.read(JSON_DOCUMENT_MAX + 1)
    if len(data) > JSON_DOCUMENT_MAX:
        raise input_error(f"{src.display}: JSON document larger than 1 GiB", src.display,
                          "convert it to JSON Lines: jq -c '.[]' FILE > FILE.jsonl")
    try:
        value = json.loads(data)
    except UnicodeDecodeError as exc:
        raise input_error(f"{src.display}: not UTF-8 text ({exc.reason} at byte {exc.start})", src.display) from None
    except json.JSONDecodeError as exc:
        raise input_error(f"{src.display}: not valid JSON ({exc.msg.removesuffix(' at')} at line {exc.lineno}, column {exc.colno})",
                          src.display, "JSON Lines needs one JSON value per line; a JSON document must be "
                          "one array of records or one record") from None
    del data
    items = value if isinstance(value, list) and not (value and isinstance(value[0], dict)
                                                       and "role" in value[0]) else [value]
    for first in range(begin.location, len(items), n):
        part = items[first:first + n]
        yield Kind.JSON, first, part, len(part), Position(si, first, 0), Position(si, first + len(part), 0)


def _table_chunks(src: Source, si: int, begin: Position, n: int, messages_field: str, tools_field: str
                  ) -> Iterator[_Part]:
    import pyarrow as pa

    def ipc(batch: Any) -> bytes:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as w:
            w.write_batch(batch)
        return sink.getvalue().to_pybytes()

    row = 0
    for batch in _batches(src, n, messages_field, tools_field, begin.location):
        if row + batch.num_rows <= begin.location:
            row += batch.num_rows
            continue
        skip = max(0, begin.location - row)
        for k in range(skip, batch.num_rows, n):
            part = batch.slice(k, n)
            yield (src.kind, row + k, ipc(part), part.num_rows, Position(si, row + k, 0),
                   Position(si, row + k + part.num_rows, 0))
        row += batch.num_rows


def _batches(src: Source, n: int, messages_field: str, tools_field: str, skip_rows: int) -> Iterator[Any]:
    import pyarrow as pa

    if src.kind is Kind.PARQUET:
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(src.path, memory_map=True)
        cols = columns_for(src, pf.schema_arrow.names, messages_field, tools_field)
        md = pf.metadata
        groups, row = [], 0
        for g in range(md.num_row_groups):  # skip whole row groups before a resume point
            rows = md.row_group(g).num_rows
            if row + rows > skip_rows:
                groups.append(g)
            row += rows
        first = sum(md.row_group(g).num_rows for g in range(md.num_row_groups) if g < (groups[0] if groups else 0))
        if first:
            yield _Gap(first)
        if groups:
            yield from pf.iter_batches(batch_size=max(n, 1024), row_groups=groups, columns=cols)
        return
    source = pa.memory_map(str(src.path))
    reader = pa.ipc.open_stream(source) if src.arrow_stream else pa.ipc.open_file(source)
    cols = columns_for(src, reader.schema.names, messages_field, tools_field)
    if src.arrow_stream:
        for batch in reader:
            yield batch.select(cols)
    else:
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i).select(cols)


class _Gap:
    """Rows skipped without reading them (whole Parquet row groups before a resume point)."""

    def __init__(self, rows: int) -> None:
        self.num_rows = rows


def count_records(src: Source) -> int | None:
    """Records in a source when its metadata says so (Parquet), else None."""
    if src.kind is Kind.PARQUET:
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(src.path).metadata.num_rows)
    return None
