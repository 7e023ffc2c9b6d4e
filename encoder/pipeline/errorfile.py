"""``errors.jsonl``: every bad record of a pack run, by file and line, with its error code.

The log is append-only and cut back to its length at the checkpoint a resumed run starts
from; the count per code is kept in memory (rebuilt from the file on resume) for the
``--max-bad-fraction`` gate's message.  ``--strict`` stops at the first bad record.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import OcmlError
from .readers import Source
from .resume import reopen_log
from .workers import RecordError

ERRORS = "errors.jsonl"
SHOW_ERRORS = 10  # bad records printed as they come (with a progress bar); all go to errors.jsonl


def where(e: dict[str, Any]) -> str:
    """``file:line 17`` / ``file:row 16`` for one errors.jsonl entry."""
    for key in ("line", "row", "item"):
        if key in e:
            return f"{e['file']}:{key} {e[key]}" if key != "line" else f"{e['file']}:{e[key]}"
    return str(e.get("file"))


def format_error(e: dict[str, Any]) -> str:
    text = f"{where(e)}: [{e['code']}] {e['message']}"
    loc = []
    if e.get("message_index") is not None:
        loc.append(f"message {e['message_index']}")
    if e.get("field") is not None:
        loc.append(f"field {e['field']!r}")
    if loc:
        text += f" (at {', '.join(loc)})"
    if e.get("hint"):
        text += f". Hint: {e['hint']}"
    return text


class StrictStop(OcmlError):
    """``--strict`` met a bad record."""

    code = "E-STRICT"


class ErrorLog:
    """Writes bad records to ``errors.jsonl`` and counts them by code."""

    def __init__(self, out: Path, sources: list[Source], size: int, *, strict: bool) -> None:
        self.path = out / ERRORS
        self.sources = sources
        self.strict = strict
        self.file = reopen_log(self.path, size)
        self.by_code: Counter[str] = Counter()
        if size:
            with open(self.path, encoding="utf-8") as f:
                self.by_code.update(json.loads(line)["code"] for line in f)
        self.say: Callable[[str], None] | None = None  # set when bad records are printed live
        self.shown = 0
        # A recipe run reads one source at a time: it points ``sources`` at that source's files
        # (``RecordError.source`` indexes them) and tags each entry with the source's name.
        self.extra: dict[str, Any] = {}

    def entry(self, e: RecordError) -> dict[str, Any]:
        src = self.sources[e.source]
        return {"file": src.display, src.kind.location: e.location, **self.extra, "code": e.code,
                "message": e.message, "field": e.field, "message_index": e.message_index, "hint": e.hint}

    def add(self, errors: list[RecordError]) -> None:
        for e in errors:
            d = self.entry(e)
            self.file.write(json.dumps(d, ensure_ascii=False) + "\n")
            self.by_code[e.code] += 1
            if self.strict:
                self.file.flush()
                raise StrictStop(f"stopped at the first bad record (--strict): {format_error(d)}",
                                 hint="fix or remove the record, then rerun with --overwrite "
                                      "(or drop --strict to skip bad records)")
            if self.say is not None and self.shown < SHOW_ERRORS:  # else the report lists them
                self.say(f"ocml: bad record {format_error(d)}")
                self.shown += 1
                if self.shown == SHOW_ERRORS:
                    self.say(f"ocml: further bad records are only written to {self.path}")

    def tell(self) -> int:
        self.file.flush()
        return self.file.tell()

    def close(self) -> None:
        self.file.close()
