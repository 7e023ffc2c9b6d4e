"""Sequence packing for training: rendered documents -> fixed-length rows.

    from ocml.encoder.pack import pack
    p = pack(enc.render_batch(convs, errors="collect"), seq_len=4096, encoder=enc)
    p.input_ids, p.labels, p.position_ids   # [rows, seq_len]
    p.seq_lengths, p.cu_seqlens, p.doc_index, p.report

Never re-tokenizes: works on the ids/mask of ``render``/``render_batch`` (or a ragged
dict).  Rules (one home: ``ocml.encoder.packing``):

- every row is exactly ``seq_len`` long; padding (``pad_id``) is a last segment of its own
  with label -100, position 0.., ``doc_index`` -1, counted in the report;
- labels: the token where its mask is true, else -100; the first token of every segment
  is -100 too (no target crosses a document boundary once a trainer shifts labels);
- positions restart at 0 for every segment;
- ``pad_to_multiple_of=N``: every document segment padded to a multiple of N (TRL /
  Megatron-Bridge style, for context parallelism): pad id, label -100, positions continue;
- best-fit-decreasing over the whole input (``window=None``) or over windows of
  ``window`` documents (streaming, bounded memory), ties broken by input index;
- overlong documents: ``drop``, ``truncate`` (at the end of an assistant message: the
  prompt plus as many whole assistant messages as fit; dropped if not even the first
  fits) or ``split`` (seq_len pieces, each its own segment: positions restart and its
  first label is -100); always listed in the report by input index.
"""

from __future__ import annotations

from typing import Any

from .packing import (DEFAULT_WINDOW, IGNORE, PAD_DOC, Overlong, OverlongRecord, Packed, Packer, PackReport,
                      concat_packed)

__all__ = ["DEFAULT_WINDOW", "IGNORE", "Overlong", "OverlongRecord", "PAD_DOC", "PackReport", "Packed", "Packer",
           "concat_packed", "pack"]


def pack(docs: Any, seq_len: int, *, pad_id: int | None = None, encoder: Any = None,
         overlong: Overlong | str = "split", window: int | None = None,
         pad_to_multiple_of: int | None = None) -> Packed:
    """Pack ``docs`` into rows of exactly ``seq_len`` tokens.

    ``docs``: a ``Batch`` (``render_batch`` output; failed rows are skipped and listed in
    ``report.skipped``, every document keeps its input index), a list of ``RenderResult``
    (None = failed), one ``RenderResult``, or a ragged dict ``{"ids", "mask", "offsets",
    "index" (optional: default 0..n-1), "message_index" (optional, for truncate)}``.
    ``pad_id``: explicit, else ``encoder``'s tokenizer pad token, else its format's end id.
    ``window``: None = global best-fit-decreasing; an int = documents per window (same
    rows as streaming the documents through a ``Packer``; all windows come back as one).
    ``pad_to_multiple_of``: pad every document segment to a multiple of N tokens (pad
    id, label -100, positions continuing; ``seq_lengths`` / ``cu_seqlens`` padded;
    packing places the padded lengths); ``seq_len`` must be a multiple of N.
    """
    packer = Packer(seq_len, pad_id=pad_id, encoder=encoder, overlong=overlong, window=window,
                    pad_to_multiple_of=pad_to_multiple_of)
    packer.add_docs(docs)
    chunks = list(packer.ready())
    chunks.append(packer.finish())
    return chunks[0] if len(chunks) == 1 else concat_packed(chunks)
