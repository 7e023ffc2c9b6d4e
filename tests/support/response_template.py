"""Response templates (transformers >= 5.13 ``parse_response``): the HF tokenizer of a format, the
message the templates read (``hf_view`` / ``no_ids``) and ``check``: template, streaming parser and
``to_openai`` agree on ids."""

from __future__ import annotations

import codecs
import functools
import json

from ocml import encoder
from ocml.encoder.formats.base import Format

from support.openai_chunks import TOOLS, USER


@functools.lru_cache(maxsize=None)
def stack(fmt: str):
    from ocml.encoder.template.save import hf_tokenizer

    enc = encoder.Encoder(fmt)
    return enc, hf_tokenizer(enc)


def _args(text: str) -> object:
    """Tool-call arguments as the HF convention holds them: the parsed JSON, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _hf(fields: dict, calls: list) -> dict:
    out = {"role": "assistant", **{k: v for k, v in fields.items() if v}}
    if calls:
        out["tool_calls"] = calls
    return out


def no_ids(message: dict) -> dict:
    """``to_openai``'s message in the HF convention: ``thinking``, parsed arguments, no ids, no empty fields."""
    calls = [{"type": "function", "function": {"name": c["function"]["name"], "arguments": _args(c["function"]["arguments"])}}
             for c in message.get("tool_calls") or []]
    return _hf({"content": message.get("content"), "thinking": message.get("reasoning_content")}, calls)


def hf_view(enc, ids: list[int]) -> dict:
    """What a response template the engines accept reads: ``to_openai``'s messages, a field that
    occurs twice keeping its last region (the engines' rule: no ``join``); equal to ``no_ids(to_openai)``
    when no field occurs twice."""
    from ocml.encoder.openai_message import CALL, CONTENT, expand, function_name, kind
    from ocml.encoder.parse import parse_ids

    res = parse_ids(enc, ids, role="assistant", detailed=True)
    fields: dict = {}
    calls = []
    seen = []
    msgs, ends, _ = expand(res.messages, res.ends)
    cut_call = False
    for j, m in enumerate(msgs):
        if m.role != "assistant":
            continue
        k = kind(m.role, m.channel, m.recipient, m.intent)
        if k is CALL and (j >= len(ends) or ends[j] == "truncated") and not m.content.rstrip().endswith("}"):
            # a call cut short (max tokens) is no call for the engines: the template opens a call
            # once its end has come or the text ends after its closing "}", so the engine says
            # ``length``; to_openai keeps the cut call with ``length`` (as OpenAI's API does)
            cut_call = True
            continue
        if k is CALL:
            calls.append({"type": "function", "function": {"name": function_name(m.recipient or ""),
                                                            "arguments": _args(m.content)}})
        else:
            field = "content" if k is CONTENT else "thinking"
            fields[field] = m.content
            seen.append(field)
    want = _hf(fields, calls)
    if len(seen) == len(set(seen)) and not cut_call:
        assert want == no_ids(enc.to_openai(ids).message)
    return want


def check(fmt: str, ids: list[int]) -> None:
    enc, hf = stack(fmt)
    prompt = enc.render({"messages": [USER], "tools": TOOLS}, mode="prompt").ids.tolist()
    # a format whose turns are read from the text (ChatML: ``Format.turn_of``) is read as to_openai reads it
    read_from_text = type(enc.format).turn_of is not Format.turn_of
    want = no_ids(enc.to_openai(ids).message) if read_from_text else hf_view(enc, ids)
    got = hf.parse_response(ids, prefix=prompt)
    assert got == want, (enc.tokenizer.decode_bytes(ids), got, want)
    parser = hf.get_response_parser(prefix=prompt)
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")  # a stream decodes without splitting characters
    for k in range(0, len(ids), 3):
        parser.feed(utf8.decode(enc.tokenizer.decode_bytes(ids[k:k + 3])))
    parser.feed(utf8.decode(b"", final=True))
    assert parser.finalize()[0] == want
