"""Compressed inputs (gzip, zstd, bzip2, xz) read as one byte stream that tells its end from damage.

A decompressor told "no more input" in the middle of a frame has a truncated file, and one
that cannot decode its input has a corrupt file; both are ``DamagedInput`` (``E-INPUT-TRUNCATED``
/ ``E-INPUT-CORRUPT``) naming the file and the compressed byte offset, never a short stream
that ends as if the file did (``zstandard``'s own reader ends quietly at a cut).  Concatenated
members / frames / streams are read one after another (what ``cat a.gz b.gz`` and
``pzstd`` / ``pigz`` write); zero bytes between or after them are padding (as ``gzip`` and ``xz``
allow), anything else after a member is corrupt.

Memory: input is fed ``IN_BYTES`` at a time and each step yields at most ``OUT_BYTES`` of
output (zstd has no output bound per call: its 4 KiB of input yield at most ~128 MiB, zstd's
largest ratio), so a decompression bomb costs time, never memory.
"""

from __future__ import annotations

import bz2
import io
import lzma
import zlib
from typing import IO, Any

from ..errors import InputError

IN_BYTES = 4096          # compressed bytes fed per step
OUT_BYTES = 1 << 20      # decompressed bytes taken per step (gzip, bzip2, xz)
#: codec -> its magic bytes (a file is sniffed by them; extensions only break ties)
MAGIC: dict[str, bytes] = {"gz": b"\x1f\x8b", "zst": b"\x28\xb5\x2f\xfd", "bz2": b"BZh", "xz": b"\xfd7zXZ\x00"}
_NAMES = {"gz": "gzip member", "zst": "zstd frame", "bz2": "bzip2 stream", "xz": "xz stream"}
_TOOLS = {"gz": "gzip", "zst": "zstd", "bz2": "bzip2", "xz": "xz"}
_ERRORS: tuple[type[BaseException], ...] = (zlib.error, OSError, EOFError, ValueError, lzma.LZMAError)


class DamagedInput(InputError):
    """A compressed input that is truncated or corrupt (``offset``: the compressed byte)."""

    code = "E-INPUT-CORRUPT"

    def __init__(self, message: str, *, offset: int, truncated: bool, hint: str | None = None) -> None:
        self.offset, self.truncated = offset, truncated
        super().__init__(message, code="E-INPUT-TRUNCATED" if truncated else "E-INPUT-CORRUPT", field="INPUT",
                         hint=hint)


def codec_of(head: bytes) -> str | None:
    """The compression of a file starting with ``head`` (its first 8 bytes), or None."""
    if _zstd_skippable(head):
        return "zst"  # a skippable frame first (pzstd, seekable zstd)
    return next((c for c, m in MAGIC.items() if head.startswith(m)), None)


def _zstd_skippable(data: bytes) -> bool:
    """A zstd skippable frame's magic (``0x184D2A50`` to ``0x184D2A5F``, little-endian)."""
    return len(data) >= 4 and data[1:4] == b"\x2a\x4d\x18" and 0x50 <= data[0] <= 0x5F


def _starts_member(codec: str, data: bytes) -> bool:
    """Can ``data`` (possibly only a few bytes) be the start of another member / frame?"""
    magic = MAGIC[codec]
    if len(data) < len(magic):
        return magic.startswith(data) or (codec == "zst" and len(data) < 4)
    return data.startswith(magic) or (codec == "zst" and _zstd_skippable(data))


class _Step:
    """One member being decoded: ``step(data)`` -> output; ``eof``, ``leftover`` (input to keep),
    ``hungry`` (needs more input before it can give more output)."""

    def __init__(self, codec: str) -> None:
        self.codec = codec
        self.full = False
        if codec == "gz":
            self.d: Any = zlib.decompressobj(31)
        elif codec == "zst":
            import zstandard

            self.d = zstandard.ZstdDecompressor().decompressobj()
        else:
            self.d = bz2.BZ2Decompressor() if codec == "bz2" else lzma.LZMADecompressor(lzma.FORMAT_XZ)

    def step(self, data: bytes) -> bytes:
        out: bytes = self.d.decompress(data) if self.codec == "zst" else self.d.decompress(data, OUT_BYTES)
        self.full = len(out) >= OUT_BYTES
        return out

    @property
    def eof(self) -> bool:
        return bool(self.d.eof)

    @property
    def leftover(self) -> bytes:
        if self.d.eof:
            return bytes(self.d.unused_data)
        return bytes(self.d.unconsumed_tail) if self.codec == "gz" else b""

    @property
    def hungry(self) -> bool:
        if self.codec in ("bz2", "xz"):
            return bool(self.d.needs_input)
        return not self.full


class DecompressedReader(io.RawIOBase):
    """The decompressed bytes of ``path`` (``codec``), raising ``DamagedInput`` at a cut or bad data."""

    def __init__(self, path: Any, codec: str, display: str) -> None:
        self.raw = open(path, "rb")
        self.codec, self.display = codec, display
        self.dec: _Step | None = None
        self.pending = b""        # compressed bytes read but not yet fed
        self.read_to = 0          # compressed bytes read from the file so far
        self.member_at = 0        # compressed offset where the current member began
        self.out = memoryview(b"")
        self.done = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self.out:
            if self.done:
                return 0
            self.out = memoryview(self._next())
        n = min(len(b), len(self.out))
        b[:n] = self.out[:n]
        self.out = self.out[n:]
        return n

    def _read(self) -> bytes:
        data = self.raw.read(IN_BYTES)
        self.read_to += len(data)
        return data

    def _next(self) -> bytes:
        """The next piece of output (possibly empty); sets ``done`` at a clean end."""
        if self.dec is None:
            if not self.pending.strip(b"\x00"):  # padding between / after members
                more = self._read()
                if not more:
                    self.done = True
                    return b""
                self.pending = more
                return b""
            self.pending = self.pending.lstrip(b"\x00")
            self.member_at = self.read_to - len(self.pending)
            if not _starts_member(self.codec, self.pending):
                raise self._damaged(False, self.member_at, f"bytes after the last {_NAMES[self.codec]} are not "
                                    f"another {_NAMES[self.codec]}")
            self.dec = _Step(self.codec)
        dec = self.dec
        try:
            out = dec.step(self.pending)
        except Exception as exc:  # noqa: BLE001 - every codec's own error type (zstandard.ZstdError too)
            if not isinstance(exc, _ERRORS) and type(exc).__name__ != "ZstdError":
                raise
            raise self._damaged(False, self.read_to, f"{type(exc).__name__}: {exc}") from None
        self.pending = dec.leftover
        if dec.eof:
            self.dec = None
        elif not out and dec.hungry and not self.pending:
            self.pending = self._read()
            if not self.pending:
                raise self._damaged(True, self.read_to, "")
        return out

    def _damaged(self, truncated: bool, offset: int, detail: str) -> DamagedInput:
        what = _NAMES[self.codec]
        if truncated:
            msg = (f"{self.display}: truncated: the file ends at byte {offset:,} inside the {what} that begins at "
                   f"byte {self.member_at:,}")
            hint = "the file is incomplete (an interrupted download or copy?): fetch it again"
        else:
            msg = f"{self.display}: corrupt {what} data at or before compressed byte {offset:,} ({detail})"
            hint = f"the file is damaged: fetch it again, or test it with {_TOOLS[self.codec]} -t FILE"
        return DamagedInput(msg, offset=offset, truncated=truncated, hint=hint)

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
        super().close()


def open_compressed(path: Any, codec: str, display: str) -> IO[bytes]:
    """A buffered binary reader of the decompressed bytes (``readline`` and iteration work)."""
    raw = DecompressedReader(path, codec, display)
    return io.BufferedReader(raw, buffer_size=1 << 20)
