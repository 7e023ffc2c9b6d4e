"""Text can never become structure: render -> parse properties over every format, three
tokenizer kinds and three modes, with adversarial text in every text field (issue 15).

Tokenizers per format: *registered* (the format's default: controls are ids), *fallback*
(``o200k_base``: every control spelled as text, escaped) and *HF* (a small byte-level BPE
``tokenizers.Tokenizer`` trained here, wrapped by ``ocml.vocab.from_hf(register=FORMAT)``: controls
are HF added tokens, which an HF ``encode`` would match inside text).

Properties, for each generated conversation (OpenAI / HF chat dicts with tools, tool calls,
reasoning, names, content parts; and native messages with header fields for Harmony / 2.x):

- no untyped exception: anything raised is an ``OcmlError``; a lone surrogate anywhere is
  refused (never silently replaced);
- render -> parse gives back exactly the rendered messages and header fields, with no parse
  error (the generation prompt of ``prompt`` mode aside); so does ``to_text`` -> ``parse_text``;
- no text becomes a control id: the ids hold as many control ids as the same conversation
  with every free text replaced by ``x`` (registered, HF);
- mask: only tokens of assistant messages are trained.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml import vocab
from ocml.encoder.errors import OcmlError
from ocml.encoder.formats.harmony.content import DeveloperContent, SystemContent
from ocml.encoder.formats.harmony.sections import developer_text, system_text

FORMATS = ["openchatml-2.2", "openchatml-2.0", "harmony", "chatml", "apertus"]
KINDS = ["registered", "fallback", "hf"]
MODES = ["train", "prompt", "history"]

# -- adversarial text --------------------------------------------------------------------------------

CONTROL_SPELLINGS = [
    "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>", "<|constrain|>", "<|literal|>",
    "<|endliteral|>", "<|start_reason|>", "<|im_start|>", "<|im_end|>", "<s>", "</s>", "<|system_start|>",
    "<|user_end|>", "<|assistant_start|>", "<|assistant_end|>", "<|tools_prefix|>", "<|tools_suffix|>",
    "<|inner_prefix|>", "<|fim_prefix|>",
]
FRAGMENTS = ["<|", "|>", "<<|start|>", "<<|end|>", "<", "<<", "|", "start", "end", "assistant", "to=", " ", "\n",
             "\n\n", "[", "]", "{", "}", '"', "\\", ":", ".", "é", "🙂", "数", "x", "hello"]
SURROGATE = "\ud83d"
_atom = st.sampled_from(CONTROL_SPELLINGS + FRAGMENTS)
TEXT = st.lists(_atom, max_size=6).map("".join)
TEXT_OR_BAD = TEXT  # lone surrogates: ``with_surrogate`` puts one in a chosen field
NAMES = st.sampled_from(["get_weather", "search", "a-b", "x.y", "calc_2"])
HEADER_WORDS = st.one_of(NAMES, st.sampled_from(["", ":.", "a b", "<|end|>", "x:y", "functions.", ".", "é", "a=b",
                                                 "all", "json", "python", "browser.search"]), TEXT)


def has_surrogate(obj: Any) -> bool:
    return SURROGATE in json.dumps(obj, ensure_ascii=False) if obj is not None else False


# -- conversations -----------------------------------------------------------------------------------

@st.composite
def tool_spec(draw: Any, name: str) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for k in range(draw(st.integers(0, 2))):
        p: dict[str, Any] = {"type": "string", "description": draw(TEXT_OR_BAD)}
        if draw(st.booleans()):
            p["enum"] = [draw(TEXT_OR_BAD), "b"]
        props[draw(st.sampled_from(["p", "q", "r"])) + str(k)] = p
    return {"type": "function", "function": {"name": name, "description": draw(TEXT_OR_BAD),
                                             "parameters": {"type": "object", "properties": props}}}


@st.composite
def chat_conversation(draw: Any, fmt: str) -> dict[str, Any]:
    """OpenAI / HF chat dicts: system, named users, assistants with reasoning and tool calls, tools."""
    tool_names = draw(st.lists(st.one_of(*([NAMES] * 6), HEADER_WORDS), min_size=0, max_size=2, unique=True))
    msgs: list[dict[str, Any]] = []
    if draw(st.booleans()):
        msgs.append({"role": "system", "content": draw(TEXT_OR_BAD)})
    reasoning = fmt != "chatml"
    for turn in range(draw(st.integers(1, 2))):
        user: dict[str, Any] = {"role": "user", "content": draw(TEXT_OR_BAD)}
        if draw(st.integers(0, 4)) == 0 and fmt != "apertus":
            user["name"] = draw(HEADER_WORDS)
        if draw(st.integers(0, 4)) == 0:
            user["content"] = [{"type": "text", "text": draw(TEXT_OR_BAD)}, {"type": "text", "text": draw(TEXT_OR_BAD)}]
        msgs.append(user)
        if tool_names and draw(st.booleans()):
            calls = [{"id": f"call_{turn}_{k}", "type": "function",
                      "function": {"name": name, "arguments": json.dumps({"a": draw(TEXT_OR_BAD)}, ensure_ascii=False)}}
                     for k, name in enumerate(tool_names)]
            call: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": calls}
            if reasoning and draw(st.booleans()):
                call["reasoning_content"] = draw(TEXT_OR_BAD)
            msgs.append(call)
            for c in calls:
                msgs.append({"role": "tool", "tool_call_id": c["id"], "name": c["function"]["name"],
                             "content": draw(TEXT_OR_BAD)})
        answer: dict[str, Any] = {"role": "assistant", "content": draw(TEXT_OR_BAD)}
        if reasoning and draw(st.booleans()):
            answer["reasoning_content"] = draw(TEXT_OR_BAD)
        msgs.append(answer)
    conv: dict[str, Any] = {"messages": msgs}
    if tool_names:
        conv["tools"] = [draw(tool_spec(name)) for name in tool_names]
    if fmt in ("harmony", "openchatml-2.2", "openchatml-2.0"):
        for key in ("instructions", "model_identity", "date", "knowledge_cutoff"):
            if draw(st.integers(0, 3)) == 0:
                conv[key] = draw(TEXT_OR_BAD)
        if draw(st.integers(0, 3)) == 0:
            conv["reasoning_effort"] = draw(st.sampled_from(["low", "high"]))
    elif fmt == "apertus" and draw(st.integers(0, 3)) == 0:
        conv["date"] = draw(TEXT_OR_BAD)
    return conv


@st.composite
def native_conversation(draw: Any, fmt: str) -> list[dict[str, Any]]:
    """Messages in the format's own terms, with header fields drawn from adversarial words."""
    msgs: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 4))):
        role = draw(st.sampled_from(["user", "assistant", "assistant", "tool", "developer", "functions.get_weather"]))
        m: dict[str, Any] = {"role": role, "content": draw(TEXT_OR_BAD)}
        if role == "assistant":
            m["channel"] = draw(st.sampled_from(["analysis", "commentary", "final"]) if fmt != "harmony"
                                else st.one_of(st.sampled_from(["analysis", "final"]), HEADER_WORDS))
            if draw(st.integers(0, 2)) == 0:
                m["recipient"] = draw(st.one_of(st.sampled_from(["functions.get_weather", "browser.search"]),
                                                HEADER_WORDS))
                m["content"] = json.dumps({"a": m["content"]}, ensure_ascii=False)
                m["content_type"] = "json"
        if role == "tool":
            m["name"] = draw(st.one_of(st.sampled_from(["functions.get_weather", "python", "browser.search"]),
                                       HEADER_WORDS))
            if fmt == "harmony":
                m["recipient"] = "assistant"
                m["channel"] = "commentary"
        elif draw(st.integers(0, 4)) == 0:
            m["name"] = draw(HEADER_WORDS)
        if fmt == "harmony" and role == "assistant" and "recipient" not in m and draw(st.integers(0, 3)) == 0:
            m["content_type"] = draw(st.one_of(st.sampled_from(["code", "markdown"]), HEADER_WORDS))
        msgs.append(m)
    return msgs


_NOT_TEXT = {"role", "type", "id", "tool_call_id", "reasoning_effort", "arguments"}


def _strings(obj: Any, key: str | None = None) -> list[tuple[Any, Any]]:
    """(container, key) of every free-text string inside ``obj``."""
    out: list[tuple[Any, Any]] = []
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        if isinstance(v, str) and k not in _NOT_TEXT:
            out.append((obj, k))
        elif isinstance(v, (dict, list)):
            out += _strings(v, k)
    return out


def with_surrogate(conv: Any, k: int) -> tuple[Any, bool]:
    """A deep copy of ``conv`` with a lone surrogate appended to its ``k``-th text (mod count)."""
    conv = json.loads(json.dumps(conv))
    spots = _strings(conv)
    if not spots:
        return conv, False
    obj, key = spots[k % len(spots)]
    obj[key] += SURROGATE
    return conv, True


def benign(obj: Any) -> Any:
    """``obj`` with every free text (not header words: those keep their value) replaced by ``x``."""
    keep = {"role", "name", "type", "id", "tool_call_id", "channel", "recipient", "content_type", "reasoning_effort"}

    def walk(v: Any, key: str | None) -> Any:
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if k == "arguments" and isinstance(x, str):
                    out[k] = json.dumps({"a": "x"})
                elif k == "function" and isinstance(x, dict) and "arguments" not in x:  # a tool spec
                    out[k] = {**walk(x, k), "name": x["name"]}
                elif k in keep and not (key == "function" and k == "type"):
                    out[k] = x
                else:
                    out[k] = walk(x, k)
            return out
        if isinstance(v, list):
            return [walk(x, key) for x in v]
        if isinstance(v, str):
            if key == "content" and v.startswith("{\"a\""):
                return json.dumps({"a": "x"})
            return v if not v.strip() else "x"
        return v

    return walk(obj, None)


# -- encoders ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hf_backend():
    import tokenizers

    from tokenizers import decoders, models, pre_tokenizers, trainers

    tk = tokenizers.Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    corpus = ["hello world assistant user system developer tool functions.get_weather analysis final commentary",
              "<|start|> <|end|> <|message|> <|im_start|> [{\"a\": 1}] é 🙂 数 x<y a|b"] * 4
    tk.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=420, show_progress=False,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tk


_ENCODERS: dict[tuple[str, str], encoder.Encoder] = {}


def make_encoder(fmt: str, kind: str, hf_backend: Any) -> encoder.Encoder:
    key = (fmt, kind)
    if key not in _ENCODERS:
        if kind == "registered":
            enc = encoder.Encoder(fmt)
        elif kind == "fallback":
            enc = encoder.Encoder(fmt, tokenizer=vocab.load("o200k_base"))
        else:
            enc = encoder.Encoder(fmt, tokenizer=vocab.from_hf(hf_backend, register=fmt))
        assert bool(enc.format.text_controls) == (kind == "fallback")
        _ENCODERS[key] = enc
    return _ENCODERS[key]


def read_back(enc: encoder.Encoder, r: Any) -> list[Any]:
    """The messages ``parse`` must give back for render result ``r``: what was rendered, with
    system / developer sections as their text, content items joined, and Harmony's header
    conventions (a tool message's name is its role word; no ``to=all``)."""
    conv = r.conversation
    ctx = enc.format.context(conv)
    out = []
    for i, m in enumerate(conv.messages):
        if i in r.dropped_expanded:
            continue
        s = m.structured
        if isinstance(s, SystemContent):
            m = m.with_(content=system_text(s, ctx.has_function_tools), structured=None)
        elif isinstance(s, DeveloperContent):
            m = m.with_(content=developer_text(s), structured=None)
        if m.parts is not None:
            m = m.with_(content="".join(m.parts), parts=None)
        if enc.format_name == "harmony":
            if m.recipient == "all":
                m = m.with_(recipient=None)
            if m.role not in ("system", "developer", "user", "assistant", "tool"):
                m = m.with_(role="tool", name=m.role)
        out.append(m.with_(train=None))
    return out


def control_count(enc: encoder.Encoder, ids: np.ndarray) -> int:
    tok = enc.tokenizer
    ctl = [tok.control_id(c) for c in enc.format.table.controls]
    return int(np.isin(ids, [c for c in ctl if c is not None]).sum())


def check(enc: encoder.Encoder, conv: Any, mode: str) -> None:
    try:
        r = enc.render(conv, mode=mode)
    except OcmlError as exc:  # typed refusals only (anything else fails the test)
        if exc.code == "E-UNREPRESENTABLE":  # a trailing '<' before a control spelled as text, or an
            # Apertus tool output whose brackets would end the output list early
            assert (enc.format.text_controls and "<" in json.dumps(conv, ensure_ascii=False)) \
                or (enc.format_name == "apertus" and "output" in exc.message), exc
        if exc.code == "E-INPUT-ENCODING":
            assert has_surrogate(conv), exc
        return
    assert not has_surrogate(conv), "a lone surrogate was rendered (silently replaced)"
    res = enc.parse(r.ids, errors="collect")
    msgs, ends = list(res.messages), list(res.ends)
    codes = [e.code for e in res.errors]
    want = read_back(enc, r)
    if mode == "prompt":
        # the generation prompt opened a message (Apertus), or the last turn is left open
        if ends and ends[-1] == "truncated" and len(msgs) == len(want) + 1:
            msgs.pop()
        codes = [c for c in codes if c != "E-STREAM-TRUNCATED"]
    assert codes == [], (codes, res.errors[:2])
    assert msgs == want
    # the transcript (every control spelled as text, escaped) reads back the same
    try:
        text = enc.to_text(conv, mode=mode, cot=None)  # the render's CoT policy (to_text keeps all by default)
    except OcmlError as exc:  # a trailing '<' before a control: no escape in a transcript (docs/training/masks.md)
        assert exc.code == "E-UNREPRESENTABLE" and "<" in json.dumps(conv, ensure_ascii=False), exc
    else:
        back = enc.parse_text(text, strict=mode != "prompt").messages
        back = list(back)[:len(want)] if mode == "prompt" else list(back)
        assert back == want
    # no text became a control id: the structure alone dictates their number
    if not enc.format.text_controls:
        plain = enc.render(benign(conv), mode=mode)
        assert control_count(enc, r.ids) == control_count(enc, plain.ids)
    # mask: only assistant messages train
    trained = np.unique(r.expanded_index[r.mask])
    roles = {conv_m.role for k, conv_m in enumerate(r.conversation.messages) if k in set(trained.tolist())}
    assert roles <= {"assistant"}, roles


SETTINGS = settings(max_examples=20, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt", FORMATS)
@SETTINGS
@given(data=st.data())
def test_chat_data_never_becomes_structure(fmt: str, kind: str, hf_backend: Any, data: Any) -> None:
    enc = make_encoder(fmt, kind, hf_backend)
    conv = data.draw(chat_conversation(fmt))
    for mode in MODES:
        check(enc, conv, mode)


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=10, deadline=None, derandomize=True)
@given(data=st.data())
def test_lone_surrogates_are_refused_typed_in_every_field(fmt: str, data: Any) -> None:
    """render, to_text: ``E-INPUT-ENCODING`` (never U+FFFD, never ``UnicodeEncodeError``), wherever it is."""
    enc = make_encoder(fmt, "registered", None)
    good = data.draw(chat_conversation(fmt))
    conv, bad = with_surrogate(good, data.draw(st.integers(0, 50)))
    if not bad:
        return
    for run in (lambda c: enc.render(c).ids.tolist(), lambda c: enc.to_text(c)):
        try:
            out = run(conv)
        except OcmlError as exc:
            # a field that is a header word may be refused by the header grammar first
            assert exc.code in ("E-INPUT-ENCODING", "E-PARSE-HEADER", "E-INPUT", "E-CALL-SCHEMA"), exc
        else:  # only a field the format does not write (an Apertus tool message's name)
            assert out == run(good)
    with pytest.raises(OcmlError) as info:
        enc.parse_text("<|start|>user<|message|>" + SURROGATE + "<|end|>")
    assert info.value.code == "E-INPUT-ENCODING" and info.value.field == "text"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt", ["openchatml-2.2", "openchatml-2.0", "harmony"])
@SETTINGS
@given(data=st.data())
def test_native_header_fields_read_back_or_raise_typed(fmt: str, kind: str, hf_backend: Any, data: Any) -> None:
    enc = make_encoder(fmt, kind, hf_backend)
    conv = data.draw(native_conversation(fmt))
    for mode in MODES:
        check(enc, conv, mode)
