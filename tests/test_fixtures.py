"""Golden fixtures: the specs' worked examples parse as printed, render to the pinned ids, round-trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ocml import encoder

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("*/*.txt"))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_spec_example(path):
    fmt = path.parent.name
    enc = encoder.Encoder(fmt)
    want = json.loads(path.with_suffix(".expected.json").read_text("utf-8"))
    conv = enc.parse_text(path.read_text("utf-8"), strict=True)
    assert [m.to_dict() for m in conv.messages] == want["messages"]
    r = enc.render(conv, mode="history", cot="keep-all")
    assert r.ids.tolist() == want["ids"] and r.mask.astype(int).tolist() == want["mask"]
    assert enc.parse(r.ids, strict=True) == list(conv.messages)
    assert enc.parse_text(enc.to_text(conv), strict=True).messages == conv.messages
    fallback = encoder.Encoder(fmt, tokenizer="o200k_base")
    assert fallback.parse(fallback.render(conv, mode="history", cot="keep-all").ids, strict=True) == list(conv.messages)


def test_spec_specifics():
    enc = encoder.Encoder("openchatml-2.2")
    base = Path(__file__).parent / "fixtures" / "openchatml-2.2"
    lit = enc.parse_text((base / "16.4-literal.txt").read_text("utf-8")).messages[0]
    assert lit.content == "Please print these markers exactly:\n\n<|start|><|channel|><|message|><|end|>\n"
    pre = enc.parse_text((base / "16.3-preamble.txt").read_text("utf-8")).messages[0]
    assert (pre.intent, pre.channel) == ("preamble", "commentary")
    legacy = enc.parse_text((base / "17.8-legacy-tool-role.txt").read_text("utf-8")).messages[1]
    assert legacy.role == "functions.lookup" and legacy.call_id == "c1"
    one_x = enc.parse_text((base / "17.1-one-x.txt").read_text("utf-8")).messages
    assert [m.effective_channel for m in one_x] == [None, None, "final"]
    with pytest.raises(encoder.OcmlError) as e:
        enc.render([{"role": "assistant", "channel": "commentary", "recipient": "functions.f", "constrain": "json",
                     "content": "{not json"}])
    assert e.value.code == "E-BODY-CONSTRAINT-VIOLATION"
