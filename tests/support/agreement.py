"""Differential harness: the stream decoder and ``Encoder.parse`` must read ids alike.

Shared by ``tests/decode/test_stream_parse_agreement.py`` (CI size) and
``scripts/stream_parse_agreement.py`` (large offline runs).  Seeded, no hypothesis: a
failing case is reproduced by its (format, mode, seed, case) key.

A case is a list of ids and a prefill role (None or ``"assistant"``): renders of random
conversations (train / prompt / history), the same with mutations (ids dropped,
duplicated, swapped, cut, non-control special ids / control ids / invalid ids
inserted), and random soups over the tokens that matter to the grammar (control ids,
control spellings and their pieces, escapes, header words, split UTF-8, specials).

Agreement (``compare``): the stream decoder, fed the ids in random chunks then
``finish()``, stops at a stop control (``Stop.trailing`` ids left over); ``parse`` of the
ids it consumed must give the same messages (role, channel, recipient, call_id, name,
intent, content_type, constrain, content), the same end reasons and the same errors
(code, position, text).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ocml import encoder
from ocml import vocab
from ocml.encoder.errors import OcmlError
from ocml.encoder.events import Error, MessageEnd, Stop

from support.gen import WORDS, text

#: format -> (registered tokenizer, fallback tokenizer); None = the format's default
FORMATS: dict[str, tuple[str | None, str]] = {
    "openchatml-2.2": (None, "o200k_base"),
    "openchatml-2.0": (None, "o200k_base"),
    "harmony": (None, "o200k_base"),
    "chatml": (None, "cl100k_base"),
    "chatml-literal": (None, "cl100k_base"),  # ChatML's v0.1-literal layout (format option)
    "apertus": (None, "o200k_base"),
}
#: format key -> (format name, format options)
_FORMAT_OF = {"chatml-literal": ("chatml", {"layout": "v0.1-literal"})}
#: prefilled roles read, per format key, besides None and "assistant"
PREFILLS = {"chatml": ("fim",), "chatml-literal": ("fim", "user"), "apertus": ("user",), "openchatml-2.2": ("user",)}
MODES = ("registered", "fallback")
#: HF tokenizers (a small SentencePiece-style BPE trained here, legacy ``▁`` prefix: every text
#: run starts with a run prefix that is not content), controls registered or spelled as text
HF_MODES = ("hf-registered", "hf-fallback")
#: every (format, mode) pair, as pytest ids
KEYS = [(f, m) for f in FORMATS for m in MODES] + [("openchatml-2.2", m) for m in HF_MODES]


@lru_cache(maxsize=None)
def _sentencepiece_model() -> Any:
    """A small BPE with Llama 2's legacy normalizer (``▁`` prepended, spaces as ``▁``) and byte fallback."""
    import json

    import tokenizers
    from tokenizers import decoders, models, normalizers, trainers

    tok = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
    alphabet = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789<>|=_.,:;!?'\"{}[]() \n")
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "<s>", "</s>"], initial_alphabet=alphabet)
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    corpus = ["hello world <|start|>user<|message|>hi<|end|>", "assistant final analysis commentary to=functions.f",
              "The quick brown fox jumps over the lazy dog.", "<|channel|>final<|message|>answer<|return|>"] * 20
    tok.train_from_iterator(corpus, trainer)
    spec = json.loads(tok.to_str())
    for b in range(256):
        spec["model"]["vocab"].setdefault(f"<0x{b:02X}>", len(spec["model"]["vocab"]))
    spec["model"]["byte_fallback"] = True
    return tokenizers.Tokenizer.from_str(json.dumps(spec))


@lru_cache(maxsize=None)
def encoder_for(fmt: str, mode: str) -> encoder.Encoder:
    reg, fb = FORMATS[fmt]
    name, opts = _FORMAT_OF.get(fmt, (fmt, {}))
    if mode == "registered":
        return encoder.Encoder(name, **opts) if reg is None else encoder.Encoder(name, tokenizer=reg, **opts)
    if mode in HF_MODES:
        tok = vocab.from_hf(_sentencepiece_model(), register=name if mode == "hf-registered" else None)
        return encoder.Encoder(name, tokenizer=tok, **opts)
    return encoder.Encoder(name, tokenizer=vocab.load(fb), **opts)


# -- conversations --------------------------------------------------------------------------

def conversation(rng: random.Random) -> dict[str, Any]:
    """OpenAI / HF chat data with adversarial text everywhere (the shape every format reads)."""
    msgs: list[dict[str, Any]] = []
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": text(rng, 5) or "Be brief."})
    tools: list[str] = []
    if rng.random() < 0.3:
        tools = rng.sample(["get_weather", "search", "calc"], rng.randint(1, 2))
    for _ in range(rng.randint(1, 3)):
        msgs.append({"role": "user", "content": text(rng)})
        if tools and rng.random() < 0.5:
            name = rng.choice(tools)
            cid = f"call_{rng.randint(0, 999)}"
            msgs.append({"role": "assistant", "content": None,
                         "reasoning_content": text(rng, 4) if rng.random() < 0.5 else None,
                         "tool_calls": [{"id": cid, "type": "function",
                                         "function": {"name": name, "arguments": '{"q": "%s"}' % rng.choice(
                                             ["x", "<|end|>", "a\\nb", "日本"])}}]})
            msgs.append({"role": "tool", "tool_call_id": cid, "content": text(rng, 4)})
        m: dict[str, Any] = {"role": "assistant", "content": text(rng)}
        if rng.random() < 0.4:
            m["reasoning_content"] = text(rng, 5)
        msgs.append(m)
    conv: dict[str, Any] = {"messages": msgs}
    if tools:
        conv["tools"] = [{"type": "function", "function": {"name": t, "description": text(rng, 3),
                                                            "parameters": {"type": "object", "properties": {}}}}
                         for t in tools]
    return conv


# -- id material -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Material:
    """The ids a case is built from, per encoder."""

    controls: tuple[int, ...]       # registered control / marker ids
    specials: tuple[int, ...]       # other special ids (not controls): <|endoftext|>, reserved...
    invalid: tuple[int, ...]        # ids outside the vocabulary
    pieces: tuple[tuple[int, ...], ...]  # token runs: control spellings, fragments, words


_FRAGMENTS = ["<|", "|>", "<", "<<", "|", ">", "start", "end", "message", "channel", "return", "call",
              "constrain", "literal", "endliteral", "assistant", "user", "system", "tool", "final",
              "analysis", "commentary", " to=functions.f", " to=", "functions.f", "<|constrain|>json",
              " json", " ", "\n", "\n\n", "=", "im_start", "im_end", "<s>", "</s>", "_start|>", "_end|>",
              "assistant\n", "user\n", " name=x\n", "[", "]", '{"a": 1}', "functions.f to=assistant",
              "<|start_reflect|>", "intent=preamble", "call_id=c1"]


@lru_cache(maxsize=None)
def material(fmt: str, mode: str) -> Material:
    enc = encoder_for(fmt, mode)
    tok = enc.tokenizer
    table = enc.format.table
    names = set(table.controls) | set(table.markers)
    controls, specials = [], []
    for name, i in tok.specials.items():
        (controls if name in names else specials).append(i)
    if not specials:
        specials = [tok.n_vocab - 1] if tok.n_vocab - 1 not in controls else []
    # a few reserved / unknown specials too (harmony: reserved ids)
    invalid = (tok.n_vocab, tok.n_vocab + 7, -1)
    words = list(table.controls) + list(table.markers) + ["<" + c for c in table.controls] + _FRAGMENTS + WORDS
    pieces = []
    for w in dict.fromkeys(words):
        ids = tuple(tok.encode_text(w))
        if ids:
            pieces.append(ids)
    # split multi-byte characters: byte tokens where the vocabulary has them
    single = {b: i for i, b in enumerate(tok.token_bytes_table) if b is not None and len(b) == 1
              and i not in tok.special_ids}
    for ch in ("é", "日", "🙂"):
        byte_ids = [single.get(bytes([b])) for b in ch.encode()]
        if None not in byte_ids:
            pieces.append(tuple(byte_ids))  # type: ignore[arg-type]
            pieces.append(tuple(byte_ids[:1]))  # a character cut short
    return Material(tuple(controls), tuple(specials), invalid, tuple(pieces))


# -- cases -------------------------------------------------------------------------------------

@dataclass
class Case:
    ids: list[int]
    role: str | None
    kind: str


def _render(enc: encoder.Encoder, rng: random.Random) -> tuple[list[int], str | None] | None:
    conv = conversation(rng)
    mode = rng.choice(["train", "history", "prompt"])
    try:
        ids = enc.render(conv, mode=mode).ids.tolist()
    except OcmlError:
        return None
    role = None
    if mode == "train" and rng.random() < 0.5:
        # the completion after the last "<|start|>assistant" prefill: what a model emits
        try:
            prompt = enc.render({"messages": conv["messages"][:-1]}, mode="prompt").ids.tolist()
        except OcmlError:
            prompt = None
        if prompt is not None and ids[:len(prompt)] == prompt:
            return ids[len(prompt):], "assistant"
    return ids, role


def mutate(ids: list[int], rng: random.Random, mat: Material) -> list[int]:
    ids = list(ids)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(8)
        n = len(ids)
        k = rng.randrange(n + 1)
        if op == 0 and n:
            del ids[min(k, n - 1)]
        elif op == 1 and n:
            ids.insert(k, ids[min(k, n - 1)])
        elif op == 2 and n > 1:
            j = min(k, n - 2)
            ids[j], ids[j + 1] = ids[j + 1], ids[j]
        elif op == 3 and mat.specials:
            ids.insert(k, rng.choice(mat.specials))
        elif op == 4 and mat.controls:
            ids.insert(k, rng.choice(mat.controls))
        elif op == 5:
            ids[k:k] = rng.choice(mat.pieces)
        elif op == 6:
            ids.insert(k, rng.choice(mat.invalid))
        elif n:
            del ids[k:k + rng.randint(1, 5)]
    return ids


def soup(rng: random.Random, mat: Material) -> list[int]:
    out: list[int] = []
    for _ in range(rng.randint(0, 40)):
        r = rng.random()
        if r < 0.25 and mat.controls:
            out.append(rng.choice(mat.controls))
        elif r < 0.3 and mat.specials:
            out.append(rng.choice(mat.specials))
        elif r < 0.32:
            out.append(rng.choice(mat.invalid))
        else:
            out.extend(rng.choice(mat.pieces))
    return out


def cases(fmt: str, mode: str, seed: int, n: int) -> Iterator[Case]:
    """``n`` cases: a third renders, a third mutated renders, a third soups."""
    rng = random.Random(f"{fmt}/{mode}/{seed}")
    enc = encoder_for(fmt, mode)
    mat = material(fmt, mode)
    made = 0
    while made < n:
        kind = ("render", "mutated", "soup")[made % 3]
        if kind == "soup":
            ids, role = soup(rng, mat), rng.choice((None, None, "assistant") + PREFILLS.get(fmt, ()))
        else:
            r = _render(enc, rng)
            if r is None:
                ids, role = soup(rng, mat), None
                kind = "soup"
            else:
                ids, role = r
                if kind == "mutated":
                    ids = mutate(ids, rng, mat)
        made += 1
        yield Case(ids, role, kind)


# -- comparison ---------------------------------------------------------------------------------

def _msg(m: Any) -> tuple:
    return (m.role, m.channel, m.recipient, m.call_id, m.name, m.intent, m.content_type, m.constrain, m.content)


def stream_read(enc: encoder.Encoder, ids: list[int], role: str | None,
                rng: random.Random) -> tuple[list[tuple], list[str], list[tuple], int]:
    """-> (messages, end reasons, errors, ids consumed) as the stream decoder reads ``ids`` in random chunks."""
    dec = enc.decoder(role=role)
    events: list[Any] = []
    k = 0
    while k < len(ids):
        step = rng.choice((1, 1, 2, 3, 7, 64))
        events += dec.feed(ids[k:k + step])
        k += step
        if dec.done:
            break
    events += dec.finish()
    consumed = len(ids)
    for ev in events:
        if type(ev) is Stop:
            consumed = ev.position + 1
    msgs = [_msg(e.message) for e in events if type(e) is MessageEnd]
    ends = [e.reason for e in events if type(e) is MessageEnd]
    errs = [(e.code, e.position, e.text) for e in events if type(e) is Error]
    return msgs, ends, errs, consumed


def parse_read(enc: encoder.Encoder, ids: list[int], role: str | None) -> tuple[list[tuple], list[str], list[tuple]]:
    r = enc.parse(ids, role=role, errors="collect")
    return [_msg(m) for m in r.messages], list(r.ends), [(e.code, e.position, e.text) for e in r.errors]


def compare(enc: encoder.Encoder, case: Case, rng: random.Random) -> str | None:
    """None if stream and parse agree on ``case``, else what differs."""
    try:
        sm, se, serr, consumed = stream_read(enc, case.ids, case.role, rng)
    except Exception as exc:  # noqa: BLE001 - any crash is a finding
        return f"stream raised {type(exc).__name__}: {exc}"
    try:
        pm, pe, perr = parse_read(enc, case.ids[:consumed], case.role)
    except Exception as exc:  # noqa: BLE001
        return f"parse raised {type(exc).__name__}: {exc}"
    if sm != pm:
        return f"messages differ:\n  stream {sm}\n  parse  {pm}"
    if se != pe:
        return f"end reasons differ: stream {se} parse {pe}"
    if serr != perr:
        return f"errors differ:\n  stream {serr}\n  parse  {perr}"
    return None


def run(keys: list[tuple[str, str]], n: int, seed: int = 0,
        report: Callable[[str, str, Case, str], None] | None = None) -> dict[tuple[str, str], tuple[int, int]]:
    """-> {(format, mode): (disagreements, cases)}."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for fmt, mode in keys:
        enc = encoder_for(fmt, mode)
        rng = random.Random(f"chunks/{fmt}/{mode}/{seed}")
        bad = 0
        total = 0
        for case in cases(fmt, mode, seed, n):
            total += 1
            diff = compare(enc, case, rng)
            if diff is not None:
                bad += 1
                if report is not None:
                    report(fmt, mode, case, diff)
        out[(fmt, mode)] = (bad, total)
    return out
