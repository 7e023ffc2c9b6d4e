"""Adversarial decode-side cases of the decoding note §5 not covered elsewhere.

One test per case, named ``test_case_NN_<short>``; run in the three stream modes
(Harmony ids, OpenChatML 2.2 ids, 2.2 spelled as text on o200k_base).  Most streams go
through ``check_stream`` (every chunking agrees, deltas == contents) and are compared
with the batch parser ``enc.parse``.  ``COVERAGE`` at the end maps every case 1-49 to
the tests covering it, across the test files.
"""

from __future__ import annotations

import inspect
import itertools
import random

import pytest

from ocml.encoder.errors import HeaderError
from ocml.encoder.events import Delta, Error, MessageEnd, MessageStart, Stop

from support.stream import MODES, build, byte_ids, check_stream, ctl, merge, msgs, stream
from support.paths import TESTS


def _codes(events):
    return [e.code for e in events if type(e) is Error]


def _every_split(ids, n_cuts=2):
    """Chunk sizes cutting ``ids`` at every single and every pair of split points."""
    n = len(ids)
    for k in range(1, n_cuts + 1):
        for cuts in itertools.combinations(range(1, n), k):
            bounds = (0, *cuts, n)
            yield [b - a for a, b in zip(bounds, bounds[1:])]


def _same_at_every_split(enc, ids, **kw):
    ref = merge(stream(enc, ids, [len(ids)], **kw)[0])
    for sizes in _every_split(ids):
        assert merge(stream(enc, ids, sizes, **kw)[0]) == ref, sizes
    assert merge(stream(enc, ids, [1] * len(ids), **kw)[0]) == ref
    return ref


def _final(enc, *body):
    return build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", *body)


# -- A. stop strings vs controls spelled as text ----------------------------------------------------

@pytest.mark.parametrize("stop", ["a", "|", "end", "x<", "<|st"])
def test_case_08_stop_that_can_end_inside_a_text_control_is_refused(encs, stop):
    """A8 at decoder level.  The scanner lets the earliest-ending match win, so a stop string
    that can end strictly inside a control spelled as text (``a`` in ``<|channel|>``, ``end``
    in ``<|end|>``, anything ending in ``<``) would fire mid-control and break the structure
    (found by this audit).  Defined behaviour: such stop strings are refused up front with
    ``E-STOP-OVERLAPS-CONTROL``; with registered controls (ids) they are ordinary stops and
    the structure is intact."""
    from ocml.encoder.errors import InputError

    with pytest.raises(InputError) as info:
        encs["ocml-text"].decoder(role="assistant", stop_strings=["Observation:", stop])
    assert info.value.code == "E-STOP-OVERLAPS-CONTROL" and info.value.field == "stop_strings[1]"
    with pytest.raises(InputError):
        from ocml.encoder.stream.batch import BatchDecoder

        BatchDecoder(encs["ocml-text"], 2, stop_strings=[stop])
    enc = encs["ocml-id"]
    ids = build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>", "x", "ctl:<|end|>",
                "ctl:<|start|>", "assistant", "ctl:<|channel|>", "final", "ctl:<|message|>", "y",
                "ctl:<|return|>")
    ev = check_stream(enc, ids, role="assistant", stop_strings=[stop])
    assert not _codes(ev)
    assert [(m.channel, m.content) for m in msgs(ev)] == [("analysis", "x"), ("final", "y")]


@pytest.mark.parametrize("stop", ["Observation:", "</answer>", "\n\n", "x<y", "|>"])
def test_case_08_stops_that_cannot_cut_a_control_are_accepted_in_text_mode(encs, stop):
    enc = encs["ocml-text"]
    dec = enc.decoder(role="assistant", stop_strings=[stop])
    ids = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "y", "ctl:<|return|>")
    assert [m.content for m in dec.messages] == [] and dec.feed(ids)


# -- C. UTF-8 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("text", ["结束", "한국어", "ü", "é", "aé中b"])
def test_case_16_cjk_hangul_latin_split(encs, mode, text):
    """C16: 3-byte CJK/Hangul and 2-byte Latin split into byte tokens, cut at every
    single and pair split point: no U+FFFD, no delta ends inside a character."""
    enc = encs[mode]
    ids = _final(enc, byte_ids(enc, text.encode())) + ctl(enc, "<|end|>")
    for sizes in itertools.chain(_every_split(ids), [[1] * len(ids)]):
        raw, _ = stream(enc, ids, sizes, role="assistant")
        deltas = [e.text for e in raw if type(e) is Delta]
        assert "".join(deltas) == text and not any("\ufffd" in d for d in deltas), sizes
    ev = check_stream(enc, ids, role="assistant")
    assert msgs(ev) == enc.parse(ids, role="assistant") and not _codes(ev)


# -- D. terminators and stops ----------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_case_22_terminators(encs, mode):
    """D22: <|end|> ends a message and decoding goes on; <|return|> ends the answer and stops;
    <|call|> ends a tool call and stops - the ids after it are not processed.

    A <|call|> whose header has no recipient is accepted leniently (no error, as
    ``Encoder.parse`` does): the message ends with reason ``call`` and ``status`` is
    ``tool_call``; a caller dispatching tools must check ``message.recipient``.
    """
    enc = encs[mode]
    more = build(enc, "ctl:<|start|>", "assistant", "ctl:<|channel|>", "final", "ctl:<|message|>", "z", "ctl:<|end|>")
    analysis = build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>", "think", "ctl:<|end|>")
    # <|end|>: parsing continues into the next message
    ids = analysis + more
    ev = check_stream(enc, ids, role="assistant")
    assert [(e.message.content, e.reason) for e in ev if type(e) is MessageEnd] == [("think", "end"), ("z", "end")]
    assert not any(type(e) is Stop for e in ev) and not _codes(ev)
    # <|return|>: stops, the rest is trailing
    ids = analysis + build(enc, "ctl:<|start|>", "assistant") + _final(enc, "42") + ctl(enc, "<|return|>")
    dec = enc.decoder(role="assistant")
    ev = dec.feed(ids + more)
    assert ev[-1] == Stop("return", "<|return|>", len(ids) - 1, len(more))
    assert [(m.channel, m.content) for m in msgs(ev)] == [("analysis", "think"), ("final", "42")]
    assert dec.status == "final" and dec.done and dec.feed(more) == []
    # <|call|> with a recipient: stops, tool_call
    call = build(enc, "ctl:<|channel|>", "commentary to=functions.get", "ctl:<|message|>", "{}", "ctl:<|call|>")
    dec = enc.decoder(role="assistant")
    ev = dec.feed(call + more)
    assert ev[-1] == Stop("call", "<|call|>", len(call) - 1, len(more))
    assert msgs(ev)[-1].recipient == "functions.get" and dec.status == "tool_call"
    assert msgs(ev) == enc.parse(call, role="assistant")
    # <|call|> without a recipient: lenient, documented above
    bare = build(enc, "ctl:<|channel|>", "commentary", "ctl:<|message|>", "{}", "ctl:<|call|>")
    dec = enc.decoder(role="assistant")
    ev = dec.feed(bare)
    assert not _codes(ev) and ev[-1].reason == "call" and msgs(ev)[0].recipient is None
    assert dec.status == "tool_call" and msgs(ev) == enc.parse(bare, role="assistant")


@pytest.mark.parametrize("mode", MODES)
def test_case_23_end_then_eos_is_no_final(encs, mode):
    """D23: <|end|> then EOS with no final message -> status ``no_final``, no error; distinct
    from EOS inside a message (``truncated``, ``E-STREAM-TRUNCATED``)."""
    enc = encs[mode]
    analysis = build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>", "hmm", "ctl:<|end|>")
    dec = enc.decoder(role="assistant")
    ev = dec.feed(analysis) + dec.finish()
    assert dec.status == "no_final" and dec.final_message is None and not _codes(ev)
    assert [e.reason for e in ev if type(e) is MessageEnd] == ["end"]
    dec = enc.decoder(role="assistant")
    ev = dec.feed(analysis[:-1]) + dec.finish()
    assert dec.status == "truncated" and _codes(ev) == ["E-STREAM-TRUNCATED"]
    assert [e.reason for e in ev if type(e) is MessageEnd] == ["truncated"]


@pytest.mark.parametrize("mode", MODES)
def test_case_28_several_eos_ids(encs, mode):
    """D28: several EOS ids at once (gpt-oss stops on <|return|>, <|endoftext|>, <|call|>).
    Whichever comes first stops the stream; <|return|>/<|call|> keep their own reason even
    when also listed as stop ids; <|endoftext|> stops with ``stop_id``, and mid-message it
    truncates the message (a stop id is the end of the stream)."""
    enc = encs[mode]
    eot = enc.tokenizer.control_id("<|endoftext|>")
    stop_ids = [eot] + [i for i in (enc.tokenizer.control_id(n) for n in ("<|return|>", "<|call|>"))
                        if i is not None and mode != "ocml-text"]
    kw = dict(role="assistant", stop_ids=stop_ids)
    head = _final(enc, "ans")
    # <|return|> first
    ids = head + ctl(enc, "<|return|>") + [eot]
    ev = check_stream(enc, ids, **kw)
    assert ev[-1].reason == "return" and [s.reason for s in ev if type(s) is Stop] == ["return"]
    # <|endoftext|> after a complete message
    ids = head + ctl(enc, "<|end|>") + [eot] + ctl(enc, "<|return|>")
    dec = enc.decoder(**kw)
    ev = dec.feed(ids)
    n_ret = len(ctl(enc, "<|return|>"))
    assert ev[-1] == Stop("stop_id", "<|endoftext|>", len(ids) - n_ret - 1, n_ret)
    assert dec.status == "final" and not _codes(ev)
    # <|endoftext|> mid-message
    dec = enc.decoder(**kw)
    ev = dec.feed(head + [eot])
    assert _codes(ev) == ["E-STREAM-TRUNCATED"] and dec.status == "truncated"
    assert [e.reason for e in ev if type(e) is MessageEnd] == ["truncated"] and ev[-1].reason == "stop_id"
    # <|call|> first among several
    call = build(enc, "ctl:<|channel|>", "commentary to=functions.f", "ctl:<|message|>", "{}", "ctl:<|call|>")
    ev = check_stream(enc, call + [eot], **kw)
    assert [s.reason for s in ev if type(s) is Stop] == ["call"]
    # the stop helpers list several stop ids for id-mode profiles
    if mode != "ocml-text":
        assert len(enc.stop_ids()) >= 2


@pytest.mark.parametrize("mode", MODES)
def test_case_30_min_tokens_not_supported(encs, mode):
    """D30: ``min_tokens``-style suppression of stop checks is not supported by the decoder:
    stop suppression is the sampler's job (vLLM ``min_tokens`` never samples a stop id).
    The decoder rejects the option, and reports a stop as soon as it sees one."""
    enc = encs[mode]
    assert "min_tokens" not in inspect.signature(type(enc.decoder())).parameters
    with pytest.raises(TypeError):
        enc.decoder(role="assistant", min_tokens=5)
    ids = _final(enc, "ab") + ctl(enc, "<|return|>")
    ev = enc.decoder(role="assistant").feed(ids)
    assert ev[-1].reason == "return" and ev[-1].position == len(ids) - 1
    ev = enc.decoder(role="assistant", stop_strings=["b"]).feed(ids)
    assert ev[-1].reason == "stop_string" and msgs(ev)[0].content == "a"


# -- F. headers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_case_39_split_headers_and_recipient_positions(encs, mode):
    """F39: header split over tokens (``fi`` + ``nal``, and byte by byte at every split);
    ``to=`` before and after ``<|channel|>``; ``to=functions.f<|constrain|>json`` with no space."""
    enc = encs[mode]
    ids = build(enc, "ctl:<|channel|>", "fi", "nal", "ctl:<|message|>", "x", "ctl:<|end|>")
    ev = _same_at_every_split(enc, ids, role="assistant")
    assert [(m.channel, m.content) for m in msgs(ev)] == [("final", "x")] and not _codes(ev)
    ids = build(enc, "ctl:<|start|>", byte_ids(enc, b"assistant"), "ctl:<|channel|>", byte_ids(enc, b"final"),
                "ctl:<|message|>", "x", "ctl:<|end|>")
    ev = _same_at_every_split(enc, ids)
    assert [(m.role, m.channel) for m in msgs(ev)] == [("assistant", "final")]
    for parts in ((" to=functions.f", "ctl:<|channel|>", "commentary"),
                  ("ctl:<|channel|>", "commentary to=functions.f"),
                  ("ctl:<|channel|>", "commentary to=functions.f", "ctl:<|constrain|>", "json")):
        ids = build(enc, *parts, "ctl:<|message|>", '{"a":1}', "ctl:<|call|>")
        ev = check_stream(enc, ids, role="assistant")
        m = msgs(ev)[0]
        assert (m.channel, m.recipient, m.content) == ("commentary", "functions.f", '{"a":1}'), parts
        assert m.constrain == ("json" if "ctl:<|constrain|>" in parts else None)
        assert msgs(ev) == enc.parse(ids, role="assistant") and not _codes(ev)
        assert ev[-1].reason == "call"


@pytest.mark.parametrize("mode", MODES)
def test_case_40_malformed_channels(encs, mode):
    """F40: malformed channels.  Lenient by default:

    * ``final json`` -> channel ``final`` with content type ``json`` (Harmony's
      ``<|channel|>commentary json`` form);
    * ``commentary?``, ``??`` -> kept verbatim as (unknown) channel names: not visible,
      not the final answer;
    * an empty channel, or a doubled ``<|channel|>`` -> ``E-PARSE-HEADER``; the message
      is dropped (its body reported as ``E-PARSE-SKIPPED`` with its text) and decoding
      resynchronises at the next ``<|start|>``.

    ``strict=True`` raises ``HeaderError`` for the last two (as ``Encoder.parse`` does).
    """
    enc = encs[mode]
    nxt = build(enc, "ctl:<|start|>", "assistant", "ctl:<|channel|>", "final", "ctl:<|message|>", "ok", "ctl:<|end|>")

    def run(*chan):
        ids = build(enc, "ctl:<|channel|>", *chan, "ctl:<|message|>", "x", "ctl:<|end|>") + nxt
        ev = check_stream(enc, ids, role="assistant")
        assert msgs(ev) == enc.parse(ids, role="assistant")
        return ids, ev

    _, ev = run("final json")
    assert [(m.channel, m.content_type, m.content) for m in msgs(ev)][0] == ("final", "json", "x")
    assert not _codes(ev)
    for odd in ("commentary?", "??"):
        _, ev = run(odd)
        assert msgs(ev)[0].channel == odd and not _codes(ev)
        assert [d.visible for d in ev if type(d) is Delta] == [False, True]
    for bad in ([""], ["ctl:<|channel|>", "final"]):
        ids, ev = run(*bad)
        assert _codes(ev) == ["E-PARSE-HEADER", "E-PARSE-SKIPPED"]
        assert [e.text for e in ev if type(e) is Error][1] == "x"
        assert [m.content for m in msgs(ev)] == ["ok"]
        with pytest.raises(HeaderError):
            enc.decoder(role="assistant", strict=True).feed(ids)
        with pytest.raises(Exception) as exc:
            enc.parse(ids, role="assistant", strict=True)
        assert exc.value.code == "E-PARSE-HEADER"


@pytest.mark.parametrize("mode", MODES)
def test_case_45_no_channel_is_final(encs, mode):
    """F45: a header without ``<|channel|>``.  Decided: OpenChatML §5 rule 2 in every mode,
    Harmony included (lenient; ``E-PARSE-CHANNEL-MISSING`` is not raised): the message has
    ``channel=None``, is visible, counts as the final answer and as a ``final`` channel for
    stop strings."""
    enc = encs[mode]
    ids = build(enc, "ctl:<|message|>", "hello", "ctl:<|return|>")
    for strict in (False, True):
        ev = check_stream(enc, ids, role="assistant", strict=strict)
        assert [(m.channel, m.content) for m in msgs(ev)] == [(None, "hello")] and not _codes(ev)
        assert [d.visible for d in ev if type(d) is Delta] == [True]
    assert msgs(ev) == enc.parse(ids, role="assistant", strict=True)
    dec = enc.decoder(role="assistant")
    dec.feed(ids)
    assert dec.status == "final" and dec.final_message.content == "hello"
    ev = check_stream(enc, ids, role="assistant", stop_strings=["llo"])
    assert msgs(ev)[0].content == "he" and ev[-1].reason == "stop_string"


# -- G. streaming invariants -----------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_case_46_chunk_invariance_in_headers_and_held_prefixes(encs, mode):
    """G46: the same events at every single and pair split point, with boundaries inside a
    header (byte tokens), inside held control prefixes, inside a stop string and inside
    characters."""
    enc = encs[mode]
    header = build(enc, "ctl:<|start|>", byte_ids(enc, b"assistant to=functions.f"), "ctl:<|channel|>",
                   byte_ids(enc, b"commentary"), "ctl:<|message|>", byte_ids(enc, b"{}"), "ctl:<|call|>")
    ev = _same_at_every_split(enc, header)
    assert msgs(ev)[0].recipient == "functions.f" and msgs(ev) == enc.parse(header)
    body = byte_ids(enc, "<|en<|stax STOé🙂 STOP".encode())
    ids = _final(enc, body) + ctl(enc, "<|end|>")
    ev = _same_at_every_split(enc, ids, role="assistant", stop_strings=["STOP"])
    assert msgs(ev)[0].content == "<|en<|stax STOé🙂 " and ev[-1].reason == "stop_string"
    ev = _same_at_every_split(enc, ids, role="assistant")
    assert msgs(ev) == enc.parse(ids, role="assistant")


def _longest_pattern(enc, stops):
    pats = [s.encode() for s in stops] + [c.encode() for c in enc.format.text_controls]
    pats += [b"<" + c.encode() for c in enc.format.text_controls]  # escapes are patterns too
    return max(map(len, pats), default=1)


@pytest.mark.parametrize("mode", MODES)
def test_case_47_holdback_bound(encs, mode):
    """G47: fed a byte at a time, the decoder never holds more than the longest pattern - 1
    bytes plus an incomplete code point, and releases text as soon as it is disambiguated."""
    enc = encs[mode]
    stops = ["STOPWORD", "结束"]
    bound = _longest_pattern(enc, stops) - 1 + 3
    rng = random.Random(47)
    frags = ["<|", "<|en", "<|end", "<<", "<|start", "STOPWOR", "STO", "结", "🙂", "é", "a", " ", "|>", "<|lit"]
    for _ in range(30):
        text = "".join(rng.choice(frags) for _ in range(rng.randint(5, 40)))
        if any(c in text for c in enc.format.text_controls):
            continue  # a whole control would end the content: only near misses here
        dec = enc.decoder(role="assistant", stop_strings=stops)
        dec.feed(_final(enc))
        fed = released = 0
        for b in byte_ids(enc, text.encode()):
            ev = dec.feed([b])
            fed += 1
            released += sum(len(e.text.encode()) for e in ev if type(e) is Delta)
            if dec.done:
                break
            assert fed - released <= bound, (text, fed, released)
    # released as soon as disambiguated: a byte that rules out every pattern frees the held bytes
    dec = enc.decoder(role="assistant", stop_strings=stops)
    dec.feed(_final(enc, "x"))
    assert [e.text for e in dec.feed(byte_ids(enc, b"STOPWOR")) if type(e) is Delta] == []
    assert "".join(e.text for e in dec.feed(byte_ids(enc, b"d")) if type(e) is Delta) == "STOPWORd"
    if mode == "ocml-text":
        assert [e.text for e in dec.feed(byte_ids(enc, b"<|sta")) if type(e) is Delta] == []
        assert "".join(e.text for e in dec.feed(byte_ids(enc, b"r")) if type(e) is Delta) == ""
        assert "".join(e.text for e in dec.feed(byte_ids(enc, b"x")) if type(e) is Delta) == "<|starx"
    else:  # no text controls: "<|" is never held in id mode
        assert "".join(e.text for e in dec.feed(byte_ids(enc, b"<|sta")) if type(e) is Delta) == "<|sta"


@pytest.mark.parametrize("mode", MODES)
def test_case_48_reset_clears_all_state(encs, mode):
    """G48: ``reset()`` forgets everything - held control / stop prefixes, a half character,
    a half header, an open literal block, a stop - so the next request decodes exactly as
    on a fresh decoder; between messages nothing is carried over either."""
    enc = encs[mode]
    kw = dict(role="assistant", stop_strings=["STOP"])
    clean = _final(enc, "fresh STO") + ctl(enc, "<|return|>")
    want = merge(enc.decoder(**kw).feed(clean))
    dirty = [
        _final(enc, byte_ids(enc, b"abc<|en")),
        _final(enc, byte_ids(enc, "x🙂".encode())[:-2]),
        _final(enc, byte_ids(enc, b"abcSTO")),
        build(enc, "ctl:<|start|>", "assistant", "ctl:<|channel|>", "fin"),
        build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>", "a", "ctl:<|end|>", "ctl:<|start|>"),
        _final(enc, "x STOP more"),
        _final(enc, "x") + ctl(enc, "<|return|>"),
    ]
    if mode != "harmony":
        dirty.append(_final(enc, "a", "ctl:<|literal|>", "open"))
    for d in dirty:
        dec = enc.decoder(**kw)
        dec.feed(d)
        dec.reset()
        assert dec.status == "running" and dec.messages == [] and dec.stopped is None
        assert merge(dec.feed(clean)) == want, d
    # between messages: a held prefix and a half character end with their message
    ids = _final(enc, byte_ids(enc, "a🙂".encode())[:-1]) + ctl(enc, "<|end|>") + build(
        enc, "ctl:<|start|>", "assistant") + _final(enc, "b") + ctl(enc, "<|end|>")
    ev = check_stream(enc, ids, role="assistant")
    assert [m.content for m in msgs(ev)] == ["a\ufffd", "b"]
    if mode == "ocml-text":
        ids = _final(enc, byte_ids(enc, b"a<|en")) + ctl(enc, "<|end|>") + build(
            enc, "ctl:<|start|>", "assistant") + _final(enc, byte_ids(enc, b"d|>")) + ctl(enc, "<|end|>")
        ev = check_stream(enc, ids, role="assistant")
        assert [m.content for m in msgs(ev)] == ["a<|en", "d|>"]


@pytest.mark.parametrize("mode", MODES)
def test_case_49_only_final_is_visible(encs, mode):
    """G49: only ``final`` (and channel-less) content is visible; analysis and commentary
    are side channels with ``visible=False``; ``commentary`` with ``intent=preamble`` is
    visible (both formats parse ``intent``).  Users never see a user message's text."""
    enc = encs[mode]
    ids = build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>", "A", "ctl:<|end|>",
                "ctl:<|start|>", "assistant", "ctl:<|channel|>", "commentary to=functions.f", "ctl:<|message|>",
                "{}", "ctl:<|end|>",
                "ctl:<|start|>", "assistant", "ctl:<|channel|>", "commentary intent=preamble", "ctl:<|message|>",
                "P", "ctl:<|end|>",
                "ctl:<|start|>", "user", "ctl:<|message|>", "U", "ctl:<|end|>",
                "ctl:<|start|>", "assistant", "ctl:<|channel|>", "final", "ctl:<|message|>", "F", "ctl:<|return|>")
    ev = check_stream(enc, ids, role="assistant")
    starts = [e for e in ev if type(e) is MessageStart]
    assert starts[2].intent == "preamble"
    visible = "".join(d.text for d in ev if type(d) is Delta and d.visible)
    assert visible == "PF"
    side = {(d.channel, d.text) for d in ev if type(d) is Delta and not d.visible}
    assert ("analysis", "A") in side and ("commentary", "{}") in side and (None, "U") in side
    assert not _codes(ev)


# -- coverage table --------------------------------------------------------------------------------

S, T, F, B, P = "test_scanner.py", "test_stream.py", "test_stream_fastpath.py", "test_stream_batch.py", \
    "test_parse_speed.py"
A = "test_adversarial.py"
G, M = "test_stream_parse_agreement.py", "test_malformed_output.py"

#: Decoding note §5 case -> tests covering it (file::test).  Every case 1-49 is listed.
COVERAGE: dict[int, list[str]] = {
    # A. split control sequences (text mode)
    1: [f"{S}::test_a1_every_control_at_every_split", f"{S}::test_a1_token_index_is_where_the_match_ends",
        f"{S}::test_property_byte_at_a_time_every_pair_of_splits"],
    2: [f"{S}::test_a2_control_inside_larger_tokens"],
    3: [f"{S}::test_a3_adjacent_controls"],
    4: [f"{S}::test_a4_overlapping_prefixes", f"{T}::test_fallback_split_control_near_misses"],
    5: [f"{S}::test_a5_near_misses_are_text", f"{T}::test_fallback_split_control_near_misses"],
    6: [f"{S}::test_a6_partial_control_at_eos", f"{T}::test_fallback_split_control_near_misses"],
    7: [f"{S}::test_a7_escapes", f"{S}::test_a7_every_control_escapes_at_every_split",
        f"{S}::test_a7_no_escapes_when_not_escapable", f"{T}::test_fallback_escapes_and_literals"],
    8: [f"{S}::test_a8_stop_equal_to_or_overlapping_a_control",
        f"{A}::test_case_08_stop_that_can_end_inside_a_text_control_is_refused",
        f"{A}::test_case_08_stops_that_cannot_cut_a_control_are_accepted_in_text_mode"],
    # B. id mode vs text mode
    9: [f"{S}::test_b9_registered_ids_are_events", f"{T}::test_registered_control_in_content"],
    10: [f"{S}::test_b10_ascii_spelling_of_registered_control_is_text",
         f"{T}::test_ordinary_spelling_of_registered_control_is_text"],
    11: [f"{S}::test_b11_mixed_registration"],
    12: [f"{S}::test_b12_specials_are_events", f"{T}::test_invalid_and_special_ids",
         f"{G}::test_special_id_in_a_literal_block_is_an_error_in_both"],
    13: [f"{S}::test_b13_invalid_ids_never_stall", f"{S}::test_b13_invalid_id_inside_a_character",
         f"{T}::test_invalid_and_special_ids", f"{F}::test_lean_path_input_types_and_bad_ids",
         f"{F}::test_far_negative_ids_are_invalid_never_wrapped_onto_real_tokens",
         f"{P}::test_holes_in_the_vocabulary_are_reported_like_the_stream_decoder"],
    14: [f"{S}::test_b14_lt_before_a_registered_id"],
    # C. UTF-8
    15: [f"{S}::test_c15_c16_multibyte_split", f"{S}::test_c15_zwj_family_splits_characters_across_tokens",
         f"{S}::test_c15_streamed_pieces_never_split_a_character", f"{T}::test_split_utf8",
         f"{F}::test_split_utf8_text", f"{B}::test_utf8_split_across_steps"],
    16: [f"{A}::test_case_16_cjk_hangul_latin_split", f"{S}::test_c15_c16_multibyte_split"],
    17: [f"{S}::test_c17_multibyte_right_before_a_control", f"{T}::test_split_utf8"],
    18: [f"{S}::test_c18_valid_prefix_before_a_control_is_one_replacement", f"{T}::test_split_utf8"],
    19: [f"{S}::test_c19_invalid_bytes_replace_per_maximal_subpart", f"{S}::test_property_invalid_bytes"],
    20: [f"{S}::test_c20_non_ascii_stop_strings_split_into_bytes"],
    21: [f"{S}::test_c21_incomplete_utf8_at_eos", f"{T}::test_truncated_finish"],
    # D. terminators and stops
    22: [f"{A}::test_case_22_terminators", f"{T}::test_trailing_ids_after_stop"],
    23: [f"{A}::test_case_23_end_then_eos_is_no_final", f"{F}::test_status"],
    24: [f"{T}::test_return_after_end", f"{F}::test_status", f"{M}::test_malformed_shape_keeps_the_answer"],
    25: [f"{S}::test_d25_atoms_after_a_stop_carry_their_token_index", f"{T}::test_trailing_ids_after_stop"],
    26: [f"{S}::test_d26_two_stops_in_one_chunk"],
    27: [f"{S}::test_d27_stop_inside_one_token_and_across_tokens", f"{T}::test_stop_strings_final_only"],
    28: [f"{A}::test_case_28_several_eos_ids", f"{T}::test_stop_ids_and_strings"],
    29: [f"{S}::test_d29_eos_without_terminator_flushes_held_bytes", f"{T}::test_truncated_finish",
         f"{F}::test_status"],
    30: [f"{A}::test_case_30_min_tokens_not_supported"],
    31: [f"{T}::test_stop_strings_final_only"],
    32: [f"{S}::test_d32_stop_text_never_streamed_before_the_stop", f"{F}::test_include_stop_str_in_output",
         f"{F}::test_include_stop_str_default_off"],
    # E. literal blocks
    33: [f"{S}::test_e33_literal_body_is_verbatim", f"{S}::test_e33_switch_inside_one_token",
         f"{S}::test_e33_no_stop_strings_inside_literal", f"{T}::test_fallback_escapes_and_literals",
         f"{T}::test_literal_block_with_control_ids", f"{B}::test_fallback_literal_blocks"],
    34: [f"{S}::test_e34_endliteral_split_everywhere", f"{S}::test_e34_partial_endliteral_at_eos"],
    35: [f"{S}::test_e35_unclosed_literal_swallows_end"],
    36: [f"{S}::test_e36_nested_literal_is_text", f"{T}::test_fallback_escapes_and_literals"],
    37: [f"{S}::test_e37_escaped_endliteral_inside_literal"],
    38: [f"{S}::test_e38_registered_ids_inside_literal_are_flagged", f"{T}::test_literal_block_with_control_ids",
         f"{G}::test_special_id_in_a_literal_block_is_an_error_in_both"],
    # F. headers
    39: [f"{A}::test_case_39_split_headers_and_recipient_positions"],
    40: [f"{A}::test_case_40_malformed_channels", f"{M}::test_malformed_shape_keeps_the_answer"],
    41: [f"{T}::test_missing_message_token", f"{M}::test_malformed_shape_keeps_the_answer"],
    42: [f"{T}::test_free_text_after_end", f"{T}::test_resync_after_garbage",
         f"{M}::test_malformed_shape_keeps_the_answer"],
    43: [f"{T}::test_unknown_role"],
    44: [f"{T}::test_unbounded_header"],
    45: [f"{A}::test_case_45_no_channel_is_final"],
    # G. streaming invariants
    46: [f"{A}::test_case_46_chunk_invariance_in_headers_and_held_prefixes",
         f"{T}::test_random_soup_chunk_invariance", f"{S}::test_property_chunk_invariance_and_reference",
         f"{S}::test_property_byte_at_a_time_every_pair_of_splits",
         f"{F}::test_single_id_feeds_equal_whole_array", f"{B}::test_step_equals_single_id_feeds"],
    47: [f"{A}::test_case_47_holdback_bound", f"{S}::test_a5_g47_released_as_soon_as_disambiguated",
         f"{T}::test_fallback_split_control_near_misses"],
    48: [f"{A}::test_case_48_reset_clears_all_state", f"{S}::test_g48_reset",
         f"{B}::test_reset_with_other_options"],
    49: [f"{A}::test_case_49_only_final_is_visible", f"{T}::test_visibility_preamble",
         f"{B}::test_same_channel_other_visibility"],
}


def test_coverage_table_names_existing_tests():
    """Every case 1-49 is mapped, and every test named in ``COVERAGE`` exists."""
    import ast

    assert sorted(COVERAGE) == list(range(1, 50))
    defined: dict[str, set[str]] = {}
    for refs in COVERAGE.values():
        assert refs
        for ref in refs:
            fname, test = ref.split("::")
            if fname not in defined:
                tree = ast.parse(next(TESTS.rglob(fname)).read_text())
                defined[fname] = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
            assert test in defined[fname], ref
