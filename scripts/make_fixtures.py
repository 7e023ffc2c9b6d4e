"""Regenerate the golden fixtures' expected outputs from the spec transcripts.

    python scripts/make_fixtures.py

For each ``tests/fixtures/<format>/<case>.txt`` (a transcript as printed in the spec) it
writes ``<case>.expected.json``: the parsed messages, the ids of a history render with the
format's default tokenizer (controls registered, ``cot="keep-all"``), and its mask.  Review
the diff before committing: the fixtures pin behaviour, they do not derive it.

For each ``tests/fixtures/<format>/shapes/<case>.input.json`` (a record of one of the
``ocml.encoder.inputs`` shapes) it writes ``<case>.expected.json``: the render's ids, mask and
text (preference / KTO: ``render_pair``'s columns and texts).
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from ocml import encoder  # noqa: E402


def expected(fmt: str, text: str) -> dict:
    enc = encoder.Encoder(fmt)
    conv = enc.parse_text(text, strict=True)
    r = enc.render(conv, mode="history", cot="keep-all")
    return {"messages": [m.to_dict() for m in conv.messages], "ids": r.ids.tolist(),
            "mask": r.mask.astype(int).tolist()}


def expected_shape(fmt: str, case: dict) -> dict:
    """A record shape's golden output (tests/test_inputs.py reads the same keys)."""
    from ocml.encoder.inputs import render_pair

    enc = encoder.Encoder(fmt, shape=case.get("shape", "auto"), shape_options=case.get("shape_options"))
    dec = enc.tokenizer.decode
    if case.get("pair"):
        d = render_pair(enc, case["record"]).to_dict()
        return d | {f"{k[:-4]}_text": dec(v) for k, v in d.items() if k.endswith("_ids")}
    r = enc.render(case["record"])
    return {"text": dec(r.ids.tolist()), "trained_text": [dec(r.ids[a:b].tolist()) for a, b in r.spans()],
            "ids": r.ids.tolist(), "mask": r.mask.astype(int).tolist()}


def main() -> None:
    for path in sorted((ROOT / "tests" / "fixtures").glob("*/shapes/*.input.json")):
        out = path.with_name(path.name.replace(".input.", ".expected."))
        case = json.loads(path.read_text("utf-8"))
        out.write_text(json.dumps(expected_shape(path.parent.parent.name, case), ensure_ascii=False) + "\n")
        print("wrote", out.relative_to(ROOT))
    for path in sorted((ROOT / "tests" / "fixtures").glob("*/*.txt")):
        out = path.with_suffix(".expected.json")
        out.write_text(json.dumps(expected(path.parent.name, path.read_text("utf-8")), ensure_ascii=False, indent=1) + "\n")
        print("wrote", out.relative_to(ROOT))


if __name__ == "__main__":
    main()
