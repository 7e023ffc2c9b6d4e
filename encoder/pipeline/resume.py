"""What makes a pack run resumable: the fingerprint of input + options, the checkpoint
saved at each epoch boundary, ``.ocml/progress.json``, and append-only logs cut back to
their length at the checkpoint resumed from.

An epoch boundary is a point where the packer is empty, so the run's state there is small:
the input position after the chunk that ended it, the rows written so far, the counters,
the sizes of the logs and the length histogram.  A rerun of the same command (same
fingerprint) restarts at the last boundary whose rows all lie in complete shards.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .readers import Source

STATE_DIR = ".ocml"
PROGRESS = "progress.json"
SPOOL_DIR = "spool"  # a recipe run's spool, under STATE_DIR (recipe_spools)


@dataclass
class Checkpoint:
    """The run's state at an epoch boundary (the packer is empty there)."""

    position: dict[str, int]
    rows: int
    counters: dict[str, Any]        # asdict(Counters): counts, and ignored_columns (column -> records)
    logs: dict[str, int]            # bytes of each append-only log (errors.jsonl, overlong.jsonl, ...)
    lengths: dict[str, list[int]]
    pack: dict[str, int]
    file_records: list[int] = field(default_factory=list)  # records (lines / rows) seen per input file


def input_fingerprint(sources: list[Source]) -> list[dict[str, Any]]:
    """Per input file: name, kind, size and a hash of its first and last MiB (cheap on any
    size; a same-size edit in the middle of a huge file goes unnoticed)."""
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


def read_progress(out: Path) -> dict[str, Any] | None:
    path = out / STATE_DIR / PROGRESS
    if not path.exists():
        return None
    try:
        return dict(json.loads(path.read_text("utf-8")))
    except ValueError:
        return {}


def reopen_log(path: Path, size: int) -> IO[str]:
    """An append-only log cut back to ``size`` bytes (its length at the checkpoint resumed from)."""
    if size:
        with open(path, "ab") as f:
            f.truncate(size)
    else:
        path.unlink(missing_ok=True)
    return open(path, "a", encoding="utf-8")
