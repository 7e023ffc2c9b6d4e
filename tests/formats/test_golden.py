"""The golden matrix (``tests/support/golden.py``): every case rendered in every variant equals its file
byte for byte; the matrix is complete; the goldens round-trip (parse, transcripts, FIM) and keep
the input shapes' mask invariants.

Rewrite the expected files (review the diff):  python scripts/regen_golden.py
"""

from __future__ import annotations

import json

import pytest

from support import golden
from ocml import encoder
from ocml.encoder.formats import RENDERABLE

CELLS = golden.cells()
# What the matrix must cover (issue 21): each name is a case rendered in every variant.
TOPICS = ("plain-chat", "prompt", "system-developer", "multi-turn", "tools", "reasoning", "content-parts", "refusal",
          "weights", "long-message", "unicode", "harmony-channels")
SHAPES = ("prompt-completion-standard", "prompt-completion-conversational", "alpaca", "text", "preference-explicit",
          "preference-implicit", "kto")
KINDS = {"conversation", "transcript", "record", "pair", "fim"}
CASE_KEYS = {"about", "kind", "mode", "cot", "options", "variants", "conversation", "transcript", "transcript_of",
             "messages", "spec_text", "record", "shape", "shape_options", "fim"}


def want(cell: golden.Cell) -> dict:
    return json.loads(cell.path.read_text("utf-8"))


def test_the_matrix_is_complete():
    variants = golden.variants()
    assert {encoder.Encoder(v["format"]).format.name for v in variants.values()} == set(RENDERABLE)
    names = golden.case_names()
    for topic in TOPICS + tuple(f"shape-{s}" for s in SHAPES):
        assert topic in names and "variants" not in golden.case(topic), f"{topic}: must render in every variant"
    assert any(golden.case(n).get("kind") == "fim" for n in names)  # ChatML v0.1's own feature
    for name in names:
        c = golden.case(name)
        assert set(c) <= CASE_KEYS, f"{name}: unknown keys {set(c) - CASE_KEYS}"
        assert c.get("kind", "conversation") in KINDS and c.get("about"), name
        assert set(c.get("variants", ())) <= set(variants) and set(c.get("spec_text", {})) <= set(variants), name
    on_disk = {p for p in golden.ROOT.glob("*/*.json") if p.parent.name != "cases"}
    assert on_disk == {cell.path for cell in CELLS}, "run: python scripts/regen_golden.py"


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: c.id)
def test_golden(cell):
    got = golden.compute(cell)
    text = cell.path.read_text("utf-8")
    if golden.dumps(got) != text:
        pytest.fail(golden.first_difference(cell, json.loads(text), got)
                    + "\n(if the change is intended: python scripts/regen_golden.py, and review the diff)")


def rendered(kind: str | None = None):
    """Cells that render (no expected error), optionally of one kind."""
    return [c for c in CELLS if c.path.exists() and "error" not in want(c)  # a missing file: the completeness test
            and kind in (None, golden.case(c.case).get("kind", "conversation"))]


@pytest.mark.parametrize("cell", [c for c in rendered() if golden.case(c.case).get("kind", "conversation")
                                  in ("conversation", "transcript")], ids=lambda c: c.id)
def test_conversations_round_trip(cell):
    c, w = golden.case(cell.case), want(cell)
    enc = golden.encoder_of(cell)
    conv = enc.render(golden.conversation(cell.case), mode=c["mode"], **({"cot": c["cot"]} if "cot" in c else {}))
    assert enc.tokenizer.decode(w["ids"]) == w["text"]
    if cell.variant in c.get("spec_text", {}):
        assert w["text"] == c["spec_text"][cell.variant]  # as the spec prints it
    if c["mode"] != "history" or c.get("cot", "keep-all") != "keep-all":
        return  # other modes add a prompt, leave a turn open or drop reasoning: no full round trip
    parsed = enc.parse(w["ids"], strict=True)
    if c.get("transcript_of", cell.variant) != cell.variant and parsed != list(conv.conversation.messages):
        # another format's transcript (e.g. a 2.x tool role read back by Harmony as a named tool
        # message): the messages read back may be spelled differently, but they render the same ids
        assert enc.render(parsed, mode="history", cot="keep-all").ids.tolist() == w["ids"]
        return
    assert parsed == list(conv.conversation.messages)
    if "to_text" in w:
        assert enc.parse_text(w["to_text"], strict=True).messages == conv.conversation.messages


@pytest.mark.parametrize("name", [n for n in golden.case_names() if golden.case(n).get("kind") == "transcript"])
def test_spec_transcripts_parse_as_printed(name):
    """The specs' worked examples parse as printed; the fallback tokenizer (controls spelled as
    text) round-trips them too."""
    c = golden.case(name)
    enc = golden.encoder_for(c["transcript_of"])
    conv = enc.parse_text(c["transcript"], strict=True)
    assert [m.to_dict() for m in conv.messages] == c["messages"]
    fallback = encoder.Encoder(c["transcript_of"], tokenizer="o200k_base")
    ids = fallback.render(conv, mode=c["mode"], cot=c["cot"]).ids
    assert fallback.parse(ids, strict=True) == list(conv.messages)


@pytest.mark.parametrize("cell", rendered("fim"), ids=lambda c: c.id)
def test_fim_round_trips(cell):
    fim, w = golden.case(cell.case)["fim"], want(cell)
    enc = golden.encoder_of(cell)
    doc = enc.parse_fim(w["ids"], prefix=fim["prefix"])
    assert enc.render_fim(**doc.render_kwargs()).ids.tolist() == w["ids"]
    assert (doc.prefix, doc.suffix, doc.middle) == (fim["prefix"], fim["suffix"], fim.get("middle"))


@pytest.mark.parametrize("cell", [c for c in rendered("record") if c.case.startswith("shape-")], ids=lambda c: c.id)
def test_shape_mask_invariants(cell):
    """Trained = the completion / the answer / everything, on the golden text."""
    w, rec = want(cell), golden.case(cell.case)["record"]
    trained = "".join(w["trained_text"])
    name = cell.case.removeprefix("shape-")
    from ocml.encoder.inputs.text import end_of_text_id

    tok = golden.encoder_of(cell).tokenizer
    eot = tok.special_ids[end_of_text_id(tok)]  # <|endoftext|>; the encoding's own eos (Llama 3's <|end_of_text|>)
    if name == "text":
        assert w["mask"] == [1] * len(w["ids"]) and w["text"] == rec["text"] + eot
    elif name == "prompt-completion-standard":
        assert w["text"] == rec["prompt"] + rec["completion"] + eot
        assert trained == rec["completion"] + eot
    elif name == "prompt-completion-full-loss":
        assert w["mask"] == [1] * len(w["ids"])
    elif name.startswith("alpaca"):
        assert rec["output"] in trained and rec["instruction"] not in trained
    else:
        assert "Paris" in trained or "21 degrees." in trained
        assert "France" not in trained and "Weather" not in trained


def test_a_changed_golden_is_reported_at_its_first_token():
    """The failure names the first differing token, decoded (what a reviewer needs)."""
    cell = golden.Cell("harmony", "plain-chat")
    w = want(cell)
    got = dict(w, ids=w["ids"][:5] + [w["ids"][5] + 1] + w["ids"][6:])
    msg = golden.first_difference(cell, w, got)
    assert "'ids' differs first at token 5" in msg and repr(golden.encoder_of(cell).tokenizer.decode([w["ids"][5]])) in msg
    assert golden.first_difference(cell, w, {"error": "E-X"}).endswith("got E-X")


def test_spec_specifics():
    """What the OpenChatML 2.2 examples say in words (beyond their goldens)."""
    enc = golden.encoder_for("openchatml-2.2")
    parse = lambda name: enc.parse_text(golden.case(name)["transcript"]).messages  # noqa: E731
    assert parse("spec-ocml22-16.4-literal")[0].content == (
        "Please print these markers exactly:\n\n<|start|><|channel|><|message|><|end|>\n")
    pre = parse("spec-ocml22-16.3-preamble")[0]
    assert (pre.intent, pre.channel) == ("preamble", "commentary")
    legacy = parse("spec-ocml22-17.8-legacy-tool-role")[1]
    assert legacy.role == "functions.lookup" and legacy.call_id == "c1"
    assert [m.effective_channel for m in parse("spec-ocml22-17.1-one-x")] == [None, None, "final"]
    with pytest.raises(encoder.OcmlError) as e:
        enc.render([{"role": "assistant", "channel": "commentary", "recipient": "functions.f", "constrain": "json",
                     "content": "{not json"}])
    assert e.value.code == "E-BODY-CONSTRAINT-VIOLATION"
