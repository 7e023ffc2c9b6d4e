"""Response templates: ``tokenizer.parse_response`` (transformers >= 5.13) reads what ``to_openai`` reads.

For every format with a saved folder (registered controls): over generated completions -
the usual shapes (answer, reasoning + answer, tool call, reasoning + tool call, preamble +
call, several analysis messages), each truncated at every few tokens (max tokens), and
random texts (hypothesis) - ``parse_response(ids, prefix=prompt)`` equals
``enc.to_openai(ids).message`` without the tool call ids (a template cannot generate them:
README "Serving"); the streaming parser (``get_response_parser``) agrees; the template
survives ``save_pretrained`` / ``from_pretrained``.
"""

from __future__ import annotations

import codecs
import functools
import json

import pytest

from ocml import encoder
from ocml import vocab
from ocml.encoder.errors import UnrepresentableError

import transformers
if not hasattr(transformers.PreTrainedTokenizerBase, "parse_response"):
    pytest.skip("transformers < 5.13 has no response templates", allow_module_level=True)

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from test_openai_chunks import TOOLS, USER, completion, turns  # noqa: E402


@functools.lru_cache(maxsize=None)
def stack(fmt: str):
    from ocml.encoder.template.save import hf_tokenizer

    enc = encoder.Encoder(fmt)
    return enc, hf_tokenizer(enc)


def no_ids(message: dict) -> dict:
    out = dict(message)
    if "tool_calls" in out:
        out["tool_calls"] = [{k: v for k, v in c.items() if k != "id"} for c in out["tool_calls"]]
    return out


def shapes(fmt: str, text: str) -> list[list[int]]:
    enc, _ = stack(fmt)
    out = [completion(enc, t) for t in turns(fmt, text).values()]
    if fmt in ("harmony", "openchatml-2.2", "openchatml-2.0"):  # native shapes: preamble, several analyses
        nat = encoder.Encoder(fmt, shape="native")
        more = [[{"role": "assistant", "channel": "analysis", "content": "a"},
                 {"role": "assistant", "channel": "analysis", "content": "b"},
                 {"role": "assistant", "channel": "final", "content": text}],
                [{"role": "assistant", "channel": "commentary", "content": "Let me check."},
                 {"role": "assistant", "channel": "commentary", "recipient": "functions.get_weather",
                  "constrain": "json", "content": '{"city": "Oslo"}'}]]
        if fmt != "harmony":
            more[1][0]["intent"] = "preamble"
            more.append([{"role": "assistant", "channel": "commentary", "intent": "thinking", "content": "hidden"},
                         {"role": "assistant", "channel": "final", "content": text}])
        for turn in more:
            full = nat.render([USER, *turn], mode="train", cot="keep-all").ids.tolist()
            prompt = nat.render([USER], mode="prompt").ids.tolist()
            out.append(full[len(prompt):])
    return out


def parsed_like(want: dict, got: dict) -> dict:
    """``want`` with each call's arguments parsed where the template gives them parsed (ChatML,
    as transformers' own Qwen template: a dict where ``to_openai`` gives the JSON text)."""
    calls = got.get("tool_calls")
    if not calls or "tool_calls" not in want or len(calls) != len(want["tool_calls"]):
        return want
    out = dict(want)
    out["tool_calls"] = [c if isinstance(g["function"]["arguments"], str) else
                         {**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
                         for c, g in zip(want["tool_calls"], calls)]
    return out


def check(fmt: str, ids: list[int]) -> None:
    enc, hf = stack(fmt)
    prompt = enc.render({"messages": [USER], "tools": TOOLS}, mode="prompt").ids.tolist()
    got = hf.parse_response(ids, prefix=prompt)
    want = parsed_like(no_ids(enc.to_openai(ids).message), got)
    assert got == want, (enc.tokenizer.decode_bytes(ids), got, want)
    parser = hf.get_response_parser(prefix=prompt)
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")  # a stream decodes without splitting characters
    for k in range(0, len(ids), 3):
        parser.feed(utf8.decode(enc.tokenizer.decode_bytes(ids[k:k + 3])))
    parser.feed(utf8.decode(b"", final=True))
    assert parser.finalize()[0] == want


@pytest.mark.parametrize("fmt", vocab.FORMAT_NAMES)
def test_parse_response_equals_to_openai(fmt):
    for ids in shapes(fmt, "It is sunny, 24 °C 🌞."):
        check(fmt, ids)
        for k in range(1, len(ids), 4):  # cut anywhere (max tokens)
            enc, _ = stack(fmt)
            if enc.to_openai(ids[:k]).message.get("reasoning_content") == "":
                continue  # an empty reasoning message: the parser drops empty fields (README)
            check(fmt, ids[:k])


@pytest.mark.parametrize("fmt", vocab.FORMAT_NAMES)
@settings(max_examples=20, deadline=None)
@given(text=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40).filter(
    lambda s: "<|" not in s))
def test_parse_response_property(fmt, text):
    for ids in shapes(fmt, text):
        check(fmt, ids)


def test_saved_folder_keeps_the_template(tmp_path, hf_folders):
    enc, _ = stack("harmony")
    hf = transformers.AutoTokenizer.from_pretrained(str(hf_folders.folder(tmp_path / "tok", "harmony")))
    ids = completion(enc, turns("harmony")["reasoning+call"])
    prompt = enc.render({"messages": [USER], "tools": TOOLS}, mode="prompt").ids.tolist()
    assert hf.parse_response(ids, prefix=prompt) == no_ids(enc.to_openai(ids).message)


def test_fallback_has_no_response_template():
    from ocml.encoder.template.response import response_template

    with pytest.raises(UnrepresentableError):
        response_template(encoder.Encoder("openchatml-2.2", tokenizer="o200k_base"))


def test_apertus_thoughts_response_and_several_calls():
    """Apertus turns beyond the common shapes: thoughts + response + two calls in one list."""
    from test_apertus_serving import SHAPES, completion, prompt

    enc, hf = stack("apertus")
    p = prompt(enc)
    for shape in sorted(SHAPES):
        ids = completion(enc, SHAPES[shape][0])
        want = no_ids(enc.to_openai(ids).message)
        assert hf.parse_response(ids, prefix=p) == want, shape
        parser = hf.get_response_parser(prefix=p)
        utf8 = codecs.getincrementaldecoder("utf-8")("strict")  # a stream decodes without splitting characters
        for i in ids:
            parser.feed(utf8.decode(enc.tokenizer.decode_bytes([i])))
        parser.feed(utf8.decode(b"", final=True))
        assert parser.finalize()[0] == want, shape
