"""The escape rule for every text ocml writes, in every format: its one home.

Where a control has no id in the tokenizer (fallback mode, e.g. ``Encoder("harmony",
tokenizer="o200k_base")``, and every ``to_text`` transcript) it is spelled as text, so text
that spells a control would read as one.  OpenChatML 2.2 §3: outside a literal block, a
control written as text is escaped by doubling its leading ``<`` (``<<|start|>`` reads as
the text ``<|start|>``); the readers undo it (``ocml.encoder.parse.TextSplitter``, the stream
scanner).  The rule covers *all* text, not only message content: Harmony system/developer
sections (instructions, tool names, descriptions, TypeScript schemas, enum values, model
identity, dates), ChatML / Apertus tool blocks, header-adjacent text.

Two things make it more than a ``str.replace``:

- adjacent text pieces are one run for a reader (``a<|e`` + ``nd|>`` is ``a<|end|>``), so a
  run is escaped as the concatenation of its pieces, then cut back into them;
- one case has no escape: a run ending in ``<`` right before a control spelled as text
  (``a<`` + ``<|end|>`` reads as the escaped text ``a<|end|>``).  A format with literal blocks
  (OpenChatML 2.2) writes that ``<`` run in ``<|literal|><|endliteral|>``; any other raises
  ``E-UNREPRESENTABLE`` naming the field.

Registered controls need none of this: text is encoded with special-token parsing off, so
it never becomes a control id (``Escaper`` is then inert and costs one truth test).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import UnrepresentableError
from ..plan import CTL, TXT, Piece

#: what escapes a control spelled as text: one more of its first character
ESCAPE = "<"
LITERAL, ENDLITERAL = "<|literal|>", "<|endliteral|>"

UNREPRESENTABLE_HINT = ("register the format's control tokens on the tokenizer (vocab.load(..., register=FORMAT)) "
                        "so controls are ids, use openchatml-2.2 (literal blocks), or end the text with another "
                        "character")


class Escaper:
    """The escape rule for one (format, tokenizer): the format's controls that are text there."""

    __slots__ = ("text_controls", "literal_block", "_controls", "_re", "_probe")

    def __init__(self, controls: Sequence[str], text_controls: Sequence[str]) -> None:
        self.text_controls = tuple(text_controls)
        self._controls = frozenset(self.text_controls)
        #: the format can wrap a trailing '<' run in a literal block (OpenChatML 2.2)
        self.literal_block = LITERAL in controls and ENDLITERAL in controls
        alts = sorted(self.text_controls, key=len, reverse=True)
        # the escape goes before every spelled control ("(?=...)": zero-width, one '<' inserted)
        self._re = re.compile("(?=" + "|".join(re.escape(c) for c in alts) + ")") if alts else None
        # the cheap "could it need escaping" test (ChatML's <s> / </s> do not start with "<|")
        self._probe = "<|" if all(c.startswith("<|") for c in alts) else "<"

    def __bool__(self) -> bool:
        """True when some control is spelled as text (escaping applies)."""
        return self._re is not None

    def escape(self, text: str) -> str:
        """``text`` with every control it spells escaped (one text piece on its own)."""
        if self._re is None or self._probe not in text:
            return text
        return self._re.sub(ESCAPE, text)

    def _escape_run(self, texts: list[str]) -> list[str]:
        """Adjacent text pieces, escaped as their concatenation and cut back into pieces."""
        if len(texts) == 1:
            return [self.escape(texts[0])]
        joined = "".join(texts)
        if self._re is None or self._probe not in joined:
            return texts
        at = [m.start() for m in self._re.finditer(joined)]
        if not at:
            return texts
        out: list[str] = []
        start = 0
        k = 0
        for t in texts:
            end = start + len(t)
            cuts = []
            while k < len(at) and at[k] < end:
                cuts.append(at[k] - start)
                k += 1
            if cuts:
                parts = []
                prev = 0
                for c in cuts:
                    parts.append(t[prev:c])
                    prev = c
                parts.append(t[prev:])
                t = ESCAPE.join(parts)
            out.append(t)
            start = end
        return out

    def write(self, pieces: Sequence[Piece], *, field: str = "content", index: int | None = None,
              hint: str | None = None) -> tuple[Piece, ...]:
        """``pieces`` with their text (``TXT`` / ``OFF``, raw) written by the rule.

        Include the control that follows the text (a terminator) so the trailing ``<`` case is
        seen.  Raises ``UnrepresentableError`` (``field``, ``index``) where there is no escape.
        """
        if self._re is None:
            return tuple(pieces)
        out: list[Piece] = []
        run: list[Piece] = []

        def flush(following: Piece | None) -> None:
            if not run:
                return
            texts = self._escape_run([v for _, v in run])
            written = [(kind, t) for (kind, _), t in zip(run, texts)]
            run.clear()
            if following is not None and following[0] == CTL and following[1] in self._controls:
                k = len(written) - 1
                while k >= 0 and not written[k][1]:
                    k -= 1
                if k >= 0 and written[k][1].endswith("<"):
                    kind, t = written[k]
                    if not self.literal_block:
                        raise UnrepresentableError(
                            f"{field} ends with '<' right before the control {following[1]}, which is spelled as "
                            "text here: the reader would take '<' + control for an escaped control",
                            index=index, field=field, hint=hint or UNREPRESENTABLE_HINT)
                    stripped = t.rstrip("<")
                    # the '<' run in a literal block: opaque bytes, no escape read there
                    written[k:k + 1] = [(kind, stripped), (CTL, LITERAL), (kind, t[len(stripped):]), (CTL, ENDLITERAL)]
            out.extend(p for p in written if p[0] == CTL or p[1])

        for p in pieces:
            if p[0] == CTL:
                flush(p)
                out.append(p)
            else:
                run.append(p)
        flush(None)
        return tuple(out)

    def text_before(self, text: str, following: str | None, *, field: str = "content",
                    index: int | None = None, hint: str | None = None) -> tuple[Piece, ...]:
        """One text written before the control ``following`` (None or "": nothing follows)."""
        if self._re is None:
            return ((TXT, text),)
        if following:
            return self.write(((TXT, text), (CTL, following)), field=field, index=index, hint=hint)[:-1]
        return self.write(((TXT, text),), field=field, index=index, hint=hint)
