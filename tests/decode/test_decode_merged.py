"""Property (issue 26): a stop or control spelled by tokens that merge with their neighbours reads
as the registered ids do.  Every format x mode (registered ids; fallback: controls spelled as
text) x tokenizer (o200k_base, cl100k_base), a completion rendered then **re-tokenized as whole
text together with what a model writes after its stop** (so ``<|call|><|start|>`` ends in o200k's
``><``), cut where ``hf_stopping_criteria`` stops ``generate()``:

* the cut is the decoder's first stop (``stops.first_stop``) and ``finish_reason`` is the stop's
  (``tool_calls`` after a call, else ``stop``), with no error;
* the chunks merged (random chunking), the stream decoder's ``to_openai``, ``enc.to_openai`` of
  the cut ids, ``to_openai(until_stop=True)`` of the ids that went on, and a stream whose engine
  stripped the stop token (``finish(stop_reason=...)``) all give the same message;
* registered mode: transformers' ``parse_response`` with the saved response template gives it too
  (``test_response_template.check``; fallback mode has no folder).

Bounded (a few examples per key) to stay fast.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml.encoder.errors import UnrepresentableError
from ocml.encoder.openai_chunks import accumulate
from ocml.encoder.stops import first_stop, hf_stopping_criteria

from support.openai_chunks import TOOLS, USER, completion, turns
from support.response_template import check as template_check

#: formats (openchatml-1.x is an alias of 2.2: the same reader) x tokenizer (None: registered)
FORMATS = ("openchatml-2.2", "openchatml-1.x", "openchatml-2.0", "harmony", "chatml", "apertus")
KEYS = [(f, t) for f in FORMATS for t in (None, "o200k_base", "cl100k_base")]
_ENCS: dict = {}


def setup(fmt: str, tok: str | None):
    if (fmt, tok) not in _ENCS:
        enc = encoder.Encoder(fmt, tokenizer=tok)
        _ENCS[(fmt, tok)] = (enc, hf_stopping_criteria(enc))
    return _ENCS[(fmt, tok)]


def generated(enc: encoder.Encoder, turn: dict) -> list[int]:
    """What a model samples for ``turn`` and goes on with (the next frame's start), as ids:
    registered controls as their ids; in fallback mode the whole text tokenized at once."""
    tok = enc.tokenizer
    prompt = enc.render({"messages": [USER], "tools": TOOLS}, mode="prompt").ids.tolist()
    if tok.control_id(next(iter(enc.format.stop_reasons("assistant")))) is not None:
        return completion(enc, turn) + prompt[:3]
    full = enc.render({"messages": [USER, turn], "tools": TOOLS}, mode="train", cot="keep-all").ids.tolist()
    text, head = tok.decode_bytes(full), tok.decode_bytes(prompt)
    assert text.startswith(head)
    return tok.encode_text((text[len(head):] + head[:24]).decode())


def pieces(ids: list[int], cuts: list[int]) -> list[list[int]]:
    edges = [0, *sorted(c for c in cuts if 0 < c < len(ids)), len(ids)]
    return [ids[a:b] for a, b in zip(edges, edges[1:])]


@pytest.mark.parametrize(("fmt", "tok"), KEYS, ids=[f"{f}-{t or 'registered'}" for f, t in KEYS])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_merged_stops_read_like_ids(fmt, tok, data):
    enc, crit = setup(fmt, tok)
    text = data.draw(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
                             max_size=24).filter(lambda s: "<|" not in s and s.strip()), label="text")
    all_turns = turns(fmt, text)
    name = data.draw(st.sampled_from(sorted(all_turns)), label="turn")
    try:
        ids = generated(enc, all_turns[name])
    except UnrepresentableError:  # e.g. text ending in '<' before a control spelled as text
        reject()
    k = next((j for j in range(1, len(ids) + 1) if bool(crit([ids[:j]])[0])), None)
    assert k is not None, "the stopping criteria never stopped"
    assert k == first_stop(enc, ids)
    want = enc.to_openai(ids[:k])
    assert want.errors == (), want.errors
    assert want.finish_reason == ("tool_calls" if want.message.get("tool_calls") else "stop")
    if fmt != "chatml":  # (ChatML calls: the seams-qwen work)
        assert ("tool_calls" in want.message) == ("call" in name)
    target = {"message": want.message, "finish_reason": want.finish_reason}
    cuts = data.draw(st.lists(st.integers(1, max(k - 1, 1)), max_size=6), label="cuts")
    ck = enc.chunker()
    chunks = [c for p in pieces(ids[:k], cuts) for c in ck.feed(p)] + ck.finish()
    assert accumulate(chunks) == target
    dec = enc.decoder(role="assistant")
    stop = [e for p in pieces(ids, cuts) for e in dec.feed(p) if e.type == "stop"]
    assert dec.to_openai() == want and len(stop) == 1 and stop[0].position == k - 1
    assert enc.to_openai(ids, until_stop=True) == want
    # an engine that strips the stop token says which stop it was
    ck = enc.chunker()
    stripped = ck.feed(ids[:k - 1]) + ck.finish(stop_reason=stop[0].token if tok else ids[k - 1])
    assert accumulate(stripped) == target
    if tok is None and fmt != "openchatml-1.x":
        template_check(fmt, ids[:k])
