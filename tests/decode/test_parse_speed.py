"""Batch ``parse`` of ids: the vectorised parser against a per-token reference, and its speed.

``ocml.encoder.parse`` finds controls with numpy, decodes every ordinary token with one
gather from a flat byte table and slices the runs by byte offsets.  The reference
below is the plain algorithm it must agree with: walk the ids one by one, decode each
maximal run of ordinary ids with the tokenizer's own table, split controls spelled as
text with the straightforward ``(<?)(ctl|...)`` regex, and feed the same frame machine.
Agreement is checked on messages, end reasons and errors (code, message, position),
for every input type (list, tuple, int32 / int64 / uint32 arrays), on rendered
conversations and on id soup (invalid ids, holes in the vocabulary, specials, controls
inside literal blocks, escapes, UTF-8 split across a control).
"""

from __future__ import annotations

import bisect
import itertools
import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml.encoder.errors import OcmlError
from ocml.encoder.read.frames import FrameMachine
from ocml.encoder.parse import IdParser, TextSplitter, parse_ids, parser_for
from ocml.encoder.prefill import prefill_role

from support.gen import WORDS, harmony_conversation

from support.render import ENCODERS, enc_  # noqa: E402  (one encoder table for the suite)


# -- the reference: one token at a time ------------------------------------------------

class RefParser:
    def __init__(self, enc: encoder.Encoder) -> None:
        tok = enc.tokenizer
        self.enc = enc
        self.table = tok.token_bytes_table
        self.n = tok.n_vocab
        t = enc.format.table
        self.known = set(t.controls) | set(t.markers)
        self.markers = frozenset(t.markers)
        self.special = {i: s for s, i in tok.specials.items() if 0 <= i < tok.n_vocab}
        ctls = sorted(enc.format.text_controls, key=len, reverse=True)
        self.pat = re.compile(b"(<?)(" + b"|".join(re.escape(c.encode()) for c in ctls) + b")") if ctls else None
        self.endlit = b"<|endliteral|>" if "<|endliteral|>" in ctls else None

    def _text(self, data: bytes, fm: FrameMachine, start: int, ends: list[int], literal: bool,
              stop_at: tuple[frozenset[str], int] | None = None) -> tuple[bool, bool]:
        """``ends``: the run's cumulative token byte ends; a run of text (text and escapes up to
        the next control) is decoded as one and given at the token of its first byte, a control
        at the token of its last (where the stream decoder recognises it).  ``stop_at``: (stop
        controls, last token): such a stop whose last byte is in that token ends the input (the
        rest of the token is past the stop).  -> (literal, stopped)."""

        def at(offset: int) -> int:
            return start + bisect.bisect_right(ends, offset)

        run: list[bytes] = []
        run_at = [0]

        def add(b: bytes, offset: int) -> None:
            if b:
                if not run:
                    run_at[0] = at(offset)
                run.append(b)

        def flush() -> None:
            if run:
                fm.text(b"".join(run).decode("utf-8", "replace"), run_at[0])
                run.clear()

        i = 0
        while i < len(data):
            if literal:
                k = data.find(self.endlit, i) if self.endlit else -1
                if k < 0:
                    add(data[i:], i)
                    break
                add(data[i:k], i)
                flush()
                literal, i = False, k + len(self.endlit)
                continue
            m = self.pat.search(data, i) if self.pat else None
            if m is None:
                add(data[i:], i)
                break
            add(data[i:m.start()], i)
            name = m.group(2).decode()
            if m.group(1):
                add(name.encode(), m.start())
            elif name == "<|literal|>":
                flush()
                literal = True
            else:  # a control, or an <|endliteral|> with no block to close (stray): at its last byte
                flush()
                fm.control(name, at(m.end() - 1))
                if stop_at is not None and at(m.end() - 1) == stop_at[1] and name in stop_at[0]:
                    return literal, True
            i = m.end()
        flush()
        return literal, False

    def parse(self, ids, role=None, strict=False):
        fm = FrameMachine(header=self.enc.format.header_style, strict=strict, role=role, markers=self.markers)
        ids = np.asarray(ids, dtype=np.int64).tolist()
        literal = False
        run: list[bytes] = []
        start = 0
        stops = frozenset(self.enc.format.stop_reasons(prefill_role(self.enc.format, role)))
        last, stopped = b"", False
        for k, i in enumerate(ids + [None]):
            ordinary = i is not None and 0 <= i < self.n and i not in self.special and self.table[i] is not None
            if ordinary:
                if not run:
                    start = k
                run.append(self.table[i])
                continue
            if run:
                data = b"".join(run)
                literal, stopped = self._text(data, fm, start, list(itertools.accumulate(map(len, run))), literal,
                                              (stops, len(ids) - 1) if i is None and stops else None)
                last = data if i is None else b""
                run = []
            if i is None:
                break
            name = self.special.get(i)
            if name is None:
                fm.error("E-VOCAB-ID", f"id {i} is not in the vocabulary", k)
            elif literal:
                if name == "<|endliteral|>":
                    literal = False
                elif name in self.known:  # a control id of the format inside a literal block: its text
                    fm.text(name, k)
                else:  # an id that is not part of the format is never text (encoder.read.route)
                    fm.special(name, k)
            elif name == "<|literal|>":
                literal = True
            elif name in self.known:
                fm.control(name, k)
            else:
                fm.special(name, k)
        # a control cut by the end inside a message (``Answer<|ret``) is out of it, as the stream has it
        cut = self.enc.lexicon.partial_control(last) if stops and last and not stopped and not literal \
            and fm.open_content else 0
        if cut:
            fm.finish(len(ids), fm.cut_content(cut))
        else:
            fm.finish(len(ids))
        return fm.messages, fm.ends, [(e.code, e.message, e.position) for e in fm.errors]


_refs: dict[str, RefParser] = {}


def ref_(name: str) -> RefParser:
    if name not in _refs:
        _refs[name] = RefParser(enc_(name))
    return _refs[name]


def ours(enc, ids, **kw):
    res = parse_ids(enc, ids, detailed=True, **kw)
    return res.messages, res.ends, [(e.code, e.message, e.position) for e in res.errors]


def forms(ids: list[int]):
    """The same ids as every input type ``parse`` takes."""
    yield ids
    yield tuple(ids)
    yield np.asarray(ids, dtype=np.int64)
    if all(-2**31 <= i < 2**31 for i in ids):
        yield np.asarray(ids, dtype=np.int32)
    if all(0 <= i < 2**32 for i in ids):
        yield np.asarray(ids, dtype=np.uint32)
    yield [np.int64(i) for i in ids]


def agree(name, ids, **kw):
    enc = enc_(name)
    want = ref_(name).parse(ids, **kw)
    for form in forms(ids):
        assert ours(enc, form, **kw) == want, (name, type(form), ids[:50])
    return want


# -- id soup -------------------------------------------------------------------------

def atoms_for(enc) -> list[list[int]]:
    """Pieces to glue: control ids, controls as text, specials, invalid ids, holes, text, lone bytes."""
    tok = enc.tokenizer
    out: list[list[int]] = []
    for c in list(enc.format.table.controls) + list(enc.format.table.markers) + ["<|literal|>", "<|endliteral|>"]:
        i = tok.control_id(c)
        if i is not None:
            out.append([i])
        out.append(tok.encode_text(c))
        out.append(tok.encode_text("<" + c))
    for s in ("<|endoftext|>", "<|reserved_200100|>"):
        if tok.control_id(s) is not None:
            out.append([tok.control_id(s)])
    table = tok.token_bytes_table
    holes = [i for i in range(min(len(table), tok.n_vocab)) if table[i] is None and i not in tok.specials.values()]
    out += [[h] for h in holes[:3]]
    out += [[-1], [-7], [tok.n_vocab], [tok.n_vocab + 5], [10**9]]
    for w in WORDS + ["assistant", "user", "final", "analysis", "commentary", " to=functions.f", " json",
                      "tool", "functions.f", " call_id=x1", " intent=preamble", "  "]:
        out.append(tok.encode_text(w))
    # the bytes of one multi-byte character, token by token (UTF-8 split across a control)
    by_byte = {b: i for i, b in enumerate(table[:300]) if b is not None and len(b) == 1}
    out.append([by_byte[bytes([b])] for b in "é".encode()[:1] if bytes([b]) in by_byte])
    return [a for a in out if a]


def frame_ids(enc, rng: random.Random) -> list[int]:
    """Mostly well-formed frames with random damage."""
    tok = enc.tokenizer

    def ctl(c):
        i = tok.control_id(c)
        return [i] if i is not None and c not in enc.format.text_controls else tok.encode_text(c)

    atoms = atoms_for(enc)
    out: list[int] = []
    for _ in range(rng.randint(0, 6)):
        out += ctl("<|start|>") + tok.encode_text(rng.choice(["assistant", "user", "tool", "functions.f", "robot"]))
        if rng.random() < 0.5:
            out += tok.encode_text(rng.choice([" to=functions.f", " call_id=c1", " name=functions.f", ""]))
        if rng.random() < 0.8:
            out += ctl("<|channel|>") + tok.encode_text(rng.choice(["final", "analysis", "commentary"]))
        if rng.random() < 0.3:
            out += ctl("<|constrain|>") + tok.encode_text("json")
        out += ctl("<|message|>")
        for _ in range(rng.randint(0, 5)):
            out += rng.choice(atoms) if rng.random() < 0.4 else tok.encode_text(rng.choice(WORDS))
        if rng.random() < 0.9:
            out += ctl(rng.choice(["<|end|>", "<|call|>", "<|return|>"]))
    return out


@pytest.mark.parametrize("name", list(ENCODERS))
def test_id_soup_agrees_with_the_reference(name):
    enc = enc_(name)
    atoms = atoms_for(enc)
    rng = random.Random(hash(name) & 0xFFFF)
    for _ in range(150):
        ids = [i for _ in range(rng.randint(0, 25)) for i in rng.choice(atoms)]
        agree(name, ids)
        agree(name, ids, role="assistant")
    for _ in range(150):
        agree(name, frame_ids(enc, rng), role=rng.choice([None, "assistant"]))


@pytest.mark.parametrize("name", list(ENCODERS))
def test_rendered_conversations_agree_with_the_reference(name):
    enc = enc_(name)
    rng = random.Random(7)
    done = 0
    while done < 25:
        conv = harmony_conversation(rng)
        try:
            r = enc.render(conv, mode="train", cot="keep-all")
        except OcmlError:
            continue
        done += 1
        msgs, ends, errors = agree(name, r.ids.tolist())
        if name in ("harmony", "ocm22", "ocm22-fallback", "ocm22-cl100k"):  # escaping formats round-trip
            assert not errors
        assert msgs == enc.parse(r.ids)


@pytest.mark.parametrize("name", ["harmony", "ocm22-fallback", "ocm20-fallback"])
def test_strict_raises_the_same_error(name):
    enc = enc_(name)
    rng = random.Random(3)
    for _ in range(120):
        ids = frame_ids(enc, rng)
        try:
            want = ("ok", ref_(name).parse(ids, strict=True))
        except OcmlError as exc:
            want = (type(exc), exc.code, str(exc))
        try:
            got = ("ok", ours(enc, ids, strict=True))
        except OcmlError as exc:
            got = (type(exc), exc.code, str(exc))
        assert got == want


def test_gather_path_when_controls_are_not_at_the_top_of_the_vocabulary():
    """Tokenizers whose specials sit among ordinary ids use the kind-table gather to find them."""
    for name in ("harmony", "ocm22-fallback", "ocm22-cl100k"):
        enc = enc_(name)
        p = parser_for(enc)
        assert p.lo is not None  # the usual layout: one comparison
        q = IdParser(enc)
        q.lo = None
        rng = random.Random(5)
        for _ in range(60):
            ids = frame_ids(enc, rng)
            fm1 = FrameMachine(header=enc.format.header_style, markers=p.markers)
            fm2 = FrameMachine(header=enc.format.header_style, markers=p.markers)
            p.feed_atoms(ids, fm1)
            q.feed_atoms(ids, fm2)
            assert (fm1.messages, fm1.ends, fm1.errors) == (fm2.messages, fm2.ends, fm2.errors)


def test_holes_in_the_vocabulary_are_reported_like_the_stream_decoder():
    """An id with no bytes (a gap between specials) is E-VOCAB-ID in parse and in the stream, never a crash."""
    enc = enc_("ocm22-fallback")
    tok = enc.tokenizer
    hole = next(i for i, b in enumerate(tok.token_bytes_table) if b is None and i not in tok.specials.values())
    ids = tok.encode_text("<|start|>assistant<|channel|>final<|message|>ab") + [hole] + tok.encode_text("cd<|end|>")
    res = parse_ids(enc, ids, detailed=True)
    assert res.messages[0].content == "abcd"
    assert [(e.code, e.position) for e in res.errors] == [("E-VOCAB-ID", ids.index(hole))]
    dec = enc.decoder()
    dec.feed(ids)
    dec.finish()
    assert dec.messages == res.messages and [e.code for e in dec.errors] == ["E-VOCAB-ID"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_any_ids_agree(data):
    name = data.draw(st.sampled_from(["harmony", "ocm22-fallback", "ocm22"]))
    enc = enc_(name)
    atoms = atoms_for(enc)
    picks = data.draw(st.lists(st.one_of(st.sampled_from(range(len(atoms))),
                                         st.integers(-3, enc.tokenizer.n_vocab + 3).map(lambda i: -i - 10)),
                               max_size=40))
    ids: list[int] = []
    for p in picks:
        ids += atoms[p] if p >= 0 else [-p - 10]  # an atom, or any raw id
    agree(name, ids, role=data.draw(st.sampled_from([None, "assistant"])))


def test_text_splitter_split_keeps_its_shape():
    sp = TextSplitter(["<|start|>", "<|end|>", "<|literal|>", "<|endliteral|>"])
    assert sp.split(b"a<|start|>b<<|end|>c<|literal|>x<|end|>y<|endliteral|>z", False) == (
        [(False, b"a"), (True, b"<|start|>"), (False, b"b"), (False, b"<|end|>"), (False, b"c"),
         (True, b"<|literal|>"), (False, b"x<|end|>y"), (True, b"<|endliteral|>"), (False, b"z")], False)
    assert sp.split(b"<|literal|>open", False) == ([(True, b"<|literal|>"), (False, b"open")], True)
    assert sp.split(b"", True) == ([], True)


def test_empty_and_degenerate_inputs():
    for name in ("harmony", "ocm22-fallback"):
        enc = enc_(name)
        for ids in ([], np.zeros(0, dtype=np.int32), [-1], [enc.tokenizer.n_vocab]):
            agree(name, list(np.asarray(ids, dtype=np.int64).tolist()))
            agree(name, list(np.asarray(ids, dtype=np.int64).tolist()), role="assistant")

# Speed is measured by scripts/bench_stream.py (ratios in one run), never as a timed test.
