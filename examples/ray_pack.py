"""Recipe: JSONL / Parquet conversations -> packed Parquet with Ray Data (``pip install 'ocml[ray]'``).

    python examples/ray_pack.py data/*.jsonl --out packed/ --format harmony --seq-len 4096
    python examples/ray_pack.py data/*.parquet --out packed/ --seq-len 8192 --pack block --actors 15
    python examples/ray_pack.py s3://bucket/chats/ --out packed/ --seq-len 4096 --address auto

The steps, each a plain Ray Data call you can lift into your own job:

1. read: JSON Lines with ``ray.data.read_text`` (one record per row as text, parsed in the
   render actors: ``pyarrow``'s JSON reader refuses records whose shapes differ, e.g. a
   string ``content`` here and a list of parts there, and unifies the rest into structs);
   Parquet with ``ray.data.read_parquet``.
2. render: ``map_batches(OcmlRender, ...)`` in an actor pool, the encoder built once per
   actor; a bad record becomes a row with ``error_code`` / ``error``, never a failed job.
3. pack: ``--pack global`` streams the rendered rows, in input order, to one windowed
   best-fit-decreasing packer in this (driver) process: the rows ``ocml pack`` writes for
   the same records.  ``--pack block`` packs every block in Ray tasks (fill per block:
   lower when blocks are small).  ``--pack none`` keeps one row per conversation.
4. write: this process writes ``OUT/data/train-NNNNN.parquet`` (TRL's columns; a shard
   appears under its name only when complete), ``OUT/errors.jsonl`` (every record missing
   from the rows, with its code) and ``OUT/report.json``.  Packing and writing cost far
   less than rendering, so one driver serves many render actors; to write from the
   workers instead, use ``pack_blocks(...)`` and ``Dataset.write_parquet`` (errors then
   stay as rows you filter out).

Rows in ``errors.jsonl`` are numbered in input order (records counted from 0 over the
inputs in the order given; ``read_text`` skips blank lines) with ``--pack global`` /
``none``, and within their block with ``--pack block``.  For file:line locations, resume
after a crash and ``.npy`` shards, use ``ocml pack`` on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ocml.encoder.integrations import ray_data as ocml_ray
from ocml.encoder.integrations.columns import RENDER_COLUMNS


class ShardSink:
    """Tables -> ``OUT/data/train-NNNNN.parquet`` of ``shard_rows`` rows each, each written
    under a hidden temporary name and renamed into place when complete."""

    def __init__(self, out: Path, shard_rows: int) -> None:
        self.dir = out / "data"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.shard_rows = shard_rows
        self.shards = 0
        self.rows = 0
        self._writer: Any = None
        self._tmp: Path | None = None
        self._in_shard = 0

    def write(self, table: pa.Table) -> None:
        while table.num_rows:
            take = min(table.num_rows, self.shard_rows - self._in_shard)
            part, table = table.slice(0, take), table.slice(take)
            if self._writer is None:
                self._tmp = self.dir / f".train-{self.shards:05d}.parquet.tmp"
                self._writer = pq.ParquetWriter(self._tmp, part.schema, compression="zstd")
            self._writer.write_table(part)
            self._in_shard += take
            self.rows += take
            if self._in_shard == self.shard_rows:
                self._commit()

    def _commit(self) -> None:
        if self._writer is None:
            return
        self._writer.close()
        assert self._tmp is not None
        os.replace(self._tmp, self.dir / f"train-{self.shards:05d}.parquet")
        self.shards += 1
        self._writer, self._tmp, self._in_shard = None, None, 0

    def close(self) -> None:
        self._commit()


def read(ray_data: Any, inputs: list[str]) -> tuple[Any, dict[str, Any]]:
    """The input dataset and the ``OcmlRender`` options its rows need."""
    if all(p.rstrip("/").endswith(".parquet") or os.path.isdir(p) for p in inputs):
        return ray_data.read_parquet(inputs), {}
    return ray_data.read_text(inputs), {"json_field": "text"}


def unpacked_rows(rendered: Any, failures: list[tuple[int, str, str]], batch_size: int) -> Iterator[pa.Table]:
    """``--pack none``: rendered rows in input order, failed rows moved to ``failures``."""
    row = 0
    for t in rendered.iter_batches(batch_format="pyarrow", batch_size=batch_size):
        bad = t.column("error_code").is_valid()
        for k in pc.indices_nonzero(bad).to_pylist():
            failures.append((row + k, t.column("error_code")[k].as_py(), t.column("error")[k].as_py()))
        row += t.num_rows
        yield t.filter(pc.invert(bad)).drop_columns(["error_code", "error"])


def main(argv: Iterable[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", help="JSONL files (.jsonl, .gz, .zst) or Parquet files / folders, "
                                             "local or any filesystem Ray reads (s3://...)")
    p.add_argument("--out", required=True, type=Path, help="output folder")
    p.add_argument("--seq-len", type=int, help="row length in tokens (required unless --pack none)")
    p.add_argument("--format", default="openchatml-2.2", help="chat format (default %(default)s)")
    p.add_argument("--tokenizer", default=None, help="tokenizer name (default: the format's)")
    p.add_argument("--mask", default=None, help="loss-mask policy (default: what the model generates)")
    p.add_argument("--cot", default=None, help="chain-of-thought policy (default, harmony, keep-all, drop-all)")
    p.add_argument("--messages-field", default="messages", help="messages column (default %(default)s)")
    p.add_argument("--tools-field", default="tools", help="tools column (default %(default)s)")
    p.add_argument("--pack", default="global", choices=["global", "block", "none"], help="see above")
    p.add_argument("--overlong", default="split", choices=["split", "truncate", "drop"])
    p.add_argument("--window", type=int, default=100_000, help="documents per packing window (--pack global)")
    p.add_argument("--pad-id", type=int, default=None, help="default: the tokenizer's pad / the format's end id")
    p.add_argument("--actors", type=int, default=None,
                   help="render actors, one CPU each (default: the cluster's CPUs minus one, for reading)")
    p.add_argument("--batch-size", type=int, default=1000, help="records per render call (default %(default)s)")
    p.add_argument("--shard-rows", type=int, default=8192, help="rows per Parquet shard (default %(default)s)")
    p.add_argument("--address", default=None, help="Ray cluster address (default: start a local Ray)")
    p.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local Ray (default: all)")
    args = p.parse_args(list(argv) if argv is not None else None)
    if args.pack != "none" and not args.seq_len:
        p.error("--seq-len is required unless --pack none")

    import ray
    import ray.data

    ray.init(address=args.address, num_cpus=args.num_cpus, include_dashboard=False,
             ignore_reinit_error=True, log_to_driver=False)
    actors = args.actors or max(1, int(ray.cluster_resources().get("CPU", 2)) - 1)
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = args.pack != "block"  # rows numbered (and packed) in input order
    ds, read_options = read(ray.data, args.inputs)
    encoder_options = {k: v for k, v in (("tokenizer", args.tokenizer), ("mask", args.mask), ("cot", args.cot))
                       if v is not None}
    outputs = ["input_ids", "labels"] + (["message_index"] if args.overlong == "truncate" else [])
    if args.pack == "none":
        outputs = ["input_ids", "labels", "assistant_masks"]
    assert set(outputs) <= set(RENDER_COLUMNS)
    rendered = ocml_ray.render(ds, args.format, actors=actors, batch_size=args.batch_size, outputs=outputs,
                               messages_field=args.messages_field, tools_field=args.tools_field,
                               **read_options, **encoder_options)

    t0 = time.perf_counter()
    sink = ShardSink(args.out, args.shard_rows)
    failures: list[tuple[int, str, str]] = []
    report: dict[str, Any]
    if args.pack == "none":
        for table in unpacked_rows(rendered, failures, args.batch_size):
            sink.write(table)
        report = {"rows": sink.rows}
    else:
        from ocml.encoder import Encoder

        pad_encoder = Encoder(args.format, args.tokenizer) if args.pad_id is None else None
        stream = ocml_ray.pack(rendered, args.seq_len, scope=args.pack, pad_id=args.pad_id, encoder=pad_encoder,
                               overlong=args.overlong, window=args.window, batch_size=args.batch_size)
        for table in stream:
            sink.write(table)
        failures, report = stream.failures, stream.report
    sink.close()
    with open(args.out / "errors.jsonl", "w", encoding="utf-8") as f:
        for row, code, text in failures:
            f.write(json.dumps({"row": row, "code": code, "error": text}, ensure_ascii=False) + "\n")
    report = {**report, "pack": args.pack, "format": args.format, "bad_records": len(failures),
              "shards": sink.shards, "seconds": round(time.perf_counter() - t0, 3)}
    (args.out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"{sink.rows} rows in {sink.shards} shard(s) -> {args.out / 'data'}; {len(failures)} record(s) "
          f"missing -> errors.jsonl; report.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
