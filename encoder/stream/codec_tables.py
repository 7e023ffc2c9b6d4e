"""The stream scanner's tables for one codec (+ user stop strings): built once, kept by the codec.

Split from ``ocml.encoder.stream.decoder`` (which re-exports ``tables_for``): building and
checking the tables is per codec, the decoder is per stream.  The lexical classes come from
``Codec.lexicon``, the same derivation ``Encoder.parse`` reads, so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import InputError
from .scanner import ScannerTables

if TYPE_CHECKING:
    from ..codec import Codec

__all__ = ["check_stop_strings", "ends_inside", "tables_for"]


def ends_inside(stop: str, control: str) -> bool:
    """Can ``stop`` end strictly inside ``control``'s spelling (after its first character,
    before its last)?  Then the scanner, where the earliest end wins, would read the stop
    string and lose the control."""
    for j in range(1, len(control)):
        if len(stop) <= j:
            if control[j - len(stop):j] == stop:
                return True
        elif stop.endswith(control[:j]):
            return True
    return False


def check_stop_strings(enc: Codec, stop_strings: Sequence[str]) -> None:
    """Refuse stop strings that could cut a control spelled as text (fallback mode only:
    registered controls are ids, their spelling is ordinary text)."""
    for k, stop in enumerate(stop_strings):
        if not isinstance(stop, str) or not stop:
            raise InputError(f"stop string {stop!r} is not a non-empty string", field=f"stop_strings[{k}]")
        clash = next((c for c in enc.format.text_controls if ends_inside(stop, c)), None)
        if clash is not None:
            raise InputError(
                f"stop string {stop!r} can end inside {clash}, which this tokenizer spells as text: "
                "the stop would fire in the middle of the control and break the message structure",
                code="E-STOP-OVERLAPS-CONTROL", field=f"stop_strings[{k}]",
                hint="use a stop string that is not part of a control's spelling, or register the "
                     "format's controls on the tokenizer (vocab.load(..., register=...)) so they are ids")


def _scanner_tables(enc: Codec) -> dict[tuple[str, ...], ScannerTables]:
    """A codec's scanner tables by stop strings (filled by ``tables_for``)."""
    return {}


def tables_for(enc: Codec, stop_strings: Sequence[str] = ()) -> ScannerTables:
    """Scanner tables for ``enc`` (+ user stop strings), built once per codec."""
    key = tuple(dict.fromkeys(stop_strings))
    cache = enc.table(_scanner_tables)
    t = cache.get(key)
    if t is None:
        check_stop_strings(enc, stop_strings)  # once per (encoder, stop strings), like the tables
        lx = enc.lexicon  # what is a control, a special, a text control: shared with Encoder.parse
        # Another profile of this encoder already decoded every token: share the strings.
        shared = next(iter(cache.values()), None)
        t = ScannerTables(enc.tokenizer.token_bytes_table, lx.n_vocab, control_ids=lx.control_ids,
                          other_special_ids=lx.special_ids, text_controls=lx.text_controls,
                          escapable=bool(lx.text_controls), stop_strings=key, literal_controls=lx.literal,
                          token_text=None if shared is None else shared.token_text,
                          run_prefix=lx.run_prefix)  # dropped where Encoder.parse drops it
        cache[key] = t
    return t
