"""ChatML-family stream checks: a cached encoder per (format, tokenizer, options), merged events and
the chunk-invariance check of a stream (used by the ChatML and Apertus tests)."""

from __future__ import annotations

import random

from ocml import encoder
from ocml import vocab
from ocml.encoder.events import Delta, MessageEnd, MessageStart, Stop


_cache: dict[tuple, encoder.Encoder] = {}


def cached_encoder(fmt: str, tokenizer: str | None = None, **opts) -> encoder.Encoder:
    """One Encoder per (format, tokenizer, options); ``NAME+reg``: NAME with the format's controls registered."""
    key = (fmt, tokenizer, tuple(sorted(opts.items())))
    if key not in _cache:
        tok = vocab.load(tokenizer[:-4], register=fmt) if tokenizer and tokenizer.endswith("+reg") else tokenizer
        _cache[key] = encoder.Encoder(fmt, tok, **opts)
    return _cache[key]


def merge(events):
    out = []
    for ev in events:
        if type(ev) is Stop:
            ev = Stop(ev.reason, ev.token, ev.position, 0)
        p = out[-1] if out else None
        if type(ev) is Delta and type(p) is Delta and (p.channel, p.visible) == (ev.channel, ev.visible):
            out[-1] = Delta(p.text + ev.text, p.channel, p.visible)
        else:
            out.append(ev)
    return out


def check_stream(enc, ids, rng: random.Random, *, contents: bool = True, **kw):
    """Stream ``ids`` at several chunkings; merged events agree; deltas == contents (if ``contents``)."""
    ref = None
    for sizes in ([len(ids)], [1] * len(ids), [2] * len(ids), [rng.randint(0, 7) for _ in range(3 * len(ids) + 3)]):
        dec = enc.decoder(**kw)
        events, pos = [], 0
        for s in sizes:
            events += dec.feed(ids[pos:pos + s])
            pos += s
            if pos >= len(ids):
                break
        events += dec.finish()
        ev = merge(events)
        assert ref is None or ev == ref
        ref = ev
    buf = None
    for ev in ref:
        if type(ev) is MessageStart:
            buf = []
        elif type(ev) is Delta and buf is not None:
            buf.append(ev.text)
        elif type(ev) is MessageEnd and buf is not None:
            if contents:
                assert "".join(buf) == ev.message.content
            buf = None
    return ref


#: ChatML test text: words, spaces, newlines and control spellings
WORDS = ["hello", " world", "\n", "\n\n", " ", "  ", "\t", "café", "日本語", "🙂", "x<y", "a|b", "<", "|>",
         "<|im_end|>", "<|im_start|>", "</s>", "<s>", "<|fim_prefix|>", "<<|im_end|>", "{\"a\": 1}", "'s", "123",
         "\r\n", " \n", "name=x"]


def words(rng: random.Random, n: int = 6, safe: bool = False) -> str:
    pool = [w for w in WORDS if "<" not in w] if safe else WORDS
    return "".join(rng.choice(pool) for _ in range(rng.randint(0, n)))


def chat_conv(rng: random.Random) -> list[dict]:
    msgs: list[dict] = []
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": words(rng)})
    for _ in range(rng.randint(1, 3)):
        msgs.append({"role": "user", "content": words(rng)})
        for _ in range(rng.randint(1, 2)):
            a: dict = {"role": "assistant", "content": words(rng)}
            if rng.random() < 0.3:
                a["tool_calls"] = [{"type": "function", "function": {"name": "f", "arguments": {"q": words(rng, 2)}}}]
                msgs.append(a)
                msgs.append({"role": "tool", "content": words(rng)})
                continue
            msgs.append(a)
    return msgs
