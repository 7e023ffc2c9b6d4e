"""The format folders, found: each ``encoder/formats/<pkg>/`` with a ``format.json`` declares one or
more formats, and this leaf reads those manifests (data, no code) for ``ocml.vocab``.

A manifest names its formats (``name``, ``order``: where it stands in ``FORMAT_NAMES``;
``aliases``; ``tokens``: its control-token table, a file in the folder; ``encodings``: named
encodings that are a base vocabulary plus its fixed tokens) and, in exactly one folder, the
``default`` format.  The Python half of a folder (its ``Format`` class, role grammar, template
profile, response-template fields, ``--model`` candidates) is its ``__init__.py``, discovered by
``ocml.encoder.formats``; ``ocml.vocab`` never imports encoder code, so it locates the folders
without importing them (``importlib.util.find_spec`` of ``ocml.encoder``: a spec, no import).

Adding a format is adding a folder: nothing here or elsewhere lists the formats.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .errors import VocabError

MANIFEST = "format.json"


@dataclass(frozen=True)
class Declared:
    """One format as its folder's manifest declares it."""

    name: str
    #: the folder's package name (``ocml.encoder.formats.<package>``)
    package: str
    #: where the format stands in ``FORMAT_NAMES`` (listings, hints, parametrized tests)
    order: int
    #: its control-token table (``ocml.vocab.control_table`` reads it)
    tokens: Path
    aliases: tuple[str, ...] = ()
    #: encoding name -> base encoding: a named encoding that is the base plus this format's fixed tokens
    encodings: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Catalog:
    """Every declared format, in order, and the one default."""

    formats: tuple[Declared, ...]
    default: str

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.formats)

    @property
    def aliases(self) -> dict[str, str]:
        return {a: d.name for d in self.formats for a in d.aliases}

    def get(self, name: str) -> Declared:
        return next(d for d in self.formats if d.name == name)


def formats_root() -> Path:
    """The folder that holds the format folders (``ocml/encoder/formats``), found without importing it."""
    spec = importlib.util.find_spec("ocml.encoder")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - a broken install
        raise VocabError("ocml.encoder is not installed next to ocml.vocab", code="E-FORMAT-DECLARATION",
                         hint="reinstall ocml")
    return Path(next(iter(spec.submodule_search_locations))) / "formats"


def _bad(folder: Path, what: str) -> VocabError:
    return VocabError(f"{folder / MANIFEST}: {what}", code="E-FORMAT-DECLARATION", field=str(folder.name),
                      hint="see docs/adding-a-format.md for what format.json declares")


def read_catalog(root: Path) -> Catalog:
    """Every ``<root>/<pkg>/format.json``, checked: names and aliases once each, one default."""
    found: list[Declared] = []
    defaults: list[str] = []
    for folder in sorted(p.parent for p in root.glob(f"*/{MANIFEST}")):
        if not folder.name.isidentifier():
            raise _bad(folder, f"the folder name {folder.name!r} is not a Python package name")
        raw = json.loads((folder / MANIFEST).read_text("utf-8"))
        if raw.get("default") is not None:
            defaults.append(raw["default"])
        for entry in raw.get("formats") or ():
            tokens = folder / entry["tokens"]
            if not tokens.is_file():
                raise _bad(folder, f"{entry['name']}: no token table {entry['tokens']}")
            found.append(Declared(name=entry["name"], package=folder.name, order=int(entry["order"]), tokens=tokens,
                                  aliases=tuple(entry.get("aliases", ())),
                                  encodings=dict(entry.get("encodings", {}))))
        if not raw.get("formats"):
            raise _bad(folder, "it declares no format")
    found.sort(key=lambda d: (d.order, d.name))
    spellings = [s for d in found for s in (d.name, *d.aliases)]
    twice = sorted({s for s in spellings if spellings.count(s) > 1})
    if twice:
        raise VocabError(f"format names declared twice: {', '.join(twice)}", code="E-FORMAT-DECLARATION",
                         field="format", hint="each name and alias belongs to one format folder")
    names = {d.name for d in found}
    if len(defaults) != 1 or defaults[0] not in names:
        raise VocabError(f"the format folders under {root} name {defaults or 'no'} default format; one must",
                         code="E-FORMAT-DECLARATION", field="default",
                         hint='exactly one format.json says "default": NAME, a format it declares')
    return Catalog(tuple(found), defaults[0])


@lru_cache(maxsize=1)
def catalog() -> Catalog:
    """The installed formats (read once)."""
    return read_catalog(formats_root())
