"""Response templates: ``tokenizer.parse_response`` (transformers >= 5.13) reads what ``to_openai`` reads,
and the serving engines accept them.

For every format with a saved folder (registered controls): over generated completions -
the usual shapes (answer, reasoning + answer, tool call, reasoning + tool call, preamble +
call, several analysis messages), each truncated at every few tokens (max tokens), and
random texts (hypothesis) - ``parse_response(ids, prefix=prompt)`` equals ``hf_view``: the
message ``to_openai`` reads in the HF convention (``thinking``, arguments parsed as JSON, no
tool call ids: a template cannot generate them, docs/serving.md "Response templates"; a field that occurs twice
keeps its last region); the streaming parser (``get_response_parser``) agrees; the template
survives ``save_pretrained`` / ``from_pretrained``.

``serving_errors`` is the engines' start-up validation of a checkpoint's response template,
restated from their code (vLLM ``vllm/parser/response_template.py``
``validate_response_template_for_serving`` and ``_streaming_template``; SGLang
``python/sglang/srt/parser/response_template.py``, same names; both load the template with
the loader they vendor from transformers, ``transformers.utils.chat_parsing``): every format's
template passes it.  transformers' own gpt-oss parsing cases (``tests/utils/test_chat_parsing.py``
``test_gpt_oss_with_tool_call`` / ``test_gpt_oss_no_tool_call``) run on ocml's Harmony folder.
"""

from __future__ import annotations

import codecs

import pytest

from ocml import encoder
from ocml import vocab
from ocml.encoder.errors import UnrepresentableError

import transformers
if not hasattr(transformers.PreTrainedTokenizerBase, "parse_response"):
    pytest.skip("transformers < 5.13 has no response templates", allow_module_level=True)

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from support.openai_chunks import TOOLS, USER, completion, turns  # noqa: E402
from support.response_template import check, hf_view, stack


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


@pytest.mark.parametrize("fmt", vocab.FORMAT_NAMES)
def test_parse_response_equals_to_openai(fmt):
    for ids in shapes(fmt, "It is sunny, 24 °C 🌞."):
        check(fmt, ids)
        for k in range(1, len(ids), 4):  # cut anywhere (max tokens)
            enc, _ = stack(fmt)
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
    assert hf.parse_response(ids, prefix=prompt) == hf_view(enc, ids)


def test_fallback_has_no_response_template():
    from ocml.encoder.template.response import response_template

    with pytest.raises(UnrepresentableError):
        response_template(encoder.Encoder("openchatml-2.2", tokenizer="o200k_base"))


def test_apertus_thoughts_response_and_several_calls():
    """Apertus turns beyond the common shapes: thoughts + response + two calls in one list."""
    from support.apertus_serving import SHAPES, completion, prompt

    enc, hf = stack("apertus")
    p = prompt(enc)
    for shape in sorted(SHAPES):
        ids = completion(enc, SHAPES[shape][0])
        want = hf_view(enc, ids)
        assert hf.parse_response(ids, prefix=p) == want, shape
        parser = hf.get_response_parser(prefix=p)
        utf8 = codecs.getincrementaldecoder("utf-8")("strict")  # a stream decodes without splitting characters
        for i in ids:
            parser.feed(utf8.decode(enc.tokenizer.decode_bytes([i])))
        parser.feed(utf8.decode(b"", final=True))
        assert parser.finalize()[0] == want, shape


# -- the serving engines' rules (vLLM, SGLang) ----------------------------------------------

#: the only fields the engines' adapters route to an OpenAI message (vLLM ``_SUPPORTED_FIELDS``,
#: SGLang ``_SUPPORTED_RESPONSE_TEMPLATE_FIELDS``)
SERVING_FIELDS = {"thinking", "content", "tool_calls"}


def serving_errors(template: dict) -> list[str]:
    """Why vLLM / SGLang would refuse ``template`` at start-up (empty: accepted).

    Their ``validate_response_template_for_serving``: the template loads (the loader vendored from
    transformers); its fields are among ``thinking``, ``content``, ``tool_calls`` and its
    ``defaults`` hold only ``role``; ``thinking`` and ``content`` are parsed as ``text`` with no
    ``transform`` and no ``join`` (they are streamed as they arrive).  Their ``_streaming_template``
    then makes every field optional and, when every field has an opener, adds an implicit
    ``content`` field: that form must load too.  Their tool routing emits a call at its region's
    close and drops a call that ends at the end of the stream without its closer (SGLang
    ``_is_unusable_tool_end``, vLLM's tool closers): the tool field needs a closing delimiter."""
    import copy

    from transformers.utils.chat_parsing.response_templates import load_response_template

    try:
        loaded = load_response_template(template)
    except ValueError as exc:
        return [f"does not load: {exc}"]
    errors = []
    extra = (set(loaded.fields) - SERVING_FIELDS) | (set(loaded.defaults) - {"role"})
    if extra:
        errors.append(f"unsupported semantic fields {sorted(extra)}")
    for name in ("thinking", "content"):
        field = loaded.fields.get(name)
        if field is not None and (field.content != "text" or field.transform is not None or field.join is not None):
            errors.append(f"field {name!r} cannot be streamed (content {field.content!r}, transform, join)")
    tool = loaded.fields.get("tool_calls")
    if tool is not None and tool.close_re is None:
        errors.append("tool_calls has no closing delimiter: the engines drop every call")
    streaming = copy.deepcopy(template)
    fields = streaming["fields"]
    if "content" not in fields and all("open" in f or "open_pattern" in f for f in fields.values()):
        fields["content"] = {}
    for field in fields.values():
        field["optional"] = True
    try:
        load_response_template(streaming)
    except ValueError as exc:
        errors.append(f"the engines' streaming form does not load: {exc}")
    return errors


#: the fields each format's template must have: ``--reasoning-parser`` needs ``thinking``,
#: ``--tool-call-parser`` needs ``tool_calls`` (ChatML: at least the content)
REQUIRED_FIELDS = {"harmony": SERVING_FIELDS, "openchatml-2.2": SERVING_FIELDS, "openchatml-2.0": SERVING_FIELDS,
                   "apertus": SERVING_FIELDS, "chatml": {"content"},
                   "llama3": {"content", "tool_calls"}}


@pytest.mark.parametrize("fmt", vocab.FORMAT_NAMES)
def test_engines_accept_the_response_template(fmt):
    enc, hf = stack(fmt)
    assert serving_errors(hf.response_template) == []
    assert REQUIRED_FIELDS[fmt] <= set(hf.response_template["fields"])


def test_serving_rules_refuse_what_the_engines_refuse():
    """The validator is not vacuous: the template shapes ocml wrote before (the engines refused them)."""
    base = {"version": 1, "start_anchor": "<|start|>assistant", "defaults": {"role": "assistant"}}
    text = {"close": "<|end|>", "content_args": {"strip": False}}
    assert serving_errors({**base, "fields": {"content": text}}) == []
    old = [{"reasoning_content": {"open": "<|channel|>analysis<|message|>", **text}},
           {"content": {**text, "repeats": True, "join": "\n"}},
           {"content": text, "end": {"open": "<|return|>", "transform": ""}},
           {"content": {**text, "content": "json"}},
           {"tool_calls": {"open": "<|call|>"}}]
    for fields in old:
        assert serving_errors({**base, "fields": fields}), fields
    assert serving_errors({**base, "defaults": {"role": "assistant", "content": ""}, "fields": {"content": text}})


# -- transformers' own gpt-oss parsing cases (tests/utils/test_chat_parsing.py), on ocml's Harmony folder --

def _harmony_case(text: str) -> dict:
    enc, hf = stack("harmony")
    prompt = enc.render({"messages": [USER], "tools": TOOLS}, mode="prompt").ids.tolist()
    return hf.parse_response(hf.encode(text, add_special_tokens=False), prefix=prompt)


def test_transformers_gpt_oss_case_with_tool_call():
    """Reasoning, then a call whose recipient follows the channel (``<|channel|>commentary
    to=functions.NAME <|constrain|>json``), cut before its ``<|call|>``: the call is read with its
    arguments parsed, the reasoning is ``thinking`` (what the official gpt-oss folder returns)."""
    got = _harmony_case('<|channel|>analysis<|message|>The user wants the weather in Oslo. Call the tool.'
                        '<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather '
                        '<|constrain|>json<|message|>{\n  "city": "Oslo"\n}')
    assert got == {"role": "assistant", "thinking": "The user wants the weather in Oslo. Call the tool.",
                   "tool_calls": [{"type": "function",
                                   "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]}


def test_transformers_gpt_oss_case_without_tool_call():
    got = _harmony_case("<|channel|>analysis<|message|>Simple sum: 2+2 = 4.<|end|><|start|>assistant"
                        "<|channel|>final<|message|>4")
    assert got == {"role": "assistant", "content": "4", "thinking": "Simple sum: 2+2 = 4."}
