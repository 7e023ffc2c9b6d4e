"""Apertus conversations for the Apertus tests: its controls, random words and random conversations
(blocks and plain strings), and the ``blocks`` builder."""

from __future__ import annotations

import json
import random


CONTROLS = {"<|system_start|>", "<|system_end|>", "<|developer_start|>", "<|developer_end|>", "<|user_start|>",
            "<|user_end|>", "<|assistant_start|>", "<|assistant_end|>", "<|inner_prefix|>", "<|inner_suffix|>",
            "<|tools_prefix|>", "<|tools_suffix|>", "<s>", "</s>"}


WORDS = ["hello", " world", "\n", " ", "café", "日本語", "🙂", "x<y", "a|b", ", ", "'s", "123", "{", "}", "]", "\"",
         "<|assistant_end|>", "<|inner_prefix|>", "<|tools_suffix|>", "<s>", "<<|user_end|>", "<|", "|>"]


def words(rng: random.Random, n: int = 6, safe: bool = False) -> str:
    pool = [w for w in WORDS if "<" not in w] if safe else WORDS
    return "".join(rng.choice(pool) for _ in range(rng.randint(0, n))).lstrip("[")


def output(rng: random.Random, safe: bool) -> str:
    return json.dumps(rng.choice([{"r": words(rng, 3, safe)}, [1, words(rng, 2, safe)], words(rng, 3, safe), 42]),
                      ensure_ascii=rng.random() < 0.5)


def call(rng: random.Random, safe: bool) -> dict:
    return {"name": rng.choice(["search", "get_weather", "display_answers"]),
            "arguments": json.dumps({"q": words(rng, 3, safe), "n": rng.randint(0, 9)})}


def blocks_conversation(rng: random.Random, safe: bool = False) -> list[dict]:
    """Apertus mapping content: thoughts, parallel calls, outputs as blocks or as tool messages, responses."""
    msgs: list[dict] = []
    if rng.random() < 0.7:
        msgs.append({"role": "system", "content": rng.choice([words(rng, 4, safe), {"text": words(rng, 4, safe)}])})
    for _ in range(rng.randint(1, 3)):
        msgs.append({"role": "user", "content": rng.choice([words(rng, 5, safe),
                                                            {"parts": [{"type": "text", "text": words(rng, 3, safe)}
                                                                       for _ in range(rng.randint(1, 3))]}])})
        blocks: list[dict] = []
        if rng.random() < 0.6:
            blocks.append({"type": "thoughts", "text": words(rng, 5, safe)})
        for _ in range(rng.randint(0, 2)):
            blocks.append({"type": "tool_calls", "calls": [call(rng, safe) for _ in range(rng.randint(1, 2))]})
            outs = [output(rng, safe) for _ in range(rng.randint(1, 2))]
            if rng.random() < 0.5:
                blocks.append({"type": "tool_outputs", "outputs": [{"output": o} for o in outs]})
            else:  # tool messages outside the blocks: the turn goes on in a second assistant message
                msgs.append({"role": "assistant", "content": {"blocks": blocks}})
                msgs += [{"role": "tool", "content": o} for o in outs]
                blocks = []
            if rng.random() < 0.4:
                blocks.append({"type": "thoughts", "text": words(rng, 4, safe)})
        if rng.random() < 0.8:
            blocks.append({"type": "response", "text": words(rng, 5, safe)})
        if blocks or msgs[-1]["role"] == "user":
            msgs.append({"role": "assistant", "content": {"blocks": blocks}})
    return msgs


def string_conversation(rng: random.Random, safe: bool = False) -> list[dict]:
    """String content with OpenAI-style tool calls and tool messages (the 'legacy' shape)."""
    msgs: list[dict] = [{"role": "system", "content": words(rng, 4, safe)}] if rng.random() < 0.7 else []
    for _ in range(rng.randint(1, 3)):
        msgs.append({"role": "user", "content": words(rng, 5, safe)})
        if rng.random() < 0.5:
            calls = [{"type": "function", "function": call(rng, safe)} for _ in range(rng.randint(1, 2))]
            msgs.append({"role": "assistant", "content": words(rng, 3, safe), "tool_calls": calls})
            msgs += [{"role": "tool", "content": output(rng, safe)} for _ in calls]
        msgs.append({"role": "assistant", "content": words(rng, 5, safe)})
    return msgs


def conversation(rng: random.Random, safe: bool = False) -> list[dict]:
    return blocks_conversation(rng, safe) if rng.random() < 0.7 else string_conversation(rng, safe)


def blocks(*bs):
    return {"role": "assistant", "content": {"blocks": list(bs)}}
