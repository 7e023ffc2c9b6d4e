"""Lenient decoding reports what it skipped and never loses text (issue 8, decode side).

* ``Encoder.parse(ids, errors="collect")``: a ``ParseResult`` with every problem, and the
  text each one left out of the messages (``Error.text``); the default call still returns
  a list of messages; ``errors="raise"`` is ``strict=True``.
* Property: whatever the ids (words, controls, special and invalid ids in any order),
  every word ends up in a message (content or a header field) or in an error's text, in
  ``parse`` and in the stream decoder alike, at any chunking.
* A header that runs into a terminator (``I must refuse<|end|>`` after the
  ``<|start|>assistant`` prefill) keeps its text as the content, as openai-harmony 0.0.8's
  non-strict parser does (differential, hypothesis); strict mode still raises.
* Argument checks: typed errors naming the argument (``role``, ``ids``, ``errors``...).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from ocml.encoder.errors import OcmlError, ParseError
from ocml.encoder.events import Delta, Error, MessageEnd, MessageStart, Stop
from ocml.encoder.parse import ParseResult

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from support.stream import MODES, build, check_stream, ctl, msgs  # noqa: E402

HYP = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
HEADER_FIELDS = ("role", "channel", "recipient", "call_id", "name", "intent", "content_type", "constrain")


# -- errors="collect" ---------------------------------------------------------------------

def test_invalid_id_is_reported_not_hidden(encs):
    enc = encs["harmony"]
    assert enc.parse([10 ** 9]) == []  # the default call: unchanged, a list of messages
    res = enc.parse([10 ** 9], errors="collect")
    assert isinstance(res, ParseResult) and res.messages == [] and not res.ok
    assert [(e.code, e.position, e.text) for e in res.errors] == [("E-VOCAB-ID", 0, None)]
    with pytest.raises(ParseError) as info:
        enc.parse([10 ** 9], errors="raise")
    assert info.value.code == "E-VOCAB-ID" and info.value.position == 0


@pytest.mark.parametrize("mode", MODES)
def test_skipped_text_is_reported_with_position(encs, mode):
    enc = encs[mode]
    stray = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "ok", "ctl:<|end|>")
    lost = build(enc, " lost words here")
    bad = build(enc, "ctl:<|start|>", "robot", "ctl:<|message|>", "beep ", "ctl:<|channel|>", " boop", "ctl:<|end|>")
    ids = stray + lost + bad
    res = enc.parse(ids, role="assistant", errors="collect")
    assert [m.content for m in res.messages] == ["ok"] and res.ends == ["end"]
    got = [(e.code, e.position, e.text) for e in res.errors]
    # positions: the first token of the text; the last token of the control where the error was found
    body = len(stray) + len(lost) + len(build(enc, "ctl:<|start|>", "robot", "ctl:<|message|>"))
    hdr = body - 1
    assert got == [("E-PARSE-STRAY-TEXT", len(stray), " lost words here"),
                   ("E-PARSE-HEADER", hdr, "robot"),
                   ("E-PARSE-SKIPPED", body, "beep <|channel|> boop")]
    # the stream decoder reports the same errors, with the same text and positions
    ev = check_stream(enc, ids, role="assistant")
    assert [(e.code, e.position, e.text) for e in ev if type(e) is Error] == got
    with pytest.raises(ParseError):
        enc.parse(ids, role="assistant", strict=True)


@pytest.mark.parametrize("mode", MODES)
def test_overlong_header_and_truncated_header_keep_their_text(encs, mode):
    enc = encs[mode]
    from ocml.encoder.read.frames import MAX_HEADER_CHARS

    long = "x" * (MAX_HEADER_CHARS + 10)
    ids = build(enc, "ctl:<|start|>", "assistant " + long, "ctl:<|message|>", "y", "ctl:<|end|>")
    res = enc.parse(ids, errors="collect")
    assert res.messages == []
    assert [(e.code, e.text) for e in res.errors][0] == ("E-PARSE-HEADER", "assistant " + long)
    assert "".join(e.text or "" for e in res.errors).count("y") == 1  # the body after it: stray text
    ev = check_stream(enc, ids)
    assert [(e.code, e.text) for e in ev if type(e) is Error] == [(e.code, e.text) for e in res.errors]
    cut = build(enc, "ctl:<|start|>", "assistant to=functions.f")
    res = enc.parse(cut, errors="collect")
    assert [(e.code, e.text) for e in res.errors] == [("E-STREAM-TRUNCATED", "assistant to=functions.f")]


# -- property: no text is lost --------------------------------------------------------------

_CONTROLS = ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>", "<|constrain|>"]
_ATOM = st.one_of(
    st.integers(0, 11).map(lambda k: ("word", k)),
    st.sampled_from(_CONTROLS).map(lambda c: ("ctl", c)),
    st.sampled_from(["eot", "invalid"]).map(lambda c: ("odd", c)),
)


def _ids(enc, atoms) -> tuple[list[int], list[str]]:
    ids: list[int] = []
    words: list[str] = []
    for kind, x in atoms:
        if kind == "word":
            w = f"w{len(words):03d}{'abcdefghijkl'[x]}"
            words.append(w)
            ids += enc.tokenizer.encode_text(" " + w if x % 3 else w)
        elif kind == "ctl":
            ids += ctl(enc, x)
        elif x == "eot":
            ids.append(enc.tokenizer.control_id("<|endoftext|>"))
        else:
            ids.append(10 ** 8)
    return ids, words


def _accounted(words, messages, errors) -> list[str]:
    """The words found in no message (content or header field) and no error text."""
    sources = [m.content for m in messages] + [getattr(m, f) or "" for m in messages for f in HEADER_FIELDS]
    sources += [e.text for e in errors if e.text]
    return [w for w in words if not any(w in s for s in sources)]


@pytest.mark.parametrize("mode", MODES)
@HYP
@given(atoms=st.lists(_ATOM, max_size=24), prefill=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_no_text_is_lost(encs, mode, atoms, prefill, seed):
    enc = encs[mode]
    ids, words = _ids(enc, atoms)
    role = "assistant" if prefill else None
    res = enc.parse(ids, role=role, errors="collect")
    assert _accounted(words, res.messages, res.errors) == []
    # the stream decoder: same messages, same errors (code and text), at any chunking
    rng = random.Random(seed)
    dec = enc.decoder(role=role)
    ev: list = []
    k = 0
    while k < len(ids):
        s = rng.randint(1, 6)
        ev += dec.feed(ids[k:k + s])
        k += s
    ev += dec.finish()
    stop = next((e for e in ev if type(e) is Stop), None)
    if stop is not None:  # the stream stops at <|return|> / <|call|>: the rest is Stop.trailing
        res = enc.parse(ids[:stop.position + 1], role=role, errors="collect")
    assert msgs(ev) == res.messages
    assert [(e.code, e.position, e.text) for e in ev if type(e) is Error] == \
        [(e.code, e.position, e.text) for e in res.errors]


# -- missing <|message|>: openai-harmony's non-strict reading -------------------------------

_WORD = st.text(alphabet="abcXYZ019.,!?'é日", min_size=1, max_size=6)


@st.composite
def _refusals(draw):
    words = draw(st.lists(_WORD, min_size=0, max_size=5))
    channel = draw(st.sampled_from([None, "final", "analysis", "commentary"]))
    at = draw(st.integers(0, len(words)))  # where the <|channel|> tag sits among the words
    repeat_role = draw(st.booleans())
    end = draw(st.sampled_from(["<|end|>", "<|return|>", "<|call|>"]))
    return words, channel, at, repeat_role, end


def _refusal_ids(enc, words, channel, at, repeat_role, end) -> list[int]:
    parts: list = []
    lead = (["assistant"] if repeat_role else []) + words[:at]
    if lead:
        parts.append(" ".join(lead))
    if channel is not None:
        parts += ["ctl:<|channel|>", channel + (" " if words[at:] else "")]
    elif words[at:] and lead:
        parts.append(" ")
    if words[at:]:
        parts.append(" ".join(words[at:]))
    return build(enc, *parts, "ctl:" + end)


def test_refusal_without_message_token(encs):
    """The issue's example, every format and mode, parse and stream; strict still raises."""
    for mode, enc in encs.items():
        ids = build(enc, "I must refuse", "ctl:<|end|>")
        got = enc.parse(ids, role="assistant")
        assert [(m.role, m.channel, m.content) for m in got] == [("assistant", None, "I must refuse")], mode
        ev = check_stream(enc, ids, role="assistant")
        assert msgs(ev) == got
        assert [type(e) for e in ev] == [Error, MessageStart, Delta, MessageEnd]
        assert ev[0].code == "E-PARSE-HEADER" and ev[2].visible
        with pytest.raises(ParseError):
            enc.parse(ids, role="assistant", strict=True)
        with pytest.raises(ParseError):
            enc.decoder(role="assistant", strict=True).feed(ids)


@HYP
@given(case=_refusals(), seed=st.integers(0, 2 ** 16))
def test_refusal_differential_openai_harmony(harmony, harmony_encoder, case, seed):
    """Single-spaced words (openai-harmony collapses whitespace runs; we keep them, see
    ``test_refusal_keeps_whitespace``): same role, channel and content, parse and stream."""
    oh = pytest.importorskip("openai_harmony")
    enc = harmony_encoder
    ids = _refusal_ids(enc, *case)
    try:
        ref = [m.to_dict() for m in harmony.parse_messages_from_completion_tokens(ids, oh.Role.ASSISTANT,
                                                                                   strict=False)]
    except Exception:  # openai-harmony raises on an empty channel value, even non-strict
        ref = None
    got = enc.parse(ids, role="assistant")
    if ref is not None:
        want = [("assistant", r.get("channel"), r["content"][0]["text"]) for r in ref]
        assert [(m.role, m.channel, m.content) for m in got] == want
    ev = check_stream(enc, ids, role="assistant", rng=random.Random(seed))
    assert msgs(ev) == got
    with pytest.raises(Exception):
        harmony.parse_messages_from_completion_tokens(ids, oh.Role.ASSISTANT, strict=True)
    with pytest.raises(ParseError):
        enc.parse(ids, role="assistant", strict=True)


def test_refusal_keeps_whitespace_and_later_messages(harmony, harmony_encoder):
    """Deliberate differences from openai-harmony: interior whitespace is kept verbatim, and a
    later message missing <|message|> is kept (openai-harmony drops it silently)."""
    oh = pytest.importorskip("openai_harmony")
    enc = harmony_encoder
    ids = build(enc, "I  must\n\nrefuse", "ctl:<|return|>")
    assert enc.parse(ids, role="assistant")[0].content == "I  must\n\nrefuse"
    ref = harmony.parse_messages_from_completion_tokens(ids, oh.Role.ASSISTANT, strict=False)
    assert ref[0].content[0].text == "I must refuse"
    ids = build(enc, "ctl:<|channel|>", "analysis", "ctl:<|message|>", "t", "ctl:<|end|>",
                "ctl:<|start|>", "assistant", "ctl:<|channel|>", "final No.", "ctl:<|return|>")
    res = enc.parse(ids, role="assistant", errors="collect")
    assert [(m.channel, m.content) for m in res.messages] == [("analysis", "t"), ("final", "No.")]
    assert [e.code for e in res.errors] == ["E-PARSE-HEADER"]
    ref = harmony.parse_messages_from_completion_tokens(ids, oh.Role.ASSISTANT, strict=False)
    assert len(ref) == 1
    # an unreadable role cannot be salvaged: the header is reported with its text
    ids = build(enc, "ctl:<|start|>", "robot says hi", "ctl:<|end|>")
    res = enc.parse(ids, errors="collect")
    assert res.messages == [] and [(e.code, e.text) for e in res.errors] == [("E-PARSE-HEADER", "robot says hi")]
    # an empty header makes no message (openai-harmony too)
    res = enc.parse(build(enc, "ctl:<|return|>"), role="assistant", errors="collect")
    assert res.messages == [] and [e.code for e in res.errors] == ["E-PARSE-HEADER"]


# -- argument checks --------------------------------------------------------------------------

ARGS = {
    "parse role=5": (lambda e: e.parse([1], role=5), "role", "E-INPUT-TYPE"),
    "parse role='wizard'": (lambda e: e.parse([1], role="wizard"), "role", "E-ROLE-UNKNOWN"),
    "parse errors='x'": (lambda e: e.parse([1], errors="x"), "errors", "E-INPUT-ARGUMENT"),
    "parse strict + collect": (lambda e: e.parse([1], strict=True, errors="collect"), "errors", "E-INPUT-ARGUMENT"),
    "parse strict='yes'": (lambda e: e.parse([1], strict="yes"), "strict", "E-INPUT-TYPE"),
    "decoder role='wizard'": (lambda e: e.decoder(role="wizard"), "role", "E-ROLE-UNKNOWN"),
    "decoder role=5": (lambda e: e.decoder(role=5), "role", "E-INPUT-TYPE"),
    "feed(True)": (lambda e: e.decoder(role="assistant").feed(True), "ids", "E-INPUT-TYPE"),
    "feed('abc')": (lambda e: e.decoder(role="assistant").feed("abc"), "ids", "E-INPUT-TYPE"),
    "feed(b'abc')": (lambda e: e.decoder(role="assistant").feed(b"abc"), "ids", "E-INPUT-TYPE"),
    "feed(None)": (lambda e: e.decoder(role="assistant").feed(None), "ids", "E-INPUT-TYPE"),
    "feed([5, True])": (lambda e: e.decoder(role="assistant").feed([5, True]), "ids[1]", "E-INPUT-TYPE"),
    "feed(bool array)": (lambda e: e.decoder(role="assistant").feed(np.array([True])), "ids", "E-INPUT-TYPE"),
    "feed(float array)": (lambda e: e.decoder(role="assistant").feed(np.array([1.0])), "ids", "E-INPUT-TYPE"),
    "cancel(reason=5)": (lambda e: e.decoder().cancel(5), "reason", "E-INPUT-TYPE"),
    "to_interchange role=5": (lambda e: e.to_interchange([1], role=5), "role", "E-INPUT-TYPE"),
    "to_openai role='wizard'": (lambda e: e.to_openai([1], role="wizard"), "role", "E-ROLE-UNKNOWN"),
    "to_openai call_id_seed=5": (lambda e: e.to_openai([1], call_id_seed=5), "call_id_seed", "E-INPUT-TYPE"),
    "batch step bool": (lambda e: _batch(e).step([True, 5]), "ids", "E-INPUT-TYPE"),
    "batch step bool array": (lambda e: _batch(e, True).step(np.array([True, False])), "ids", "E-INPUT-TYPE"),
}


def _batch(enc, vectorized=False):
    from ocml.encoder.stream.batch import BatchDecoder

    return BatchDecoder(enc, 2, vectorized=vectorized)


@pytest.mark.parametrize("case", list(ARGS))
def test_bad_argument_is_a_typed_error(encs, case):
    call, field, code = ARGS[case]
    with pytest.raises(OcmlError) as info:
        call(encs["harmony"])
    assert (info.value.field, info.value.code) == (field, code), info.value


@pytest.mark.parametrize("mode", MODES)
def test_bool_ids_are_refused_on_every_path(encs, mode):
    """``[True]`` is refused on the lean single-id path (inside content), on the scanner's
    path, and the decoder is left as it was (the stream goes on)."""
    enc = encs[mode]
    dec = enc.decoder(role="assistant")
    head = build(enc, "ctl:<|channel|>", "final", "ctl:<|message|>", "ab")
    ev = dec.feed(head)
    assert dec.lean_table is not None
    for bad in ([True], [False], [3, True]):
        with pytest.raises(OcmlError):
            dec.feed(bad)
    ev += dec.feed(build(enc, "cd", "ctl:<|end|>")) + dec.finish()
    assert [m.content for m in msgs(ev)] == ["abcd"]
    assert dec.feed(np.int64(5)) == []  # numpy integers are ids (the stream is done: nothing happens)


def test_messages_that_name_a_role_take_its_article():
    """An error that names a role reads "an assistant message", "a user message" (one rule,
    ``ocml.vocab.errors.article``): the role-less Harmony header, read as the assistant's."""
    from ocml import Encoder
    from ocml.encoder.errors import article

    assert [article(w) for w in ("assistant", "user", "'analysis'", "developer", "int", "")] == [
        "an assistant", "a user", "an 'analysis'", "a developer", "an int", "a "]
    enc = Encoder("harmony")
    tok = enc.tokenizer
    ids = [tok.control_id("<|start|>"), tok.control_id("<|channel|>"), *tok.encode_text("final"),
           tok.control_id("<|message|>"), *tok.encode_text("just the answer"), tok.control_id("<|end|>")]
    res = enc.parse(ids, role=None, errors="collect")
    assert [e.code for e in res.errors] == ["E-PARSE-HEADER"]
    assert "read as an assistant message" in res.errors[0].message
