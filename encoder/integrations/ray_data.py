"""Ray Data: render in an actor pool (the encoder built once per actor), pack per block or
globally, stream the packed rows to the driver.

    import ray, ray.data
    from ocml.encoder.integrations import ray_data as ocml_ray
    ds = ray.data.read_text(paths)                                    # JSON Lines, one record per row
    rendered = ocml_ray.render(ds, "harmony", json_field="text", actors=8)
    stream = ocml_ray.pack(rendered, 4096, encoder="harmony", scope="global")
    for table in stream: ...                                          # pyarrow Tables, TRL columns
    stream.report, stream.failures

``scope="block"`` packs each block in the actor pool (``OcmlPack``, fill per block);
``scope="global"`` packs in the driver over the ordered stream (``TablePacker``, windowed
best-fit-decreasing: the rows ``ocml pack`` writes for the same records).  Packing costs
far less than rendering (``scripts/bench_pack.py``), so one driver keeps up with many
render actors.  ``examples/ray_pack.py`` is the whole recipe (read, render, pack, write).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from ocml.vocab import DEFAULT_FORMAT
from ocml.vocab.errors import require

from ..errors import InputError
from ..masks import IGNORE
from ..pack import DEFAULT_WINDOW, Overlong, PackReport
from .hf_datasets import DEFAULT_BATCH_SIZE
from .pack_stage import Failure, OcmlPack, TablePacker, split_failures
from .render_stage import OcmlRender

SCOPES = ("global", "block")


def _compute(actors: int | tuple[int, int]) -> Any:
    data = require("ray.data", "ray")
    if isinstance(actors, tuple):
        return data.ActorPoolStrategy(min_size=actors[0], max_size=actors[1])
    return data.ActorPoolStrategy(size=actors)


def render(ds: Any, encoder: Any = DEFAULT_FORMAT, *, actors: int | tuple[int, int] = 1,
           batch_size: int = DEFAULT_BATCH_SIZE, num_cpus: float = 1.0, **render_options: Any) -> Any:
    """``ds.map_batches(OcmlRender, ...)``: token + error columns per record (pyarrow batches).

    ``actors``: actor pool size (or ``(min, max)``); each actor builds the encoder once and
    holds ``num_cpus``: leave CPUs for the read tasks (actors x num_cpus < the cluster's CPUs).
    ``render_options``: ``OcmlRender``'s (``json_field``, ``messages_field``, ``outputs``,
    ``keep``, ``errors``, ``tokenizer``, encoder keywords).  They are checked here, in the
    driver, so a typo fails now rather than in every actor.
    """
    OcmlRender(encoder, **render_options)
    return ds.map_batches(OcmlRender, fn_constructor_kwargs={"encoder": encoder, **render_options},
                          batch_format="pyarrow", batch_size=batch_size, compute=_compute(actors),
                          num_cpus=num_cpus)


def pack_blocks(rendered: Any, seq_len: int, *, pad_id: int | None = None, encoder: Any = None,
                overlong: Overlong | str = "split", pass_errors: bool = True, num_cpus: float = 1.0) -> Any:
    """``rendered.map_batches(OcmlPack(...), batch_size=None)``: each block packed on its own.

    Packing holds no state worth keeping (the pad id is resolved here, in the driver), so it
    runs as Ray tasks, which give their CPU back between blocks: an actor pool would hold
    CPUs that the read and render stages need.  With ``pass_errors`` the blocks also carry
    one row per missing record (``pack_stage.failure_table``; ``split_failures``)."""
    fn = OcmlPack(seq_len, pad_id=pad_id, encoder=encoder, overlong=overlong, pass_errors=pass_errors)
    return rendered.map_batches(fn, batch_format="pyarrow", batch_size=None, num_cpus=num_cpus)


class PackedStream:
    """Packed pyarrow Tables, streamed to the caller; ``report`` and ``failures`` are
    complete once the iteration ends.

    ``failures``: ``(row, error_code, error)`` per record missing from the rows (failed
    render, or dropped as overlong); ``row`` numbers records in stream order (global
    scope: the input order; block scope: the row within its block).
    """

    def __init__(self, rendered: Any, seq_len: int, *, scope: str = "global", pad_id: int | None = None,
                 encoder: Any = None, overlong: Overlong | str = "split", window: int | None = DEFAULT_WINDOW,
                 batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if scope not in SCOPES:
            raise InputError(f"scope={scope!r}", field="scope", hint="'global' or 'block'")
        self.scope = scope
        self.failures: list[Failure] = []
        self.report: dict[str, Any] = {}
        if scope == "global":
            # Rows must reach the packer in input order for deterministic rows.
            rendered.context.execution_options.preserve_order = True
            self._packer: TablePacker | None = TablePacker(seq_len, pad_id=pad_id, encoder=encoder,
                                                           overlong=overlong, window=window)
            self._source = rendered
        else:
            self._packer = None
            self._source = pack_blocks(rendered, seq_len, pad_id=pad_id, encoder=encoder, overlong=overlong)
            self._seq_len = seq_len
        self._batch_size = batch_size

    def __iter__(self) -> Iterator[pa.Table]:
        tp = self._packer
        if tp is not None:
            for batch in self._source.iter_batches(batch_format="pyarrow", batch_size=self._batch_size):
                yield from tp.add(batch)
            yield from tp.finish()
            self.failures = tp.failures
            self.report = tp.report.to_dict()
            return
        report = PackReport(self._seq_len)
        for table in self._source.iter_batches(batch_format="pyarrow", batch_size=None):
            rows, failed = split_failures(table)
            self.failures += failed
            if rows.num_rows:
                _count(report, rows)
                yield rows
        self.report = {k: v for k, v in report.to_dict().items()
                       if k in ("seq_len", "segments", "tokens", "trained_tokens", "rows", "padding_tokens",
                                "fill_rate")}


def _count(report: PackReport, rows: pa.Table) -> None:
    """What a block's packed rows tell (documents and overlong records stay in the actors)."""
    import pyarrow.compute as pc

    tokens = int(pc.sum(pc.list_value_length(rows.column("input_ids"))).as_py() or 0)
    report.rows += rows.num_rows
    report.tokens += tokens
    report.padding_tokens += rows.num_rows * report.seq_len - tokens
    report.segments += int(pc.sum(pc.list_value_length(rows.column("seq_lengths"))).as_py() or 0)
    labels = pc.list_flatten(rows.column("labels"))
    report.trained_tokens += int(pc.sum(pc.cast(pc.not_equal(labels, IGNORE), pa.int64())).as_py() or 0)


def pack(rendered: Any, seq_len: int, **options: Any) -> PackedStream:
    """Pack a rendered Ray dataset; iterate the result for pyarrow Tables (``PackedStream``)."""
    return PackedStream(rendered, seq_len, **options)


__all__ = ["PackedStream", "SCOPES", "pack", "pack_blocks", "render"]
