"""``chatml`` against the real Qwen2.5 ChatML template (``trl/chat_templates/qwen2_5.jinja``),
rendered the way transformers renders chat templates, on generated OpenAI/HF conversations
(system or not, tools, parallel tool calls with dict arguments, tool results): ocml's text
equals the template's text, and ocml's ids equal the tokenizer's ids for that whole text
(controls as their ids).  ``default_system=QWEN_SYSTEM`` gives Qwen's own system default.

Generated text has no ``<`` (on the template's text path control text becomes control ids).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from support.paths import shared

from ocml import encoder
from ocml import vocab
from ocml.encoder.formats.chatml import QWEN_SYSTEM

from support.gen import schema

from transformers.utils.chat_template_utils import render_jinja_template
trl = pytest.importorskip("trl")
TEMPLATE = (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text("utf-8")
CONTROLS = {"<s>", "</s>", "<|im_start|>", "<|im_end|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
            "<|file_separator|>"}
WORDS = ["hello", " world", "\n", "\n\n", " ", "  ", "café", "日本語", "🙂", "x>y", "a|b", "{\"a\": 1}", "'s", "123",
         " \n", "\t", "naïve", "Tokyo", "—"]


pytestmark = pytest.mark.needs_trl


def text(rng: random.Random, n: int = 6) -> str:
    return "".join(rng.choice(WORDS) for _ in range(rng.randint(0, n)))


def conversation(rng: random.Random) -> tuple[list[dict], list[dict] | None]:
    tools = None
    names = ["get_weather", "search", "calc"]
    if rng.random() < 0.5:
        tools = [{"type": "function", "function": {"name": n, "description": text(rng, 3) or "Does it.",
                                                   "parameters": schema(rng)}} for n in rng.sample(names, rng.randint(1, 3))]
    msgs: list[dict] = []
    if rng.random() < 0.6:
        msgs.append({"role": "system", "content": text(rng)})
    for _ in range(rng.randint(1, 3)):
        msgs.append({"role": "user", "content": text(rng)})
        if tools and rng.random() < 0.6:
            calls = [{"type": "function", "function": {"name": rng.choice(tools)["function"]["name"],
                                                       "arguments": {"q": text(rng, 3), "n": rng.randint(0, 9)}}}
                     for _ in range(rng.randint(1, 3))]
            msgs.append({"role": "assistant", "content": text(rng, 3) if rng.random() < 0.4 else "", "tool_calls": calls})
            for c in calls:
                msgs.append({"role": "tool", "content": json.dumps({"r": text(rng, 2)}, ensure_ascii=False)})
            if rng.random() < 0.2:
                continue  # the turn ends with tool results
        msgs.append({"role": "assistant", "content": text(rng)})
    if rng.random() < 0.3:
        msgs.append({"role": "user", "content": text(rng)})
    return msgs, tools


def template(msgs: list[dict], tools: list[dict] | None, add_generation_prompt: bool) -> str:
    out, _ = render_jinja_template([msgs], tools=tools, chat_template=TEMPLATE,
                                   add_generation_prompt=add_generation_prompt)
    return out[0]


@pytest.mark.parametrize("base", ["cl100k_base", "o200k_base"])
def test_generated_conversations_match_the_qwen25_template(base):
    tok = vocab.load(base, register="chatml")
    enc = encoder.Encoder("chatml", tok, default_system=QWEN_SYSTEM)
    rng = random.Random(int(os.environ.get("OCML_PARITY_SEED", "12")))
    prompts = 0
    for _ in range(150):
        msgs, tools = conversation(rng)
        conv = {"messages": msgs, "tools": tools} if tools else msgs
        want = template(msgs, tools, False)
        assert enc.to_text(conv) == want
        ids = enc.render(conv, mode="history").ids.tolist()
        assert ids == tok.encoding.encode(want, allowed_special=CONTROLS, disallowed_special=())
        assert enc.render(conv, mode="train").ids.tolist() == ids
        if msgs[-1]["role"] in ("user", "tool"):
            want = template(msgs, tools, True)
            assert enc.to_text(conv, mode="prompt") == want
            assert enc.render(conv, mode="prompt").ids.tolist() == \
                tok.encoding.encode(want, allowed_special=CONTROLS, disallowed_special=())
            prompts += 1
    assert prompts > 30


def test_qwen_function_calling_documentation_example():
    ref = shared("refdata/fixtures/chatml-qwen2.5.qwen-docs.json")
    enc = encoder.Encoder("chatml", default_system=QWEN_SYSTEM)
    for case in json.loads(ref.read_text("utf-8"))["cases"]:
        conv = {"messages": case["messages"], "tools": case["tools"]}
        mode = "prompt" if case["add_generation_prompt"] else "history"
        got = enc.to_text(conv, mode=mode)
        # the doc's block ends at the last <|im_end|>; the template (and ocml) write its "\n"
        assert got == case["expected"] + ("" if case["add_generation_prompt"] else "\n")
        assert got == template(case["messages"], case["tools"], case["add_generation_prompt"])


def test_documented_differences_from_qwen():
    """Without ``default_system`` no system frame is invented; string arguments are not double-encoded."""
    enc = encoder.Encoder("chatml")
    msgs = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
                                                                 "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}]
    text = enc.to_text(msgs)
    assert text.startswith("<|im_start|>user\nhi")
    assert '{"name": "f", "arguments": {"a": 1}}' in text
    assert '"arguments": "{\\"a\\": 1}"' in template(msgs, None, False)
