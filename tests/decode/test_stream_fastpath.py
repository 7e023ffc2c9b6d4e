"""Stream decoder: the lean single-id path, outcome status, ``include_stop_str_in_output``.

The lean path (``StreamDecoder.feed`` of one ordinary id inside content, skipping the
scanner via ``Scanner.fast_text``) and the scanner's own single-id path must be invisible:
one-id feeds, whole-array feeds, mixed chunkings and a decoder with both fast paths
disabled give the same merged events, in id mode and fallback mode, with multi-byte
UTF-8 split over tokens, control text split over tokens, stop strings and bad ids.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from ocml import encoder
from ocml.encoder.events import Delta, Error, MessageEnd, Stop
from ocml.encoder.stream.scanner import Scanner, coalesce

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from support.stream import MODES, build, byte_ids, check_stream, ctl, merge, msgs  # noqa: E402
from support.stream import STOPS, final_prefix, pool
# (a stop that can end inside a control spelled as text, e.g. "x<", is refused: E-STOP-OVERLAPS-CONTROL)


# -- helpers ------------------------------------------------------------------------------

def run(enc, ids, sizes, **kw):
    """Feed ``ids`` in chunks of ``sizes`` (then the rest in one), finish; (raw events, decoder)."""
    dec = enc.decoder(**kw)
    ev, pos = [], 0
    for s in sizes:
        if pos >= len(ids):
            break
        ev += dec.feed(ids[pos:pos + s])
        pos += s
    if pos < len(ids):
        ev += dec.feed(ids[pos:])
    ev += dec.finish()
    return ev, dec


class _NoFast:
    """Disable both single-id fast paths (decoder lean path and scanner single-id branch)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.mp = monkeypatch

    def __enter__(self) -> None:
        self.mp.setattr(Scanner, "fast_text", property(lambda self: None))
        orig = Scanner.feed

        def feed(self, ids):  # a tuple skips the scanner's `type(ids) is list` single-id branch
            return orig(self, tuple(ids))

        self.mp.setattr(Scanner, "feed", feed)

    def __exit__(self, *exc) -> None:
        self.mp.undo()


def reference(enc, ids, monkeypatch, **kw):
    """Merged events of one-id feeds with the fast paths disabled (the plain scanner loop)."""
    with _NoFast(monkeypatch):
        ev, dec = run(enc, ids, [1] * len(ids), **kw)
        return merge(ev), dec.status


def deltas_match_contents(events) -> None:
    buf: list[str] | None = None
    for ev in events:
        if type(ev) is Delta:
            assert ev.text
            if buf is not None:
                buf.append(ev.text)
        elif type(ev).__name__ == "MessageStart":
            buf = []
        elif type(ev) is MessageEnd and buf is not None:
            assert "".join(buf) == ev.message.content
            buf = None


# -- the lean path is invisible ------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stops", [(), tuple(STOPS)])
@pytest.mark.parametrize("include", [False, True])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_single_id_feeds_equal_whole_array(encs, monkeypatch, mode, stops, include, data):
    enc = encs[mode]
    pieces = pool(enc, mode)
    picks = data.draw(st.lists(st.integers(0, len(pieces) - 1), min_size=1, max_size=40))
    ids = final_prefix(enc) + [i for k in picks for i in pieces[k]]
    if data.draw(st.booleans()):
        ids += build(enc, "ctl:<|return|>", "tail")
    kw = dict(role="assistant", stop_strings=stops, include_stop_str_in_output=include)
    ref, ref_status = reference(enc, ids, monkeypatch, **kw)
    deltas_match_contents(ref)
    ones, dec1 = run(enc, ids, [1] * len(ids), **kw)
    whole, dec2 = run(enc, ids, [len(ids)], **kw)
    sizes = data.draw(st.lists(st.sampled_from([1, 1, 1, 2, 3, 8]), max_size=len(ids)))
    mixed, dec3 = run(enc, ids, sizes, **kw)
    for got in (ones, whole, mixed):
        deltas_match_contents(got)
        assert merge(got) == ref
    assert dec1.status == dec2.status == dec3.status == ref_status
    # whatever was streamed is what the batch parser reads (up to the stop)
    stop = [e for e in ref if type(e) is Stop]
    if not stops:
        upto = ids[:stop[0].position + 1] if stop else ids
        assert msgs(ref) == enc.parse(upto, role="assistant")


@pytest.mark.parametrize("mode", ["harmony", "ocml-text"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30),
       seed=st.integers(0, 2 ** 16))
def test_split_utf8_text(encs, mode, text, seed):
    """Arbitrary text, as its tokens or as one token per byte, streamed one id at a time."""
    enc = encs[mode]
    rng = random.Random(seed)
    body = byte_ids(enc, text.encode()) if rng.random() < 0.5 else enc.tokenizer.encode_text(text)
    ids = final_prefix(enc) + body + ctl(enc, "<|end|>")
    raw, dec = run(enc, ids, [1] * len(ids), role="assistant")
    ds = [e.text for e in raw if type(e) is Delta]
    assert not any("\ufffd" in d for d in ds) or "\ufffd" in text
    want = enc.parse(ids, role="assistant")
    assert msgs(raw) == want
    # raw "<" + "<|end|>" is an escape in fallback mode: then the message runs to the end
    cut = any(type(e) is Error and e.code == "E-STREAM-TRUNCATED" for e in raw)
    if mode == "harmony" or "<|" not in text:  # in fallback, raw control text (unescaped here) is structure
        assert dec.status == ("truncated" if cut else "final")
    assert merge(run(enc, ids, [len(ids)], role="assistant")[0]) == merge(raw)
    if mode == "harmony":  # no text patterns: every content token is on a fast path
        assert "".join(ds) == text


def test_lean_path_skips_the_scanner(encs):
    """Plain content streamed one id at a time does not call the scanner (the speed bar rests on it)."""
    enc = encs["harmony"]
    body = enc.tokenizer.encode_text("The quick brown fox jumps over the lazy dog. " * 20)
    ids = final_prefix(enc) + body + ctl(enc, "<|return|>")
    dec = enc.decoder(role="assistant")
    calls = []
    scan = dec._scan
    dec._scan = lambda x: calls.append(x) or scan(x)
    out = []
    for i in ids:
        out += dec.feed([i])
    assert len(calls) <= 5, len(calls)  # header tokens, the first content token, <|return|>
    assert msgs(out)[0].content == "The quick brown fox jumps over the lazy dog. " * 20
    assert dec.feed([body[0]]) == [] and dec.status == "final"


@pytest.mark.parametrize("mode", MODES)
def test_lean_path_input_types_and_bad_ids(encs, mode):
    """int / numpy scalar / one-element array feeds; negative and huge ids never take the lean path."""
    enc = encs[mode]
    ids = final_prefix(enc) + enc.tokenizer.encode_text("ab cd") + [-1, -enc.tokenizer.n_vocab, 10 ** 9] \
        + enc.tokenizer.encode_text(" ef") + ctl(enc, "<|end|>")
    ref = merge(run(enc, ids, [len(ids)], role="assistant")[0])
    assert [e.code for e in ref if type(e) is Error] == ["E-VOCAB-ID"] * 3
    for conv in (int, np.int64, lambda i: np.array([i]), lambda i: [i]):
        dec = enc.decoder(role="assistant")
        ev = [e for i in ids for e in dec.feed(conv(i))] + dec.finish()
        assert merge(ev) == ref, conv


def test_scanner_single_id_paths(encs):
    """The scanner's own single-id branches (fast_text, split characters) equal its general loop."""
    enc = encs["ocml-text"]
    from ocml.encoder.stream.decoder import tables_for

    tables = tables_for(enc, ("结束",))
    text = "a🙂b 结束 <|end|> é<<|start|>日本語 👨‍👩‍👧 <"
    for ids in (enc.tokenizer.encode_text(text), byte_ids(enc, text.encode())):
        ids = ids + [10 ** 8, -2] + byte_ids(enc, "🙂".encode())[:2]
        one, whole = Scanner(tables), Scanner(tables)
        a = [x for i in ids for x in one.feed([i])] + one.finish()
        b = whole.feed(tuple(ids)) + whole.finish()
        assert coalesce(a) == coalesce(b)
    # fast_text is None exactly where the byte path is needed
    mode = tables.normal
    tb = enc.tokenizer.token_bytes_table
    for t in enc.tokenizer.encode_text(text) + byte_ids(enc, "🙂".encode()):
        want = tb[t].decode() if mode.fast[t] == 0 and _complete(tb[t]) else None
        assert mode.fast_text[t] == want
    assert all(v is None for v in mode.fast_text[tables.n_vocab:])
    # the documented protocol: while fast_text is not None, advance_text() == feed([t])
    a, b = Scanner(tables), Scanner(tables)
    got, want = [], []
    for t in enc.tokenizer.encode_text("plain words then é and 日本"):
        ft = a.fast_text
        if ft is not None and ft[t] is not None:
            got.append(("text", ft[t], a.advance_text()))
        else:
            got += [("text", x.text, x.token_index) for x in a.feed([t])]
        want += [("text", x.text, x.token_index) for x in b.feed([t])]
    assert got == want and a.index == b.index and a.pending == b.pending


def _complete(b: bytes) -> bool:
    try:
        b.decode()
        return True
    except UnicodeDecodeError:
        return False


def test_token_text_is_shared_between_profiles(encs):
    from ocml.encoder.stream.decoder import tables_for

    enc = encs["ocml-text"]
    a, b = tables_for(enc, ()), tables_for(enc, ("zzz-only-here",))
    assert a is not b and a.token_text is b.token_text


# -- include_stop_str_in_output --------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("split", ["tokens", "bytes"])
def test_include_stop_str_in_output(encs, mode, split):
    """D32: the stop string is streamed and kept only when asked; split across tokens or not."""
    enc = encs[mode]
    body = "It is Paris 结束, yes"
    piece = byte_ids(enc, body.encode()) if split == "bytes" else enc.tokenizer.encode_text(body)
    ids = build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>", "Paris 结束", "ctl:<|end|>",
                "ctl:<|start|>", "assistant") + final_prefix(enc) + piece + ctl(enc, "<|return|>")
    for stop, before in (("Pari", "It is "), ("结束", "It is Paris ")):
        ev = check_stream(enc, ids, role="assistant", stop_strings=[stop])
        assert [m.content for m in msgs(ev)] == ["Paris 结束", before]
        assert ev[-1].reason == "stop_string" and ev[-1].token == stop
        ev2 = check_stream(enc, ids, role="assistant", stop_strings=[stop], include_stop_str_in_output=True)
        assert [m.content for m in msgs(ev2)] == ["Paris 结束", before + stop]
        assert [e.reason for e in ev2 if type(e) is MessageEnd] == ["end", "truncated"]
        assert [e for e in ev2 if type(e) is Delta][-1] == Delta(before + stop, "final", True)
        assert ev2[-1] == ev[-1] and not any(type(e) is Error for e in ev2)
        dec = enc.decoder(role="assistant", stop_strings=[stop], include_stop_str_in_output=True)
        dec.feed(ids)
        assert dec.status == "final" and dec.final_message.content == before + stop


def test_include_stop_str_default_off(encs):
    enc = encs["harmony"]
    dec = enc.decoder(role="assistant", stop_strings=["Pari"])
    assert dec.include_stop_str_in_output is False
    dec.feed(final_prefix(enc) + enc.tokenizer.encode_text("Paris"))
    assert dec.final_message.content == "" and dec.stopped.reason == "stop_string"


# -- outcome status ------------------------------------------------------------------------------

def _status(enc, ids, *, finish=True, **kw):
    dec = enc.decoder(role="assistant", **kw)
    ev = dec.feed(ids)
    if finish:
        ev += dec.finish()
    return dec, ev


@pytest.mark.parametrize("mode", MODES)
def test_status(encs, mode):
    enc = encs[mode]
    eot = enc.tokenizer.control_id("<|endoftext|>")
    analysis = build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>", "let me think", "ctl:<|end|>")
    start = build(enc, "ctl:<|start|>", "assistant")
    final = start + final_prefix(enc) + enc.tokenizer.encode_text("42")
    call = start + build(enc, "ctl:<|channel|>", "commentary to=functions.f ", "ctl:<|message|>", "{}", "ctl:<|call|>")

    dec = enc.decoder(role="assistant")
    assert dec.status == "running" and dec.final_message is None
    dec.feed(analysis)
    assert dec.status == "running"

    # the answer: <|return|>, or <|end|> then EOS
    dec, _ = _status(enc, analysis + final + ctl(enc, "<|return|>"), finish=False)
    assert dec.status == "final" and dec.final_message.content == "42" and dec.stopped.reason == "return"
    dec, _ = _status(enc, analysis + final + ctl(enc, "<|end|>"))
    assert dec.status == "final"
    # a tool call
    dec, _ = _status(enc, analysis + call, finish=False)
    assert dec.status == "tool_call" and dec.messages[-1].recipient == "functions.f"
    # analysis, <|end|>, then EOS (finish) or a stop id: ended, but no answer (vmlx-swift PR #91)
    dec, ev = _status(enc, analysis)
    assert dec.status == "no_final" and dec.final_message is None
    assert not any(type(e) is Error for e in ev)
    dec, ev = _status(enc, analysis + [eot], stop_ids=[eot])
    assert dec.status == "no_final" and ev[-1].reason == "stop_id"
    if mode != "ocml-text":  # <|end|> as a stop id (stop_ids(enc, "all"))
        end_id = enc.tokenizer.control_id("<|end|>")
        dec, ev = _status(enc, analysis, stop_ids=[end_id], finish=False)
        assert dec.status == "no_final" and ev[-1] == Stop("stop_id", "<|end|>", len(analysis) - 1, 0)
        dec, ev = _status(enc, final[len(start):] + ctl(enc, "<|end|>"), stop_ids=[end_id], finish=False)
        assert dec.status == "final" and ev[-1].reason == "stop_id"
        # <|start|> as a stop id opens an empty header: not a truncation
        start_id = enc.tokenizer.control_id("<|start|>")
        dec, ev = _status(enc, analysis + start, stop_ids=[start_id], finish=False)
        assert dec.status == "no_final" and not any(type(e) is Error for e in ev)
    # <|return|> after <|end|> (ignore_eos): error, stop, still no answer
    dec, ev = _status(enc, analysis + ctl(enc, "<|return|>"), finish=False)
    assert dec.status == "no_final" and dec.stopped.reason == "return"
    # empty completion
    dec, ev = _status(enc, [])
    assert dec.status == "no_final" and ev == []
    # cut off: inside content (max tokens), inside a header, or EOS id mid-message
    dec, ev = _status(enc, analysis + final)
    assert dec.status == "truncated" and dec.final_message.content == "42"  # the partial answer
    assert [e.code for e in ev if type(e) is Error] == ["E-STREAM-TRUNCATED"]
    dec, _ = _status(enc, analysis + start + build(enc, "ctl:<|channel|>", "fin"))
    assert dec.status == "truncated"
    dec, ev = _status(enc, analysis + final + [eot] + enc.tokenizer.encode_text("more"), stop_ids=[eot],
                      finish=False)
    assert dec.status == "truncated"
    assert [type(e).__name__ for e in ev[-3:]] == ["Error", "MessageEnd", "Stop"]
    assert ev[-2].reason == "truncated" and ev[-2].message.content == "42" and ev[-1].trailing == 1
    assert dec.finish() == [] and dec.status == "truncated"
    # a stop string inside the answer: the answer was produced, cut on purpose
    dec, _ = _status(enc, analysis + final + enc.tokenizer.encode_text(" STOP here"), stop_strings=["STOP"])
    assert dec.status == "final" and dec.final_message.content == "42 "
    # reset forgets it
    dec.reset()
    assert dec.status == "running" and dec.final_message is None


@pytest.mark.parametrize("mode", MODES)
def test_strict_stop_id_mid_message_raises(encs, mode):
    from ocml.encoder.errors import ParseError

    enc = encs[mode]
    eot = enc.tokenizer.control_id("<|endoftext|>")
    dec = enc.decoder(role="assistant", strict=True, stop_ids=[eot])
    with pytest.raises(ParseError):
        dec.feed(final_prefix(enc) + enc.tokenizer.encode_text("x") + [eot])
    assert dec.status == "truncated"


@pytest.mark.parametrize("chunked", [False, True])
def test_far_negative_ids_are_invalid_never_wrapped_onto_real_tokens(chunked):
    """Ids below -n_vocab once indexed real tokens through the tables' sentinel half."""
    e = encoder.Encoder("harmony")
    n = e.tokenizer.n_vocab
    head = [e.tokenizer.control_id("<|channel|>"), *e.tokenizer.encode_text("final"), e.tokenizer.control_id("<|message|>")]
    body = e.tokenizer.encode_text("ok")
    bad = -(2 * n - 5000)
    ids = head + body + [bad] + body
    d = e.decoder(role="assistant")
    evs = d.feed(ids) if chunked else [ev for i in ids for ev in d.feed([i])]
    errs = [ev for ev in evs if ev.type == "error"]
    assert [(x.code, x.position) for x in errs] == [("E-VOCAB-ID", len(head) + len(body))]
    assert str(bad) in errs[0].message
    assert "".join(ev.text for ev in evs if ev.type == "delta") == "okok"
