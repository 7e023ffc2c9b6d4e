"""The on-disk cache of converted HF tokenizers (``hf_convert.build_hf_tokenizer(cache_key=...)``).

One tokenizer.json per vocabulary under ``$OCML_CACHE_DIR/hf/`` (default ``~/.cache/ocml/hf/``),
named by the caller's key and a digest of the ranks, pattern and specials.  The file is written
atomically, carries the sha256 of its payload and is re-verified on load; anything that does not
check out reads as absent (the caller rebuilds).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import tempfile
from pathlib import Path

__all__ = ["FORMAT_VERSION", "cache_digest", "cache_dir", "cache_root", "cache_path", "read_cached", "write_cached"]

#: Bump when the produced tokenizer.json changes, so old cache files are ignored.
FORMAT_VERSION = 1

_CACHE_MAGIC = "ocml-hf-tokenizer"


def cache_root() -> Path:
    """ocml's cache folder: ``$OCML_CACHE_DIR`` if set, else ``~/.cache/ocml`` (this one and
    ``rank_cache``'s)."""
    root = os.environ.get("OCML_CACHE_DIR")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "ocml"


def cache_dir() -> Path:
    """``$OCML_CACHE_DIR/hf`` if set, else ``~/.cache/ocml/hf``."""
    return cache_root() / "hf"


def cache_digest(ranks: dict[bytes, int], pat_str: str, special_tokens: dict[str, int]) -> str:
    # The caller's cache_key names the vocab; the digest also covers what we
    # are given, so a changed table, pattern or special set never hits an old
    # file.  pickle of the dict is C-speed (~3 MB for o200k); a differing
    # insertion order only costs a rebuild, never a wrong hit.
    h = hashlib.sha256()
    h.update(f"{_CACHE_MAGIC}/{FORMAT_VERSION}\0{pat_str}\0".encode())
    h.update(json.dumps(sorted(special_tokens.items()), ensure_ascii=False).encode())
    h.update(pickle.dumps(ranks, protocol=4))
    return h.hexdigest()


def cache_path(cache_key: str, digest: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", cache_key)[:64] or "tok"
    return cache_dir() / f"{slug}-{digest[:24]}.ocml-tokenizer"


def read_cached(path: Path, digest: str) -> str | None:
    """The cached tokenizer.json text, or None if absent or not trustworthy."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    head, sep, payload = raw.partition(b"\n")
    if not sep:
        return None
    try:
        meta = json.loads(head)
    except ValueError:
        return None
    if (
        not isinstance(meta, dict)
        or meta.get("magic") != _CACHE_MAGIC
        or meta.get("format") != FORMAT_VERSION
        or meta.get("key") != digest
        or meta.get("sha256") != hashlib.sha256(payload).hexdigest()
    ):
        return None
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return None


def write_cached(path: Path, digest: str, payload: str) -> None:
    """Atomically store the tokenizer.json; failures only cost a rebuild later."""
    data = payload.encode("utf-8")
    head = json.dumps(
        {
            "magic": _CACHE_MAGIC,
            "format": FORMAT_VERSION,
            "key": digest,
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    ).encode()
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(head + b"\n" + data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; the cache may be shared
        # os.replace is atomic: readers see the old file or the whole new one.
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass  # read-only home, full disk...: the cache is an optimisation only
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
