"""Random conversation generator for differential and property tests (seeded, no hypothesis)."""

from __future__ import annotations

import json
import random
from typing import Any

WORDS = ["hello", "world", "Tokyo", "naïve", "café", "日本語", "数学", "🙂", "👨‍👩‍👧", "  spaced  ", "\n", "\n\n",
         "tab\tbed", "1234567", "3.14159", "x<y", "a|b", "<|start|>", "<|end|>", "<|message|>", "<|channel|>",
         "<|return|>", "<|call|>", "<|constrain|>", "<<|start|>", "<|", "|>", "to=functions.x", "def f():\n    return 1",
         "'s", "DON'T", "ü", "—", "\u200b", "Ω", "😀😀", "<", "<<"]
TOOL_NAMES = ["get_weather", "search", "lookup_user", "calc"]


def text(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice(WORDS) + rng.choice(["", " ", "", "\n"]) for _ in range(rng.randint(0, n)))


def schema(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for k in range(rng.randint(0, 4)):
        kind = rng.choice(["string", "number", "integer", "boolean", "enum", "array"] + (["object"] if depth < 2 else []))
        if kind == "enum":
            p: dict[str, Any] = {"type": "string", "enum": rng.sample(["a", "b", "celsius", "fahrenheit"], 2)}
        elif kind == "array":
            p = {"type": "array", "items": {"type": rng.choice(["string", "number"])}}
        elif kind == "object":
            p = schema(rng, depth + 1)
        else:
            p = {"type": kind}
        if rng.random() < 0.4:
            p["description"] = rng.choice(["The city", "A number.", "Multi\nline"])
        if rng.random() < 0.2 and kind in ("string", "number", "boolean"):
            p["default"] = {"string": "x", "number": 3, "boolean": True}[kind]
        props[f"p{k}_{kind}"] = p
    out: dict[str, Any] = {"type": "object", "properties": props}
    req = [k for k in props if rng.random() < 0.5]
    if req:
        out["required"] = req
    return out


def harmony_conversation(rng: random.Random) -> dict[str, Any]:
    """A conversation in openai-harmony's Conversation.to_json() shape (valid for both renderers)."""
    msgs: list[dict[str, Any]] = []
    fn_tools = []
    if rng.random() < 0.7:
        sc: dict[str, Any] = {"type": "system_content"}
        if rng.random() < 0.5:
            sc["reasoning_effort"] = rng.choice(["Low", "Medium", "High"])
        if rng.random() < 0.5:
            sc["conversation_start_date"] = "2025-0%d-1%d" % (rng.randint(1, 9), rng.randint(0, 9))
        if rng.random() < 0.2:
            sc["model_identity"] = text(rng, 4) or "You are a bot."
        if rng.random() < 0.1:
            sc["knowledge_cutoff"] = None
        msgs.append({"role": "system", "content": [sc]})
    elif rng.random() < 0.3:
        msgs.append({"role": "system", "content": [{"type": "text", "text": text(rng)}]})
    if rng.random() < 0.6:
        dc: dict[str, Any] = {"type": "developer_content"}
        if rng.random() < 0.7:
            dc["instructions"] = text(rng) or "Be brief."
        if rng.random() < 0.6:
            fn_tools = rng.sample(TOOL_NAMES, rng.randint(1, 3))
            dc["tools"] = {"functions": {"name": "functions", "description": None,
                                         "tools": [{"name": t, "description": rng.choice(["Does a thing.", "Line one\nline two", ""]),
                                                    "parameters": schema(rng) if rng.random() < 0.8 else None}
                                                   for t in fn_tools]}}
        msgs.append({"role": "developer", "content": [dc]})
    for _turn in range(rng.randint(1, 4)):
        user: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": text(rng)}]}
        if rng.random() < 0.1:
            user["name"] = rng.choice(["alice", "bob"])
        if rng.random() < 0.1:
            user["content"].append({"type": "text", "text": text(rng, 3)})
        msgs.append(user)
        for _step in range(rng.randint(0, 3)):
            if rng.random() < 0.6:
                msgs.append({"role": "assistant", "channel": "analysis", "content": [{"type": "text", "text": text(rng)}]})
            if fn_tools and rng.random() < 0.5:
                t = "functions." + rng.choice(fn_tools)
                args = json.dumps({"q": text(rng, 3), "n": rng.randint(0, 9)}, ensure_ascii=rng.random() < 0.5)
                call: dict[str, Any] = {"role": "assistant", "channel": "commentary", "recipient": t,
                                        "content": [{"type": "text", "text": args}]}
                if rng.random() < 0.8:
                    call["content_type"] = "<|constrain|>json"
                msgs.append(call)
                if rng.random() < 0.9:
                    msgs.append({"role": "tool", "name": t, "recipient": "assistant", "channel": "commentary",
                                 "content": [{"type": "text", "text": json.dumps({"r": text(rng, 3)})}]})
            elif rng.random() < 0.2:
                msgs.append({"role": "assistant", "channel": "analysis", "recipient": "python", "content_type": "code",
                             "content": [{"type": "text", "text": "print(1)"}]})
                msgs.append({"role": "tool", "name": "python", "recipient": "assistant", "channel": "analysis",
                             "content": [{"type": "text", "text": "1"}]})
        if rng.random() < 0.15:
            msgs.append({"role": "assistant", "channel": "commentary", "content": [{"type": "text", "text": text(rng)}]})
        if rng.random() < 0.85:
            msgs.append({"role": "assistant", "channel": "final", "content": [{"type": "text", "text": text(rng)}]})
    for m in msgs:
        m.setdefault("name", None)
    return {"messages": msgs}
