"""``llama3``: reading back (parse, parse_text, the stream decoder, stops), the OpenAI view
(``to_openai``, chunks: a call reads back with ``finish_reason`` ``tool_calls``), typed errors and
options, registered (the ``llama3`` encoding: Meta's ids) and fallback (o200k_base, controls as
text).  The references themselves: ``tests/formats/test_llama3_parity.py``."""

from __future__ import annotations

import json
import random

import pytest

from ocml import encoder, vocab
from ocml.encoder.errors import CallSchemaError, InputError, UnrepresentableError
from ocml.encoder.events import Delta, MessageEnd
from ocml.encoder.openai_chunks import accumulate
from support.chatml import cached_encoder, check_stream
from support.llama3 import arguments_as_text, conversation
from support.openai_chunks import after, no_ids

TOKENIZERS = [None, "o200k_base"]  # registered (Meta's ids), fallback (controls spelled as text)
TOK_IDS = ["registered", "fallback"]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "d",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
USER = {"role": "user", "content": "Weather in Oslo?"}


def enc_(tokenizer: str | None = None, **opts) -> encoder.Encoder:
    return cached_encoder("llama3", tokenizer, **{k: tuple(v) if isinstance(v, list) else v for k, v in opts.items()})


def call(name: str, args: str) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": args}}


def test_names_meta_ids_and_stops():
    enc = enc_()
    assert [encoder.Encoder(a).format_name for a in ("llama-3", "LLaMA3.1", "llama3.2", "llama3.3")] == ["llama3"] * 4
    tok = enc.tokenizer
    assert {c: tok.control_id(c) for c in ("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                                           "<|eom_id|>", "<|eot_id|>", "<|python_tag|>")} == {
        "<|begin_of_text|>": 128000, "<|start_header_id|>": 128006, "<|end_header_id|>": 128007,
        "<|eom_id|>": 128008, "<|eot_id|>": 128009, "<|python_tag|>": 128010}
    from llama_models.llama3.tokenizer import Tokenizer as MetaTokenizer

    assert sorted(enc.stop_ids()) == sorted(MetaTokenizer.get_instance().stop_tokens)


@pytest.mark.parametrize("tokenizer", TOKENIZERS, ids=TOK_IDS)
def test_generated_round_trips(tokenizer):
    enc = enc_(tokenizer)
    rng = random.Random(5)
    for _ in range(80):
        msgs = arguments_as_text(conversation(rng, calls=True, adversarial=tokenizer is None))
        conv = {"messages": msgs, "tools": TOOLS}
        if msgs[0]["role"] == "system" and msgs[1]["role"] != "user":
            continue
        r = enc.render(conv, mode="history")
        assert enc.parse(r.ids, strict=True) == list(r.conversation.messages)
        assert enc.parse_text(enc.to_text(conv), strict=True).messages == r.conversation.messages


@pytest.mark.parametrize("tokenizer", TOKENIZERS, ids=TOK_IDS)
def test_decoder_chunk_invariance_and_stops(tokenizer):
    enc = enc_(tokenizer)
    rng = random.Random(9)
    seen = 0
    for _ in range(60):
        msgs = arguments_as_text(conversation(rng, calls=True))
        full = enc.render(msgs, mode="train")
        frames = list(full.conversation.messages)
        if frames[-1].role != "assistant":
            continue
        prompt = enc.render(msgs[:-1], mode="prompt").ids
        if full.ids[len(prompt) - 1] != prompt[-1]:
            continue
        ev = check_stream(enc, full.ids[len(prompt):].tolist(), rng, role="assistant")
        end = [e for e in ev if type(e) is MessageEnd][0]
        assert end.message == frames[-1] and end.reason == "end" and ev[-1].reason == "end"
        visible = "".join(e.text for e in ev if type(e) is Delta and e.visible)
        assert visible == frames[-1].content
        seen += 1
    assert seen > 20


# -- the OpenAI view -------------------------------------------------------------------------------

SHAPES = {  # assistant turn -> the OpenAI message read back, finish reason
    "answer": ({"role": "assistant", "content": "It is sunny, 24 °C 🌞."},
               {"role": "assistant", "content": "It is sunny, 24 °C 🌞."}, "stop"),
    "call": ({"role": "assistant", "content": None, "tool_calls": [call("get_weather", '{"city": "Oslo"}')]},
             {"role": "assistant", "content": None, "tool_calls": [call("get_weather", '{"city": "Oslo"}')]},
             "tool_calls"),
    "json-answer-is-not-a-call": ({"role": "assistant", "content": '{"city": "Oslo"}'},
                                  {"role": "assistant", "content": '{"city": "Oslo"}'}, "stop"),
}


def prompt_ids(enc: encoder.Encoder) -> list[int]:
    return enc.render({"messages": [USER], "tools": TOOLS}, mode="prompt").ids.tolist()


def full_ids(enc: encoder.Encoder, turn: dict) -> list[int]:
    return enc.render({"messages": [USER, turn], "tools": TOOLS}, mode="train").ids.tolist()


@pytest.mark.parametrize("tok", TOKENIZERS, ids=TOK_IDS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_to_openai_stream_and_chunks_agree(tok, shape):
    enc = enc_(tok)
    turn, want, finish = SHAPES[shape]
    ids = after(enc, full_ids(enc, turn), prompt_ids(enc))
    choice = enc.to_openai(ids)
    assert no_ids(choice.message) == want and choice.finish_reason == finish and choice.errors == ()
    assert full_ids(enc, choice.message) == full_ids(enc, turn)  # the message renders back to the same ids
    for size in (1, 3, len(ids)):
        dec = enc.decoder(role="assistant")
        for k in range(0, len(ids), size):
            dec.feed(ids[k:k + size])
        dec.finish()
        assert dec.to_openai() == choice
        assert dec.status == ("tool_call" if finish == "tool_calls" else "final")
        ck = enc.chunker(id="x", created=1)
        chunks = [c for k in range(0, len(ids), size) for c in ck.feed(ids[k:k + size])] + ck.finish()
        assert accumulate(chunks) == {"message": choice.message, "finish_reason": choice.finish_reason}
    for k in range(len(ids)):  # truncated anywhere (max tokens): still equal, "length"
        ck = enc.chunker(id="x", created=1)
        ch = enc.to_openai(ids[:k])
        assert accumulate(ck.feed(ids[:k]) + ck.finish()) == {"message": ch.message, "finish_reason": "length"}


def test_builtin_calls_end_with_eom_and_read_back():
    enc = enc_(builtin_tools=["brave_search", "code_interpreter"])
    tok = enc.tokenizer
    ids = enc.render([USER, {"role": "assistant", "tool_calls": [call("brave_search", '{"query": "oslo"}')]}],
                     mode="train").ids.tolist()
    assert ids[-1] == tok.control_id("<|eom_id|>")
    start = len(enc.render([USER], mode="prompt").ids)
    assert ids[start] == tok.control_id("<|python_tag|>")
    choice = enc.to_openai(ids[start:])
    assert no_ids(choice.message)["tool_calls"] == [call("brave_search", '{"query": "oslo"}')]
    assert choice.finish_reason == "tool_calls"
    dec = enc.decoder(role="assistant")
    dec.feed(ids[start:])
    assert dec.status == "tool_call" and dec.stopped.reason == "call"
    code = [tok.control_id("<|python_tag|>")] + tok.encode_text("print(1)") + [tok.control_id("<|eom_id|>")]
    msg = enc.to_openai(code).message
    assert msg["tool_calls"][0]["function"] == {"name": "code_interpreter", "arguments": '{"code": "print(1)"}'}


def test_meta_reference_parser_reads_the_calls_we_write():
    """Meta's ``ChatFormat.decode_assistant_message`` reads ocml's call text as the same call."""
    from llama_models.datatypes import StopReason
    from llama_models.llama3.chat_format import ChatFormat
    from llama_models.llama3.tokenizer import Tokenizer as MetaTokenizer

    meta = ChatFormat(MetaTokenizer.get_instance())
    enc = enc_()
    for name, args in (("get_weather", {"city": "Oslo"}), ("calc", {"n": [1, 2], "x": {"é": None}})):
        full = enc.render([USER, {"role": "assistant", "tool_calls": [call(name, json.dumps(args))]}], mode="train")
        start = len(enc.render([USER], mode="prompt").ids)
        got = meta.decode_assistant_message(full.ids[start:].tolist(), StopReason.end_of_turn)
        assert (got.tool_calls[0].tool_name, got.tool_calls[0].arguments) == (name, args)


def test_lenient_parse_reports_an_unknown_role_and_goes_on():
    enc = enc_()
    tok = enc.tokenizer
    c = tok.control_id
    ids = [c("<|begin_of_text|>"), c("<|start_header_id|>")] + tok.encode_text("robot") + [c("<|end_header_id|>")] + \
        tok.encode_text("\n\nhi") + [c("<|eot_id|>"), c("<|start_header_id|>")] + tok.encode_text("user") + \
        [c("<|end_header_id|>")] + tok.encode_text("\n\nok") + [c("<|eot_id|>")]
    res = enc.parse(ids, errors="collect")
    assert [(m.role, m.content) for m in res.messages] == [("user", "ok")]
    assert [e.code for e in res.errors] == ["E-PARSE-HEADER", "E-PARSE-SKIPPED"]


@pytest.mark.parametrize("conv,err,code", [
    ([USER, {"role": "assistant", "tool_calls": [call("a", "{}"), call("b", "{}")]}], CallSchemaError,
     "E-CALL-SCHEMA"),
    ([USER, {"role": "assistant", "content": "Let me look.", "tool_calls": [call("a", "{}")]}],
     UnrepresentableError, "E-UNREPRESENTABLE"),
    ([{"role": "user", "content": "hi", "name": "bob"}], UnrepresentableError, "E-UNREPRESENTABLE"),
    ([USER, {"role": "assistant", "reasoning_content": "hmm", "content": "x"}], InputError, "E-INPUT-REASONING"),
    ({"messages": [{"role": "assistant", "content": "x"}], "tools": TOOLS}, InputError, None),
    ([{"role": "developer", "content": "x"}], None, "E-ROLE-UNKNOWN"),
])
def test_bad_input_gets_a_typed_error(conv, err, code):
    with pytest.raises(err or Exception) as e:
        enc_().render(conv)
    if code:
        assert e.value.code == code


@pytest.mark.parametrize("opts", [{"system_header": "yes"}, {"date": 5}, {"builtin_tools": "brave_search"},
                                  {"tool_results": "text"}, {"system_header": False, "builtin_tools": ["x"]}])
def test_bad_options_are_typed(opts):
    with pytest.raises(InputError):
        encoder.Encoder("llama3", **opts)


def test_tool_results_raw_and_the_30_layout():
    enc = enc_(tool_results="raw")
    text = enc.to_text([USER, {"role": "assistant", "tool_calls": [call("get_weather", "{}")]},
                        {"role": "tool", "content": '{"t": 3}'}])
    assert text.endswith('<|start_header_id|>ipython<|end_header_id|>\n\n{"t": 3}<|eot_id|>')
    enc = enc_(system_header=False)
    assert enc.to_text([USER]) == "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n" \
                                  "Weather in Oslo?<|eot_id|>"
    with pytest.raises(InputError):
        enc.render({"messages": [USER], "tools": TOOLS})
