"""Incremental token scanner: token ids in, *atoms* out.

This is the lowest layer of the stream decoder (``ocml.encoder.stream``).  It turns
a stream of token ids into a stream of atoms, recognising control tokens both
as single registered ids and as ASCII text spread over ordinary tokens
(OpenChatML 2.2 §3 portability clause), user stop strings, escapes and literal
blocks.  It knows nothing about message structure: the decoder above it runs
the header/content state machine on the atoms.

Usage::

    tables = ScannerTables(token_bytes, control_ids={200006: "<|start|>"},
                           text_controls=["<|end|>"], escapable=True,
                           stop_strings=["Observation:"])   # once per profile
    sc = Scanner(tables)                                    # once per stream
    for chunk in stream:
        for atom in sc.feed(chunk): ...
    for atom in sc.finish(): ...

Atoms (frozen, slotted dataclasses)
-----------------------------------
``Text(text, token_index)``
    Decoded text (``str``): this scanner does the incremental UTF-8 decoding
    itself (``errors="replace"``), holding back an incomplete code point
    until it is completed, or until a non-text atom / ``finish()`` flushes it
    as one U+FFFD per maximal invalid subpart (a valid prefix of a multibyte
    character right before a control becomes exactly one U+FFFD; nothing is
    carried across the control).  ``token_index`` is the index of the token
    holding the first byte of the current *run* of text, a run being the
    text between two non-text atoms.  Every ``Text`` piece of one run carries
    the same index, so merging adjacent ``Text`` atoms (``coalesce``) gives
    the same result whatever the chunking.  For a run that starts with an
    escape it is the token of the escape's ``<``.
``Control(name, token_index, via_id, in_literal)``
    A control token: a registered id (``via_id=True``) or its ASCII spelling
    (``via_id=False``).  ``in_literal=True`` only for a registered control id
    met inside a literal block (other than the block's terminator); the
    decoder decides whether that is an error, text or structure.
``Special(token_id, token_index)``
    Any id in ``other_special_ids`` (``<|endoftext|>``, reserved ids...),
    in every mode.  Never text.
``StopString(text, token_index)``
    A user stop string matched in the text.  The text before it is emitted
    (without any part of the stop string); ``text`` is the stop string so
    the decoder can implement ``include_stop_str_in_output``.
``InvalidId(token_id, token_index)``
    An id that is negative, ``>= n_vocab``, or inside the vocabulary but with
    no bytes and no registration.  Scanning goes on after it.

``token_index`` counts every id fed to the scanner since the last
``reset()``/``finish()`` (0-based).  For a control/stop matched in text it is
the token in which the match *ended*; tokens after it in the same chunk are
still scanned and reported, so the decoder can trim them.

Every non-text atom is a hard boundary: held-back bytes before it are released
as text, the UTF-8 decoder is flushed, and no pattern spans it (so
``<|en`` + ``<|endoftext|>`` id + ``d|>`` is text, Special, text).

Matching rules (decided; see the decoding note §3.1 and the formats note §8)
---------------------------------------------------------------------------
* Scanning is over bytes, so a pattern may start or end inside a token.
* The **earliest-ending** match wins; at the same end the **longest** wins;
  after a match scanning restarts at the match end (matches never overlap).
* Same bytes registered twice: control > escape > stop string (so a stop
  string equal to a text control yields the ``Control``; the decoder may
  treat that control as a stop).  A stop string that ends earlier than an
  overlapping control still wins (earliest end), e.g. stop ``end|`` in
  ``<|end|>`` gives text ``<|``, the stop, text ``>``.
* Escapes (``escapable=True``): ``"<" + c`` for each **text** control ``c``
  yields ``c`` as plain text and no event.  ``<<<|start|>`` gives
  ``<<|start|>``; unknown tags ``<<|foo|>`` are unchanged; ``<<`` + ``x`` is
  ``<<x``.  Controls registered as ids have no textual escape (their ASCII
  spelling is already plain text).  The scanner has no notion of headers, so
  escapes are unescaped wherever they occur in normal mode; rejecting them in
  headers is the decoder's call.
* Registered ids vs text, per control: a control registered as an id is
  recognised only as that id; its ASCII spelling in ordinary tokens is text
  (as Harmony does).  A name may not be both registered and a text control.
  An ordinary ``<`` right before a registered control id is text ``<`` then
  the ``Control`` (escapes are purely textual).
* Literal blocks (OpenChatML 2.2 §16.4): after a ``<|literal|>`` control
  (id or text) the scanner switches itself to literal mode at exactly that
  byte (``auto_literal=True``, the default), and back after the terminator.
  In literal mode the only textual pattern is the terminator (if it is a
  text control): no escapes (``<<|endliteral|>`` in a literal is text ``<``
  then the terminator), no other controls, **no stop strings**.  Registered
  control ids inside a literal become ``Control(..., in_literal=True)``
  (a nested ``<|literal|>`` id does not nest).  An unclosed literal runs to
  the end of the stream.  ``<|endliteral|>`` outside a literal is reported as
  a plain ``Control``; ``<<|literal|>`` outside is escaped text and does not
  enter literal mode.
* With ``auto_literal=False`` the decoder calls ``set_literal()`` itself; it
  is exact only if nothing after the ``<|literal|>`` control was fed yet
  (bytes already held back are re-scanned under the new mode).

Run prefix
----------
Tokenizers with a ``run_prefix`` (SentencePiece models that prepend ``\u2581`` to
every text run; ``ScannerTables(run_prefix=...)``) put those bytes at the start of
the stream and after every id that is not text; they are not content.  The scanner
drops them exactly where ``Encoder.parse`` does: from the ordinary bytes that follow
the start of the stream or a ``Control`` / ``Special`` / ``InvalidId`` *of an id*
(also inside a literal block), never after a control spelled as text.  The prefix
may be split over tokens (a token that is exactly the prefix, or part of it): its
bytes are held until they are known to be the whole prefix (dropped) or not (then
they are ordinary text, scanned as such).  A boundary before the prefix is complete
ends the attempt: the held bytes are text.  The run keeps the index of the token
where the prefix started (``Encoder.parse`` reports the run there too).  The state
"at a run start" is ``_state < 0`` (``-1 - held bytes``), so every fast path, which
requires ``_state == 0``, is skipped for that one token and nothing else costs
anything: without a run prefix the state is never negative.

Holdback
--------
The scanner holds back exactly the longest suffix of the unreleased bytes that
is a proper prefix of a pattern of the current mode (the Aho–Corasick state
depth) plus at most 3 bytes of an incomplete UTF-8 character, and releases
them as soon as they are disambiguated (``<|sta`` + ``rtle`` releases
``<|startle`` on the second token).  ``finish()`` flushes both.

Performance
-----------
One dense byte DFA per mode (numpy ``int32[states, 256]`` for building,
list-of-lists for scanning) and per-token *root tables*: ``fast[token]`` is
the DFA state after the token read from the root if the token is ordinary
and holds no match, else -1.  On the common path (state at the root,
ordinary token, no match inside) a token costs one list lookup and one
append; only tokens that start in a non-root state or contain a match walk
their bytes.  ``fast_text[token]`` is the token's text when ``fast[token]
== 0`` and its bytes are complete UTF-8 (else None): one lookup serves a
single-id ``feed`` (token-by-token streaming) with no byte work at all, and
the stream decoder uses the same table for its own lean path.  The tables are
built vectorised with numpy (only tokens that contain a byte that can leave
the root are simulated) plus one decode per token, about 0.15 s for a 200k
vocabulary.  ``scripts/bench_scanner.py`` measures µs/token.

Package layout
--------------
``atoms`` (what the scanner emits), ``automaton`` (the Aho-Corasick builder and the
per-token root tables), ``tables`` (``ScannerTables``, per tokenizer and profile), ``core``
(``Scanner``, per stream).  The benchmark is ``scripts/bench_scanner.py``, outside the package.
"""

from __future__ import annotations

from .atoms import Atom, Control, InvalidId, Special, StopString, Text, coalesce
from .core import Scanner
from .tables import ScannerTables, token_texts

__all__ = [
    "Atom",
    "Control",
    "InvalidId",
    "Scanner",
    "ScannerTables",
    "Special",
    "StopString",
    "Text",
    "coalesce",
    "token_texts",
]
