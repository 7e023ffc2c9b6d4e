"""Fill-in-the-middle documents for ``chatml`` (OpenChatML v0.1 §5-6): ``Encoder.render_fim``
and ``Encoder.parse_fim``.

Orders (``P``/``S``/``M`` = prefix, suffix, middle; ``END`` = the end-of-middle token):

| order        | layout (the model writes what follows the last control)               | used by |
|--------------|-----------------------------------------------------------------------|---------|
| ``psm``      | ``<|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>`` M END                | Bavarian et al. PSM, StarCoder, Qwen2.5-Coder, CodeGemma |
| ``spm``      | ``<|fim_prefix|><|fim_suffix|>S<|fim_middle|>P`` M END                | Bavarian et al. SPM, CodeLlama SPM |
| ``sp``       | ``<|fim_suffix|>S<|fim_prefix|>P`` M END                              | mistral-common (Codestral) |
| ``openchatml`` | ``<|fim_prefix|>P<|fim_middle|>`` M ``<|fim_suffix|>S``             | the v0.1 spec's own layout |

The middle and ``END`` are trained, nothing else.  ``END`` is ``</s>`` by default (the
format's EOS; ``<|file_separator|>`` is CodeGemma's habit); the spec's layout ends the
middle with ``<|fim_suffix|>`` (the suffix after it is context the model never predicts
from left to right: that layout is for storage and interchange, not inference; its
prompt form is the spec's task ``<|fim_prefix|>P<|fim_middle|><|fim_suffix|>S``).  In
``spm`` / ``sp`` the prefix and the middle are one run of text (encoded together: the
straddling rule of ``ocml.encoder.whole_runs`` decides the token that joins them).

Multi-file sequences (§6): ``files`` before the document, each
``<|file_separator|>PATH\\nCONTENT\\n`` (no path: ``<|file_separator|>\\nCONTENT\\n``, the
spec's example 3; with a path it is Qwen2.5-Coder's repository layout with this format's
separator); then ``<|file_separator|>PATH\\n`` and the document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

import numpy as np

from ocml.vocab.errors import as_enum, expect

from ...errors import InputError, InputTypeError, ParseError, UnknownNameError
from ...grammar.text import check_text
from ...plan import CTL, TXT, Piece

if TYPE_CHECKING:
    from ocml.vocab import ControlTable

    from ...codec import Codec
    from ...read.frames import FrameMachine
    from ...grammar.escape import Escaper

PRE, MID, SUF, SEP = "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|file_separator|>"
#: the role a fill-in-the-middle middle is read as (``decoder(role="fim")``: after ``<|fim_middle|>``)
FIM_ROLE = "fim"
_SYNTHESIZED = -2


class FimFormat(Protocol):
    """What the FIM layout reads of its format (``ChatML``; a protocol, since ``chatml`` imports this module)."""

    table: ControlTable
    bos_eos: bool
    escaper: Escaper


class FimOrder(str, Enum):
    PSM = "psm"
    SPM = "spm"
    SP = "sp"
    OPENCHATML = "openchatml"


#: ``order=`` as a string: ``FimOrder``'s values (tests/house/test_public_types.py keeps the two in step)
FimOrderName = Literal["psm", "spm", "sp", "openchatml"]


@dataclass(frozen=True, slots=True)
class FimFile:
    content: str
    path: str | None = None


@dataclass(frozen=True, slots=True)
class FimDocument:
    """A fill-in-the-middle document as read back by ``Encoder.parse_fim``."""

    prefix: str
    suffix: str
    middle: str | None
    order: str
    files: tuple[FimFile, ...] = field(default_factory=tuple)
    path: str | None = None
    #: the end-of-middle control that closed the middle, if any
    end: str | None = None

    def render_kwargs(self) -> dict[str, Any]:
        """Arguments that give this document back from ``Encoder.render_fim``."""
        out: dict[str, Any] = {"prefix": self.prefix, "suffix": self.suffix, "middle": self.middle,
                               "order": self.order, "files": [{"path": f.path, "content": f.content} for f in self.files],
                               "path": self.path}
        if self.order != FimOrder.OPENCHATML.value:
            out["end"] = self.end
        return out


def _str(value: Any, name: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    expect(value, str, name, "a string")
    text: str = value
    return text


def _files(files: Any) -> list[FimFile]:
    if isinstance(files, (str, bytes, Mapping)) or not isinstance(files, Sequence):
        raise InputTypeError("files must be a list of strings or {'path': ..., 'content': ...}", field="files")
    out = []
    for k, f in enumerate(files):
        if isinstance(f, str):
            out.append(FimFile(f))
        elif isinstance(f, Mapping):
            unknown = set(f) - {"path", "content"}
            if unknown:
                raise InputError(f"unknown keys {sorted(unknown)} in a file", field=f"files[{k}]",
                                 hint="a file is {'path': ..., 'content': ...}")
            out.append(FimFile(_str(f.get("content"), f"files[{k}].content") or "",
                               _str(f.get("path"), f"files[{k}].path", optional=True)))
        else:
            raise InputTypeError(f"files[{k}] must be a string or a dict", field=f"files[{k}]")
        path = out[-1].path
        if path is not None and ("\n" in path or not path):
            raise InputError(f"path {path!r} is empty or has a newline", field=f"files[{k}].path")
    return out


def fim_pieces(fmt: FimFormat, *, prefix: Any, suffix: Any, middle: Any = None, order: Any = "psm", files: Any = (),
               path: Any = None, end: Any = "</s>") -> list[tuple[Piece, bool, int]]:
    """The pieces of a fill-in-the-middle document with their (trained, owner) flags."""
    prefix = _str(prefix, "prefix")
    suffix = _str(suffix, "suffix")
    middle = _str(middle, "middle", optional=True)
    path = _str(path, "path", optional=True)
    if path is not None and ("\n" in path or not path):
        raise InputError(f"path {path!r} is empty or has a newline", field="path")
    order = as_enum(order, FimOrder, "order", "fill-in-the-middle order")
    if end is not None and end not in fmt.table.controls:
        raise InputError(f"end {end!r} is not a control of chatml", field="end",
                         hint="'</s>' (default), '<|file_separator|>', '<|im_end|>' or None")
    docs = _files(files)
    n = len(docs)
    out: list[tuple[Piece, bool, int]] = []
    fields: dict[int, str] = {}  # position in ``out`` of a text -> its argument (for errors)

    def ctl(name: str, train: bool = False, owner: int = n) -> None:
        out.append(((CTL, name), train, owner))

    def txt(text: str, train: bool = False, owner: int = n, field: str = "") -> None:
        if text:
            if not text.isascii():
                check_text(text, index=None, field=field)
            fields[len(out)] = field
            out.append(((TXT, text), train, owner))  # raw: written by ``_write`` (the escape rule)

    if fmt.bos_eos:
        ctl("<s>", owner=_SYNTHESIZED)
    for k, f in enumerate(docs):
        ctl(SEP, owner=k)
        txt((f.path or "") + "\n" + f.content + "\n", owner=k, field=f"files[{k}]")
    if docs or path is not None:
        ctl(SEP)
        txt((path or "") + "\n", field="path")
    done = middle is not None
    if order is FimOrder.PSM:
        ctl(PRE); txt(prefix, field="prefix"); ctl(SUF); txt(suffix, field="suffix"); ctl(MID)  # noqa: E702
    elif order is FimOrder.SPM:
        ctl(PRE); ctl(SUF); txt(suffix, field="suffix"); ctl(MID); txt(prefix, field="prefix")  # noqa: E702
    elif order is FimOrder.SP:
        ctl(SUF); txt(suffix, field="suffix"); ctl(PRE); txt(prefix, field="prefix")  # noqa: E702
    else:
        ctl(PRE); txt(prefix, field="prefix"); ctl(MID)  # noqa: E702
        if done:
            txt(middle, True, field="middle")
        ctl(SUF, done)
        txt(suffix, field="suffix")
        return _write(fmt, out, fields)
    if done:
        txt(middle, True, field="middle")
        if end is not None:
            ctl(end, True)
    return _write(fmt, out, fields)


def _write(fmt: FimFormat, entries: list[tuple[Piece, bool, int]],
           fields: dict[int, str]) -> list[tuple[Piece, bool, int]]:
    """Each raw text written by the escape rule (``ocml.encoder.grammar.escape``) before what follows
    it; every text is between two controls, so each is a run of its own."""
    if not fmt.escaper:
        return entries
    out = []
    for k, ((kind, val), train, owner) in enumerate(entries):
        if kind == TXT:
            nxt = entries[k + 1][0] if k + 1 < len(entries) else None
            (_, val), = fmt.escaper.text_before(val, nxt[1] if nxt and nxt[0] == CTL else None, field=fields[k])
        out.append(((kind, val), train, owner))
    return out


class _Atoms:
    """The frame-machine interface ``IdParser.feed_atoms`` feeds, collecting (control?, value)."""

    def __init__(self) -> None:
        self.atoms: list[tuple[bool, str]] = []

    def text(self, s: str, position: int) -> None:
        if self.atoms and not self.atoms[-1][0]:
            self.atoms[-1] = (False, self.atoms[-1][1] + s)
        elif s:
            self.atoms.append((False, s))

    def control(self, name: str, position: int) -> None:
        self.atoms.append((True, name))

    def special(self, name: str, position: int) -> None:
        raise ParseError(f"special token {name} in a fill-in-the-middle document", code="E-PARSE-STRAY-CONTROL",
                         position=position)

    def error(self, code: str, message: str, position: int | None, text: str | None = None) -> None:
        raise ParseError(message, code=code, position=position)

    def finish(self, position: int) -> None:
        pass


def parse_fim(enc: Codec, ids: Sequence[int] | np.ndarray, *, prefix: str | None = None) -> FimDocument:
    from ...parse import parser_for

    if MID not in enc.format.table.controls:  # the format's token data has no fill-in-the-middle
        raise UnknownNameError(f"format {enc.format_name!r} has no fill-in-the-middle tokens",
                               code="E-FORMAT-UNAVAILABLE", field="format")
    got = _Atoms()
    parser_for(enc).feed_atoms(ids, cast("FrameMachine", got))  # duck-typed: the callbacks a FrameMachine gets
    atoms = got.atoms
    if atoms and atoms[0] == (True, "<s>"):
        atoms = atoms[1:]
    files: list[FimFile] = []
    path: str | None = None
    # everything up to the last <|file_separator|>: files; after it: "PATH\n" + the document
    seps = [k for k, (c, v) in enumerate(atoms) if c and v == SEP]
    if seps and not any(c and v in (PRE, SUF) for c, v in atoms[seps[-1] + 1:]):
        seps = seps[:-1]  # a trailing separator ends the middle (END), it does not start a file
    if seps:
        if seps[0] > 0:
            files.append(FimFile(_one(atoms[:seps[0]]).removesuffix("\n")))
        for a, b in zip(seps, seps[1:]):
            p, _, content = _one(atoms[a + 1:b]).partition("\n")
            files.append(FimFile(content.removesuffix("\n"), p or None))
        atoms = atoms[seps[-1] + 1:]
        if atoms and not atoms[0][0]:
            head, nl, rest = atoms[0][1].partition("\n")
            if not nl:
                raise ParseError("a file separator without a newline before the document", code="E-PARSE-FIM")
            path = head or None
            atoms = ([(False, rest)] if rest else []) + atoms[1:]
    names = [v for c, v in atoms if c]
    texts: list[str] = []
    for c, v in atoms:  # the text after each control ("" when none)
        if c:
            texts.append("")
        elif texts:
            texts[-1] = v
        else:
            raise ParseError(f"text before the first fill-in-the-middle token: {v[:40]!r}", code="E-PARSE-FIM")
    fim = {PRE, MID, SUF}
    end = None
    psm_like = names[:3] == [PRE, SUF, MID] and len(names) <= 4
    if psm_like or (names[:2] == [SUF, PRE] and len(names) <= 3):
        k = 3 if names[0] == PRE else 2
        if len(names) > k:
            end = names[k]
            if end in fim or texts[k]:
                raise ParseError(f"unexpected {end} or text after the middle", code="E-PARSE-FIM")
        if names[0] == SUF:
            return _joined(texts[1], texts[0], prefix, end, FimOrder.SP, files, path)
        if texts[0]:
            return FimDocument(texts[0], texts[1], texts[2] if (texts[2] or end) else None, FimOrder.PSM.value,
                               tuple(files), path, end)
        # <|fim_prefix|> right before <|fim_suffix|>: SPM (a PSM document with an empty prefix is the same ids)
        return _joined(texts[2], texts[1], prefix, end, FimOrder.SPM, files, path)
    if names == [PRE, MID, SUF]:
        return FimDocument(texts[0], texts[2], texts[1] or None, FimOrder.OPENCHATML.value, tuple(files), path,
                           SUF if texts[1] else None)
    raise ParseError(f"not a fill-in-the-middle layout: controls {names}", code="E-PARSE-FIM",
                     hint="orders: psm, spm, sp, openchatml (see encoder.formats.chatml.fim)")


def _one(atoms: list[tuple[bool, str]]) -> str:
    if any(c for c, _ in atoms):
        raise ParseError("a control inside a file of a multi-file sequence", code="E-PARSE-FIM")
    return "".join(v for _, v in atoms)


def _joined(joined: str, suffix: str, prefix: str | None, end: str | None, order: FimOrder, files: list[FimFile],
            path: str | None) -> FimDocument:
    """``spm`` / ``sp``: prefix and middle are one run; ``prefix`` (if known) splits it, else it
    is all ``prefix`` (and ``middle=""`` when an end token follows: the same ids again)."""
    if prefix is None:
        return FimDocument(joined, suffix, "" if end else None, order.value, tuple(files), path, end)
    if not joined.startswith(prefix):
        raise ParseError("the document does not start with the given prefix", code="E-PARSE-FIM", field="prefix")
    rest = joined[len(prefix):]
    return FimDocument(prefix, suffix, rest if (rest or end) else None, order.value, tuple(files), path, end)
