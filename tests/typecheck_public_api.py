"""What a user's type checker sees (scripts/typecheck.sh checks this file with mypy; pytest does not
collect it).  ``assert_type`` pins each public return type; each ``# type: ignore[code]`` marks a
mistake the checker must catch: with ``warn_unused_ignores`` on, a mistake that stops being an error
(``ocml.Encodr`` typed as ``Any`` again, ``mode`` a plain ``str`` again) fails the check."""

from __future__ import annotations

from pathlib import Path

from typing_extensions import assert_type

import ocml
from ocml.encoder.formats.chatml.fim import FimDocument
from ocml.encoder.openai_chunks import Chunker
from ocml.encoder.stream.decoder import StreamDecoder


def usage(ids: list[int], folder: Path) -> None:
    enc = ocml.Encoder("harmony")
    assert_type(enc.render([], mode="prompt"), ocml.RenderResult)
    assert_type(enc.render_batch([]), ocml.Batch)
    assert_type(enc.parse(ids), list[ocml.Message])
    assert_type(enc.parse(ids, errors="collect"), ocml.ParseResult)
    assert_type(enc.to_openai(ids), ocml.ChatChoice)
    assert_type(enc.decoder(), StreamDecoder)
    assert_type(enc.chunker(), Chunker)
    assert_type(enc.parse_fim(ids), FimDocument)
    assert_type(enc.save_pretrained(folder), Path)
    assert_type(enc.stop_ids("all"), list[int])
    assert_type(ocml.load("o200k_base"), ocml.vocab.TiktokenTokenizer)

    ocml.Encodr("harmony")  # type: ignore[attr-defined]
    enc.render([], mode="trian")  # type: ignore[arg-type]
    enc.render([], cot="keep")  # type: ignore[arg-type]
    enc.render([], mask="finale")  # type: ignore[arg-type]
    enc.render_batch([], errors="skip")  # type: ignore[arg-type]
    enc.stop_ids("any")  # type: ignore[arg-type]
