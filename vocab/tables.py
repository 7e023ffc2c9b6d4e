"""Control-token tables: which tokens each format needs, and at which ids.

The tables are data (each format folder's token table, ``encoder/formats/<pkg>/<name>.tokens.json``,
found by ``ocml.vocab.discovery``); this module only reads them.  A table says which strings are *controls* (structural tokens of the
format), which are optional *markers* (OpenChatML CoT markers: registered as
ids, never structural), and, where the format fixes them, their ids.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from .errors import InputTypeError, UnknownNameError, expect

from .discovery import catalog

#: every format a folder declares (``encoder/formats/<pkg>/format.json``), in their declared order
FORMAT_NAMES: tuple[str, ...] = catalog().names
#: the format ``Encoder()``, ``ocml pack`` and ``ocml template`` use when none is named: the specification
#: ocml implements in full (every other format is a subset or a neighbour of it); its folder says so
DEFAULT_FORMAT: str = catalog().default
#: accepted spellings that map onto a canonical format name (the folders' ``aliases``)
ALIASES: dict[str, str] = catalog().aliases


@dataclass(frozen=True)
class ControlTable:
    format: str
    controls: tuple[str, ...]
    markers: tuple[str, ...] = ()
    # Ids the format itself fixes (Harmony); registration must use exactly these.
    fixed_ids: dict[str, int] = field(default_factory=dict)
    # Reserved filler tokens (Harmony): (template, first id, last id inclusive).
    reserved: tuple[str, int, int] | None = None
    # Ids a format's own tokenizer uses (Apertus); informative, checked by from_hf.
    native_ids: dict[str, int] = field(default_factory=dict)
    default_encoding: str = "o200k_base"
    # What a sampler stops on, per stop mode ("assistant": end of the model's turn; "all":
    # every boundary the format has).
    stops: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Every control that ends a message or turn -> the reason it gives (``MessageEnd.reason``).
    end_reasons: dict[str, str] = field(default_factory=dict)
    # Per role, where a stream decoder stops when that is not ``stops["assistant"]`` (ChatML ``fim``).
    # The tables built from these three: ``ocml.encoder.grammar.terminators``.
    stream_stops: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def all_tokens(self) -> tuple[str, ...]:
        """Controls then markers: what ``register=`` appends, in order."""
        return self.controls + tuple(m for m in self.markers if m not in self.controls)

    def reserved_tokens(self) -> dict[str, int]:
        if self.reserved is None:
            return {}
        template, first, last = self.reserved
        taken = set(self.fixed_ids.values())
        return {template.format(id=i): i for i in range(first, last + 1) if i not in taken}


def canonical_format(name: str, field: str = "format") -> str:
    expect(name, str, field, "a format name")
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in FORMAT_NAMES:
        raise UnknownNameError(
            f"unknown format {name!r}",
            field=field,
            hint=f"valid formats: {', '.join(FORMAT_NAMES)}",
        )
    return key


def canonical_formats(names: str | Sequence[str] | None, field: str = "register") -> tuple[str, ...]:
    """``register=``: ``None``, one format name or several -> canonical names, in order, once each."""
    if names is None:
        return ()
    if isinstance(names, str):
        return (canonical_format(names, field),)
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise InputTypeError(f"{field} must be a format name or a list of format names, got {names!r}", field=field,
                             hint=f"e.g. {field}='{DEFAULT_FORMAT}'")
    return tuple(dict.fromkeys(canonical_format(n, field) for n in names))


@lru_cache(maxsize=None)
def control_table(format_name: str) -> ControlTable:
    name = canonical_format(format_name)
    raw = json.loads(catalog().get(name).tokens.read_text("utf-8"))
    reserved = raw.get("reserved")
    stops = {mode: tuple(names) for mode, names in raw.get("stops", {}).items()}
    stream_stops = {role: tuple(names) for role, names in raw.get("stream_stops", {}).items()}
    end_reasons = dict(raw.get("end_reasons", {}))
    for key, names in (("stops", stops.values()), ("stream_stops", stream_stops.values()),
                       ("end_reasons", (end_reasons,))):
        stray = {n for group in names for n in group} - set(raw["controls"])
        if stray:  # a broken data file must not become a silent no-stop sampler
            raise ValueError(f"{name}.json: {key} {sorted(stray)} are not controls of the format")
    return ControlTable(
        format=name,
        controls=tuple(raw["controls"]),
        markers=tuple(raw.get("markers", ())),
        fixed_ids=dict(raw.get("fixed_ids", {})),
        reserved=(reserved["template"], reserved["first"], reserved["last"]) if reserved else None,
        native_ids=dict(raw.get("native_ids", {})),
        default_encoding=raw.get("default_encoding", "o200k_base"),
        stops=stops,
        end_reasons=end_reasons,
        stream_stops=stream_stops,
    )
