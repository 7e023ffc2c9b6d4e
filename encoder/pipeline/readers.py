"""Input files -> chunks of raw records, streamed with bounded memory.

What an input is, is decided by its bytes (extensions only break ties):
gzip / zstd / bzip2 / xz magic -> decompressed on the fly (``streams``: a truncated or
corrupt stream is ``E-INPUT-TRUNCATED`` / ``E-INPUT-CORRUPT``, never a quiet end); ``PAR1`` ->
Parquet; Arrow IPC (stream or file) -> Arrow, as written by ``datasets.Dataset.save_to_disk``
(a stream without its end-of-stream marker is truncated); text -> JSON Lines when
its first non-empty line is one JSON value, else one JSON document (an array of records
or a single record: what people mean when they pass a ``.json`` file).  A folder is a
``save_to_disk`` dataset (``state.json``; a ``DatasetDict`` uses its ``train`` split) or a
folder of shards (every data file below it, in path order).

Chunks carry raw payloads (JSONL lines as bytes, Arrow batches as IPC bytes): decoding
JSON and Arrow happens in the workers.  Every record has a *location* inside its source:
``line`` (1-based) for JSON Lines, ``item`` (0-based) in a JSON document, ``row``
(0-based) in Parquet / Arrow.  Record k of a chunk is at ``chunk.first + k``.

Memory: one chunk holds at most ``chunk_records`` records or about ``chunk_bytes`` bytes
of input (a single record larger than that is one chunk); a JSON Lines line is read up to
``max_line_bytes`` (``MAX_LINE_BYTES``, 64 MiB, by default): a longer line is skipped without
holding it and becomes that record's ``E-INPUT-LINE-TOO-LONG``; a JSON document (not JSONL) is
read whole, so its size is the bound (refused above ``JSON_DOCUMENT_MAX``).

Only regular files are read: a FIFO, a device (``/dev/zero``) or a socket is refused
(``E-INPUT-FILE``), because an input is read more than once (sniffed, fingerprinted from its
head and tail, then read; seeked into on resume) and a pipe can be read only once.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO, Any

from ..adapters.options import RECORD_OPTIONS
from ..errors import InputError, OcmlError
from ..jsonlimits import loads_record
from .streams import DamagedInput, codec_of, open_compressed

JSON_DOCUMENT_MAX = 1 << 30  # a JSON (not JSONL) document is parsed whole: refuse above 1 GiB
MAX_LINE_BYTES = 64 << 20    # a JSON Lines line (its newline included) longer than this is a bad record
_COMPRESSED_EXT = ("", ".gz", ".zst", ".bz2", ".xz")
_TEXT_EXT = tuple(base + c for base in (".jsonl", ".ndjson", ".json") for c in _COMPRESSED_EXT)
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
        data = loads_record(path.read_bytes(), str(path))
    except (OSError, ValueError) as exc:  # typed pathologies (jsonlimits) included
        raise input_error(f"{path}: unreadable ({exc})", raw) from None
    return data if isinstance(data, dict) else {}


def sniff(path: Path, display: str) -> Source:
    """Decide what a file is from its first bytes (regular files only: see the module doc)."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            what = ("a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "a device" if
                    stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "a socket" if
                    stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise input_error(f"{display} is {what}: ocml pack reads regular files only", display,
                              "an input is read more than once (sniffed, fingerprinted, resumed): write the "
                              "stream to a file first (e.g. cmd > data.jsonl), then pack the file")
        size = st.st_size
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
    compression = codec_of(head)
    if size == 0:
        return Source(path, display, Kind.JSONL, None, size)
    try:
        with _open_text(path, compression, display) as f:
            first = b""
            while not first.strip():
                line = f.readline(MAX_LINE_BYTES + 1)
                if not line:
                    break
                first = line
    except InputError:
        raise
    except (OSError, EOFError, ValueError) as exc:
        raise input_error(f"{display}: cannot read ({exc})", display) from None
    if b"\x00" in first[:4096]:
        raise input_error(f"{display}: binary file, not JSON Lines / JSON / Parquet / Arrow", display)
    kind = Kind.JSONL
    start = first.lstrip()[:1]
    if len(first) > MAX_LINE_BYTES:  # no whole first line to look at: a one-line JSON array is a document
        return Source(path, display, Kind.JSON if start == b"[" else Kind.JSONL, compression, size)
    whole, value = _one_value(first)
    if start in (b"[", b"{") and not whole:
        kind = Kind.JSON  # the first line is not a whole value: a pretty-printed document
    if start == b"[" and whole and _is_record_array(value):
        kind = Kind.JSON  # a one-line JSON array of records
    return Source(path, display, kind, compression, size)


def _one_value(line: bytes) -> tuple[bool, Any]:
    """(is ``line`` one whole JSON value, that value).  A value too deep or with too long a
    number is still a whole line: its record's own error (``jsonlimits``)."""
    try:
        return True, loads_record(line)
    except OcmlError:
        return True, None
    except (ValueError, UnicodeDecodeError):
        return False, None


def _is_record_array(value: Any) -> bool:
    """A JSON array of objects that are records (not a bare message list)."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value) \
        and not any("role" in v for v in value)


def _open_text(path: Path, compression: str | None, display: str) -> IO[bytes]:
    if compression is not None:
        return open_compressed(path, compression, display)
    return open(path, "rb", buffering=1 << 20)


@dataclass(frozen=True)
class LongLine:
    """A JSON Lines line longer than ``limit`` bytes: skipped without holding it (``size``: its
    bytes, newline included), the record's ``E-INPUT-LINE-TOO-LONG``."""

    size: int
    limit: int


def _lines(f: IO[bytes], limit: int) -> Iterator[bytes | LongLine]:
    """The lines of ``f``, each at most ``limit`` bytes; a longer one is a ``LongLine``."""
    while True:
        line = f.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit:
            yield line
            continue
        size = len(line)
        while not line.endswith(b"\n"):
            line = f.readline(1 << 20)
            if not line:
                break
            size += len(line)
        yield LongLine(size, limit)


# -- reading ---------------------------------------------------------------------------------

def columns_for(display: str, schema_names: Sequence[str], messages_field: str, tools_field: str) -> list[str]:
    """The columns of a tabular source: all of them (each record then goes through the one
    column rule, ``ocml.encoder.inputs.columns``); a clear error when it has no messages
    column but one that looks like a typo of it (``display``: the source, as errors name it)."""
    if messages_field not in schema_names and "conversations" not in schema_names:
        from .records import looks_like

        near = [c for c in schema_names if looks_like(c, messages_field)]
        if not near:  # records of another shape (encoder.inputs): each record's shape decides
            return list(schema_names)
        raise InputError(f"{display} has no column {messages_field!r} (columns: {list(schema_names)[:12]})",
                         code="E-INPUT-FIELD", field=messages_field,
                         hint=f"pass --messages-field {near[0]}" if near else "pass --messages-field COLUMN")
    return list(schema_names)


def iter_chunks(sources: Sequence[Source], *, messages_field: str = "messages", tools_field: str = "tools",
                start: Position | None = None, chunk_records: int = 256,
                chunk_bytes: int = 4 << 20, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Chunk]:
    """Chunks of every source in order, from ``start`` (a ``Position`` from a previous run).

    A source that cannot be read to its end (truncated or corrupt) raises a typed error naming
    it and where reading stopped: the run fails, whatever ``--max-bad-fraction`` says, because
    how many records the rest of the file held cannot be known (so it cannot be weighed)."""
    start = start or Position(0, sources[0].kind.first_location if sources else 1, 0)
    seq = 0
    for si in range(start.source, len(sources)):
        src = sources[si]
        begin = start if si == start.source else Position(si, src.kind.first_location, 0)
        done = begin
        try:
            if src.kind is Kind.JSONL:
                gen = _jsonl_chunks(src, si, begin, chunk_records, chunk_bytes, max_line_bytes)
            elif src.kind is Kind.JSON:
                gen = _json_chunks(src, si, begin, chunk_records)
            else:
                gen = _table_chunks(src, si, begin, chunk_records, messages_field, tools_field)
            for kind, first, payload, count, pos, end in gen:
                yield Chunk(seq, si, kind, first, payload, count, pos, end)
                done = end
                seq += 1
        except InputError:
            raise
        except _read_errors() as exc:  # corrupt or truncated Parquet / Arrow, a failing disk...
            where = f"{src.kind.location} {done.location:,}"
            raise input_error(f"{src.display}: read failed at {where} ({type(exc).__name__}: {exc})", src.display,
                              "the file may be truncated or corrupt: fetch it again; complete shards are kept "
                              "(rerun with --overwrite once the file is replaced)") from None


def _read_errors() -> tuple[type[BaseException], ...]:
    """What reading a damaged file raises: OS errors, and pyarrow's own errors when it is loaded."""
    import sys

    pa = sys.modules.get("pyarrow")
    arrow = (pa.ArrowException,) if pa is not None else ()
    return (OSError, EOFError, ValueError, *arrow)


_Part = tuple[Kind, int, Any, int, Position, Position]


def _jsonl_chunks(src: Source, si: int, begin: Position, n: int, nbytes: int, max_line: int) -> Iterator[_Part]:
    last = [begin.location - 1]  # the last whole line read (for the message of a damaged stream)
    try:
        yield from _jsonl_parts(src, si, begin, n, nbytes, max_line, last)
    except DamagedInput as exc:
        raise DamagedInput(f"{exc.message}; line {last[0]:,} is the last whole line read", offset=exc.offset,
                           truncated=exc.truncated, hint=exc.hint) from None


def _jsonl_parts(src: Source, si: int, begin: Position, n: int, nbytes: int, max_line: int,
                 last: list[int]) -> Iterator[_Part]:
    with _open_text(src.path, src.compression, src.display) as f:
        line_no, offset = 1, 0
        if begin.location > 1:
            if src.compression is None and begin.offset:
                f.seek(begin.offset)
                line_no, offset = begin.location, begin.offset
            else:  # compressed: no seek, skip lines without decoding them
                skipped = _lines(f, max_line)
                for _ in range(begin.location - 1):
                    if next(skipped, None) is None:
                        break
                line_no = begin.location
        lines: list[bytes | LongLine] = []
        size = 0
        chunk_line, chunk_offset = line_no, offset
        for line in _lines(f, max_line):
            lines.append(line)
            last[0] = chunk_line + len(lines) - 1
            size += line.size if isinstance(line, LongLine) else len(line)
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
    with _open_text(src.path, src.compression, src.display) as f:
        data = f.read(JSON_DOCUMENT_MAX + 1)
    if len(data) > JSON_DOCUMENT_MAX:
        raise input_error(f"{src.display}: JSON document larger than 1 GiB", src.display,
                          "convert it to JSON Lines: jq -c '.[]' FILE > FILE.jsonl")
    try:
        value = loads_record(data, f"the JSON document {src.display}", field="INPUT")
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
        data: bytes = sink.getvalue().to_pybytes()  # pyarrow has no type information
        return data

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
        cols = columns_for(src.display, pf.schema_arrow.names, messages_field, tools_field)
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
    if src.arrow_stream and not _stream_ends(source, src.size):
        raise DamagedInput(f"{src.display}: truncated: the Arrow IPC stream ends at byte {src.size:,} without its "
                           "end-of-stream marker", offset=src.size, truncated=True,
                           hint="the file is incomplete (an interrupted save_to_disk, download or copy?): write "
                                "or fetch it again")
    reader = pa.ipc.open_stream(source) if src.arrow_stream else pa.ipc.open_file(source)
    cols = columns_for(src.display, reader.schema.names, messages_field, tools_field)
    if src.arrow_stream:
        for batch in reader:
            yield batch.select(cols)
    else:
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i).select(cols)


def _stream_ends(source: Any, size: int) -> bool:
    """Does an Arrow IPC stream end with its end-of-stream marker (``0xFFFFFFFF 0x00000000``, which
    every writer since Arrow 0.15 closes a stream with)?  A stream cut between two batches reads
    cleanly without it."""
    source.seek(max(0, size - 8))
    tail = source.read(8)
    source.seek(0)
    return bool(tail == b"\xff\xff\xff\xff\x00\x00\x00\x00")


class _Gap:
    """Rows skipped without reading them (whole Parquet row groups before a resume point)."""

    def __init__(self, rows: int) -> None:
        self.num_rows = rows


def count_records(src: Source) -> int | None:
    """Records in a source when its metadata says so (Parquet), else None."""
    if src.kind is Kind.PARQUET:
        import pyarrow.parquet as pq

        try:
            return int(pq.ParquetFile(src.path).metadata.num_rows)
        except _read_errors():
            return None  # a damaged file: reading it says so, with its name
    return None
