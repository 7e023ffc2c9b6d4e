"""``ocml pack`` pipeline helpers: JSONL inputs written from random conversations, ``PackOptions`` for
a run, the rows of its Parquet output, the documents of a split, and the same-output check of a resumed run."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from ocml.encoder.pipeline.run import PackOptions


SEQ = 384


WORDS = ("the model reads data and writes an answer because the question asks for a value; "
         "tokens, masks, labels and positions must agree — über naïve 東京 😀 <|start|> code: x = f(y) + 1").split()


def conversation(rng: random.Random, i: int) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = []
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": "Be brief."})
    for t in range(rng.randint(1, 4)):
        msgs.append({"role": "user", "content": f"q{i}.{t} " + " ".join(rng.choices(WORDS, k=rng.randint(1, 40)))})
        a: dict[str, Any] = {"role": "assistant", "content": " ".join(rng.choices(WORDS, k=rng.randint(1, 90)))}
        if rng.random() < 0.3:
            a["reasoning_content"] = " ".join(rng.choices(WORDS, k=rng.randint(1, 20)))
        msgs.append(a)
    return {"messages": msgs}


def write_data(path: Path, n: int, seed: int = 0, bad: dict[int, str] | None = None) -> list[Any]:
    """JSONL of ``n`` conversations (a few longer than SEQ); ``bad``: 1-based line -> raw text."""
    rng = random.Random(seed)
    recs: list[Any] = [conversation(rng, i) for i in range(n)]
    for i in (3, 17):
        if i < n:
            recs[i]["messages"].append({"role": "user", "content": " ".join(rng.choices(WORDS, k=400))})
            recs[i]["messages"].append({"role": "assistant", "content": "ok"})
    lines = [json.dumps(r, ensure_ascii=False) for r in recs]
    for line_no, text in sorted((bad or {}).items()):
        lines.insert(line_no - 1, text)
        recs.insert(line_no - 1, None)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return recs


def opts(inputs: list[Path], out: Path, **kw: Any) -> PackOptions:
    base: dict[str, Any] = dict(seq_len=SEQ, workers=1, outputs=("parquet", "npy"), plot=False, shard_size=16)
    base.update(kw)
    return PackOptions(inputs=tuple(str(p) for p in inputs), out=out, **base)


def parquet_rows(out: Path) -> Any:
    import pyarrow.parquet as pq

    files = sorted((out / "data").glob("*.parquet"))
    import pyarrow as pa

    return pa.concat_tables([pq.read_table(f) for f in files]).to_pylist()


def documents(out: Path, split: str) -> list[tuple[int, ...]]:
    """Every document in the split's Parquet rows, in order (segments = documents here)."""
    import pyarrow.parquet as pq

    docs = []
    for f in sorted((out / "data").glob(f"{split}-*.parquet")):
        for row in pq.read_table(f).to_pylist():
            ids = row["input_ids"]
            if "seq_lengths" not in row:
                docs.append(tuple(ids))
                continue
            at = 0
            for n in row["seq_lengths"]:
                docs.append(tuple(ids[at:at + n]))
                at += n
    return docs


def same_output(a: Path, b: Path) -> None:
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file() and ".ocml" not in p.parts
                   and p.name != "report.json")
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file() and ".ocml" not in p.parts
                           and p.name != "report.json")
    for f in files:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    ra, rb = (json.loads((x / "report.json").read_text()) for x in (a, b))
    for key in ("counts", "pack", "lengths", "errors", "shards"):
        assert ra[key] == rb[key], key
