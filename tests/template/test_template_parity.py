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

import json
import random
from typing import Any

import pytest

from support.gen import harmony_conversation
from support.template import FORMATS, _explain, cases, hf_call, rendered, stack


N_OPENAI = 160       # generated OpenAI/HF conversations per format
N_NATIVE = 300       # openai-harmony to_json() conversations


def scrub(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("<|", "<")
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    return value


@pytest.fixture(scope="module")
def stacks():
    return {fmt: stack(fmt) for fmt in FORMATS}


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
    from support.openai_input import openai_conversation as lead_generator
    from support.openai_input import to_harmony_objects

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
