"""The peers' own gpt-oss output-parsing cases, run on ocml's Harmony decoder (issue 26).

Each case restates, as data, one input text and the result a peer's test expects from it:
llama.cpp (``tests/test-chat.cpp``, ``test_template_output_parsers``, the
``openai-gpt-oss-120b.jinja`` block: ``common_chat_parse`` with ``COMMON_CHAT_FORMAT_GPT_OSS``)
and SGLang (``test/registered/unit/function_call/test_gptoss_detector.py``,
``test/registered/unit/parser/test_reasoning_parser.py`` ``TestGptOssDetector*``,
``test/registered/unit/parser/test_harmony_parser.py`` ``TestCanonicalStrategy``).  The text
is tokenized with the saved Harmony folder's tokenizer (controls are the registered ids) and
read three ways:

* ``enc.to_openai(ids)``: content, reasoning, tool call names and arguments, finish reason;
* ``enc.chunker()`` fed one id at a time, all at once and (streaming cases) in the peer's own
  chunks, merged as OpenAI clients merge them: equal to ``to_openai(ids, until_stop=True)``,
  which is ``to_openai(ids)`` unless ids follow the first stop (a sampler ends the stream
  there; ``DIFFERENCES["stream-ends-at-stop"]``); where the case's text lacks the stop an
  engine strips (llama.cpp's ``is_partial=false`` cases), also fed without it and finished with
  ``finish(stop_reason=...)``;
* transformers' ``parse_response`` on the saved folder, for complete assistant messages
  (after the ``<|start|>assistant`` prefill): equal to ``to_openai`` in the HF convention.

Where ocml reads a case differently from the peer the case names its entry of ``DIFFERENCES``
(also in docs/serving.md, "Differences from the peers' gpt-oss parsers"), asserts ocml's reading
and, where the peer returns text that ocml does not place in the message, that the text is
reported in an ``Error`` (never lost).  SGLang's ``TextStrategy`` cases (gpt-oss output with the
control tokens already stripped to text: ``analysis ... assistantfinal ...``) are not ported:
ocml decodes ids, where the controls are never text.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import pytest

from ocml.encoder.openai_chunks import accumulate

from support.openai_chunks import TOOLS, USER  # noqa: E402
from support.response_template import no_ids, stack  # noqa: E402
from support.paths import ROOT

#: deliberate differences: key -> (peer behaviour, ocml's reading and why)
DIFFERENCES: dict[str, tuple[str, str]] = {
    "parser-options": (
        "llama.cpp can be told not to parse tool calls (parse_tool_calls=false) or to leave the "
        "reasoning in the content (reasoning_format=none, reasoning_in_content=true): the raw "
        "Harmony text comes back as content",
        "ocml has no such switch: to_openai always separates reasoning_content and reads tool calls "
        "(the raw text is the completion itself; an endpoint that must not return calls drops "
        "tool_calls, and to_openai(tools=...) reports a call to a tool the request did not offer)"),
    "plain-text": (
        "SGLang's gpt-oss tool-call detector and harmony parser return text outside a Harmony "
        "message (no channel, before <|start|>, between messages, after <|return|>, a cut control "
        "spelling) as normal text",
        "in a Harmony completion text after <|start|>assistant is the header, and text between "
        "messages is no message: ocml reports it (E-STREAM-TRUNCATED, E-PARSE-HEADER, "
        "E-PARSE-STRAY-TEXT, E-PARSE-SKIPPED with the text in Error.text) and never makes it "
        "content, as transformers' parse_response and openai-harmony do not either"),
    "tool-message": (
        "SGLang's harmony parser returns the body of a tool's message "
        "(<|start|>functions.NAME to=assistant<|message|>...) as normal text",
        "a tool's message is not part of the assistant's reply: E-UNREPRESENTABLE, not content"),
    "stream-ends-at-stop": (
        "SGLang's detectors read every call of a text holding several <|call|> (or text after "
        "<|return|>) in one pass, streamed or not",
        "to_openai reads every id as well; ocml's chunker ends the stream at the first stop, as a "
        "sampler does (to_openai(until_stop=True) reads the same); a real gpt-oss completion ends "
        "at its first <|call|> / <|return|>"),
}

LLAMA = "llama.cpp tests/test-chat.cpp test_template_output_parsers (openai-gpt-oss-120b.jinja)"
SG_FC = "sglang test/registered/unit/function_call/test_gptoss_detector.py TestGptOssDetector"
SG_RP = "sglang test/registered/unit/parser/test_reasoning_parser.py"
SG_HP = "sglang test/registered/unit/parser/test_harmony_parser.py TestCanonicalStrategy"

THINK = "<|channel|>analysis<|message|>I'm\nthinking<|end|>"
HELLO = "Hello, world!\nWhat's up?"
SPECIAL = "<|start|>assistant<|channel|>commentary to=functions.special_function"
WEATHER = '<|start|>assistant<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{"city":"Beijing"}<|call|>'


class Case(NamedTuple):
    name: str
    source: str  # the peer file and test
    text: str
    #: ocml's reading: content, reasoning_content, [(name, arguments)], finish_reason
    content: str | None
    reasoning: str | None
    calls: tuple[tuple[str, str], ...]
    finish: str
    role: str | None = "assistant"  # None: the text starts with its own <|start|>
    stop: str | None = None  # the stop an engine stripped (the peer's case is complete without it)
    diff: str | None = None  # the DIFFERENCES entry where ocml reads the case differently
    reported: str | None = None  # text the peer returns that ocml reports in an Error instead
    chunks: tuple[str, ...] = ()  # the peer's own stream chunks
    hf: bool = False  # a complete assistant message: compare transformers' parse_response


ARG1 = (("special_function", '{"arg1": 1}'),)
CASES = [
    # --- llama.cpp: common_chat_parse, COMMON_CHAT_FORMAT_GPT_OSS, reasoning_format auto ---
    Case("llama-analysis-cut", LLAMA, "<|channel|>analysis<|message|>I'm\nthink",
         None, "I'm\nthink", (), "length"),
    Case("llama-analysis-ended", LLAMA, THINK, None, "I'm\nthinking", (), "length"),
    Case("llama-final", LLAMA, THINK + "<|start|>assistant<|channel|>final<|message|>" + HELLO,
         HELLO, "I'm\nthinking", (), "stop", stop="<|return|>", hf=True),
    Case("llama-call-constrain-cut", LLAMA, THINK + SPECIAL + ' <|constrain|>json<|message|>{"arg1',
         None, "I'm\nthinking", (("special_function", '{"arg1'),), "length"),
    Case("llama-call-cut", LLAMA, THINK + SPECIAL + '<|message|>{"arg1',
         None, "I'm\nthinking", (("special_function", '{"arg1'),), "length"),
    Case("llama-call-constrain", LLAMA, THINK + SPECIAL + ' <|constrain|>json<|message|>{"arg1": 1}',
         None, "I'm\nthinking", ARG1, "tool_calls", stop="<|call|>", hf=True),
    Case("llama-call-on-analysis", LLAMA,
         THINK + '<|start|>assistant<|channel|>analysis to=functions.special_function <|constrain|>json'
         '<|message|>{"arg1": 1}', None, "I'm\nthinking", ARG1, "tool_calls", stop="<|call|>", hf=True),
    Case("llama-commentary-cut", LLAMA, THINK + "<|start|>assistant<|channel|>commentary<|message|>" + HELLO,
         HELLO, "I'm\nthinking", (), "length"),
    Case("llama-preamble-then-call", LLAMA,
         THINK + "<|start|>assistant<|channel|>commentary<|message|>" + HELLO + "<|end|>"
         + SPECIAL + ' <|constrain|>json<|message|>{"arg1": 1}',
         HELLO, "I'm\nthinking", ARG1, "length"),
    Case("llama-recipient-in-role-header", LLAMA,
         ' to=functions.special_function<|channel|>commentary <|constrain|>json<|message|>{"arg1": 1}',
         None, None, ARG1, "tool_calls", stop="<|call|>", hf=True),
    Case("llama-recipient-in-role-header-analysis", LLAMA,
         ' to=functions.special_function<|channel|>analysis <|constrain|>json<|message|>{"arg1": 1}',
         None, None, ARG1, "tool_calls", stop="<|call|>", hf=True),
    Case("llama-recipient-before-channel", LLAMA,
         THINK + '<|start|>assistant to=functions.special_function<|channel|>analysis <|constrain|>json'
         '<|message|>{"arg1": 1}', None, "I'm\nthinking", ARG1, "tool_calls", stop="<|call|>", hf=True),
    # llama.cpp options ocml does not have (parse_tool_calls=false; reasoning_format none / in content)
    Case("llama-no-tool-parse-final", LLAMA,
         THINK + "<|start|>assistant<|channel|>final<|message|>" + HELLO,
         HELLO, "I'm\nthinking", (), "length", diff="parser-options"),
    Case("llama-no-tool-parse-call-cut", LLAMA, THINK + SPECIAL + '<|message|>{"arg1',
         None, "I'm\nthinking", (("special_function", '{"arg1'),), "length", diff="parser-options"),
    Case("llama-no-tool-parse-call", LLAMA, THINK + SPECIAL + ' <|constrain|>json<|message|>{"arg1": 1}',
         None, "I'm\nthinking", ARG1, "tool_calls", stop="<|call|>", diff="parser-options", hf=True),
    Case("llama-reasoning-none", LLAMA, THINK + "<|start|>assistant<|channel|>final<|message|>" + HELLO,
         HELLO, "I'm\nthinking", (), "stop", stop="<|return|>", diff="parser-options", hf=True),
    Case("llama-reasoning-in-content", LLAMA, THINK + "<|start|>assistant<|channel|>final<|message|>" + HELLO,
         HELLO, "I'm\nthinking", (), "stop", stop="<|return|>", diff="parser-options", hf=True),
    # --- SGLang: GptOssDetector (function calls) ---
    Case("sglang-single-call", SG_FC + ".test_single_tool_call", WEATHER,
         None, None, (("get_weather", '{"city":"Beijing"}'),), "tool_calls", role=None),
    Case("sglang-text-before-call", SG_FC + ".test_normal_text_before_tool_call", "Let me check." + WEATHER,
         None, None, (("get_weather", '{"city":"Beijing"}'),), "tool_calls", role=None,
         diff="plain-text", reported="Let me check."),
    Case("sglang-no-call", SG_FC + ".test_no_tool_call", "The weather is nice today.",
         None, None, (), "length", diff="plain-text", reported="The weather is nice today."),
    Case("sglang-two-calls", SG_FC + ".test_multiple_tool_calls",
         WEATHER + '<|start|>assistant<|channel|>commentary to=functions.search<|constrain|>json'
         '<|message|>{"query":"restaurants"}<|call|>',
         None, None, (("get_weather", '{"city":"Beijing"}'), ("search", '{"query":"restaurants"}')),
         "tool_calls", role=None, diff="stream-ends-at-stop"),
    Case("sglang-stream-call", SG_FC + ".test_streaming_single_tool_call", WEATHER,
         None, None, (("get_weather", '{"city":"Beijing"}'),), "tool_calls", role=None,
         chunks=("<|start|>", "assistant<|channel|>", "commentary to=functions.get_weather",
                 '<|constrain|>json<|message|>{"city":"Beijing"}<|call|>')),
    Case("sglang-stream-text", SG_FC + ".test_streaming_normal_text_before_tool", "Let me check the weather. ",
         None, None, (), "length", diff="plain-text", reported="Let me check the weather. "),
    Case("sglang-stream-text-then-call", SG_FC + ".test_streaming_text_then_tool_call",
         "I'll look that up. <|start|>assistant<|channel|>commentary to=functions.get_weather<|constrain|>json"
         '<|message|>{"city":"Beijing", "unit":"celsius"}<|call|>',
         None, None, (("get_weather", '{"city":"Beijing", "unit":"celsius"}'),), "tool_calls", role=None,
         diff="plain-text", reported="I'll look that up. ",
         chunks=("I'll look that up. <|start|>", "assistant<|channel|>", "commentary to=functions.get_weather",
                 '<|constrain|>json<|message|>{"city":"Beijing", "unit":"celsius"}<|call|>')),
    # --- SGLang: reasoning parser GptOssDetector (a <|start|> without its role: read as assistant) ---
    Case("sglang-rp-analysis-final", SG_RP + " TestGptOssDetector.test_detect_and_parse_with_analysis_and_final",
         "<|start|><|channel|>analysis<|message|>thinking hard<|end|><|channel|>final<|message|>the answer<|end|>",
         "the answer", "thinking hard", (), "length", role=None),
    Case("sglang-rp-final-only", SG_RP + " TestGptOssDetector.test_detect_and_parse_normal_only",
         "<|start|><|channel|>final<|message|>just the answer<|end|>",
         "just the answer", None, (), "length", role=None),
    Case("sglang-rp-stream", SG_RP + " TestGptOssDetector.test_streaming_analysis_then_final",
         "<|start|><|channel|>analysis<|message|>reasoning part<|end|><|channel|>final<|message|>answer<|end|>",
         "answer", "reasoning part", (), "length", role=None,
         chunks=("<|start|><|channel|>analysis<|message|>", "reasoning part", "<|end|>",
                 "<|channel|>final<|message|>answer", "<|end|>")),
    # the peer asserts only that the reasoning holds "think" and the normal text "result"
    Case("sglang-rp-call-return", SG_RP + " TestGptOssDetector.test_streaming_with_tool_call"
         " / TestGptOssDetectorToolCall.test_detect_and_parse_tool_call_raw_text",
         "<|start|><|channel|>analysis<|message|>think<|end|><|call|>tool_data<|return|>"
         "<|channel|>final<|message|>result<|end|>",
         "tool_data\nresult", "think", (), "length", role=None, diff="stream-ends-at-stop"),
    Case("sglang-rp-call-return-stream", SG_RP + " TestGptOssDetectorToolCall.test_streaming_tool_call_raw_text",
         "<|start|><|channel|>analysis<|message|>reason<|end|><|call|>tool_payload<|return|>"
         "<|channel|>final<|message|>done<|end|>",
         "tool_payload\ndone", "reason", (), "length", role=None, diff="stream-ends-at-stop",
         chunks=("<|start|><|channel|>analysis<|message|>reason<|end|>", "<|call|>tool_payload<|return|>",
                 "<|channel|>final<|message|>done<|end|>")),
    # --- SGLang: HarmonyParser, canonical strategy ---
    Case("sglang-hp-analysis", SG_HP + ".test_parse_single_analysis_block",
         "<|channel|>analysis<|message|>Let me think about this<|end|>",
         None, "Let me think about this", (), "length", hf=True),
    Case("sglang-hp-commentary", SG_HP + ".test_parse_single_commentary_block",
         "<|channel|>commentary<|message|>User-visible message<|end|>",
         "User-visible message", None, (), "length", hf=True),
    Case("sglang-hp-final", SG_HP + ".test_parse_single_final_block",
         "<|start|>assistant<|channel|>final<|message|>The answer is 42<|return|>",
         "The answer is 42", None, (), "stop", role=None),
    Case("sglang-hp-call", SG_HP + ".test_parse_tool_call_commentary",
         '<|channel|>commentary to=functions.get_weather<|message|>{"location": "SF"}<|call|>',
         None, None, (("get_weather", '{"location": "SF"}'),), "tool_calls", hf=True),
    Case("sglang-hp-builtin-call", SG_HP + ".test_parse_tool_call_analysis",
         '<|channel|>analysis to=browser.search<|message|>{"query": "SGLang"}<|call|>',
         None, None, (("browser.search", '{"query": "SGLang"}'),), "tool_calls", hf=True),
    Case("sglang-hp-reasoning-call", SG_HP + ".test_parse_complex_sequence",
         "<|channel|>analysis<|message|>Need to use function get_weather.<|end|>"
         '<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>{"location":"San Francisco"}<|call|>',
         None, "Need to use function get_weather.", (("get_weather", '{"location":"San Francisco"}'),),
         "tool_calls", hf=True),
    Case("sglang-hp-interspersed", SG_HP + ".test_parse_with_interspersed_text",
         "Some text <|channel|>analysis<|message|>reasoning<|end|> more text "
         "<|start|>assistant<|channel|>final<|message|>answer<|return|> trailing text",
         "answer", None, (), "length", diff="plain-text", reported=" more text "),
    Case("sglang-hp-incomplete", SG_HP + ".test_parse_incomplete_block",
         "<|channel|>analysis<|message|>partial content", None, "partial content", (), "length"),
    Case("sglang-hp-cut-control", SG_HP + ".test_parse_partial_token_suffix", "complete text <|ret",
         None, None, (), "length", diff="plain-text", reported="complete text <|ret"),
    Case("sglang-hp-tool-message", SG_HP + ".test_parse_tool_response_message",
         '<|start|>functions.get_weather to=assistant<|message|>{"sunny": true}<|end|>',
         None, None, (), "length", role=None, diff="tool-message", reported='{"sunny": true}'),
    Case("sglang-hp-empty-analysis", SG_HP + ".test_parse_empty_content_blocks",
         "<|channel|>analysis<|message|><|end|>", None, "", (), "length", hf=True),
    Case("sglang-hp-filler", SG_HP + ".test_parse_commentary_filler_between_blocks",
         '<|channel|>commentary to=functions.get_weather<|message|>{"location":"SF"}<|call|>commentary'
         '<|channel|>commentary to=functions.get_temp<|message|>{"location":"NYC"}<|call|>',
         None, None, (("get_weather", '{"location":"SF"}'), ("get_temp", '{"location":"NYC"}')), "tool_calls",
         diff="stream-ends-at-stop"),
]


@functools.lru_cache(maxsize=None)
def _prompt() -> list[int]:
    enc, _ = stack("harmony")
    return enc.render({"messages": [USER], "tools": TOOLS}, mode="prompt").ids.tolist()


def _ids(text: str) -> list[int]:
    """The text as a model emits it: controls as their registered ids."""
    _, hf = stack("harmony")
    return hf.encode(text, add_special_tokens=False)


def _ids_with_stop(case: Case) -> list[int]:
    return _ids(case.text + (case.stop or ""))


def _view(message: dict[str, Any], finish: str | None) -> tuple:
    calls = tuple((c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or ())
    return message.get("content"), message.get("reasoning_content"), calls, finish


def _merged(chunks_of_ids: list[list[int]], role: str | None, **finish: Any) -> dict[str, Any]:
    enc, _ = stack("harmony")
    ck = enc.chunker(role=role, id="x", created=1)
    out: list[dict[str, Any]] = []
    for part in chunks_of_ids:
        out += ck.feed(part)
    return accumulate(out + ck.finish(**finish))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_to_openai(case: Case):
    enc, _ = stack("harmony")
    got = enc.to_openai(_ids_with_stop(case), role=case.role)
    assert _view(got.message, got.finish_reason) == (case.content, case.reasoning, case.calls, case.finish)
    if case.reported is not None:
        assert any(case.reported in (e.text or "") for e in got.errors), got.errors


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_chunks_merge_to_to_openai(case: Case):
    enc, _ = stack("harmony")
    ids = _ids_with_stop(case)
    want = enc.to_openai(ids, role=case.role, until_stop=True)
    want_d = {"message": want.message, "finish_reason": want.finish_reason}
    assert _merged([[i] for i in ids], case.role) == want_d
    assert _merged([ids], case.role) == want_d
    if case.chunks:
        assert _merged([_ids(c) for c in case.chunks], case.role) == want_d
    if case.stop:  # an engine that strips the stop token and says why it stopped
        assert _merged([ids[:-1]], case.role, stop_reason=case.stop) == want_d
    if case.diff == "stream-ends-at-stop":
        assert want.message != enc.to_openai(ids, role=case.role).message  # the stream did end early


@pytest.mark.parametrize("case", [c for c in CASES if c.hf], ids=[c.name for c in CASES if c.hf])
def test_transformers_parse_response(case: Case):
    enc, hf = stack("harmony")
    ids = _ids_with_stop(case)
    assert hf.parse_response(ids, prefix=_prompt()) == no_ids(enc.to_openai(ids).message)


def test_every_difference_is_used_and_documented():
    used = {c.diff for c in CASES if c.diff}
    assert used == set(DIFFERENCES)
    doc = (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    assert "Differences from the peers' gpt-oss parsers" in doc
    for key in DIFFERENCES:
        assert f"`{key}`" in doc, key
