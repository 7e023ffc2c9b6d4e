"""A binary form of the official ranks, cached per user: the vocabulary loads in about half the time.

Parsing ``o200k_base.tiktoken`` (200k lines of base64) is about 0.7 s of every process that
loads it (every ``ocml pack`` run: issue 30's fixed cost); the same ranks as one blob of token
bytes and their lengths rebuild in about half of that.  The form (``encode``) is deterministic:

    b"OCMLRANKS1\\n" | n: uint32 LE | n token lengths: uint8 | the n tokens' bytes, rank order

for ranks that are exactly 0..n-1 (both official encodings; anything else is not cached).  Its
sha256 is pinned beside the official file's in ``data/encodings.json`` (``ranks_bin_sha256``), so
a cache file is trusted only when its bytes are exactly the ones ocml writes: a stale,
truncated or tampered file is ignored and rewritten from the official file, whose own sha256
is checked as before.  The cache file's name holds the official file's path, size and mtime,
so pointing ``$OCML_TIKTOKEN_DIR`` elsewhere (or reinstalling) reads and checks that file again.
Nothing but bytes and lengths is read back (no pickle).

Where: ``ranks/`` in ocml's cache folder (``$OCML_CACHE_DIR``, else ``~/.cache/ocml``: the
converted HF tokenizers' too, ``hf_cache``).  A cache that cannot be written (read-only home)
costs nothing but the speed: the official file is parsed as before.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from itertools import accumulate
from pathlib import Path

from .hf_cache import cache_root

MAGIC = b"OCMLRANKS1\n"


def cache_dir() -> Path:
    """``ranks/`` in ocml's cache folder."""
    return cache_root() / "ranks"


def encode(ranks: dict[bytes, int]) -> bytes | None:
    """The binary form of ``ranks``, or None when they are not 0..n-1 or a token is over 255 bytes."""
    tokens: list[bytes | None] = [None] * len(ranks)
    for tok, rank in ranks.items():
        if not 0 <= rank < len(tokens) or tokens[rank] is not None or len(tok) > 255:
            return None
        tokens[rank] = tok
    full = [t for t in tokens if t is not None]  # all of them: n distinct ranks below n
    return MAGIC + struct.pack("<I", len(full)) + bytes(len(t) for t in full) + b"".join(full)


def decode(data: bytes) -> dict[bytes, int]:
    """Ranks from ``encode``'s bytes (already checked against the pinned sha256)."""
    head = len(MAGIC) + 4
    (n,) = struct.unpack_from("<I", data, len(MAGIC))
    cuts = list(accumulate(data[head:head + n], initial=head + n))
    return {data[a:b]: rank for rank, (a, b) in enumerate(zip(cuts, cuts[1:]))}


def cache_file(folder: Path, name: str, source: Path) -> Path:
    """The cache file of ``name`` made from ``source`` (its path, size and mtime in the name: a
    replaced or redirected official file, ``$OCML_TIKTOKEN_DIR``, is read and checked again)."""
    st = source.stat()
    key = hashlib.sha256(f"{source.resolve()}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return folder / f"{name}-{key}.ranks"


def read_ranks(name: str, pinned: str | None, source: Path) -> dict[bytes, int] | None:
    """The cached ranks of ``name`` made from ``source`` when the cache file matches ``pinned``;
    None otherwise."""
    folder = cache_dir()
    if not pinned:
        return None
    try:
        data = cache_file(folder, name, source).read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != pinned:
        return None
    return decode(data)


def write_ranks(name: str, pinned: str | None, source: Path, ranks: dict[bytes, int]) -> None:
    """Write the cache file of ``name`` read from ``source`` (atomically) when its binary form
    has the pinned sha256."""
    folder = cache_dir()
    if not pinned:
        return
    data = encode(ranks)
    if data is None or hashlib.sha256(data).hexdigest() != pinned:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, cache_file(folder, name, source))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # a read-only or full cache folder: the next run parses the official file again
