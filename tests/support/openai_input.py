"""Random OpenAI chat-completions conversations and their openai-harmony objects (the differential tests'
inputs)."""

from __future__ import annotations

import json
import random
from typing import Any

from support.gen import TOOL_NAMES, schema, text


def openai_conversation(rng: random.Random) -> dict[str, Any]:
    """OpenAI / HF chat data: system prompt, tools, parallel calls with results, reasoning."""
    msgs: list[dict[str, Any]] = []
    if rng.random() < 0.6:
        msgs.append({"role": rng.choice(["system", "system", "developer"]), "content": text(rng) or "Be brief."})
    tools = []
    if rng.random() < 0.6:
        for name in rng.sample(TOOL_NAMES, rng.randint(1, 3)):
            fn: dict[str, Any] = {"name": name, "description": rng.choice(["Does a thing.", "Line one\nline two"])}
            if rng.random() < 0.8:
                fn["parameters"] = schema(rng)
            tools.append({"type": "function", "function": fn})
    k = 0
    for _turn in range(rng.randint(1, 3)):
        msgs.append({"role": "user", "content": text(rng) or "hi"})
        for _step in range(rng.randint(0, 2) if tools else 0):
            calls = []
            for _ in range(rng.choice([1, 1, 2])):
                k += 1
                args: Any = {"q": text(rng, 3), "n": rng.randint(0, 9)}
                if rng.random() < 0.5:
                    args = json.dumps(args, ensure_ascii=rng.random() < 0.5)
                calls.append({"id": f"call_{k}", "type": "function",
                              "function": {"name": rng.choice(tools)["function"]["name"], "arguments": args}})
            m: dict[str, Any] = {"role": "assistant", "tool_calls": calls}
            r = rng.random()
            if r < 0.4:
                m["reasoning_content"] = text(rng) or "thinking"
            if r > 0.7 or 0.2 < r < 0.3:
                m["content"] = text(rng) or "Let me check."
            else:
                m["content"] = None
            msgs.append(m)
            for c in calls:
                msgs.append({"role": "tool", "tool_call_id": c["id"], "content": json.dumps({"r": text(rng, 3)})})
        if rng.random() < 0.9:
            a: dict[str, Any] = {"role": "assistant", "content": text(rng) or "done"}
            if rng.random() < 0.5:
                a[rng.choice(["reasoning_content", "thinking"])] = text(rng) or "hmm"
            msgs.append(a)
    conv: dict[str, Any] = {"messages": msgs}
    if tools:
        conv["tools"] = tools
    if rng.random() < 0.3:
        conv["reasoning_effort"] = rng.choice(["low", "medium", "high"])
    if rng.random() < 0.3:
        conv["date"] = "2025-0%d-1%d" % (rng.randint(1, 9), rng.randint(0, 9))
    return conv


def to_harmony_objects(conv: dict[str, Any], oh: Any) -> Any:
    """The official gpt-oss template's mapping, in openai-harmony's own objects."""
    M, R = oh.Message, oh.Role
    sc = oh.SystemContent.new()
    if "reasoning_effort" in conv:
        sc = sc.with_reasoning_effort(oh.ReasoningEffort[conv["reasoning_effort"].upper()])
    if "date" in conv:
        sc = sc.with_conversation_start_date(conv["date"])
    out = [M.from_role_and_content(R.SYSTEM, sc)]
    msgs = conv["messages"]
    instructions = None
    if msgs and msgs[0]["role"] in ("system", "developer"):
        instructions, msgs = msgs[0]["content"], msgs[1:]
    tools = conv.get("tools")
    if instructions or tools:
        dc = oh.DeveloperContent.new()
        if instructions:
            dc = dc.with_instructions(instructions)
        if tools:
            dc = dc.with_function_tools([oh.ToolDescription.new(t["function"]["name"], t["function"]["description"],
                                                                parameters=t["function"].get("parameters"))
                                         for t in tools])
        out.append(M.from_role_and_content(R.DEVELOPER, dc))
    names: dict[str, str] = {}
    for m in msgs:
        role = m["role"]
        if role in ("system", "developer"):
            out.append(M.from_role_and_content(R.DEVELOPER, m["content"]))
        elif role == "user":
            out.append(M.from_role_and_content(R.USER, m["content"]))
        elif role == "tool":
            out.append(M.from_author_and_content(oh.Author.new(R.TOOL, names[m["tool_call_id"]]), m["content"])
                       .with_recipient("assistant").with_channel("commentary"))
        else:
            thinking = m.get("reasoning_content") or m.get("thinking")
            calls = m.get("tool_calls") or []
            if thinking:
                out.append(M.from_role_and_content(R.ASSISTANT, thinking).with_channel("analysis"))
            if m.get("content") or not calls:
                channel = "final" if not calls else ("commentary" if thinking else "analysis")
                out.append(M.from_role_and_content(R.ASSISTANT, m.get("content") or "").with_channel(channel))
            for c in calls:
                fn = c["function"]
                args = fn["arguments"] if isinstance(fn["arguments"], str) else json.dumps(fn["arguments"],
                                                                                            ensure_ascii=False)
                names[c["id"]] = "functions." + fn["name"]
                out.append(M.from_role_and_content(R.ASSISTANT, args).with_channel("commentary")
                           .with_recipient("functions." + fn["name"]).with_content_type("<|constrain|>json"))
    return oh.Conversation.from_messages(out)
