"""The golden matrix: the same cases rendered in every format variant, pinned as data.

Layout (all under ``tests/fixtures/golden/``):

* ``variants.json``: variant name -> ``{"format": ..., "options": {...}}`` (Encoder options
  every case of that variant gets, e.g. a fixed date so goldens do not age).
* ``cases/<case>.json``: one input.  ``kind`` is ``conversation`` (default: ``conversation``
  rendered with ``mode`` and, if given, ``cot``), ``transcript`` (a spec's printed transcript
  ``transcript``, parsed by the variant ``transcript_of`` to ``messages``, then rendered like a
  conversation), ``record`` (an input shape: ``record``, ``shape``, ``shape_options``;
  ``inputs.render_record``), ``pair`` (a preference / KTO record, ``render_pair``) or ``fim``
  (``Encoder.render_fim(**fim)``).  ``options`` are extra Encoder options; ``variants``
  restricts a case to the variants it is about (a format's own options or features, FIM),
  otherwise every variant renders it.  ``spec_text`` maps a variant to the text a spec prints
  for the case (the render, decoded, must equal it).
* ``<variant>/<case>.json``: the expected output: ``ids``, ``mask``, ``text`` (the ids
  decoded), ``to_text`` (the transcript writer's text), ``trained_text`` (each trained span
  decoded); or ``{"error": "E-..."}`` when the variant must reject the case.

``python scripts/regen_golden.py`` rewrites every expected file from the current code (review
the diff: goldens pin behaviour, they do not derive it); ``tests/formats/test_golden.py`` renders each
cell again and compares it with its file byte for byte.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.paths import FIXTURES

ROOT = FIXTURES / "golden"
CASES = ROOT / "cases"


@dataclass(frozen=True)
class Cell:
    """One (variant, case) of the matrix."""

    variant: str
    case: str

    @property
    def path(self) -> Path:
        return ROOT / self.variant / f"{self.case}.json"

    @property
    def id(self) -> str:
        return f"{self.variant}/{self.case}"


@functools.lru_cache(maxsize=None)
def variants() -> dict[str, dict[str, Any]]:
    return json.loads((ROOT / "variants.json").read_text("utf-8"))


@functools.lru_cache(maxsize=None)
def case(name: str) -> dict[str, Any]:
    return json.loads((CASES / f"{name}.json").read_text("utf-8"))


def case_names() -> list[str]:
    return sorted(p.stem for p in CASES.glob("*.json"))


def cells() -> list[Cell]:
    """Every cell the matrix must hold, variants in file order, cases sorted."""
    out = []
    for v in variants():
        for name in case_names():
            only = case(name).get("variants")
            if only is None or v in only:
                out.append(Cell(v, name))
    return out


@functools.lru_cache(maxsize=None)
def encoder_for(variant: str, options_json: str = "{}", shape: str | None = None, shape_options_json: str = "null"):
    """One Encoder per (variant, extra options, shape): building one loads a vocabulary."""
    from ocml import encoder

    spec = variants()[variant]
    opts = {**spec.get("options", {}), **json.loads(options_json)}
    if shape is not None:
        opts["shape"] = shape
        opts["shape_options"] = json.loads(shape_options_json)
    return encoder.Encoder(spec["format"], **opts)


def encoder_of(cell: Cell):
    c = case(cell.case)
    kind = c.get("kind", "conversation")
    shape = c.get("shape", "auto") if kind in ("record", "pair") else None
    return encoder_for(cell.variant, json.dumps(c.get("options", {}), sort_keys=True), shape,
                       json.dumps(c.get("shape_options"), sort_keys=True))


def compute(cell: Cell) -> dict[str, Any]:
    """The cell's output from the current code (what its expected file must hold)."""
    from ocml.encoder.errors import OcmlError

    try:
        return _compute(cell)
    except OcmlError as exc:
        return {"error": exc.code}


def conversation(name: str) -> Any:
    """A conversation case's input: its dicts, or (``transcript``) its transcript parsed strictly by
    the variant it is written in (the only way to give messages exactly as a transcript has them,
    e.g. an OpenChatML 1.x assistant message without a channel)."""
    c = case(name)
    kind = c.get("kind", "conversation")
    if kind == "transcript":
        return encoder_for(c["transcript_of"]).parse_text(c["transcript"], strict=True)
    assert kind == "conversation", f"{name}: unknown kind {kind!r}"
    return c["conversation"]


def _compute(cell: Cell) -> dict[str, Any]:
    from ocml.encoder.errors import OcmlError

    c = case(cell.case)
    kind = c.get("kind", "conversation")
    enc = encoder_of(cell)
    dec = enc.tokenizer.decode
    if kind == "pair":
        from ocml.encoder.inputs import render_pair

        d = render_pair(enc, c["record"]).to_dict()
        return d | {f"{k[:-4]}_text": dec(v) for k, v in d.items() if k.endswith("_ids")}
    if kind == "fim":
        r = enc.render_fim(**c["fim"])
        return {"ids": r.ids.tolist(), "mask": r.mask.astype(int).tolist(), "text": dec(r.ids.tolist())}
    if kind == "record":
        from ocml.encoder.inputs import render_record

        r = render_record(enc, c["record"])
        out = {"ids": r.ids.tolist(), "mask": r.mask.astype(int).tolist(), "text": dec(r.ids.tolist())}
        return out | {"trained_text": [dec(r.ids[a:b].tolist()) for a, b in r.spans()]}
    conv = conversation(cell.case)
    kw = {"cot": c["cot"]} if "cot" in c else {}
    r = enc.render(conv, mode=c["mode"], **kw)
    out = {"ids": r.ids.tolist(), "mask": r.mask.astype(int).tolist(), "text": dec(r.ids.tolist())}
    try:
        out["to_text"] = enc.to_text(conv, mode=c["mode"], cot=c.get("cot", "keep-all"))
    except OcmlError as exc:
        out["to_text_error"] = exc.code
    out["trained_text"] = [dec(r.ids[a:b].tolist()) for a, b in r.spans()]
    if enc.format.name == "apertus" and c["mode"] == "history":
        from ocml.encoder.formats.apertus.format import to_apertus

        out["apertus"] = to_apertus(enc.parse(r.ids, strict=True))[2:]  # the blocks, after system/developer
    return out


def dumps(data: dict[str, Any]) -> str:
    """One key per line (lists kept on their line): small files, diffs that name the field."""
    lines = [f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in data.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def first_difference(cell: Cell, want: dict[str, Any], got: dict[str, Any]) -> str:
    """A readable account of where ``got`` leaves ``want``: the first differing token, decoded."""
    if "error" in want or "error" in got:
        return f"{cell.id}: expected {want.get('error') or 'a render'}, got {got.get('error') or 'a render'}"
    enc = encoder_of(cell)
    piece = lambda t: repr(enc.tokenizer.decode([t]))  # noqa: E731
    for key in want.keys() | got.keys():
        if key not in want or key not in got:
            return f"{cell.id}: key {key!r} only in {'expected' if key in want else 'rendered'}"
    for key in want:
        a, b = want[key], got[key]
        if a == b:
            continue
        if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, int) for x in a + b):
            k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            ids = got.get("ids") or []
            ctx = "".join(enc.tokenizer.decode([t]) for t in ids[max(0, k - 8):k])
            what = (f"expected {a[k]} {piece(a[k]) if key.endswith('ids') else ''}".rstrip() if k < len(a) else "expected the end")
            what += (f", rendered {b[k]} {piece(b[k]) if key.endswith('ids') else ''}".rstrip() if k < len(b)
                     else ", rendered the end")
            return (f"{cell.id}: {key!r} differs first at token {k} of {len(a)} expected / {len(b)} rendered: "
                    f"{what}; after {ctx!r}")
        if isinstance(a, str) and isinstance(b, str):
            k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return f"{cell.id}: {key!r} differs at character {k}: expected {a[k:k + 40]!r}, rendered {b[k:k + 40]!r}"
        return f"{cell.id}: {key!r} differs: expected {a!r}, rendered {b!r}"
    return f"{cell.id}: same data, different bytes (rewrite with scripts/regen_golden.py)"
