"""A completion as a serving engine hands it back after stopping at the turn's end control."""

from __future__ import annotations

from typing import Any

from ocml import encoder


def engine_stops(enc: encoder.Encoder, ids: list[int], end: str) -> list[tuple[list[int], dict[str, Any]]]:
    """(ids, ``finish`` keywords) of each way an engine that stopped at ``end`` (the completion's last
    control) reports it: the control stripped and named by id or by its spelling, or a plain EOS.  With
    ``end`` not a token (fallback mode) the engine matched its spelling and cut the text before it."""
    i = enc.tokenizer.control_id(end)
    if i is not None:
        assert ids[-1] == i
        cut, reasons = ids[:-1], (i, end)
    else:
        text = enc.tokenizer.decode_bytes(ids).decode()
        cut, reasons = enc.tokenizer.encode_text(text[:text.rfind(end)]), (end,)
    return [(cut, kw) for kw in [{"stop_reason": r} for r in reasons] + [{"eos": True}]]
