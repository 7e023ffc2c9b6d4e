"""What a sampler stops on, for each format and tokenizer.

The stop controls are data (``stops`` in ``encoder/formats/<pkg>/<format>.tokens.json``), so every
format has them, renderable or not.  In Harmony / OpenChatML an assistant turn ends at
``<|return|>`` (final answer) or ``<|call|>`` (tool call); ``<|end|>`` ends a *message*
but generation goes on (analysis -> final), so it is not a stop in the default
``mode="assistant"`` (stopping there gives empty answers after the analysis message; see
the decoding note, failure #25).  ``mode="all"`` adds ``<|end|>`` for callers that want
every message boundary.  Every function takes an ``Encoder``, or a format name plus an
optional tokenizer (default: the format's own).

Registered controls stop by id (``stop_ids``); controls the tokenizer does not have
(fallback mode, the control is spelled as ordinary text) stop by string
(``stop_strings``).  ``ocml.encoder.stops.vllm`` and ``ocml.encoder.stops.hf_criteria`` package
both for the samplers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ocml.vocab import Tokenizer, canonical_format
from ocml.vocab.errors import expect

from ..grammar.terminators import terminators_of

if TYPE_CHECKING:
    from ..codec import Codec

__all__ = ["as_codec", "first_stop", "stop_ids", "stop_strings", "stop_tokens", "tokenizer_of"]

def tokenizer_of(enc: Codec | str, tokenizer: Tokenizer | None) -> Tokenizer:
    """The tokenizer given, else the encoder's, else the format's default."""
    if isinstance(tokenizer, str):
        from ocml.vocab import load

        return load(tokenizer)
    if tokenizer is not None:
        expect(tokenizer, Tokenizer, "tokenizer", "a vocab.Tokenizer or an encoding name")
        return tokenizer
    if isinstance(enc, str):
        from ..codec import default_tokenizer

        return default_tokenizer(canonical_format(enc))
    return as_codec(enc).tokenizer


def as_codec(enc: Any) -> Codec:
    """``enc`` if it is a codec (an ``Encoder``), else a typed error."""
    from ..codec import Codec

    expect(enc, Codec, "enc", "an Encoder or a format name")
    codec: Codec = enc
    return codec


def stop_tokens(enc: Codec | str, mode: str = "assistant") -> tuple[str, ...]:
    """The stop controls of a format (an ``Encoder`` or a format name) for ``mode``.

    Data, not code: ``stops`` in ``encoder/formats/<pkg>/<format>.tokens.json`` (the tables:
    ``ocml.encoder.grammar.terminators``).  ``"assistant"``
    ends the model's turn (Harmony / OpenChatML: ``<|return|>``, ``<|call|>``; ChatML:
    ``<|im_end|>``; Apertus: ``<|assistant_end|>``, ``<|tools_suffix|>``); ``"all"`` adds
    the other boundaries (``<|end|>``...).
    """
    return terminators_of(enc if isinstance(enc, str) else as_codec(enc).format_name).sampler_stops(mode)


def stop_ids(enc: Codec | str, mode: str = "assistant", tokenizer: Tokenizer | None = None) -> list[int]:
    """Registered ids of the stop controls; a format name works for formats ocml cannot
    render yet (``stop_ids("apertus", tokenizer=vocab.from_hf(...))``)."""
    tok = tokenizer_of(enc, tokenizer)
    out: list[int] = []
    for name in stop_tokens(enc, mode):
        i = tok.control_id(name)  # None exactly for the text controls (fallback)
        if i is not None and 0 <= i < tok.n_vocab:
            out.append(i)
    return out


def stop_strings(enc: Codec | str, mode: str = "assistant", tokenizer: Tokenizer | None = None) -> list[str]:
    """Text spellings of the stop controls that are **not** registered (fallback mode)."""
    tok = tokenizer_of(enc, tokenizer)
    return [n for n in stop_tokens(enc, mode) if tok.control_id(n) is None]


def first_stop(enc: Codec, ids: Any, role: str | None = "assistant") -> int:
    """How many of ``ids`` the turn has: up to and including the token of its first stop (the
    format's stop controls for ``role``, by id or, in fallback mode, spelled in the text), or
    ``len(ids)`` when it never stops.  Read as the stream decoder reads them, so
    ``enc.to_openai(ids[:first_stop(enc, ids)])`` is the stream's message for a batch row that
    went on generating after its stop (``enc.to_openai(ids, until_stop=True)`` does that)."""
    from ..events import Stop
    from ..stream.decoder import StreamDecoder

    dec = StreamDecoder(as_codec(enc), role=role)
    stop = next((e for e in dec.feed(ids) if isinstance(e, Stop)), None)
    return len(ids) if stop is None else stop.position + 1
