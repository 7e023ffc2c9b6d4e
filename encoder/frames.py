"""The frame state machine: atoms (text / controls) -> messages and events.

States: ``expect_start`` -> ``header`` (text collected until ``<|message|>``) ->
``content`` (until ``<|end|>``/``<|call|>``/``<|return|>``) -> ``expect_start``.
Shared by ``parse`` (ids), ``parse_text`` (transcripts) and the stream decoder, so all
three read a transcript the same way.  Lenient by default: malformed structure is
reported as an ``Error`` event and the machine resynchronises at the next ``<|start|>``;
``strict=True`` raises ``ParseError`` instead.

Lenient reading never loses text silently: text it cannot place in a message is given
in full in ``Error.text`` (with the position of its first token):

* a run of text between messages (``E-PARSE-STRAY-TEXT``; whitespace-only runs are
  layout and ignored), reported once per run at the next control or at the end;
* a header it gives up on (``E-PARSE-HEADER`` for a malformed header or one longer than
  ``MAX_HEADER_CHARS``; ``E-STREAM-TRUNCATED`` when the stream ends inside it);
* the body of a message whose header could not be read (``E-PARSE-SKIPPED``, up to the
  next ``<|start|>`` or terminator; controls inside it are given as their text).

A header that runs into a terminator (the model skipped ``<|message|>``, e.g. a refusal
right after the ``<|start|>assistant`` prefill: ``I must refuse<|end|>``) is read the
way openai-harmony 0.0.8's non-strict parser reads it: the role word (if repeated) and
``<|channel|>NAME`` are header, everything else is the message's content
(``E-PARSE-HEADER`` is reported, no text is lost).  Unlike openai-harmony, interior
whitespace is kept verbatim (openai-harmony collapses runs to one space and puts a
space before ``<|constrain|>``) and this applies to every message, not only the first
(openai-harmony silently drops later ones).  An empty header makes no message, as in
openai-harmony.  A header without its role (``<|start|><|channel|>final<|message|>``) and
``<|channel|>`` where a message should start are read with the previous message's role (none yet:
the assistant), ``E-PARSE-HEADER`` reported (SGLang reads the first, transformers the second so).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from .errors import HeaderError, OcmlError, ParseError
from .events import Delta, Error, Event, MessageEnd, MessageStart, new_delta
from .grammar.terminators import start_frame_terminators
from .grammar.headers import PLAIN, Header, HeaderStyle, parse_header, parse_header_cached
from .messages import Message

HEADER_INNER = ("<|channel|>", "<|constrain|>")
#: the channels of OpenChatML / Harmony; a message on another channel ended by <|return|> is the answer
KNOWN_CHANNELS = frozenset(("analysis", "commentary", "final"))
_RECOVERED = "E-PARSE-FINAL-RECOVERED"
MAX_HEADER_CHARS = 4096  # longer "headers" are not headers: a model that never emits <|message|>
_CHANNEL = "<|channel|>"
_CHANNEL_WORD = re.compile(r"[^\s<]*")  # openai-harmony: the channel runs up to whitespace or '<'


def held(channel: str | None) -> bool:
    """A message on this channel is held (state ``held``): none of the known channels (gpt-oss
    ``??``), so whether it is the answer is known only at its terminator (``close``)."""
    return channel is not None and channel not in KNOWN_CHANNELS


def visible(channel: str | None, intent: str | None, role: str) -> bool:
    """What a user may see: ``final`` (or no channel), and ``commentary`` flagged ``intent=preamble``."""
    if role != "assistant":
        return False
    if channel is None or channel == "final":
        return True
    return channel == "commentary" and intent == "preamble"


class FrameMachine:
    #: the control that opens a frame; controls that may stand between frames (the
    #: conversation's framing, not errors).  ``terminators``: the controls that end a frame
    #: (-> ``MessageEnd.reason``), the format's (``Format.terminators``; by default the
    #: ``<|start|>`` formats', ``ocml.encoder.grammar.terminators``)
    start: str = "<|start|>"
    framing: tuple[str, ...] = ()
    #: content text may go through ``add_content`` (one ``Delta`` of ``channel`` per text, the
    #: stream decoder's fast paths); False while a machine reads structure inside the content
    #: (a ChatML assistant turn): then all text goes through ``text``
    lean: bool = True
    #: while ``lean`` is False: the texts of ``plain_table(fast_text)`` (a subset of the scanner's
    #: lean table) may still go through ``add_content`` one token at a time (ChatML: text with no
    #: ``<`` and no trailing newline, in the middle of an answer or a reasoning block)
    plain: bool = False

    def plain_table(self, fast_text: list) -> list:
        return fast_text

    def __init__(self, *, header: HeaderStyle = PLAIN, strict: bool = False, role: str | None = None,
                 emit: Callable[[Event], None] | None = None, markers: frozenset[str] = frozenset(),
                 terminators: Mapping[str, str] | None = None) -> None:
        self.header = header
        # a plain dict of its own: looked up at every control (the shared tables are read-only views)
        self.terminators: dict[str, str] = dict(start_frame_terminators() if terminators is None else terminators)
        self.strict = strict
        self.markers = markers
        self.messages: list[Message] = []
        self.ends: list[str] = []
        self.errors: list[Error] = []
        self._emit = emit
        self._prefill = role
        self.state = "header" if role is not None else "expect_start"
        self._header: list[str] = []
        self._header_len = 0
        self._content: list[str] = []
        self._h: Header | None = None
        #: the open message's channel and whether users may see it (valid in ``content``)
        self.channel: str | None = None
        self.visible = False
        # text left out of every message, reported in one Error at the next non-text input
        self._skipped: list[str] = []
        self._skip_pos: int | None = None
        #: the last control fed, while nothing but whitespace followed it (how the ids end)
        self.last_control: str | None = None

    # -- plumbing ---------------------------------------------------------
    def _event(self, ev: Event) -> None:
        if self._emit is not None:
            self._emit(ev)

    def error(self, code: str, message: str, position: int | None, text: str | None = None) -> None:
        """Report a problem (``text``: input left out of every message); strict: raise."""
        if self._skipped:
            self._flush_skipped()
        self._report(code, message, position, text)

    def _report(self, code: str, message: str, position: int | None, text: str | None) -> None:
        if self.strict:
            raise ParseError(message, code=code, position=position)
        err = Error(code, message, position, text)
        self.errors.append(err)
        self._event(err)

    def _skip(self, s: str, position: int) -> None:
        if not self._skipped:
            self._skip_pos = position
        self._skipped.append(s)
        if self.last_control is not None and not s.isspace():
            self.last_control = None

    def _flush_skipped(self) -> None:
        """Report the text collected since the last non-text input (a stray run, or a skipped body)."""
        text = "".join(self._skipped)
        self._skipped.clear()
        if self.state == "skip":
            self._report("E-PARSE-SKIPPED", "body of a message whose header could not be read: "
                         f"{text[:40]!r}", self._skip_pos, text)
        elif not text.isspace():  # whitespace between frames is layout (transcripts print newlines)
            self._report("E-PARSE-STRAY-TEXT", f"text outside a message: {text.strip()[:40]!r}",
                         self._skip_pos, text)

    @property
    def in_message(self) -> bool:
        """A message is open (its content is being read: state ``content``, or ``held``)."""
        return self.state == "content" or self.state == "held"

    @property
    def has_pending_text(self) -> bool:
        """Text outside every message is waiting to be reported (at the next control or ``finish``)."""
        return bool(self._skipped)

    # -- input -------------------------------------------------------------
    def text(self, s: str, position: int) -> None:
        if not s:
            return
        st = self.state
        if st == "content":
            self._content.append(s)
            if self._emit is not None:
                self._emit(new_delta(s, self.channel, self.visible))
        elif st == "held":  # an unknown channel: streamed whole at the terminator (see ``close``)
            self._content.append(s)
        elif st == "header":
            self._header.append(s)
            self._header_len += len(s)
            if self._header_len > MAX_HEADER_CHARS:
                text = self._header_text()
                self._header_len = 0
                self.state = "expect_start"
                self.error("E-PARSE-HEADER", f"header longer than {MAX_HEADER_CHARS} characters", position, text)
        else:  # expect_start or skip: collected, reported at the next non-text input
            self._skip(s, position)

    def add_content(self, s: str) -> Delta:
        """Append text to the open message (state ``content``) and return its delta, unemitted.

        The stream decoder's per-token fast path: no state dispatch, no emit callback.
        """
        self._content.append(s)
        return new_delta(s, self.channel, self.visible)

    @property
    def open_content(self) -> bool:
        """The input's last text went to an open message's content (a partial control at the
        end can be cut from it: ``cut_content``)."""
        return self.in_message

    def cut_content(self, k: int) -> str:
        """Remove and return the last ``k`` characters of the open message's content (parse's
        side of a partial control at the end: ``Lexicon.partial_control``)."""
        text = "".join(self._content)
        self._content = [text[:-k]] if k < len(text) else []
        return text[-k:] if k <= len(text) else text

    @property
    def content_append(self) -> Callable[[str], None]:
        """``add_content`` without the ``Delta``: the open message's content ``list.append``.

        For callers that cache the ``Delta`` themselves (``BatchDecoder``).  Valid only
        while the state stays ``content``: anything else fed to the machine (control,
        text, finish, close) may open a new content buffer - read it again after that.
        """
        return self._content.append

    def control(self, name: str, position: int) -> None:
        self.last_control = name
        start, ends = self.start, self.terminators
        if self._skipped:
            if self.state == "skip" and name != start and name not in ends:
                self._skip(name, position)  # a control inside a skipped body: its text, with the body
                return
            if ends.get(name) == "return" and self._recover_final(position):
                return
            self._flush_skipped()
        st = self.state
        if st == "content" or st == "held":
            reason = ends.get(name)
            if reason is not None:
                self.close(reason, position)
            elif name in self.markers:
                self.text(name, position)
            elif name == start:
                self.error("E-PARSE-UNTERMINATED", "a new message started before this one ended", position)
                self.close("truncated", position)
                self._begin()
            else:
                self.error("E-PARSE-STRAY-CONTROL", f"{name} inside message content", position)
        elif st == "header":
            self._header_control(name, position)
        elif st == "skip":
            if name == start:
                self._begin()
            elif name in ends:
                self.state = "expect_start"
            else:  # a control inside a skipped body (first input of the body): its text
                self._skip(name, position)
        elif name == start:
            self._begin()
        elif name == _CHANNEL and start == "<|start|>":
            # A model that skipped "<|start|>assistant" between two of its messages
            # ("...<|end|><|channel|>final<|message|>..."): the header goes on with the previous
            # message's role (none yet: the prefilled role, else assistant), as transformers'
            # response parser reads it; reported, the text is kept.
            role = self.messages[-1].role if self.messages else (self._prefill or "assistant")
            self.error("E-PARSE-HEADER", f"{name} where a message should start: read as a "
                       f"{role} message whose <|start|>{role} is missing", position)
            self._begin()
            self._prefill = role
            self._header.append(name)
        elif name not in self.framing:
            self.error("E-PARSE-STRAY-CONTROL", f"{name} where a message should start", position)

    def _header_control(self, name: str, position: int) -> None:
        """A control inside a header (the format's own header syntax)."""
        if name == "<|message|>":
            self._open(position)
        elif name in HEADER_INNER:
            if name == _CHANNEL and not self._header and self._prefill is None and self.start == "<|start|>":
                # "<|start|><|channel|>final<|message|>...": a header without its role, read as the
                # message whose "<|start|>assistant" is missing is read (SGLang's harmony parser
                # reads the same); reported, the text is kept.
                role = self.messages[-1].role if self.messages else "assistant"
                self.error("E-PARSE-HEADER", f"{self.start}{name} without a role: read as a {role} message",
                           position)
                self._prefill = role
            self._header.append(name)
        elif name == self.start:
            self.error("E-PARSE-HEADER", f"{name} inside a header", position, self._header_text() or None)
            self._begin()
        elif name in self.terminators:
            self._salvage(name, position)
        else:
            self.error("E-PARSE-STRAY-CONTROL", f"{name} inside a header", position)

    def special(self, token: str, position: int) -> None:
        self.error("E-PARSE-STRAY-CONTROL", f"special token {token} in the stream", position)

    def finish(self, position: int, partial: str = "") -> None:
        """The end of the input.  ``partial``: a control's spelling cut by the end (``<|ret``
        after ``Answer``), left out of the open message by the reader: given as the text of its
        ``E-STREAM-TRUNCATED``."""
        if self._skipped:
            self._flush_skipped()
        if self.in_message:
            self.error("E-STREAM-TRUNCATED", "the stream ended inside a message"
                       + (f" (inside a control: {partial!r} left out of the content)" if partial else ""),
                       position, partial or None)
            self.close("truncated", position)
        elif self.state == "header" and (self._header or self._prefill is None):
            text = self._header_text()
            self.state = "expect_start"
            self.error("E-STREAM-TRUNCATED", "the stream ended inside a header", position, text or None)
        elif self.state == "skip":
            self.state = "expect_start"

    def cancel(self, position: int) -> None:
        """The stream was cancelled on purpose: an open message is closed as ``truncated``
        without an error; a header still open never became a message, its text is reported
        (``E-STREAM-TRUNCATED``; not raised in strict mode: a cut is not malformed input).
        Stray text fed before is reported (strict: raised) as ``finish`` does."""
        if self._skipped:
            self._flush_skipped()
        if self.in_message:
            self.close("truncated", position)
        elif self.state == "header" and (self._header or self._prefill is None):
            text = self._header_text()
            self.state = "expect_start"
            if not self.strict:
                self._report("E-STREAM-TRUNCATED", "the stream was cancelled inside a header", position, text or None)
        elif self.state == "skip":
            self.state = "expect_start"

    # -- transitions ---------------------------------------------------------
    def _begin(self) -> None:
        self.state = "header"
        self._header = []
        self._header_len = 0
        self._prefill = None

    def _header_text(self) -> str:
        hd = self._header
        text = hd[0] if len(hd) == 1 else "".join(hd)
        self._header = []
        return text

    def _open(self, position: int) -> None:
        hd = self._header
        text = hd[0] if len(hd) == 1 else "".join(hd)
        try:
            h = parse_header_cached(text, self.header, self._prefill, position)
        except HeaderError as exc:
            if self.strict:
                raise
            self.error(exc.code, exc.message, position, text or None)
            self.state = "skip"  # the body up to the next <|start|> / terminator: E-PARSE-SKIPPED
            return
        self._start(h, position)

    def _start(self, h: Header, position: int) -> None:
        self._prefill = None
        self._h = h
        self._content = []
        self.channel = h.channel
        self.visible = visible(h.channel, h.intent, h.role)
        # A channel none of the known ones (gpt-oss "??", "commentary?"): whether it is the
        # answer is known only at its terminator (<|return|>: yes), so its text is held and
        # streamed as one Delta then (``close``), never shown before.
        self.state = "held" if held(h.channel) else "content"
        if self._emit is not None:
            self._emit(MessageStart(h.role, h.channel, h.recipient, h.call_id, h.name, h.intent, h.content_type,
                                    h.constrain, position))

    def _salvage(self, name: str, position: int) -> None:
        """``name`` (a terminator) ended a header: <|message|> is missing.  Read the header as
        openai-harmony's non-strict parser does (see the module docstring): the role word (if
        repeated) and ``<|channel|>NAME`` are header, the rest is content."""
        text = self._header_text()
        role = self._prefill
        self._prefill = None
        channel: str | None = None
        rest = text
        k = rest.find(_CHANNEL)
        if k >= 0:
            after = rest[k + len(_CHANNEL):]
            word = _CHANNEL_WORD.match(after).group()  # type: ignore[union-attr]
            channel = word or None
            rest = rest[:k] + after[len(word):]
        rest = rest.strip()
        first = rest.split(None, 1)[0] if rest else ""
        h: Header | None = None
        if role is not None:
            if first == role:  # the prefilled role, repeated
                rest = rest[len(first):].lstrip()
            h = Header(role=role, channel=channel) if text else None  # nothing at all: no message
        elif first:  # a later message: its first word is the role
            try:
                r = parse_header(first, style=self.header, position=position)
            except OcmlError:
                pass
            else:
                h = Header(role=r.role, name=r.name, channel=channel)
                rest = rest[len(first):].lstrip()
        msg = f"{name} before <|message|>"
        if h is None:
            self.state = "expect_start"
            self.error("E-PARSE-HEADER", msg + (": no readable role, the header is skipped" if text else ""),
                       position, text or None)
            return
        self.error("E-PARSE-HEADER", msg + ": the header text is kept as content", position)
        self._start(h, position)
        if rest:
            self.text(rest, position)
        self.close(self.terminators[name], position)

    def _recover_final(self, position: int) -> bool:
        """``<|return|>`` after a skipped body or stray text: that text is the final answer
        (see the module docstring).  False (nothing done) for whitespace-only stray text."""
        text = "".join(self._skipped)
        skipped_body = self.state == "skip"
        if not skipped_body and text.isspace():
            return False
        self._skipped.clear()
        where = "whose header could not be read" if skipped_body else "without a header (text between messages)"
        self._report(_RECOVERED, f"<|return|> ended a message {where}: read as the final answer", self._skip_pos, None)
        self._start(Header(role="assistant", channel="final"), position)
        self.text(text if skipped_body else text.strip(), position)
        self.close("return", position)
        return True

    def close(self, reason: str, position: int) -> None:
        """End the open message (``reason``: end | return | call | truncated)."""
        h = self._h
        assert h is not None
        if self.state == "held":
            if reason == "return" and h.role == "assistant":
                # the channel word is left out of the message: the error keeps it
                self._report(_RECOVERED, f"<|return|> ended a message on channel {h.channel!r}: read as the "
                             "final answer", position, h.channel)
                h = Header(role=h.role, channel="final", recipient=h.recipient, call_id=h.call_id, name=h.name,
                           intent=h.intent, content_type=h.content_type, constrain=h.constrain)
            if self._emit is not None and self._content:  # the held text, as one Delta
                self._emit(new_delta("".join(self._content), h.channel, visible(h.channel, h.intent, h.role)))
        msg = Message(role=h.role, content="".join(self._content), channel=h.channel, recipient=h.recipient,
                      call_id=h.call_id, name=h.name, intent=h.intent, content_type=h.content_type,
                      constrain=h.constrain)
        self.messages.append(msg)
        self.ends.append(reason)
        self.state = "expect_start"
        self._h = None
        self._content = []
        if self._emit is not None:
            self._emit(MessageEnd(msg, reason, position))
