"""Stream-decoder helpers: the three modes (Harmony ids, OpenChatML 2.2 ids, 2.2 spelled as text), ids
built from controls and text, byte tokens, merged events, the chunk-invariance check, generated
assistant completions (``cases``), the fast-path id soup (``pool``) and its stop strings."""

from __future__ import annotations

import random

import numpy as np
from ocml.encoder.events import Delta, MessageEnd, MessageStart, Stop

from support.gen import harmony_conversation


MODES = ["harmony", "ocml-id", "ocml-text"]


def ctl(enc, name: str) -> list[int]:
    """A control as ids: its registered id, or its text spelling in fallback mode."""
    i = enc.tokenizer.control_id(name)
    if i is not None and name not in enc.format.text_controls:
        return [i]
    return enc.tokenizer.encode_text(name)


def build(enc, *parts) -> list[int]:
    """Ids from parts: ``("<|x|>",)``-style controls are given as ``ctl:<|x|>``, rest is text."""
    out: list[int] = []
    for p in parts:
        if isinstance(p, list):
            out += p
        elif p.startswith("ctl:"):
            out += ctl(enc, p[4:])
        else:
            out += enc.tokenizer.encode_text(p)
    return out


def byte_ids(enc, data: bytes) -> list[int]:
    """One token per byte (every byte is a token in o200k)."""
    table = enc.tokenizer.token_bytes_table
    inv = getattr(enc, "_t_byte_ids", None)
    if inv is None:
        inv = {b: i for i, b in enumerate(table) if b is not None and len(b) == 1}
        enc._t_byte_ids = inv
    return [inv[bytes([c])] for c in data]


def merge(events):
    """Merge adjacent deltas (the chunk-invariant form; ``Stop.trailing`` depends on the chunk)."""
    out = []
    for ev in events:
        if type(ev) is Stop:
            ev = Stop(ev.reason, ev.token, ev.position, 0)
        if type(ev) is Delta and out and type(out[-1]) is Delta:
            p = out[-1]
            assert (p.channel, p.visible) == (ev.channel, ev.visible)
            out[-1] = Delta(p.text + ev.text, p.channel, p.visible)
        else:
            out.append(ev)
    return out


def chunkings(n: int, rng: random.Random):
    yield "all", [n]
    for k in (1, 2, 3, 7):
        yield k, [k] * (n // k + 1)
    sizes = []
    while sum(sizes) < n:
        sizes.append(rng.randint(0, 9))
    yield "random", sizes


def stream(enc, ids, sizes, **kw):
    dec = enc.decoder(**kw)
    events, pos = [], 0
    for s in sizes:
        if pos >= len(ids) and s:
            break
        events += dec.feed(ids[pos:pos + s])
        pos += s
    events += dec.finish()
    return events, dec


def check_stream(enc, ids, rng=None, **kw):
    """Stream ``ids`` at every chunking; all agree; deltas == contents; returns the events."""
    rng = rng or random.Random(0)
    ref = None
    for name, sizes in chunkings(len(ids), rng):
        raw, dec = stream(enc, ids, sizes, **kw)
        for ev in raw:
            if type(ev) is Delta:
                assert ev.text, name
        ev = merge(raw)
        if ref is None:
            ref = ev
        else:
            assert ev == ref, f"chunking {name} differs"
    # concatenated deltas == message contents
    buf: list[str] | None = None
    for ev in ref:
        if type(ev) is MessageStart:
            buf = []
        elif type(ev) is Delta:
            assert buf is not None
            buf.append(ev.text)
        elif type(ev) is MessageEnd and buf is not None:
            assert "".join(buf) == ev.message.content
            buf = None
    return ref


def msgs(events):
    return [e.message for e in events if type(e) is MessageEnd]


def split_assistant(enc, conv):
    """(completion ids after the generation prompt, trailing assistant messages) or None."""
    full = enc.render(conv, mode="train", cot="keep-all")
    ms = full.conversation.messages
    keep_idx = sorted(set(full.message_index.tolist()) - {-1})
    last_other = max((j for j, i in enumerate(keep_idx) if ms[i].role != "assistant"), default=-1)
    if last_other == len(keep_idx) - 1:
        return None
    start = int(np.flatnonzero(full.message_index == keep_idx[last_other + 1])[0])
    ids = full.ids.tolist()
    # the generation prompt "<|start|>assistant" is the first ids of the first trailing message
    prompt_len = len(build(enc, "ctl:<|start|>", "assistant"))
    assert ids[start:start + prompt_len] == build(enc, "ctl:<|start|>", "assistant")
    completion = ids[start + prompt_len:]
    expected = [ms[i] for i in keep_idx[last_other + 1:]]
    return completion, expected


def cases(enc, n, seed):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        conv = harmony_conversation(rng)
        got = split_assistant(enc, conv)
        if got is not None:
            out.append(got)
    return out


STOPS = ["Pari", "结束", "🙂!", "x<y"]  # ASCII, CJK and emoji (split into byte tokens), one holding a "<"


def pool(enc, mode: str) -> list[list[int]]:
    """Pieces of id soup: content text, split characters, control text pieces, controls, bad ids."""
    p = [build(enc, w) for w in ("hello", " world", " Paris", " is", "é", " 日本", "\n", "<", " <", "<<", "|>",
                                 "<|", "end", "x", "!", " 结", "束")]
    p += [byte_ids(enc, "🙂".encode())[:k] for k in (1, 2, 3, 4)]
    p += [byte_ids(enc, "结束".encode())[k:k + 2] for k in (0, 2, 4)]
    p += [byte_ids(enc, "é".encode())[:1], byte_ids(enc, b"\xff"), [10 ** 7], [-3]]
    p += [build(enc, "ctl:" + c) for c in ("<|end|>", "<|start|>", "<|message|>", "<|channel|>")]
    p += [build(enc, "ctl:<|start|>", "assistant", "ctl:<|channel|>", "final", "ctl:<|message|>")] * 3
    p += [build(enc, "ctl:<|start|>", "assistant", "ctl:<|channel|>", "analysis", "ctl:<|message|>")] * 2
    if mode == "ocml-text":
        p += [byte_ids(enc, b"<|en"), byte_ids(enc, b"d|>"), byte_ids(enc, b"<<|end|>"), byte_ids(enc, b"<|ret"),
              byte_ids(enc, b"urn|>"), build(enc, "<|literal|>"), build(enc, "<|endliteral|>")]
    else:
        p += [build(enc, "<|end|>")]  # control spelling in ordinary tokens: plain text in id mode
    return p


def final_prefix(enc) -> list[int]:
    return build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>")
