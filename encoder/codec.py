"""``Codec``: one format + one tokenizer and the tables derived from them.

The features (``parse``, ``transcript``, ``interchange``, ``openai_message``, ``openai_chunks``,
``stops``, ``stream``, ``template``, ``formats.chatml.fim``...) take a ``Codec`` - or, the few
that render, the ``Renders`` protocol - instead of the ``Encoder`` facade, and call each other
by importing each other's modules.  This module imports no feature (only the lexicon, the
lexical classes every reader shares), and ``Encoder`` (which
is a ``Codec``: see ``ocml.encoder.facade``) is imported by none, so the features and the
facade that dispatches to them form no import circle (``tests/house/test_import_cycles.py``).

Tables a feature derives from the format and tokenizer (the id parser, the transcript
format, the stream scanner tables) are built on first use and kept for the codec's life
by ``Codec.table``: one typed memo keyed by the feature's own builder function, so each
builder stays beside the rule it encodes and the codec never imports it back.  The
lexical classes both id readers share are the ``lexicon`` property.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from ocml import vocab
from ocml.vocab import Tokenizer, control_table

from .read.lexicon import Lexicon, build_lexicon

if TYPE_CHECKING:
    from .formats.base import Format
    from .inputs.shapes import ShapeOptions
    from .masks import MaskPolicy, MaskSpec
    from .messages import Conversation, CotName, CotPolicy, Mode, ModeName
    from .render import Renderer, RenderResult

__all__ = ["Codec", "Renders", "default_tokenizer"]

T = TypeVar("T")


def default_tokenizer(fmt: str) -> Tokenizer:
    """The format's default tokenizer (its controls registered unless the encoding has them)."""
    table = control_table(fmt)
    if table.fixed_ids:
        return vocab.load(table.default_encoding)
    return vocab.load(table.default_encoding, register=fmt)


class Codec:
    """A format instance on a tokenizer, and the tables derived from them (built once)."""

    def __init__(self, format_name: str, tokenizer: Tokenizer, format: Format) -> None:
        self.format_name = format_name
        self.tokenizer: Tokenizer = tokenizer
        self.format = format
        self._tables: dict[Callable[[Any], Any], Any] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        # the tables are caches: rebuilt on first use, never pickled
        return (Codec, (self.format_name, self.tokenizer, self.format))

    @property
    def fallback_controls(self) -> tuple[str, ...]:
        """Controls spelled as text because the tokenizer has no id for them."""
        return self.format.text_controls

    @cached_property
    def lexicon(self) -> Lexicon:
        """Which ids and spellings are what: shared by ``parse`` and the stream decoder."""
        return build_lexicon(self.format, self.tokenizer)

    def table(self, build: Callable[[Codec], T]) -> T:
        """``build(self)``, built on the first call and kept: a feature's derived table."""
        try:
            return cast(T, self._tables[build])  # the entry under ``build`` is what ``build`` made
        except KeyError:
            made = self._tables[build] = build(self)
            return made


class Renders(Protocol):
    """The facade's rendering side, as the features that render see it (``prefill``, the
    conversation path ``ocml.encoder.jobs``, the records of ``ocml.encoder.inputs``, template
    export, model probes): an ``Encoder``.  A protocol, so those features need not import the
    facade that imports them."""

    format_name: str
    tokenizer: Tokenizer
    format: Format
    mask: MaskPolicy
    cot: CotPolicy
    shape: str
    message_shape: str
    shape_options: ShapeOptions
    renderer: Renderer

    @property
    def fallback_controls(self) -> tuple[str, ...]: ...

    @property
    def lexicon(self) -> Lexicon: ...

    def table(self, build: Callable[[Codec], T]) -> T: ...

    def render(self, conversation: Any, mode: Mode | ModeName = "train", *, cot: CotPolicy | CotName | None = None,
               mask: MaskSpec = None) -> RenderResult: ...

    def prepare(self, conversation: Any, cot: CotPolicy | str | None = None) -> tuple[Conversation, list[int]]: ...
