"""OpenAI-side serving helpers: the user turn and tool list of the chunk tests, assistant turns per format,
and the completion ids a model generates after a prompt (``after``: the cut for whole-run formats)."""

from __future__ import annotations

from ocml import encoder


USER = {"role": "user", "content": "What is the weather in Paris? Use the tool."}


TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                           "parameters": {"type": "object",
                                                          "properties": {"city": {"type": "string"}}}}}]


#: formats with no place for reasoning (ChatML by default, Llama 3)
NO_REASONING = ("chatml", "llama3")


def turns(fmt: str, text: str = "It is sunny, 24 °C 🌞.") -> dict[str, dict]:
    """Assistant turns (OpenAI dicts) the format can hold, each one sampling (up to the first stop)."""
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    out = {"final": {"role": "assistant", "content": text},
           "call": {"role": "assistant", "content": None, "tool_calls": [call]}}
    if fmt not in NO_REASONING:
        out["reasoning+final"] = {"role": "assistant", "content": text, "reasoning_content": "Think: sun.\nOk."}
        out["reasoning+call"] = {"role": "assistant", "content": None, "reasoning_content": "Need the tool.",
                                 "tool_calls": [call]}
    return out


def after(enc: encoder.Encoder, full: list[int], prompt: list[int]) -> list[int]:
    """What a model generates after ``prompt`` to make ``full``: the ids after it, or - where a
    whole-run format (ChatML, Apertus) encodes the text run that crosses the cut as one, so a
    token straddles it (ChatML content starting with a newline after ``assistant\n``; Apertus
    spelled as text) - the rest of that run tokenized on its own, then the ids from the next
    control id on (none in fallback mode: there the whole rest is text)."""
    if full[:len(prompt)] == prompt:
        return full[len(prompt):]
    tok = enc.tokenizer
    text, head = tok.decode_bytes(full), tok.decode_bytes(prompt)
    assert text.startswith(head)
    k = next(i for i, (a, b) in enumerate(zip(full, prompt)) if a != b)
    controls = tok.special_ids
    j = next((i for i in range(k, len(full)) if full[i] in controls), len(full))
    run = tok.decode_bytes(full[:j])[len(head):]
    return tok.encode_text(run.decode()) + full[j:]


def completion(enc: encoder.Encoder, turn: dict, history: list[dict] | None = None,
               tools: list[dict] | None = None) -> list[int]:
    """The ids a model generates for ``turn`` after the generation prompt of ``history`` (default:
    ``[USER]``) with ``tools`` (default ``TOOLS``), up to the sampler's stop (ChatML's training
    text goes on with a newline after ``<|im_end|>``: never generated)."""
    history, tools = ([USER] if history is None else history), (TOOLS if tools is None else tools)
    full = enc.render({"messages": [*history, turn], "tools": tools}, mode="train", cot="keep-all").ids.tolist()
    ids = after(enc, full, enc.render({"messages": history, "tools": tools}, mode="prompt").ids.tolist())
    dec = enc.decoder(role="assistant")
    stop = [e for e in dec.feed(ids) if type(e).__name__ == "Stop"]
    return ids[:len(ids) - stop[0].trailing] if stop else ids


def no_ids(message: dict) -> dict:
    """An OpenAI message without its tool calls' ids (generated ids differ run to run)."""
    out = dict(message)
    if "tool_calls" in out:
        out["tool_calls"] = [{k: v for k, v in c.items() if k != "id"} for c in out["tool_calls"]]
    return out
