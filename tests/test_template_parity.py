"""Parity: the exported HF chat templates give ocml's own ids and masks, token for token.

For every renderable format, over generated OpenAI/HF-style and canonical conversations:
- the training template through ``apply_chat_template(..., return_assistant_tokens_mask=True)``
  gives exactly ``render(mode="train")``'s ids and mask;
- the inference template with ``add_generation_prompt=True`` gives exactly
  ``render(mode="prompt")``;
for Apertus also over conversations in its own shape (``{"blocks": [...]}`` turns with
thoughts, tool calls, inner and outer tool outputs, ``display_answers``; tool messages;
``enable_thinking``), every one with a ``date`` (``render`` defaults it to today, a template
only with ``date_from_clock=true``: ``test_template_limits.py``);
and for Harmony, independently of ocml's adapters, the same templates give openai-harmony
0.0.8's ids for the conversation mapped the gpt-oss way (``_to_harmony`` below) and for
openai-harmony's own ``Conversation.to_json()`` shape (``gen.harmony_conversation``).

Generated text never contains control-token text ("<|"): on the HF text path such text
becomes control ids (see ``test_template_limits.py`` for that divergence).
"""

from __future__ import annotations

import functools
import json
import random
from typing import Any

import pytest

from gen import TOOL_NAMES, WORDS, harmony_conversation, schema


FORMATS = ("harmony", "openchatml-2.2", "openchatml-2.0", "chatml", "apertus", "llama3")
#: the share of generated conversations a format must accept (Llama 3 refuses parallel calls, text
#: beside a call and tools with no user message, which the generator makes: typed errors, checked
#: in tests/test_llama3.py)
MIN_VALID = {"llama3": 0.6}
REASONING = ("thinking", "reasoning_content", "reasoning")
N_OPENAI = 160       # generated OpenAI/HF conversations per format
N_NATIVE = 300       # openai-harmony to_json() conversations
SAFE_WORDS = [w.replace("<|", "<") for w in WORDS]   # "<|" would form control tokens on the text path


def text(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice(SAFE_WORDS) + rng.choice(["", " ", "", "\n"]) for _ in range(rng.randint(0, n)))


def scrub(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("<|", "<")
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    return value


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


@pytest.fixture(scope="module")
def stacks():
    return {fmt: stack(fmt) for fmt in FORMATS}


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


@pytest.mark.parametrize("fmt", FORMATS)
def test_training_template_gives_render_ids_and_mask(stacks, fmt):
    enc, hf = stacks[fmt]
    for k, conv, r in rendered(enc, cases(11, N_OPENAI, fmt), "train"):
        out = hf_call(hf, conv, chat_template="training", return_assistant_tokens_mask=True)
        want = r.ids.tolist()
        assert out["input_ids"] == want, f"case {k} {fmt}: {_explain(enc, out['input_ids'], want)}\n{conv}"
        assert out["assistant_masks"] == r.mask.astype(int).tolist(), f"case {k} {fmt}: mask differs\n{conv}"


@pytest.mark.parametrize("fmt", FORMATS)
def test_inference_template_gives_render_prompt(stacks, fmt):
    enc, hf = stacks[fmt]
    for k, conv, r in rendered(enc, cases(12, N_OPENAI, fmt), "prompt"):
        got = hf_call(hf, conv, add_generation_prompt=True)["input_ids"]
        want = r.ids.tolist()
        assert got == want, f"case {k} {fmt}: {_explain(enc, got, want)}\n{conv}"


@pytest.mark.parametrize("fmt", FORMATS)
def test_both_templates_render_the_same_text(stacks, fmt):
    """The training variant (the folder's ``default``) only adds generation blocks: the same string
    as the plain one (``inference``), prompt or not, or the same error."""
    _enc, hf = stacks[fmt]
    assert hf.chat_template["default"] == hf.chat_template["training"] != hf.chat_template["inference"]
    for conv in cases(13, 40, fmt):
        for gp in (False, True):
            got = []
            for name in ("inference", "default"):
                try:
                    opts = {k: v for k, v in conv.items() if k != "messages"}
                    got.append(hf.apply_chat_template(conv["messages"], tokenize=False, add_generation_prompt=gp,
                                                      chat_template=name, **opts))
                except Exception as exc:  # noqa: BLE001 - both must refuse alike
                    got.append(str(exc))
            assert got[0] == got[1]


# -- Harmony against openai-harmony itself -------------------------------------------------

def _no_control_text(value: Any) -> Any:
    """``scrub`` for openai-harmony's to_json() shape (its ``content_type`` spells ``<|constrain|>``)."""
    if isinstance(value, dict):
        return {k: (v if k == "content_type" else _no_control_text(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_control_text(v) for v in value]
    return scrub(value)


def _merges_across_items(enc: Any, raw: dict[str, Any]) -> bool:
    """Would BPE merge across the boundary of two text items of one message?  openai-harmony
    (and ocml) encode each item on its own; a template can only emit the joined text."""
    enc_text = enc.tokenizer.encode_text
    for m in raw["messages"]:
        items = [c["text"] for c in m["content"] if isinstance(c, dict) and c.get("type") == "text"]
        if len(items) > 1 and enc_text("".join(items)) != [i for t in items for i in enc_text(t)]:
            return True
    return False


def test_openai_conversations_match_openai_harmony(stacks, harmony):
    """Chat data through the templates = openai-harmony on the same conversation mapped the
    official gpt-oss way (``test_openai_input.to_harmony_objects``, written independently)."""
    oh = pytest.importorskip("openai_harmony")
    from test_openai_input import openai_conversation as lead_generator
    from test_openai_input import to_harmony_objects

    enc, hf = stacks["harmony"]
    keep = oh.RenderConversationConfig(auto_drop_analysis=False)
    drop = oh.RenderConversationConfig(auto_drop_analysis=True)
    rng = random.Random(20261124)
    for k in range(N_OPENAI):
        conv = scrub(lead_generator(rng))
        ref = to_harmony_objects(conv, oh)
        for cot, cfg in (("keep-all", keep), ("harmony", drop)):
            got = hf_call(hf, conv, chat_template="training", cot=cot)["input_ids"]
            want = harmony.render_conversation_for_training(ref, cfg)
            assert got == want, f"case {k} cot={cot}: {_explain(enc, got, want)}\n{conv}"
        got = hf_call(hf, conv, add_generation_prompt=True, cot="harmony")["input_ids"]
        want = harmony.render_conversation_for_completion(ref, oh.Role.ASSISTANT, drop)
        assert got == want, f"case {k} prompt: {_explain(enc, got, want)}\n{conv}"


def test_harmony_json_conversations_match_openai_harmony(stacks, harmony):
    """openai-harmony's own Conversation.to_json() shape (system/developer content items,
    built-in tools, python calls, named users) renders as written, as openai-harmony does."""
    oh = pytest.importorskip("openai_harmony")
    enc, hf = stacks["harmony"]
    keep = oh.RenderConversationConfig(auto_drop_analysis=False)
    drop = oh.RenderConversationConfig(auto_drop_analysis=True)
    rng = random.Random(20251121)
    compared = merged = 0
    for k in range(N_NATIVE):
        raw = _no_control_text(harmony_conversation(rng))
        if all(m["role"] == "user" for m in raw["messages"]):
            continue  # only the '"name": null' keys say "native" here, and HF drops null keys
        if _merges_across_items(enc, raw):
            merged += 1
            continue
        conv = oh.Conversation.from_json(json.dumps(raw))
        msgs = raw["messages"]
        for cot, cfg in (("keep-all", keep), ("harmony", drop)):
            out = hf.apply_chat_template(msgs, chat_template="training", cot=cot, tokenize=True, return_dict=True,
                                         return_assistant_tokens_mask=True)
            want = harmony.render_conversation_for_training(conv, cfg)
            assert out["input_ids"] == want, f"case {k} cot={cot}: {_explain(enc, out['input_ids'], want)}\n{raw}"
            r = enc.render(raw, mode="train", cot=cot)
            assert out["assistant_masks"] == r.mask.astype(int).tolist(), f"case {k} cot={cot}: mask\n{raw}"
        got = hf.apply_chat_template(msgs, add_generation_prompt=True, cot="harmony", tokenize=True,
                                     return_dict=True)["input_ids"]
        want = harmony.render_conversation_for_completion(conv, oh.Role.ASSISTANT, drop)
        assert got == want, f"case {k} prompt: {_explain(enc, got, want)}\n{raw}"
        compared += 1
    assert compared >= 0.8 * N_NATIVE and merged < 0.1 * N_NATIVE
