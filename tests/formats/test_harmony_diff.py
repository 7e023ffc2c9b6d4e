"""Differential: ocml's Harmony renderer vs openai-harmony 0.0.8, id for id."""

from __future__ import annotations

import json
import random

import pytest

from support.gen import harmony_conversation

N_CONVERSATIONS = 1500


def _cases(n: int):
    rng = random.Random(20251121)
    return [harmony_conversation(rng) for _ in range(n)]


def test_generated_corpus_matches_openai_harmony(harmony, harmony_encoder):
    oh = pytest.importorskip("openai_harmony")
    keep = oh.RenderConversationConfig(auto_drop_analysis=False)
    drop = oh.RenderConversationConfig(auto_drop_analysis=True)
    compared = 0
    for k, raw in enumerate(_cases(N_CONVERSATIONS)):
        conv = oh.Conversation.from_json(json.dumps(raw))
        for mode, cot, ref in (
            ("train", "keep-all", lambda: harmony.render_conversation_for_training(conv, keep)),
            ("train", "harmony", lambda: harmony.render_conversation_for_training(conv, drop)),
            ("history", "keep-all", lambda: harmony.render_conversation(conv, keep)),
            ("history", "harmony", lambda: harmony.render_conversation(conv, drop)),
            ("prompt", "harmony", lambda: harmony.render_conversation_for_completion(conv, oh.Role.ASSISTANT, drop)),
            ("prompt", "keep-all", lambda: harmony.render_conversation_for_completion(conv, oh.Role.ASSISTANT, keep)),
        ):
            expected = ref()
            got = harmony_encoder.render(raw, mode=mode, cot=cot).ids.tolist()
            if got != expected:
                text_e = harmony.decode(expected)
                text_g = harmony.decode(got)
                pytest.fail(f"case {k} mode={mode} cot={cot} differs\nexpected {text_e!r}\ngot      {text_g!r}\ninput {raw}")
            compared += 1
    assert compared == N_CONVERSATIONS * 6


def test_harmony_object_input(harmony, harmony_encoder):
    """openai-harmony Conversation objects are accepted directly."""
    oh = pytest.importorskip("openai_harmony")
    conv = oh.Conversation.from_messages([
        oh.Message.from_role_and_content(oh.Role.SYSTEM, oh.SystemContent.new().with_browser_tool()),
        oh.Message.from_role_and_content(oh.Role.USER, "hi"),
        oh.Message.from_role_and_content(oh.Role.ASSISTANT, "hello").with_channel("final"),
    ])
    assert harmony_encoder.render(conv).ids.tolist() == harmony.render_conversation_for_training(conv)
