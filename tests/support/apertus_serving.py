"""Apertus as a server sees it: the assistant turn shapes (thoughts, answer, calls) with the OpenAI
message ``to_openai`` gives back, the prompt, and what a model generates after it."""

from __future__ import annotations

from ocml import encoder

from support.openai_chunks import after


CITY = {"type": "object", "properties": {"city": {"type": "string"}}}


TOOLS = [{"type": "function", "function": {"name": n, "description": "d", "parameters": CITY}}
         for n in ("get_weather", "get_time")]


USER = {"role": "user", "content": "Weather in Oslo?"}


def call(name: str, args: str) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": args}}


#: assistant turns -> the OpenAI message to_openai gives back (without ids) and the finish reason
SHAPES = {
    "thoughts+answer": ({"role": "assistant", "reasoning_content": "Think.", "content": "Sunny."},
                        {"role": "assistant", "content": "Sunny.", "reasoning_content": "Think."}, "stop"),
    "thoughts+call": ({"role": "assistant", "reasoning_content": "Let me check.",
                       "tool_calls": [call("get_weather", '{"city": "Oslo"}')]},
                      {"role": "assistant", "content": None, "reasoning_content": "Let me check.",
                       "tool_calls": [call("get_weather", '{"city": "Oslo"}')]}, "tool_calls"),
    "answer": ({"role": "assistant", "content": "It is sunny, 24 °C 🌞."},
               {"role": "assistant", "content": "It is sunny, 24 °C 🌞."}, "stop"),
    "call": ({"role": "assistant", "content": None, "tool_calls": [call("get_weather", '{"city": "Oslo"}')]},
             {"role": "assistant", "content": None, "tool_calls": [call("get_weather", '{"city": "Oslo"}')]},
             "tool_calls"),
    "thoughts+answer+calls": (
        {"role": "assistant", "reasoning_content": "Two tools.", "content": "Let me look.",
         "tool_calls": [call("get_weather", '{"city": "Oslo"}'), call("get_time", '{"city": "Oslo", "n": [1, 2]}')]},
        {"role": "assistant", "content": "Let me look.", "reasoning_content": "Two tools.",
         "tool_calls": [call("get_weather", '{"city": "Oslo"}'), call("get_time", '{"city": "Oslo", "n": [1, 2]}')]},
        "tool_calls"),
}


def prompt(enc: encoder.Encoder) -> list[int]:
    return enc.render({"messages": [USER], "tools": TOOLS}, mode="prompt").ids.tolist()


def full(enc: encoder.Encoder, turn: dict) -> list[int]:
    return enc.render({"messages": [USER, turn], "tools": TOOLS}, mode="train").ids.tolist()


def completion(enc: encoder.Encoder, turn: dict) -> list[int]:
    """What the model generates after the prompt (fallback: the text run crossing the prompt's
    end, ``<|assistant_start|>`` spelled as text, tokenized from the cut: ``after``)."""
    return after(enc, full(enc, turn), prompt(enc))
