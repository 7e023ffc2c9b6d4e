"""Chat-template parity helpers: the formats with saved templates, random OpenAI / Apertus conversations
(``cases``), the HF tokenizer and template call of a format, and rendered references."""

from __future__ import annotations

import functools
import json
import random
from typing import Any

from support.gen import TOOL_NAMES, WORDS, schema


FORMATS = ("harmony", "openchatml-2.2", "openchatml-2.0", "chatml", "apertus", "llama3")
#: the share of generated conversations a format must accept (Llama 3 refuses parallel calls, text
#: beside a call and tools with no user message, which the generator makes: typed errors, checked
#: in tests/formats/test_llama3.py)
MIN_VALID = {"llama3": 0.6}


REASONING = ("thinking", "reasoning_content", "reasoning")


SAFE_WORDS = [w.replace("<|", "<") for w in WORDS]   # "<|" would form control tokens on the text path


def text(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice(SAFE_WORDS) + rng.choice(["", " ", "", "\n"]) for _ in range(rng.randint(0, n)))


def rich_schema(rng: random.Random) -> dict[str, Any]:
    """``gen.schema`` plus the TypeScript quirks: titles, examples, nullable, oneOf, type lists, floats."""
    s = schema(rng)
    extra: dict[str, Any] = {
        "t_union": {"type": ["string", "integer", "null"], "description": "A union."},
        "t_nullable": {"type": "string", "nullable": True, "title": "Maybe", "examples": ["a", 3, "b"]},
        "t_one_of": {"oneOf": [{"type": "string", "description": "as text"},
                               {"type": "object", "properties": {"x": {"type": "number", "default": 0.25}}},
                               {"type": "integer", "default": 7, "nullable": True}],
                     "description": "Either.", "default": "x"},
        "t_enum_default": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
        "t_floats": {"type": "number", "default": rng.choice([1e-05, 2.5e20, 0.1, 1e16, -3.0, 123.456])},
        "t_list_default": {"type": "array", "default": [1, "two", None, {"k": False}]},
        "t_any_array": {"type": "array"},
        "t_const": {"const": 3},
    }
    for key in rng.sample(sorted(extra), rng.randint(0, 4)):
        s["properties"][key] = extra[key]
    if rng.random() < 0.2:
        s["description"] = "Parameters."
    if rng.random() < 0.1:
        s = {"oneOf": [{"type": "string"}, {"type": "number", "description": "n"}]}
    return s


def openai_conversation(rng: random.Random) -> dict[str, Any]:
    """An OpenAI/HF chat conversation with options, mixing in canonical messages."""
    conv: dict[str, Any] = {}
    names = rng.sample(TOOL_NAMES, rng.randint(1, 3)) if rng.random() < 0.6 else []
    if names:
        conv["tools"] = [
            {"type": "function", "function": {"name": n, "parameters": rich_schema(rng),
                                              "description": rng.choice(["Does a thing.", "Line one\nline two", ""])}}
            if rng.random() < 0.7 else {"name": n, "description": "Bare.", "parameters": None}
            for n in names
        ]
    for key, values in (("date", ["2025-01-01", "2026-11-21"]), ("reasoning_effort", ["low", "medium", "High"]),
                        ("model_identity", ["You are a test model.", ""]), ("knowledge_cutoff", ["2025-03"]),
                        ("instructions", ["Answer briefly.", text(rng, 3)]),
                        ("builtin_tools", [["browser"], ["python", "browser"]])):
        if rng.random() < 0.2:
            conv[key] = rng.choice(values)
    msgs: list[dict[str, Any]] = []
    if rng.random() < 0.5:
        msgs.append({"role": rng.choice(["system", "developer"]), "content": text(rng) or "Be kind."})
    pending: list[tuple[str, str]] = []
    for _turn in range(rng.randint(1, 3)):
        user: dict[str, Any] = {"role": "user", "content": text(rng)}
        if rng.random() < 0.1:
            user["name"] = "alice"
        if rng.random() < 0.1:
            user["content"] = [{"type": "text", "text": user["content"]}]
        if msgs and rng.random() < 0.05:
            msgs.append({"role": "developer", "content": "Later instructions."})  # never the leading message
        msgs.append(user)
        for _step in range(rng.randint(0, 2)):
            a: dict[str, Any] = {"role": "assistant"}
            if rng.random() < 0.5:
                a[rng.choice(["thinking", "reasoning_content"])] = text(rng) or "hmm"
            if names and rng.random() < 0.5:
                calls = []
                for _ in range(rng.randint(1, 2)):
                    cid = f"call_{rng.randint(0, 10**6)}"
                    n = rng.choice(names)
                    args: Any = {"q": text(rng, 3), "n": rng.randint(0, 9)}
                    if rng.random() < 0.5:
                        args = json.dumps(args, ensure_ascii=rng.random() < 0.5)
                    calls.append({"id": cid, "type": "function", "function": {"name": n, "arguments": args}})
                    pending.append((cid, n))
                a["tool_calls"] = calls
                if rng.random() < 0.3:
                    a["content"] = text(rng, 3) or "Let me check."
                msgs.append(a)
                for cid, n in pending:
                    result = json.dumps({"r": text(rng, 3)}, ensure_ascii=False)
                    reply: dict[str, Any] = {"role": "tool", "content": result}
                    if rng.random() < 0.93:  # OpenChatML 2.2 rejects a reply without its call's id
                        reply["tool_call_id"] = cid
                    else:
                        reply["name"] = n
                    msgs.append(reply)
                pending.clear()
            elif rng.random() < 0.2:
                # canonical messages, in the format's own terms
                msgs.append({"role": "assistant", "channel": "commentary", "content": text(rng, 3)})
            else:
                a["content"] = text(rng)
                msgs.append(a)
        if rng.random() < 0.8:
            final: dict[str, Any] = {"role": "assistant", "content": text(rng)}
            if rng.random() < 0.4:
                final["thinking"] = text(rng) or "so"
            if rng.random() < 0.05:
                final["train"] = False
            msgs.append(final)
    conv["messages"] = msgs
    return conv


def _apertus_call(rng: random.Random, names: list[str]) -> dict[str, Any]:
    if rng.random() < 0.1:
        return {"name": "display_answers", "arguments": json.dumps({"answers": [text(rng, 2)]})}
    args: Any = {"q": text(rng, 3), "n": rng.randint(0, 9)}
    return {"name": rng.choice(names), "arguments": args if rng.random() < 0.3 else json.dumps(args, ensure_ascii=False)}


def _apertus_output(rng: random.Random) -> str:
    return json.dumps({"r": text(rng, 3)}, ensure_ascii=False) if rng.random() < 0.7 else (text(rng, 3) or "ok")


def apertus_conversation(rng: random.Random) -> dict[str, Any]:
    """A conversation in Apertus's own shape: system ``{"text"}``, user ``{"parts"}``, assistant
    ``{"blocks"}`` (thoughts, tool calls with inner/outer outputs, responses, ``display_answers``),
    tool messages outside the blocks, OpenAI-style ``tool_calls`` beside blocks, ``enable_thinking``."""
    conv: dict[str, Any] = {"date": rng.choice(["2025-01-01", "2026-11-21"])}
    names = rng.sample(TOOL_NAMES, rng.randint(1, 3))
    if rng.random() < 0.5:
        conv["tools"] = [{"type": "function", "function": {"name": n, "parameters": rich_schema(rng),
                                                           "description": rng.choice(["Does a thing.", ""])}}
                         if rng.random() < 0.5 else {"name": n, "description": "Bare.", "parameters": rich_schema(rng)}
                         for n in names]
    if rng.random() < 0.3:
        conv["enable_thinking"] = rng.random() < 0.5
    msgs: list[dict[str, Any]] = []
    r = rng.random()
    if r < 0.3:
        msgs.append({"role": "system", "content": text(rng) or "Be kind."})
    elif r < 0.6:
        msgs.append({"role": "system", "content": {"text": text(rng) or "Be kind."}})
    if rng.random() < 0.1 and "tools" not in conv and "enable_thinking" not in conv:
        msgs.append({"role": "developer", "content": "Deliberation: enabled\nTool Capabilities: disabled"})
    for _turn in range(rng.randint(1, 3)):
        if rng.random() < 0.5:
            msgs.append({"role": "user", "content": text(rng)})
        else:
            msgs.append({"role": "user", "content": {"parts": [{"type": "text", "text": text(rng, 3)}
                                                              for _ in range(rng.randint(1, 3))]}})
        for _step in range(rng.randint(0, 2)):
            blocks: list[dict[str, Any]] = []
            for _b in range(rng.randint(0, 5)):
                kind = rng.choice(["thoughts", "thoughts", "response", "tool_calls"])
                if kind == "tool_calls":
                    blocks.append({"type": kind, "calls": [_apertus_call(rng, names) for _ in range(rng.randint(1, 2))]})
                    if rng.random() < 0.6:
                        blocks.append({"type": "tool_outputs", "outputs": [
                            {"output": _apertus_output(rng)} if rng.random() < 0.8 else _apertus_output(rng)
                            for _ in range(rng.randint(1, 2))]})
                else:
                    blocks.append({"type": kind, "text": text(rng)})
            a: dict[str, Any] = {"role": "assistant", "content": {"blocks": blocks}}
            if rng.random() < 0.1:
                a["tool_calls"] = [{"id": "c1", "type": "function", "function": _apertus_call(rng, names)}
                                   for _ in range(rng.randint(1, 2))]
            msgs.append(a)
            if (blocks and blocks[-1]["type"] == "tool_calls" or "tool_calls" in a) and rng.random() < 0.7:
                msgs += [{"role": "tool", "content": _apertus_output(rng)} for _ in range(rng.randint(1, 2))]
    conv["messages"] = msgs
    return conv


def _one_developer_block(conv: dict[str, Any]) -> dict[str, Any]:
    """Apertus has one developer block, right after the system message, and not beside tools:
    other developer messages become system messages, later ones are dropped."""
    msgs = [m if k or m["role"] != "developer" or "tools" not in conv else {**m, "role": "system"}
            for k, m in enumerate(conv["messages"])]
    return {**conv, "messages": [m for k, m in enumerate(msgs) if k == 0 or m["role"] not in ("developer", "system")]}


def cases(seed: int, n: int, fmt: str | None = None) -> list[dict[str, Any]]:
    """``n`` generated conversations; for ``chatml`` and ``llama3`` without reasoning and with
    ``system`` for ``developer`` (they have neither; Llama 3 headers have no author names either); for ``apertus`` half in Apertus's own shape, all with a
    ``date`` (``render`` defaults it to today; a template reads no clock unless asked)."""
    rng = random.Random(seed)
    if fmt == "apertus":
        out = [apertus_conversation(rng) if k % 2 else _one_developer_block(openai_conversation(rng)) for k in range(n)]
        return [{"date": "2025-06-30", **c} for c in out]
    out = [openai_conversation(rng) for _ in range(n)]
    if fmt in ("chatml", "llama3"):
        out = [{**c, "messages": [{k: ("system" if k == "role" and v == "developer" else v) for k, v in m.items()
                                   if k not in REASONING} for m in c["messages"]]} for c in out]
    if fmt == "llama3":  # a Llama 3 header has no author name
        out = [{**c, "messages": [{k: v for k, v in m.items() if k != "name" or m.get("role") == "tool"}
                                  for m in c["messages"]]} for c in out]
    return out


def hf_call(hf: Any, conv: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """``apply_chat_template`` with the conversation's options as template variables."""
    opts = {k: v for k, v in conv.items() if k != "messages"}
    return hf.apply_chat_template(conv["messages"], tokenize=True, return_dict=True, **opts, **kw)


@functools.lru_cache(maxsize=None)
def stack(fmt: str) -> tuple[Any, Any]:
    """(Encoder, HF tokenizer with its templates) of ``fmt``, built once per test process
    (a conversion costs seconds); other encoders' templates are passed as ``chat_template=``."""
    from ocml import encoder
    from ocml.encoder.template.save import hf_tokenizer

    enc = encoder.Encoder(fmt)
    return enc, hf_tokenizer(enc)


def _explain(enc: Any, got: list[int], want: list[int]) -> str:
    k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    dec = enc.tokenizer.decode
    a, b = max(0, k - 8), k + 8
    return f"first difference at token {k}\ntemplate ...{dec(got[a:b])!r}\nocml     ...{dec(want[a:b])!r}"


def rendered(enc: Any, conversations: list[dict[str, Any]], mode: str) -> list[tuple[int, dict[str, Any], Any]]:
    """(index, conversation, render result) for the conversations ``enc`` accepts (templates do
    not validate: OpenChatML 2.2 rejects a tool reply without the call_id of its call)."""
    from ocml.encoder.errors import OcmlError

    out = []
    for k, conv in enumerate(conversations):
        try:
            out.append((k, conv, enc.render(conv, mode=mode)))
        except OcmlError:
            continue
    share = MIN_VALID.get(enc.format_name, 0.75)
    assert len(out) >= share * len(conversations), "the generator should make mostly valid conversations"
    return out
