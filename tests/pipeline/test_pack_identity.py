"""``ocml pack`` writes the same bytes as before the speed work of issue 30.

``fixtures/pack_identity.json`` holds the sha256 of every ``.npy`` shard of the bundled sample
packed two ways (``--no-shuffle``, and the default shuffled run as a recipe with a validation
split), recorded on the code before issue 30's changes (``.npy`` files carry no writer version,
unlike Parquet's footer).  A change that alters one token, label, position or provenance entry
fails here; ``scripts/pack_identity.py`` compares every file of eight CLI configurations,
Parquet included, between two checkouts.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import ocml
from ocml.encoder.pipeline import PackOptions, run
from ocml.encoder.pipeline.recipe import resolve_recipe
from ocml.encoder.pipeline.recipe_run import run_recipe

from support.paths import FIXTURES, ROOT

SAMPLE = ROOT / "examples" / "sample"
WANT = FIXTURES / "pack_identity.json"


def test_sample_shards_are_byte_identical(tmp_path: Path) -> None:
    run(PackOptions(inputs=(str(SAMPLE),), out=tmp_path / "plain", seq_len=2048, workers=1, outputs=("npy",),
                    progress=False, plot=False))
    run_recipe(resolve_recipe({"sources": [{"path": str(SAMPLE)}], "seq_len": 1024, "workers": 1, "output": "npy",
                               "progress": False, "plot": False, "validation": 0.05}), tmp_path / "recipe")
    got = {f"{kind}/{p.relative_to(tmp_path / kind).as_posix()}": hashlib.sha256(p.read_bytes()).hexdigest()
           for kind in ("plain", "recipe") for p in sorted((tmp_path / kind).rglob("*.npy"))}
    assert got == json.loads(WANT.read_text("utf-8"))


def test_orjson_lines_read_as_json_loads_reads_them(monkeypatch) -> None:
    """``jsonlimits.loads_line`` (orjson) gives ``json.loads``'s value or hands the line over:
    integers beyond 64 bits (orjson makes floats of them), NaN, lone surrogates, a BOM, bad
    UTF-8, deep nesting and bad JSON all come out as the stdlib path reads them."""
    import ocml.encoder.jsonlimits as jl
    from ocml.encoder.errors import OcmlError
    from ocml.encoder.pipeline.readers import Chunk, Kind
    from ocml.encoder.pipeline.workers import decode_records

    lines = [b'{"a": 1, "b": [1.5, -0, 1e-320, "x"], "a": 3}', b'{"n": 12345678901234567890123}',
             b'{"n": -9223372036854775809}', b'{"n": 18446744073709551616}', b'{"x": NaN}', b'{"x": 1e400}',
             b'{"s": "\\ud800"}', b'\xef\xbb\xbf{"bom": true}', b'{"s": "\xff"}', b'{"s": "a\x01b"}', b"[1,]",
             b"[" * 600 + b"]" * 600, b"   ", b'{"ok": "caf\xc3\xa9"}\r\n', b'[{"role": "user"}]']
    chunk = Chunk(seq=0, source=0, kind=Kind.JSONL, first=0, payload=lines, count=len(lines), start=None, end=None)

    def seen(records: list) -> list:
        return [(loc, (type(r).__name__, r.code, r.message) if isinstance(r, OcmlError) else (r, repr(r)))
                for loc, r in records]

    fast = seen(decode_records(chunk))
    monkeypatch.setattr(jl, "_orjson", None)
    assert fast == seen(decode_records(chunk))
    assert fast[1][1][0] == {"n": 12345678901234567890123}  # exact, not a float
