"""``llama3`` against its references, on a generated differential corpus (multi-turn, tools,
tool results, unicode, padding whitespace; adversarial text that spells the controls where the
reference writes text as text):

- the HF templates the trl wheel ships (``llama3_1.jinja``, ``llama3_2.jinja`` with its date
  given, ``llama3.jinja`` for ``system_header=False``), rendered as transformers renders them:
  ocml's text is the template's text, ocml's ids are the Llama 3 tokenizer's ids for that whole
  text, and the loss mask is ``llama3_training.jinja``'s ``{% generation %}`` spans;
- Meta's reference ``ChatFormat`` (llama-models 0.3.0) with Meta's tokenizer: the same ids,
  token for token, control text in content included (both write it as text);
- fallback mode (o200k_base, nothing registered): the ids are the text's ordinary tokens.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ocml import encoder, vocab

trl = pytest.importorskip("trl")
from llama_models.datatypes import RawMessage, StopReason  # noqa: E402
from llama_models.llama3.chat_format import ChatFormat  # noqa: E402
from llama_models.llama3.tokenizer import Tokenizer as MetaTokenizer  # noqa: E402
from transformers.utils.chat_template_utils import render_jinja_template  # noqa: E402

TEMPLATES = Path(trl.__file__).parent / "chat_templates"

from support.llama3 import ADVERSARIAL, CONTROLS, WORDS, arguments_as_text, conversation, tools, words  # noqa: E402

def template(name: str, msgs, ts, *, prompt: bool = False, **kw) -> tuple[str, list]:
    out, spans = render_jinja_template([msgs], tools=ts, chat_template=(TEMPLATES / name).read_text("utf-8"),
                                       bos_token="<|begin_of_text|>", add_generation_prompt=prompt,
                                       return_assistant_tokens_mask=True, **kw)
    return out[0], spans[0]


CASES = [  # (template, its keyword variables, ocml options, with tools)
    ("llama3_1.jinja", {}, {}, True),
    ("llama3_1.jinja", {"tools_in_user_message": False}, {"tools_in_user_message": False}, True),
    ("llama3_2.jinja", {"date_string": "02 Mar 2025"}, {"date": "02 Mar 2025"}, True),
    ("llama3.jinja", {}, {"system_header": False}, False),
]


@pytest.mark.parametrize("name,variables,options,with_tools", CASES)
def test_generated_conversations_match_the_hf_templates(name, variables, options, with_tools):
    tok = vocab.load("llama3", register="llama3")
    enc = encoder.Encoder("llama3", tok, **options)
    rng = random.Random(31)
    prompts = 0
    for _ in range(100):
        msgs = conversation(rng, calls=with_tools)
        ts = tools(rng) if with_tools and (rng.random() < 0.6 or any("tool_calls" in m for m in msgs)) else None
        if ts is not None and msgs[0]["role"] == "system" and len(msgs) > 1 and msgs[1]["role"] != "user":
            continue
        conv = {"messages": arguments_as_text(msgs), "tools": ts} if ts else arguments_as_text(msgs)
        want, _ = template(name, msgs, ts, **variables)
        assert enc.to_text(conv) == want
        assert enc.render(conv, mode="history").ids.tolist() == \
            tok.encoding.encode(want, allowed_special=CONTROLS, disallowed_special=())
        if msgs[-1]["role"] == "user":
            want, _ = template(name, msgs, ts, prompt=True, **variables)
            assert enc.render(conv, mode="prompt").ids.tolist() == \
                tok.encoding.encode(want, allowed_special=CONTROLS, disallowed_special=())
            prompts += 1
    assert prompts > 10


def test_builtin_tools_match_llama3_1():
    tok = vocab.load("llama3", register="llama3")
    enc = encoder.Encoder("llama3", tok, builtin_tools=["brave_search", "code_interpreter"])
    rng = random.Random(8)
    for _ in range(40):
        msgs = conversation(rng, calls=True, names=("brave_search",))
        want, _ = template("llama3_1.jinja", msgs, None, builtin_tools=["brave_search", "code_interpreter"])
        assert "<|python_tag|>brave_search.call(q=" in want or not any("tool_calls" in m for m in msgs)
        assert enc.to_text(arguments_as_text(msgs)) == want
        assert enc.render(arguments_as_text(msgs), mode="history").ids.tolist() == \
            tok.encoding.encode(want, allowed_special=CONTROLS, disallowed_special=())


def _byte_mask(text: str, spans: list) -> list[bool]:
    """Per byte of ``text`` in UTF-8: inside a generation span?"""
    inside: list[bool] = []
    flags = [False] * len(text)
    for a, b in spans:
        flags[a:b] = [True] * (b - a)
    for ch, f in zip(text, flags):
        inside += [f] * len(ch.encode("utf-8"))
    return inside


def test_masks_are_the_training_templates_generation_spans():
    """The default mask trains each assistant frame's content and end token: exactly the
    ``{% generation %}`` spans of trl's ``llama3_training.jinja`` (per token, on the ids)."""
    tok = vocab.load("llama3", register="llama3")
    enc = encoder.Encoder("llama3", tok, system_header=False)
    rng = random.Random(4)
    for _ in range(60):
        msgs = conversation(rng, calls=False)
        text, spans = template("llama3_training.jinja", msgs, None)
        r = enc.render(msgs, mode="train")
        assert enc.to_text(msgs) == text
        inside, pos = _byte_mask(text, spans), 0
        for tid, trained in zip(r.ids.tolist(), r.mask.tolist()):
            piece = tok.decode_bytes([tid])
            want = inside[pos:pos + len(piece)]
            assert bool(trained) == all(want) and (trained or not any(want)), (piece, trained)
            pos += len(piece)
        assert pos == len(text.encode("utf-8")) and r.mask.any()


def _meta_messages(msgs: list[dict]) -> list[RawMessage]:
    role = {"tool": "tool"}
    return [RawMessage(role=role.get(m["role"], m["role"]), content=m["content"],
                       stop_reason=StopReason.end_of_turn if m["role"] == "assistant" else None)
            for m in msgs]


@pytest.mark.parametrize("system_header", [False, True])
def test_ids_match_metas_chat_format_adversarial_text_included(system_header):
    """Meta's ``ChatFormat.encode_dialog_prompt`` (which ends with the assistant header) against
    ``render(mode="prompt")``: contents already trimmed (the templates trim, Meta does not; tool
    results, which nobody trims, start with no whitespace: Meta encodes the header's ``\n\n`` and the
    content apart, ocml as one run as the HF tokenizer does, so ``\n\n`` + ``\nx`` is one token
    ``\n\n\n`` in ocml's ids and two in Meta's - the documented difference), tool results written
    raw (``tool_results="raw"``, Meta's way), the 3.1 system text given to Meta as the system
    message's content."""
    meta = ChatFormat(MetaTokenizer.get_instance())
    enc = encoder.Encoder("llama3", system_header=system_header, tool_results="raw")
    rng = random.Random(12)
    controls_in_text = 0
    for _ in range(120):
        msgs = [m for m in conversation(rng, calls=True, adversarial=True) if "tool_calls" not in m]
        msgs = [{**m, "content": m["content"].strip() if m["role"] != "tool" else m["content"].lstrip()}
                for m in msgs]
        given = msgs
        if system_header:
            rest = msgs[1:] if msgs[0]["role"] == "system" else msgs
            sys_text = enc.format.system_text(None, msgs[0]["content"] if msgs[0]["role"] == "system" else "")
            given = [{"role": "system", "content": sys_text}, *rest]
        want = meta.encode_dialog_prompt(_meta_messages(given)).tokens
        got = enc.render(msgs, mode="prompt").ids.tolist()
        assert got == want
        controls_in_text += any(c in m["content"] for m in msgs for c in ADVERSARIAL)
    assert controls_in_text > 50


def test_fallback_mode_spells_the_controls_as_text_and_reads_back():
    """On o200k_base with nothing registered the controls are text (``ocml.encoder.grammar.escape``):
    the ids are the ordinary tokens of the same text, and they parse back to the same messages."""
    tok = vocab.load("o200k_base")
    enc = encoder.Encoder("llama3", tok)
    rng = random.Random(2)
    for _ in range(60):
        msgs = conversation(rng, calls=True)
        r = enc.render(arguments_as_text(msgs), mode="history")
        assert r.ids.tolist() == tok.encode_text(enc.to_text(arguments_as_text(msgs)))
        assert enc.parse(r.ids, strict=True) == list(r.conversation.messages)
