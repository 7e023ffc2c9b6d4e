"""ChatML (Qwen2.5 / Qwen3) completions in the OpenAI view: ``<tool_call>`` blocks and Qwen3's
``<think>`` block read back by ``to_openai``, the stream decoder, the chunker, ``hf_streamer``
and the response template (transformers' ``parse_response``), registered controls and
fallback (``<|im_end|>`` spelled as text).

A ChatML assistant frame is read as a turn (``ocml.encoder.formats.chatml.turns``): a leading
``<think>`` block is ``reasoning_content`` when the encoder thinks (``reasoning="think"``),
each ``<tool_call>{"name": N, "arguments": A}</tool_call>`` a call, the rest ``content``;
``finish_reason`` is ``tool_calls`` when the turn ends with calls.  A call that cannot be read
stays in ``content`` and is reported.  The tags are text in every tokenizer, so no delta may
hold a partial tag, however the ids are chunked.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from ocml import encoder, vocab
from ocml.encoder.errors import OcmlError, ParseError
from ocml.encoder.openai_chunks import accumulate
from ocml.encoder.formats.chatml.turns import CALL_CLOSE, CALL_OPEN, THINK_CLOSE

from support.paths import shared
from support.openai_chunks import after, no_ids
from support.engine_stop import engine_stops

CITY = {"type": "object", "properties": {"city": {"type": "string"}}}
TOOLS = [{"type": "function", "function": {"name": n, "description": "d", "parameters": CITY}}
         for n in ("get_weather", "get_time")]
USER = {"role": "user", "content": "Weather in Oslo?"}
#: (reasoning option, tokenizer): think / default, registered (cl100k_base + ChatML ids) / fallback (o200k_base)
SETUPS = [("think", None), ("think", "o200k_base"), ("error", None), ("error", "o200k_base")]
IDS = [f"{r}-{'fallback' if t else 'registered'}" for r, t in SETUPS]


def call(name: str, args: str) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": args}}


WEATHER = call("get_weather", '{"city": "Oslo"}')
TIME = call("get_time", '{"city": "Oslo", "n": [1, 2], "s": "a \\"q\\" <tool_call> </think>"}')
#: assistant turns -> the OpenAI message to_openai gives back (without ids) and the finish reason;
#: the think shapes only where the encoder thinks
SHAPES = {
    "answer": ({"role": "assistant", "content": "It is sunny, 24 °C 🌞."},
               {"role": "assistant", "content": "It is sunny, 24 °C 🌞."}, "stop"),
    "call": ({"role": "assistant", "content": None, "tool_calls": [WEATHER]},
             {"role": "assistant", "content": None, "tool_calls": [WEATHER]}, "tool_calls"),
    "content+calls": ({"role": "assistant", "content": "Let me look.\n", "tool_calls": [WEATHER, TIME]},
                      {"role": "assistant", "content": "Let me look.\n", "tool_calls": [WEATHER, TIME]}, "tool_calls"),
    "think+answer": ({"role": "assistant", "reasoning_content": "Sun?\n\nYes.", "content": "Sunny."},
                     {"role": "assistant", "content": "Sunny.", "reasoning_content": "Sun?\n\nYes."}, "stop"),
    "think+calls": ({"role": "assistant", "reasoning_content": "Two tools.", "content": None,
                     "tool_calls": [WEATHER, TIME]},
                    {"role": "assistant", "content": None, "reasoning_content": "Two tools.",
                     "tool_calls": [WEATHER, TIME]}, "tool_calls"),
    "think+content+call": ({"role": "assistant", "reasoning_content": "Check <tool_call> tags.", "content": "One moment.",
                            "tool_calls": [WEATHER]},
                           {"role": "assistant", "content": "One moment.", "reasoning_content": "Check <tool_call> tags.",
                            "tool_calls": [WEATHER]}, "tool_calls"),
}
_ENCS: dict[tuple[str, str | None], encoder.Encoder] = {}


def enc_for(reasoning: str, tok: str | None) -> encoder.Encoder:
    if (reasoning, tok) not in _ENCS:
        _ENCS[(reasoning, tok)] = encoder.Encoder("chatml", tokenizer=tok, reasoning=reasoning)
    return _ENCS[(reasoning, tok)]


def shapes(reasoning: str) -> list[str]:
    return [k for k in SHAPES if reasoning == "think" or not k.startswith("think")]


def prompt(enc: encoder.Encoder) -> list[int]:
    return enc.render({"messages": [USER], "tools": TOOLS}, mode="prompt").ids.tolist()


def full(enc: encoder.Encoder, turn: dict) -> list[int]:
    return enc.render({"messages": [USER, turn], "tools": TOOLS}, mode="train").ids.tolist()


def completion(enc: encoder.Encoder, turn: dict) -> list[int]:
    """What the model generates after the prompt, up to its stop (the training text's ``\\n``
    after ``<|im_end|>`` is never generated)."""
    ids = after(enc, full(enc, turn), prompt(enc))
    dec = enc.decoder(role="assistant")
    stop = [e for e in dec.feed(ids) if type(e).__name__ == "Stop"]
    return ids[:len(ids) - stop[0].trailing] if stop else ids


def text_ids(enc: encoder.Encoder, text: str) -> list[int]:
    """A completion written as text: ``<|im_end|>`` as its id where registered, else spelled out."""
    end = enc.tokenizer.control_id("<|im_end|>")
    if end is None or not text.endswith("<|im_end|>"):
        return enc.tokenizer.encode_text(text)
    return enc.tokenizer.encode_text(text[:-len("<|im_end|>")]) + [end]


def chunked(ids: list[int], cuts: list[int]) -> list[list[int]]:
    bounds = [0, *sorted(cuts), len(ids)]
    return [ids[a:b] for a, b in zip(bounds, bounds[1:])]


def views(enc: encoder.Encoder, ids: list[int], pieces: list[list[int]], **kw) -> tuple[dict, dict, list[dict]]:
    """(stream decoder's to_openai, the chunks merged, the chunks) for ``ids`` fed as ``pieces``."""
    dec = enc.decoder(**kw) if "prefill" in kw else enc.decoder(role="assistant", **kw)
    ck = enc.chunker(id="x", created=1, **kw)
    chunks: list[dict] = []
    for p in pieces:
        dec.feed(p)
        chunks += ck.feed(p)
    dec.finish()
    chunks += ck.finish()
    ch = dec.to_openai()
    return {"message": ch.message, "finish_reason": ch.finish_reason}, accumulate(chunks), chunks


def check_no_markup_leaks(chunks: list[dict], final: dict) -> None:
    """Every delta extends the final content / reasoning (nothing is ever taken back), so no
    partial tag or layout newline ever went out; no delta holds markup."""
    got = {"content": "", "reasoning_content": ""}
    for c in chunks:
        d = c["choices"][0]["delta"] if c["choices"] else {}
        for key in got:
            if d.get(key):
                got[key] += d[key]
                assert (final.get(key) or "").startswith(got[key]), (key, got[key], final)


@pytest.mark.parametrize(("reasoning", "tok"), SETUPS, ids=IDS)
def test_to_openai_reads_think_content_and_calls(reasoning, tok):
    enc = enc_for(reasoning, tok)
    for shape in shapes(reasoning):
        turn, want, finish = SHAPES[shape]
        ids = completion(enc, turn)
        choice = enc.to_openai(ids)
        assert (no_ids(choice.message), choice.finish_reason, choice.errors) == (want, finish, ()), shape
        calls = choice.message.get("tool_calls", [])
        assert all(c["id"].startswith("call_") and len(c["id"]) == 29 for c in calls)
        assert len({c["id"] for c in calls}) == len(calls)
        assert enc.to_openai(ids).message == choice.message  # deterministic ids
        # the message renders back to the completion (arguments verbatim)
        assert full(enc, choice.message) == full(enc, turn), shape


@pytest.mark.parametrize(("reasoning", "tok"), SETUPS, ids=IDS)
def test_stream_decoder_and_chunks_equal_to_openai_at_every_chunking(reasoning, tok):
    enc = enc_for(reasoning, tok)
    for shape in shapes(reasoning):
        ids = completion(enc, SHAPES[shape][0])
        ch = enc.to_openai(ids)
        want = {"message": ch.message, "finish_reason": ch.finish_reason}
        for cuts in ([], list(range(1, len(ids))), [len(ids) // 3, len(ids) // 2]):
            dec, merged, chunks = views(enc, ids, chunked(ids, cuts))
            assert dec == want and merged == want, (shape, cuts)
            check_no_markup_leaks(chunks, ch.message)
        # cut anywhere (max tokens): still equal, "length"
        for k in range(len(ids)):
            cut = enc.to_openai(ids[:k])
            dec, merged, chunks = views(enc, ids[:k], [ids[:k]])
            assert dec == merged == {"message": cut.message, "finish_reason": "length"}, (shape, k)
            check_no_markup_leaks(chunks, cut.message)


@pytest.mark.parametrize(("reasoning", "tok"), SETUPS, ids=IDS)
def test_byte_at_a_time_never_leaks_a_partial_tag(reasoning, tok):
    """The completion's text fed one byte-level token at a time (fallback: every control and tag
    spread over many ids): the deltas only ever extend the final fields."""
    enc = enc_for(reasoning, tok)
    single = {b: i for i, b in enumerate(enc.tokenizer.token_bytes_table) if b is not None and len(b) == 1
              and i not in enc.tokenizer.special_ids}
    for shape in shapes(reasoning):
        ids = completion(enc, SHAPES[shape][0])
        data = enc.tokenizer.decode_bytes([i for i in ids if i not in enc.tokenizer.special_ids])
        tail = [i for i in ids[-1:] if i in enc.tokenizer.special_ids]
        byte_ids = [single[bytes([b])] for b in data] + tail
        want = enc.to_openai(ids)
        dec, merged, chunks = views(enc, byte_ids, [[i] for i in byte_ids])
        assert merged == dec == {"message": want.message, "finish_reason": want.finish_reason}, shape
        check_no_markup_leaks(chunks, want.message)


@pytest.mark.parametrize(("reasoning", "tok"), SETUPS, ids=IDS)
def test_chunks_stream_reasoning_then_content_then_whole_calls(reasoning, tok):
    enc = enc_for(reasoning, tok)
    shape = "think+content+call" if reasoning == "think" else "content+calls"
    ids = completion(enc, SHAPES[shape][0])
    ck = enc.chunker(id="x", created=1)
    deltas = [c["choices"][0]["delta"] for i in ids for c in ck.feed([i])]
    assert deltas[0] == {"role": "assistant"} and deltas[-1] == {}
    keys = [next(iter(d)) for d in deltas[1:-1]]
    assert keys == sorted(keys, key=["reasoning_content", "content", "tool_calls"].index)
    assert keys.count("content") > 1  # the answer streams token by token
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert [{k: c[k] for k in ("id", "type", "function")} for c in calls] == enc.to_openai(ids).message["tool_calls"]
    assert [c["index"] for c in calls] == list(range(len(calls)))


@pytest.mark.parametrize(("reasoning", "tok"), SETUPS, ids=IDS)
def test_engine_stripped_im_end_gives_tool_calls(reasoning, tok):
    enc = enc_for(reasoning, tok)
    ids = completion(enc, SHAPES["call"][0])
    want = enc.to_openai(ids)
    for cut, kw in engine_stops(enc, ids, "<|im_end|>"):
        ck = enc.chunker(id="x", created=1)
        assert accumulate(ck.feed(cut) + ck.finish(**kw)) == {"message": want.message, "finish_reason": "tool_calls"}
        dec = enc.decoder(role="assistant")
        dec.feed(cut)
        dec.finish(**kw)
        assert dec.status == "tool_call" and dec.to_openai() == want
    dec = enc.decoder(role="assistant")
    dec.feed(ids)
    assert dec.status == "tool_call"


#: malformed completions (text before <|im_end|>) -> (content, error code); the calls' text is kept
MALFORMED = {
    "bad json": ('<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>', "E-CALL-SCHEMA"),
    "no name": ('<tool_call>\n{"arguments": {"city": "Oslo"}}\n</tool_call>', "E-CALL-SCHEMA"),
    "empty name": ('<tool_call>\n{"name": "", "arguments": {}}\n</tool_call>', "E-CALL-SCHEMA"),
    "no arguments": ('<tool_call>\n{"name": "get_weather"}\n</tool_call>', "E-CALL-SCHEMA"),
    "not an object": ('<tool_call>\n["get_weather", {}]\n</tool_call>', "E-CALL-SCHEMA"),
    "two objects": ('<tool_call>\n{"name": "f", "arguments": {}}\n{"name": "g", "arguments": {}}\n</tool_call>',
                    "E-CALL-SCHEMA"),
    "unclosed": ('Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}', "E-CALL-SCHEMA"),
}


@pytest.mark.parametrize(("reasoning", "tok"), SETUPS, ids=IDS)
@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_call_is_reported_and_kept_as_content(reasoning, tok, case):
    enc = enc_for(reasoning, tok)
    body, code = MALFORMED[case]
    good = '\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
    for text in (body, "Hi." + good + "\n" + body) if case != "unclosed" else (body,):
        ids = text_ids(enc, text + "<|im_end|>")
        choice = enc.to_openai(ids)
        calls = [c["function"] for c in choice.message.get("tool_calls", [])]
        if text == body:
            assert choice.message["content"] == body and not calls and choice.finish_reason == "stop"
        else:  # the good call is read, the bad one stays in the content (after the first part)
            assert choice.message["content"] == "Hi.\n" + body and calls == [{"name": "get_time", "arguments": "{}"}]
            assert choice.finish_reason == "stop"
        assert [e.code for e in choice.errors] == [code], case
        assert repr(body[body.index("<tool_call>"):][:20])[1:-1] in choice.errors[0].message  # quotes the call
        dec, merged, chunks = views(enc, ids, [[i] for i in ids])
        assert dec == merged == {"message": choice.message, "finish_reason": choice.finish_reason}
        stream = enc.decoder(role="assistant")
        stream.feed(ids)
        assert [e.code for e in stream.errors] == [code] and stream.to_openai() == choice
        assert [e.code for e in enc.parse(ids, role="assistant", errors="collect").errors] == [code]
        with pytest.raises(ParseError) as err:
            enc.to_openai(ids, strict=True)
        assert err.value.code == code


@pytest.mark.parametrize(("reasoning", "tok"), SETUPS, ids=IDS)
def test_a_call_cut_by_max_tokens_is_content_without_a_call_error(reasoning, tok):
    enc = enc_for(reasoning, tok)
    ids = text_ids(enc, 'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"ci')
    choice = enc.to_openai(ids)
    assert choice.message["content"] == 'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"ci'
    assert choice.finish_reason == "length" and [e.code for e in choice.errors] == ["E-STREAM-TRUNCATED"]


def test_unclosed_think_is_reasoning_and_reported():
    enc = enc_for("think", None)
    ids = text_ids(enc, "<think>\nStill thinking\n\n<|im_end|>")
    choice = enc.to_openai(ids)
    assert choice.message == {"role": "assistant", "content": None, "reasoning_content": "Still thinking"}
    assert choice.finish_reason == "stop" and [e.code for e in choice.errors] == ["E-PARSE-UNTERMINATED"]
    dec, merged, _ = views(enc, ids, [[i] for i in ids])
    assert dec == merged == {"message": choice.message, "finish_reason": "stop"}
    # cut by max tokens inside the reasoning: what came is reasoning, no error but the truncation
    cut = enc.tokenizer.encode_text("<think>\nStill thin")
    choice = enc.to_openai(cut)
    assert choice.message["reasoning_content"] == "Still thin" and choice.finish_reason == "length"
    assert [e.code for e in choice.errors] == ["E-STREAM-TRUNCATED"]


@pytest.mark.parametrize("tok", [None, "o200k_base"], ids=["registered", "fallback"])
def test_think_is_content_unless_the_encoder_thinks(tok):
    text = "<think>\nhm\n</think>\n\nSunny.\n<tool_call>\n" + '{"name": "get_weather", "arguments": {}}\n</tool_call>'
    for reasoning in ("error", "drop"):
        enc = encoder.Encoder("chatml", tokenizer=tok, reasoning=reasoning)
        choice = enc.to_openai(text_ids(enc, text + "<|im_end|>"))
        assert no_ids(choice.message) == {"role": "assistant", "content": "<think>\nhm\n</think>\n\nSunny.",
                                          "tool_calls": [call("get_weather", "{}")]}
    enc = enc_for("think", tok)
    choice = enc.to_openai(text_ids(enc, text + "<|im_end|>"))
    assert no_ids(choice.message) == {"role": "assistant", "content": "Sunny.", "reasoning_content": "hm",
                                      "tool_calls": [call("get_weather", "{}")]}
    # <think> opens the reasoning only at the very start; a stray </think> is content
    choice = enc.to_openai(text_ids(enc, "Hi <think>x</think> there</think><|im_end|>"))
    assert choice.message == {"role": "assistant", "content": "Hi <think>x</think> there</think>"}


@pytest.mark.parametrize("tok", [None, "o200k_base"], ids=["registered", "fallback"])
def test_a_prompt_that_prefilled_think_is_read_with_the_prompt(tok):
    """Qwen3.5 / Qwen3-Thinking templates end the prompt with ``<think>\\n``: the completion starts
    inside the reasoning.  Given the prompt (``prefill=``), the decoder, the chunker and
    ``hf_streamer(prefill=True)`` read it; from the completion alone it is content."""
    enc = enc_for("think", tok)
    head = prompt(enc) + enc.tokenizer.encode_text("<think>\n")
    gen = text_ids(enc, "Cold, I think.\n</think>\n\nIt is 3 °C.<|im_end|>")
    want = {"role": "assistant", "content": "It is 3 °C.", "reasoning_content": "Cold, I think."}
    for cuts in ([], list(range(1, len(gen)))):
        dec, merged, chunks = views(enc, gen, chunked(gen, cuts), prefill=head)
        assert dec == merged == {"message": want, "finish_reason": "stop"}
        check_no_markup_leaks(chunks, want)
    assert enc.to_openai(gen).message["content"] == "Cold, I think.\n</think>\n\nIt is 3 °C."
    # Qwen3's enable_thinking=False prefill: an empty reasoning block, then the answer
    off = prompt(enc) + enc.tokenizer.encode_text("<think>\n\n</think>\n\n")
    dec, merged, _ = views(enc, text_ids(enc, "Hi.<|im_end|>"), [text_ids(enc, "Hi.<|im_end|>")], prefill=off)
    assert dec == merged == {"message": {"role": "assistant", "content": "Hi."}, "finish_reason": "stop"}


@pytest.mark.needs_torch
def test_hf_streamer_reads_tool_calls_and_reasoning():
    torch = pytest.importorskip("torch")
    from ocml.encoder.stops import hf_streamer

    enc = enc_for("think", None)
    ids = completion(enc, SHAPES["think+calls"][0])
    want = enc.to_openai(ids)
    streamer = hf_streamer(enc, id="x", created=1)
    streamer.put(torch.tensor([prompt(enc)]))
    for i in ids:
        streamer.put(torch.tensor([i]))
    streamer.end()
    assert accumulate(list(streamer)) == {"message": want.message, "finish_reason": "tool_calls"}
    # a prompt ending in "<think>\n" (prefill=True: the prompt ids put the decoder there)
    head = prompt(enc) + enc.tokenizer.encode_text("<think>\n")
    gen = text_ids(enc, "Hm.\n</think>\n\nHi.<|im_end|>")
    streamer = hf_streamer(enc, prefill=True, id="x", created=1)
    streamer.put(torch.tensor([head]))
    for i in gen:
        streamer.put(torch.tensor([i]))
    streamer.end()
    assert accumulate(list(streamer)) == {"message": {"role": "assistant", "content": "Hi.",
                                                      "reasoning_content": "Hm."}, "finish_reason": "stop"}


def test_qwen_documentation_calls_read_back():
    """The assistant frames of Qwen's function-calling documentation (the text Qwen2.5 writes)
    read back as the documented calls."""
    enc = encoder.Encoder("chatml")
    ref = json.loads(shared("refdata/fixtures/chatml-qwen2.5.qwen-docs.json").read_text("utf-8"))
    case = ref["cases"][0]
    text = case["expected"]
    head = "<|im_start|>assistant\n"
    frames = [f.split("<|im_end|>")[0] for f in text.split(head)[1:]]
    want = [m for m in case["messages"] if m["role"] == "assistant"]
    assert len(frames) == len(want) == 2
    for frame, msg in zip(frames, want):
        choice = enc.to_openai(text_ids(enc, frame + "<|im_end|>"))
        got = [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
               for c in choice.message.get("tool_calls", [])]
        assert got == [c["function"] for c in msg.get("tool_calls", [])]
        assert choice.message["content"] == (msg["content"] or None)
        assert choice.finish_reason == ("tool_calls" if got else "stop") and choice.errors == ()


def test_single_token_tags_as_in_qwen_tokenizers():
    """Qwen's tokenizers have ``<tool_call>``, ``</tool_call>``, ``<think>``, ``</think>`` as added
    (non-special) tokens: one id each, decoded as their text.  They read the same."""
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers

    vocab_ = {chr(c): i for i, c in enumerate(range(32, 127))}
    vocab_["\n"] = len(vocab_)
    tok = tokenizers.Tokenizer(models.WordLevel(vocab_, unk_token="?"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok.decoder = decoders.Fuse()
    tok.add_tokens([tokenizers.AddedToken(t, special=False, normalized=False)
                    for t in ("<tool_call>", "</tool_call>", "<think>", "</think>")])
    enc = encoder.Encoder("chatml", tokenizer=vocab.from_hf(tok, register="chatml"), reasoning="think")
    assert len(enc.tokenizer.encode_text("<tool_call>")) == 1
    turn = {"role": "assistant", "reasoning_content": "r", "content": "c", "tool_calls": [WEATHER]}
    ids = completion(enc, turn)
    assert enc.tokenizer.encode_text("<tool_call>")[0] in ids
    want = enc.to_openai(ids)
    assert no_ids(want.message) == {"role": "assistant", "content": "c", "reasoning_content": "r",
                                    "tool_calls": [WEATHER]}
    dec, merged, chunks = views(enc, ids, [[i] for i in ids])
    assert dec == merged == {"message": want.message, "finish_reason": "tool_calls"}


# -- property: render, then read back everywhere -------------------------------------------------

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=24)
_WORDS = st.sampled_from(["<", "<t", "<tool_call", "</tool_call", "<think>", "</thi", "\n", "\n\n", " ", "{",
                          '"', "}", "x", "é", "🌞", "<|im_end", "|>"])
_RICH = st.lists(st.one_of(_TEXT, _WORDS), min_size=1, max_size=6).map("".join)
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-10 ** 6, 10 ** 6) | _RICH,
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(_RICH, kids, max_size=3), max_leaves=6)


def _turn(data: st.DataObject, think: bool) -> dict:
    turn: dict = {"role": "assistant", "content": None}
    if think and data.draw(st.booleans(), label="thinks"):
        r = data.draw(_RICH.filter(lambda s: s.strip("\n") and "</think>" not in s), label="reasoning")
        turn["reasoning_content"] = r
    if data.draw(st.booleans(), label="content"):
        c = data.draw(_RICH.filter(lambda s: "<tool_call>" not in s), label="content text")
        turn["content"] = c
    n = data.draw(st.integers(0 if turn["content"] else 1, 3), label="calls")
    if n:
        turn["tool_calls"] = [call(data.draw(st.sampled_from(["get_weather", "get_time"]), label="name"),
                                   json.dumps(data.draw(st.dictionaries(_RICH, _JSON, max_size=3), label="args"),
                                              ensure_ascii=data.draw(st.booleans(), label="ascii")))
                              for _ in range(n)]
    return turn


def _readable(turn: dict, think: bool) -> bool:
    """A turn whose text the reader gives back as it was (the layout's own ambiguities aside)."""
    c, r = turn.get("content"), turn.get("reasoning_content")
    if think and not r and c is not None and c.startswith("<think>"):
        return False  # answer text that starts like a reasoning block
    if r is not None and (c or "").startswith("\n"):
        return False  # the think layout strips the answer's leading newlines (Qwen3's template too)
    if any(CALL_CLOSE in t["function"]["arguments"] for t in turn.get("tool_calls") or ()):
        return False  # arguments holding </tool_call> end the call early (Qwen's template and vLLM's too)
    return r is None or THINK_CLOSE not in r  # reasoning holding </think> ends the block early


def _template_view(message: dict) -> dict:
    """``to_openai``'s message as the saved response template gives it: the engines' field names
    (``thinking``), empty fields left out, arguments parsed."""
    names = {"reasoning_content": "thinking"}
    out = {names.get(k, k): v for k, v in message.items() if v not in (None, "") or k == "role"}
    if "tool_calls" in out:
        out["tool_calls"] = [{"type": "function", "function": {"name": c["function"]["name"],
                                                               "arguments": json.loads(c["function"]["arguments"])}}
                             for c in out["tool_calls"]]
    return out


@pytest.mark.parametrize(("reasoning", "tok"), SETUPS, ids=IDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_property_render_then_read_back_everywhere(reasoning, tok, data):
    """Random reasoning, content and calls (text full of tag fragments), rendered, cut anywhere,
    fed in random chunks: the stream decoder, the chunks merged and ``to_openai`` agree, no delta
    takes anything back, and the whole completion reads back as the turn (and renders back to
    its ids); registered: transformers' ``parse_response`` on the saved template agrees."""
    enc = enc_for(reasoning, tok)
    think = reasoning == "think"
    turn = _turn(data, think)
    if not _readable(turn, think):
        reject()
    try:
        ids = completion(enc, turn)
    except OcmlError:  # text the fallback spelling cannot keep apart from a control
        reject()
    whole = enc.to_openai(ids)
    want = {"role": "assistant", "content": turn["content"] or None}
    if turn.get("reasoning_content"):
        want["reasoning_content"] = turn["reasoning_content"].strip("\n")
    if turn.get("tool_calls"):
        want["tool_calls"] = turn["tool_calls"]
    assert no_ids(whole.message) == want and whole.errors == ()
    assert whole.finish_reason == ("tool_calls" if turn.get("tool_calls") else "stop")
    assert full(enc, whole.message) == full(enc, turn)
    k = data.draw(st.integers(0, len(ids)), label="length")
    cuts = data.draw(st.lists(st.integers(0, k), max_size=6), label="cuts")
    cut = enc.to_openai(ids[:k])
    dec, merged, chunks = views(enc, ids[:k], chunked(ids[:k], cuts))
    assert dec == merged == {"message": cut.message, "finish_reason": cut.finish_reason}
    check_no_markup_leaks(chunks, cut.message)
    if tok is None and "<|" not in json.dumps(turn, ensure_ascii=False):
        # (a template reads text: text that spells a control, e.g. "<|im_end|>", reads as that control)
        assert _hf(reasoning).parse_response(ids, prefix=prompt(enc)) == _template_view(whole.message)


_HF: dict[str, object] = {}


def _hf(reasoning: str):
    if reasoning not in _HF:
        from ocml.encoder.template.save import hf_tokenizer

        _HF[reasoning] = hf_tokenizer(enc_for(reasoning, None))
    return _HF[reasoning]


@pytest.mark.parametrize("reasoning", ["think", "error"])
def test_response_template_reads_every_shape_and_cut(reasoning):
    enc, hf = enc_for(reasoning, None), _hf(reasoning)
    for shape in shapes(reasoning):
        ids = completion(enc, SHAPES[shape][0])
        for k in [*range(1, len(ids), 3), len(ids)]:
            want = _template_view(enc.to_openai(ids[:k]).message)
            tail = enc.tokenizer.decode_bytes(ids[:k]).decode("utf-8", "replace").rpartition(CALL_CLOSE)
            after = tail[2].split(next(iter(enc.format.stop_reasons("assistant"))))[0]
            if tail[1] and after.strip():
                # text after a closed call (a cut one) is a second content region: the engines keep
                # the last (no ``join``), where to_openai joins the parts
                # (whitespace before a <tool_call> is layout, the call's own)
                want["content"] = after.lstrip() if after.lstrip().startswith(CALL_OPEN) else after
            assert hf.parse_response(ids[:k], prefix=prompt(enc)) == want, (shape, k)


@pytest.mark.parametrize(("reasoning", "tok"), SETUPS[:2], ids=IDS[:2])
def test_batch_decoder_rows_read_turns_like_the_decoder(reasoning, tok):
    """``BatchDecoder`` (lean path for plain text) gives each row what one decoder gives it."""
    from ocml.encoder.stream.batch import batch_decoder

    enc = enc_for(reasoning, tok)
    rows = [completion(enc, SHAPES[s][0]) for s in shapes(reasoning)]
    width = max(map(len, rows))
    for vectorized in (False, True):
        bd = batch_decoder(enc, len(rows), vectorized=vectorized)
        filler = enc.tokenizer.encode_text(" x")[0]
        for t in range(width):
            bd.step([r[t] if t < len(r) else filler for r in rows])
        bd.finish()
        for r, ids in enumerate(rows):
            assert bd.decoder(r).to_openai() == enc.to_openai(ids), (r, vectorized)


def test_a_fill_in_the_middle_middle_is_code_never_a_turn():
    enc = enc_for("think", None)
    code = 'x = "<think>"\nparse("<tool_call>\\n{\\"name\\": \\"f\\", \\"arguments\\": {}}\\n</tool_call>")\n'
    ids = enc.tokenizer.encode_text(code) + [enc.tokenizer.control_id("</s>")]
    choice = enc.to_openai(ids, role="fim")
    assert choice.message == {"role": "assistant", "content": code} and choice.errors == ()
    dec = enc.decoder(role="fim")
    events = dec.feed(ids)
    assert "".join(e.text for e in events if type(e).__name__ == "Delta" and e.visible) == code
    assert dec.to_openai() == choice


def test_stop_strings_apply_to_the_answer_not_the_reasoning():
    """A stop string inside ``<think>`` is reasoning text (vLLM#14399 truncated reasoning there);
    in the answer it stops the stream, chunks and decoder alike."""
    enc = enc_for("think", None)
    ids = enc.tokenizer.encode_text("<think>\nsay STOP now\n</think>\n\nAnswer STOP here")
    want = {"message": {"role": "assistant", "content": "Answer ", "reasoning_content": "say STOP now"},
            "finish_reason": "stop"}
    for size in (1, len(ids)):
        dec, merged, _ = views(enc, ids, chunked(ids, list(range(size, len(ids), size))), stop_strings=["STOP"])
        assert dec == merged == want


@pytest.mark.parametrize("reasoning", ["think", "error"])
def test_transformers_own_qwen_parser_reads_the_same(reasoning):
    """transformers' response template for Qwen2 / Qwen3 checkpoints (what ``transformers serve``
    uses when a folder has none) reads ocml's completions as ``to_openai`` does (it strips the
    text fields and parses the arguments)."""
    from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS
    from transformers.utils.chat_parsing import parse_response

    qwen = next(v for k, v in _RESPONSE_TEMPLATE_FALLBACKS.items() if "qwen3" in k)
    enc = enc_for(reasoning, None)
    for shape in shapes(reasoning):
        ids = completion(enc, SHAPES[shape][0])
        got = parse_response(enc.tokenizer.decode_bytes(ids).decode(), qwen, prefix="")
        want = enc.to_openai(ids).message
        for key in ("content", "reasoning_content"):
            assert (got.get(key) or "").strip() == (want.get(key) or "").strip(), (shape, key)
        assert [c["function"] for c in got.get("tool_calls", [])] == [
            {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
            for c in want.get("tool_calls", [])], shape
