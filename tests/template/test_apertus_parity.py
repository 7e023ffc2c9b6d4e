"""``apertus`` against the reference template (swiss-ai/apertus_format ``chat_template.jinja``,
e473d76, kept in ``../shared/refdata``; compared against, never copied), rendered the way
transformers renders chat templates.

On that repository's own examples and on generated conversations (blocks and string shapes,
thoughts, parallel calls, outputs as blocks and as tool messages, tool declarations from
generated JSON Schemas): ocml's text is the template's text plus the ``<|assistant_end|>``
ocml writes after the last turn (see ``ocml.encoder.formats.apertus``: the template never closes
it), and ocml's ids are the tokenizer's ids for that whole text.  Generated text has no ``<``
(on the template's text path control text becomes control ids).
"""

from __future__ import annotations

import datetime
import json
import random

import pytest

from support.paths import shared

from ocml import encoder

from support.gen import schema
from support.apertus import CONTROLS, conversation, words

from transformers.utils.chat_template_utils import render_jinja_template
REFDATA = shared("refdata")
TEMPLATE = shared("refdata/apertus_format.chat_template.jinja").read_text("utf-8")


def template(msgs, tools, *, add_generation_prompt=False, enable_thinking=False) -> str:
    out, _ = render_jinja_template([msgs], tools=tools or None, chat_template=TEMPLATE, bos_token="<s>",
                                   add_generation_prompt=add_generation_prompt, enable_thinking=enable_thinking)
    return out[0]


def test_reference_repository_examples():
    cases = json.loads((REFDATA / "fixtures" / "apertus.apertus_format-examples.json").read_text("utf-8"))["cases"]
    for case in cases:
        enc = encoder.Encoder("apertus", date=case["date"], enable_thinking=case["enable_thinking"])
        conv = {"messages": case["messages"], "tools": case["tools"]} if case["tools"] else case["messages"]
        mode = "prompt" if case["add_generation_prompt"] else "history"
        closed = case["messages"][-1]["role"] in ("assistant", "tool") and mode == "history"
        assert enc.to_text(conv, mode=mode) == case["expected"] + ("<|assistant_end|>" if closed else ""), case["name"]


def tools(rng: random.Random) -> list[dict]:
    return [{"name": n, "description": words(rng, 3, True) or "Does it.",
             "parameters": schema(rng) if rng.random() < 0.85 else None}
            for n in rng.sample(["search", "get_weather", "display_answers", "calc"], rng.randint(1, 3))]


@pytest.mark.parametrize("base", ["o200k_base", "cl100k_base"])
def test_generated_conversations_match_the_reference_template(base):
    from ocml import vocab

    tok = vocab.load(base, register="apertus")
    today = datetime.date.today().isoformat()  # the template's strftime_now
    rng = random.Random(17)
    prompts = 0
    for _ in range(120):
        msgs = conversation(rng, safe=True)
        if rng.random() < 0.3:
            msgs.append({"role": "user", "content": words(rng, 4, True)})
        ts = tools(rng) if rng.random() < 0.5 else None
        thinking = rng.random() < 0.5
        enc = encoder.Encoder("apertus", tok, enable_thinking=thinking, date=today)
        conv = {"messages": msgs, "tools": ts} if ts else msgs
        want = template(msgs, ts, enable_thinking=thinking)
        if msgs[-1]["role"] in ("assistant", "tool"):
            want += "<|assistant_end|>"
        assert enc.to_text(conv) == want
        assert enc.render(conv, mode="history").ids.tolist() == \
            tok.encoding.encode(want, allowed_special=CONTROLS, disallowed_special=())
        if msgs[-1]["role"] == "user":
            want = template(msgs, ts, add_generation_prompt=True, enable_thinking=thinking)
            assert enc.to_text(conv, mode="prompt") == want
            assert enc.render(conv, mode="prompt").ids.tolist() == \
                tok.encoding.encode(want, allowed_special=CONTROLS, disallowed_special=())
            prompts += 1
    assert prompts > 10


def test_documented_differences_from_the_template():
    enc = encoder.Encoder("apertus", date="2025-09-21")
    msgs = [{"role": "user", "content": "w?"},
            {"role": "assistant", "content": {"blocks": [{"type": "tool_calls",
                                                          "calls": [{"name": "f", "arguments": "{}"}]}]}},
            {"role": "tool", "content": "1"}]
    # prompt mode continues the open turn; the template nests a new <|assistant_start|>
    assert enc.to_text(msgs, mode="prompt").endswith("<|tools_suffix|>[1]")
    assert template(msgs, None, add_generation_prompt=True).endswith("<|tools_suffix|>[1]<|assistant_start|>")
    # OpenAI-wrapped tools are unwrapped (the template raises on them)
    wrapped = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": None}}]
    assert "type f = () => any;" in enc.to_text({"messages": msgs[:1], "tools": wrapped})
