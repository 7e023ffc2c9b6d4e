"""SentencePiece-style tokenizers through ``ocml.vocab.from_hf`` (issue 8): text pieces get the ids
the model's own tokenizer gives them inside the whole text, and decode without the prefix
space the tokenizer adds to a run.

The tokenizers are small ones trained here with the ``tokenizers`` library (BPE and Unigram,
byte fallback): Metaspace ``prepend_scheme="first"`` (non-legacy Llama, transformers 5),
``"always"`` (``legacy=True``), the legacy ``Prepend`` normalizer of Llama 2 / Mistral v1
tokenizer.json files, and byte-level BPE with ``add_prefix_space``.  The reference is the
model tokenizer plus the controls as added special tokens, encoding the whole rendered text.
"""

from __future__ import annotations

import json
import pickle
import string
from functools import lru_cache

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tokenizers  # noqa: E402
from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers, trainers  # noqa: E402

from ocml import encoder  # noqa: E402
from ocml import vocab  # noqa: E402

FORMAT = "openchatml-2.2"
CONTROLS = vocab.control_table(FORMAT).all_tokens
MODEL_SPECIALS = ("<unk>", "<s>", "</s>")  # the trained models' own special tokens
ALPHABET = list(string.ascii_letters + string.digits + string.punctuation + " \n")
CORPUS = [
    "Hello world, this is a test.", "user assistant system message final analysis commentary",
    "The quick brown fox jumps over the lazy dog.", "  leading spaces and\nnewlines\n",
    "to=functions.get call_id=c1 json {\"x\": 1}", "It is 42. You are terse.",
] * 20
SCHEMES = ("first", "always", "legacy", "bytelevel")
MODELS = ("bpe", "unigram")
#: what a run of text starts with that is not content (Tokenizer.run_prefix)
PREFIX = {"first": b"", "always": b" ", "legacy": b" ", "bytelevel": b" "}


def _with_byte_fallback(tok: tokenizers.Tokenizer) -> tokenizers.Tokenizer:
    """Add the 256 ``<0xNN>`` pieces so any text encodes (as in Llama's vocabulary)."""
    spec = json.loads(tok.to_str())
    model = spec["model"]
    if model["type"] == "BPE":
        for b in range(256):
            model["vocab"].setdefault(f"<0x{b:02X}>", len(model["vocab"]))
    else:
        have = {p for p, _ in model["vocab"]}
        model["vocab"] += [[f"<0x{b:02X}>", -20.0] for b in range(256) if f"<0x{b:02X}>" not in have]
    model["byte_fallback"] = True
    return tokenizers.Tokenizer.from_str(json.dumps(spec))


@lru_cache(maxsize=None)
def model_tokenizer(kind: str, scheme: str) -> tokenizers.Tokenizer:
    """A small trained SentencePiece-style (or byte-level) model tokenizer."""
    specials = list(MODEL_SPECIALS)
    if kind == "bpe":
        tok = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
        alphabet = pre_tokenizers.ByteLevel.alphabet() if scheme == "bytelevel" else ALPHABET
        trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials, initial_alphabet=alphabet)
    else:
        tok = tokenizers.Tokenizer(models.Unigram())
        trainer = trainers.UnigramTrainer(vocab_size=300, special_tokens=specials, unk_token="<unk>",
                                          initial_alphabet=ALPHABET)
    if scheme == "legacy":
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    elif scheme == "bytelevel":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
        tok.decoder = decoders.ByteLevel()
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme=scheme)
        tok.decoder = decoders.Metaspace(prepend_scheme=scheme)
    tok.train_from_iterator(CORPUS, trainer)
    return tok if scheme == "bytelevel" else _with_byte_fallback(tok)


CASES = [(k, s) for k in MODELS for s in SCHEMES if not (k == "unigram" and s == "bytelevel")]


class Case:
    def __init__(self, kind: str, scheme: str) -> None:
        self.scheme = scheme
        model = model_tokenizer(kind, scheme)
        self.tok = vocab.from_hf(model, register=FORMAT)
        # The reference: the model's own tokenizer with the controls as added special tokens.
        self.ref = tokenizers.Tokenizer.from_str(model.to_str())
        self.ref.add_special_tokens([AddedToken(c, special=True, normalized=False) for c in CONTROLS])
        self.enc = encoder.Encoder(FORMAT, tokenizer=self.tok)

    def whole(self, text: str) -> list[int]:
        return self.ref.encode(text, add_special_tokens=False).ids

    def after_control(self, text: str) -> list[int]:
        """``text`` inside a whole text, right after a control."""
        ids = self.whole("<|message|>" + text)
        assert ids[0] == self.tok.control_id("<|message|>")
        return ids[1:]


@pytest.fixture(scope="module", params=CASES, ids=[f"{k}-{s}" for k, s in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    return Case(*request.param)


def test_controls_at_the_reference_ids(case: Case) -> None:
    for c in CONTROLS:
        assert case.tok.control_id(c) == case.ref.token_to_id(c)


def test_run_prefix_is_detected(case: Case) -> None:
    assert case.tok.run_prefix == PREFIX[case.scheme]


# U+2581 itself is left out: SentencePiece vocabularies spell a space with it, so a U+2581
# in content decodes as a space (for the model's own decoder too).
TEXT = st.text(alphabet=st.one_of(st.sampled_from(ALPHABET + ["\t"]),
                                  st.characters(codec="utf-8", exclude_characters="\u2581")), max_size=40)


@settings(max_examples=60, deadline=None)
@given(text=TEXT)
def test_encode_text_is_the_run_after_a_control(case: Case, text: str) -> None:
    # the whole-text reference splits out special tokens; encode_text never parses them
    assume(not any(c in text for c in (*CONTROLS, *MODEL_SPECIALS)))
    assert case.tok.encode_text(text) == case.after_control(text)


@settings(max_examples=60, deadline=None)
@given(text=TEXT)
def test_token_bytes_show_exactly_the_run_prefix(case: Case, text: str) -> None:
    data = text.encode()
    got = b"".join(case.tok.token_bytes(i) for i in case.tok.encode_text(text))
    prefix = case.tok.run_prefix if data else b""
    if case.scheme in ("always", "bytelevel") and data.startswith(b" "):
        prefix = b""  # these prepend only to a run that does not start with a space
    assert got == prefix + data
    assert b"".join(case.tok.token_bytes(i) for i in case.tok.encode_continuation(text)) == data


@settings(max_examples=60, deadline=None)
@given(text=TEXT)
def test_decode_round_trip(case: Case, text: str) -> None:
    ids = case.tok.encode_text(text)
    if case.scheme in ("always", "bytelevel") and text.startswith(" "):
        # " x" and "x" are the same ids for these tokenizers (for the model too): one answer.
        assert case.tok.decode(ids) == text[1:]
    else:
        assert case.tok.decode(ids) == text
        assert case.tok.decode_bytes(ids) == text.encode()


def test_continuation_is_the_text_after_text(case: Case) -> None:
    tok = case.tok
    # (pairs whose boundary no merge crosses: pieces are never merged across, by design)
    for a, b in [("assistant", " to=functions.get"), ("commentary", " json"), ("x", " 42."), ("tool", " name=x")]:
        assert tok.encode_text(a) + tok.encode_continuation(b) == case.after_control(a + b), (a, b)


CONVERSATIONS = [
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hello world"},
     {"role": "assistant", "content": "Hi there!"}],
    [{"role": "user", "content": "Call it"},
     {"role": "assistant", "content": "", "tool_calls": [
         {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{\"x\": 1}"}}]},
     {"role": "tool", "tool_call_id": "c1", "name": "get", "content": "42"},
     {"role": "assistant", "content": "It is 42.\n\nDone", "thinking": "think"}],
    [{"role": "user", "content": "odd  spacing\t<|x|>\n"}, {"role": "assistant", "content": "caf\u00e9 \U0001f642"}],
    [{"role": "user", "content": " leading space"}, {"role": "assistant", "content": "  two"}],
]
LEADING_SPACE = 3  # the conversation whose contents start with a space


def _decodes_exactly(case: Case, k: int) -> bool:
    """False where a content's leading space and the run prefix are the same ids (always / ByteLevel)."""
    return not (k == LEADING_SPACE and case.scheme in ("always", "bytelevel"))


@lru_cache(maxsize=None)
def _whole_texts() -> list[str]:
    """The rendered sequences as text, from a byte-exact tiktoken render (independent of the tokenizers here)."""
    ref = encoder.Encoder(FORMAT, tokenizer=vocab.load("o200k_base", register=FORMAT))
    return [ref.tokenizer.decode(ref.render(c).ids.tolist()) for c in CONVERSATIONS]


# (The conversation with a tool call has header text right after text: the renderer encodes it
# with encode_continuation, so the legacy Prepend normalizer adds no second ▁ there; parse drops
# Tokenizer.run_prefix at the start of every text run.)


@pytest.mark.parametrize("k", range(len(CONVERSATIONS)))
def test_render_equals_the_whole_text_encoding(case: Case, k: int) -> None:
    whole = _whole_texts()[k]
    ids = case.enc.render(CONVERSATIONS[k]).ids.tolist()
    assert ids == case.whole(whole)
    if _decodes_exactly(case, k):
        assert case.tok.decode(ids) == whole


@pytest.mark.parametrize("k", range(len(CONVERSATIONS)))
def test_decode_of_the_models_ids_is_the_text(case: Case, k: int) -> None:
    whole = _whole_texts()[k]
    if _decodes_exactly(case, k):
        assert case.tok.decode(case.whole(whole)) == whole
    else:
        assert case.tok.decode(case.whole(whole)) == whole.replace("> ", ">")


@pytest.mark.parametrize("k", range(len(CONVERSATIONS)))
def test_parse_gives_back_the_content(case: Case, k: int) -> None:
    conv = CONVERSATIONS[k]
    ref = encoder.Encoder(FORMAT, tokenizer=vocab.load("o200k_base", register=FORMAT))
    want = ref.parse(ref.render(conv).ids)
    if not _decodes_exactly(case, k):
        want = [m.with_(content=m.content[1:]) if m.content.startswith(" ") else m for m in want]
    assert case.enc.parse(case.enc.render(conv).ids) == want


def test_to_hf_is_the_models_tokenizer(case: Case) -> None:
    fast = case.tok.to_hf()
    for whole in _whole_texts():
        assert fast.encode(whole, add_special_tokens=False) == case.whole(whole)


def test_first_scheme_is_not_rewritten_for_the_caller() -> None:
    model = model_tokenizer("bpe", "first")
    tok = vocab.from_hf(model, register=FORMAT)
    assert "first" in model.to_str() and "first" in tok.backend.to_str()  # the model's own, untouched
    # Alone, "first" puts U+2581 before a piece; after a control it does not: we follow the latter.
    assert model.encode("Hello").ids != tok.encode_text("Hello")
    assert tok.fingerprint.endswith(":runs-after-special")
    clone = pickle.loads(pickle.dumps(tok))
    assert clone.encode_text("Hello world") == tok.encode_text("Hello world")
    assert clone.fingerprint == tok.fingerprint


def test_byte_level_without_prefix_is_unchanged() -> None:
    raw = tokenizers.Tokenizer(models.BPE(vocab={c: i for i, c in enumerate("abc")}, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok = vocab.from_hf(raw, register=FORMAT)
    assert tok.run_prefix == b"" and tok.encode_continuation("abc") == tok.encode_text("abc")
    assert not tok.fingerprint.endswith(":runs-after-special")


# -- stream decoders (StreamDecoder, BatchDecoder) drop the run prefix where parse does ------------

from ocml.encoder.events import Delta, Error, MessageEnd, MessageStart, Stop  # noqa: E402
from ocml.encoder.parse import parse_ids  # noqa: E402
from ocml.encoder.stream.batch import BatchDecoder  # noqa: E402


def _chunks(ids: list[int], size: int | None) -> list[list[int]]:
    return [ids] if size is None else [ids[k:k + size] for k in range(0, len(ids), size)]


def _merged(events: list) -> list:
    """Adjacent deltas merged, ``Stop.trailing`` zeroed: the chunk-invariant form of a stream."""
    out: list = []
    for ev in events:
        if type(ev) is Stop:
            ev = Stop(ev.reason, ev.token, ev.position, 0)
        if type(ev) is Delta and out and type(out[-1]) is Delta:
            assert (out[-1].channel, out[-1].visible) == (ev.channel, ev.visible)
            ev = Delta(out[-1].text + ev.text, ev.channel, ev.visible)
            out[-1] = ev
        else:
            out.append(ev)
    return out


def _contents_from_deltas(events: list) -> list[str]:
    """Per message: the joined deltas, checked against the message the MessageEnd carries."""
    got: list[str] = []
    buf: list[str] | None = None
    for ev in events:
        if type(ev) is MessageStart:
            buf = []
        elif type(ev) is Delta:
            assert buf is not None
            buf.append(ev.text)
        elif type(ev) is MessageEnd:
            text = "".join(buf) if buf is not None else ""
            assert text == ev.message.content
            got.append(text)
            buf = None
    return got


def streamed(enc: encoder.Encoder, ids: list[int], size: int | None, role: str | None = None,
             restart: bool = True) -> tuple[list, list]:
    """Stream ``ids`` in chunks of ``size`` (None: all at once); after a stop (``<|return|>``,
    ``<|call|>``) a new decoder takes the rest, as a server would for the next turn.
    -> (merged events per segment, messages)."""
    segments, messages = [], []
    pos = 0
    while True:
        dec = enc.decoder(role=role)
        events: list = []
        rest = ids[pos:]
        for chunk in _chunks(rest, size):
            events += dec.feed(chunk)
            if dec.done:
                break
        events += dec.finish()
        segments.append(_merged(events))
        messages += dec.messages
        stop = dec.stopped
        if stop is None or not restart:
            return segments, messages
        pos += stop.position + 1
        role = None
        if pos >= len(ids):
            return segments, messages


def check_stream_is_parse(enc: encoder.Encoder, ids: list[int], role: str | None = None) -> list:
    """Fed one id at a time, at odd chunk sizes and all at once: the same events; the deltas
    joined per message are the contents; the messages are ``enc.parse(ids)``."""
    ref_segments, messages = streamed(enc, ids, None, role)
    for size in (1, 2, 3, 7):
        assert streamed(enc, ids, size, role)[0] == ref_segments, size
    contents = [c for seg in ref_segments for c in _contents_from_deltas(seg)]
    want = enc.parse(ids, role=role)
    assert messages == want
    assert contents == [m.content for m in want]
    return ref_segments


@pytest.mark.parametrize("k", range(len(CONVERSATIONS)))
def test_stream_contents_are_parse_contents(case: Case, k: int) -> None:
    ids = case.enc.render(CONVERSATIONS[k]).ids.tolist()
    check_stream_is_parse(case.enc, ids)
    if _decodes_exactly(case, k):  # and the content is what was rendered
        ref = encoder.Encoder(FORMAT, tokenizer=vocab.load("o200k_base", register=FORMAT))
        assert streamed(case.enc, ids, 1)[1] == ref.parse(ref.render(CONVERSATIONS[k]).ids)


def _completion(case: Case, ids: list[int]) -> list[int]:
    """The ids after the last ``<|start|>assistant`` generation prompt."""
    prompt = [case.tok.control_id("<|start|>"), *case.tok.encode_text("assistant")]
    at = max(j for j in range(len(ids)) if ids[j:j + len(prompt)] == prompt)
    return ids[at + len(prompt):]


@pytest.mark.parametrize("k", range(len(CONVERSATIONS)))
def test_stream_after_a_role_prefill_is_parse(case: Case, k: int) -> None:
    ids = _completion(case, case.enc.render(CONVERSATIONS[k]).ids.tolist())
    segs = check_stream_is_parse(case.enc, ids, role="assistant")
    assert not [e for seg in segs for e in seg if type(e) is Error]


@pytest.mark.parametrize("vectorized", [False, True])
def test_batch_decoder_contents_are_parse_contents(case: Case, vectorized: bool) -> None:
    enc = case.enc
    rows = [enc.render(c).ids.tolist() for c in CONVERSATIONS]
    rows += [_completion(case, r) for r in rows]
    roles = [None] * len(CONVERSATIONS) + ["assistant"] * len(CONVERSATIONS)
    n = len(rows)
    bd = BatchDecoder(enc, n, role=None, vectorized=vectorized)
    for r, role in enumerate(roles):
        if role is not None:
            bd.reset(r, role=role)
    events: list[list] = [[] for _ in range(n)]
    for t in range(max(map(len, rows))):
        out = bd.step([row[t] if t < len(row) else -1 for row in rows])
        for r in range(n):
            events[r] += out[r]
    for r, ev in enumerate(bd.finish()):
        events[r] += ev
    for r, (ids, role) in enumerate(zip(rows, roles)):
        # the batch stops a row at <|return|> / <|call|>: the single decoder's first segment
        first, _ = streamed(enc, ids, 1, role, restart=False)
        assert _merged(events[r]) == first[0], r
        stop = bd.stopped[r]
        upto = ids[:stop.position + 1] if stop is not None else ids
        want = enc.parse(upto, role=role)
        assert bd.messages(r) == want
        assert _contents_from_deltas(events[r]) == [m.content for m in want]


def _soup_pool(case: Case) -> list[list[int]]:
    """Pieces of id sequences around run starts: controls, specials, bad ids, text with and
    without the run prefix, the prefix alone and split characters."""
    tok = case.tok
    pool = [[tok.control_id(c)] for c in ("<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>",
                                          "<|literal|>", "<|endliteral|>")]
    pool += [[tok.specials[s]] for s in ("<s>", "</s>") if s in tok.specials] + [[10 ** 7]]
    words = ("assistant", "user", "final", "analysis", " to=functions.f", "json", "hi", " ", "  x", "<|end|>", "\u00e9")
    pool += [tok.encode_text(w) for w in words] + [tok.encode_continuation(w) for w in words]
    emoji = tok.encode_continuation("\U0001f642")
    pool += [emoji[:j] for j in range(1, len(emoji) + 1)]
    alone = [i for i, b in enumerate(tok.token_bytes_table) if tok.run_prefix and b == tok.run_prefix]
    pool += [alone] * 3
    return pool


def test_stream_soup_is_parse(case: Case) -> None:
    import random

    enc = case.enc
    rng = random.Random(5)
    pool = _soup_pool(case)
    specials = {case.tok.specials[s] for s in ("<s>", "</s>") if s in case.tok.specials}
    for _ in range(60):
        ids = [i for _ in range(rng.randint(1, 20)) for i in rng.choice(pool)]
        role = rng.choice([None, "assistant"])
        segs = check_stream_is_parse(enc, ids, role)
        lit = case.tok.control_id("<|literal|>")
        if lit in ids and set(ids[ids.index(lit):]) & specials:
            continue  # a special id in a literal block: text to parse, an error to the stream (as before)
        res = parse_ids(enc, ids, role=role, detailed=True)
        assert len(segs) == 1  # (no stopping control in the pool)
        assert [e for e in segs[0] if type(e) is Error] == res.errors  # codes, positions, left-out text


def test_literal_block_ids_start_runs(case: Case) -> None:
    """A control id inside a literal block is its text, and a run starts after it (parse's cut)."""
    tok, enc = case.tok, case.enc
    c = tok.control_id
    ids = [c("<|start|>"), *tok.encode_text("assistant"), c("<|message|>"), *tok.encode_text("a"),
           c("<|literal|>"), *tok.encode_text("x"), c("<|end|>"), *tok.encode_text("y"), c("<|endliteral|>"),
           *tok.encode_text("z"), c("<|end|>")]
    check_stream_is_parse(enc, ids)
    assert enc.parse(ids)[0].content == "ax<|end|>yz"


def test_fallback_mode_drops_only_the_first_prefix() -> None:
    """Controls spelled as text are text to the tokenizer: only the start of the ids is a run start."""
    for kind, scheme in CASES:
        tok = vocab.from_hf(model_tokenizer(kind, scheme))  # no controls registered: the fallback
        enc = encoder.Encoder(FORMAT, tokenizer=tok)
        assert enc.format.text_controls
        for conv in CONVERSATIONS:
            ids = enc.render(conv).ids.tolist()
            check_stream_is_parse(enc, ids)
            check_stream_is_parse(enc, tok.encode_text("stray") + ids)


def test_tiktoken_decoders_have_no_run_start_state() -> None:
    """Without a run prefix the scanner never leaves the fast paths' state for it."""
    enc = encoder.Encoder(FORMAT, tokenizer=vocab.load("o200k_base", register=FORMAT))
    dec = enc.decoder(role="assistant")
    assert dec.tables.run_prefix == b"" and dec.scanner._state == 0
    dec.feed([enc.tokenizer.control_id("<|message|>")])
    assert dec.scanner._state == 0 and dec.lean_table is not None
