"""``ocml pack`` end to end: every document's tokens in the rows, labels, positions, fill,
determinism across worker counts, bad records by line, outputs readable without ocml."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ocml import encoder
from ocml.encoder.errors import InputError
from ocml.encoder.pipeline.records import conversation_from_record
from ocml.encoder.pipeline.run import PackOptions, StrictStop, run

from support.pipeline import SEQ, opts, parquet_rows, write_data
from support.paths import ROOT

SAMPLE = ROOT / "examples" / "sample"


def npy_shards(out: Path) -> list[dict[str, np.ndarray]]:
    return [{p.stem: np.load(p, mmap_mode="r") for p in sorted(d.glob("*.npy"))}
            for d in sorted((out / "npy").iterdir())]


@pytest.fixture(scope="module")
def enc() -> encoder.Encoder:
    return encoder.Encoder("openchatml-2.2")


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any], Any]:
    d = tmp_path_factory.mktemp("packed")
    recs = write_data(d / "in.jsonl", 120, bad={5: "{not json", 40: json.dumps({"messages": [{"role": "robot", "content": "beep"}]})})
    res = run(opts([d / "in.jsonl"], d / "out", overlong="split"))
    return d / "out", recs, res


def segments(row: dict[str, Any]) -> list[tuple[list[int], list[int], list[int]]]:
    out, a = [], 0
    for n in row["seq_lengths"]:
        out.append((row["input_ids"][a:a + n], row["labels"][a:a + n], row["position_ids"][a:a + n]))
        a += n
    assert a == len(row["input_ids"])
    return out


def test_every_document_conserved_with_labels_and_positions(packed: Any, enc: encoder.Encoder) -> None:
    out, recs, res = packed
    docs = [enc.render(conversation_from_record(r)) for r in recs if r is not None and _renders(enc, r)]
    want: Counter[tuple[int, ...]] = Counter()
    split_tokens: Counter[int] = Counter()
    for r in docs:
        if len(r) <= SEQ:
            want[tuple(r.ids.tolist())] += 1
        else:
            split_tokens.update(r.ids.tolist())
    got: Counter[tuple[int, ...]] = Counter()
    got_split: Counter[int] = Counter()
    by_ids = {tuple(r.ids.tolist()): r for r in docs}
    for row in parquet_rows(out):
        for ids, labels, pos in segments(row):
            assert pos == list(range(len(ids)))          # positions restart per document
            assert labels[0] == -100                     # no target across a document boundary
            r = by_ids.get(tuple(ids))
            if r is None:                                # a piece of a split document
                got_split.update(ids)
                continue
            got[tuple(ids)] += 1
            assert labels[1:] == np.where(r.mask, r.ids, -100).tolist()[1:]
    assert got == want                                   # every document exactly once, unbroken
    assert got_split == split_tokens and sum(split_tokens.values()) > 0  # split documents: every token
    over = [json.loads(x) for x in (out / "overlong.jsonl").read_text().splitlines()]
    assert res.report["pack"]["overlong_documents"] == over[:20]
    assert res.report["pack"]["split"] == len(over) == sum(len(r) > SEQ for r in docs)
    assert {4, 19} <= {d["line"] for d in over} and all(d["action"] == "split" for d in over)  # by input line


def _renders(enc: encoder.Encoder, rec: Any) -> bool:
    try:
        enc.render(conversation_from_record(rec))
    except InputError:
        return False
    return True


def test_counts_fill_and_npy_rows(packed: Any) -> None:
    out, recs, res = packed
    rep = res.report
    rows = parquet_rows(out)
    tokens = sum(len(r["input_ids"]) for r in rows)
    assert rep["pack"]["rows"] == len(rows) == rep["counts"]["rows"]
    assert rep["pack"]["tokens"] == tokens == rep["counts"]["tokens"]
    assert rep["pack"]["fill_rate"] == pytest.approx(tokens / (len(rows) * SEQ))
    assert rep["pack"]["padding_tokens"] == len(rows) * SEQ - tokens
    assert rep["counts"]["trained_tokens"] >= sum(sum(1 for x in r["labels"] if x != -100) for r in rows)
    assert rep["counts"]["records"] == 122 and rep["counts"]["bad_records"] == 2 and rep["counts"]["documents"] == 120
    shards = npy_shards(out)
    assert len(shards) == rep["shards"]["count"] == -(-len(rows) // 16)
    k = 0
    pad = json.loads((out / "manifest.json").read_text())["pad_id"]
    for sh in shards:
        ids, labels, pos = sh["input_ids"], sh["labels"], sh["position_ids"]
        assert ids.shape[1] == SEQ and ids.dtype == np.int32 and labels.shape == ids.shape
        off = sh["seq_offsets"]
        for i in range(ids.shape[0]):
            row = rows[k]
            n = len(row["input_ids"])
            assert ids[i, :n].tolist() == row["input_ids"] and labels[i, :n].tolist() == row["labels"]
            assert pos[i, :n].tolist() == row["position_ids"]
            assert (ids[i, n:] == pad).all() and (labels[i, n:] == -100).all()
            lens = sh["seq_lengths"][off[i]:off[i + 1]].tolist()
            assert sum(lens) == SEQ and lens[: len(row["seq_lengths"])] == row["seq_lengths"]
            k += 1
    assert k == len(rows)


def test_bad_records_reported_by_line(packed: Any) -> None:
    out, _, res = packed
    errors = [json.loads(x) for x in (out / "errors.jsonl").read_text().splitlines()]
    assert [(e["line"], e["code"]) for e in errors] == [(5, "E-INPUT-JSON"), (40, "E-ROLE-UNKNOWN")]
    assert errors[1]["message_index"] == 0 and errors[1]["field"] == "role" and errors[0]["file"].endswith("in.jsonl")
    assert res.report["errors"]["by_code"] == {"E-INPUT-JSON": 1, "E-ROLE-UNKNOWN": 1}
    assert "in.jsonl:5: [E-INPUT-JSON]" in res.text


def test_manifest(packed: Any, enc: encoder.Encoder) -> None:
    out, _, res = packed
    m = json.loads((out / "manifest.json").read_text())
    assert m["format"] == "openchatml-2.2" and m["tokenizer"]["name"] == enc.tokenizer.name
    assert m["tokenizer"]["vocab_hash"] == enc.tokenizer.fingerprint
    assert m["mask"] == "default" and m["cot"] == "default" and m["ocml_version"]
    assert m["columns"] == ["input_ids", "labels", "position_ids", "seq_lengths", "doc_source", "doc_record"]
    assert m["counts"]["rows"] == res.report["pack"]["rows"] and len(m["fingerprint"]) == 32
    assert all((out / p).exists() for p in m["shards"]["parquet"] + m["shards"]["npy"])


@pytest.mark.parametrize("thread", [False, True], ids=["fork", "forkserver"])
def test_identical_output_for_1_and_2_workers(tmp_path: Path, thread: bool) -> None:
    """Byte-identical shards whatever the worker count, on both start paths: ``fork`` (this
    process has one thread) and ``forkserver`` (another thread is alive), where the encoder
    reaches the workers only through the pool's initializer."""
    import threading

    write_data(tmp_path / "in.jsonl", 90, seed=3, bad={9: "nope"})
    a = run(opts([tmp_path / "in.jsonl"], tmp_path / "w1", workers=1, chunk_records=7))
    stop = threading.Event()
    if thread:
        threading.Thread(target=stop.wait, daemon=True).start()
    try:
        b = run(opts([tmp_path / "in.jsonl"], tmp_path / "w2", workers=2, chunk_records=7))
    finally:
        stop.set()
    files = sorted(p.relative_to(tmp_path / "w1") for p in (tmp_path / "w1").rglob("*")
                   if p.is_file() and p.parent.name != ".ocml" and p.name != "report.json")
    assert len(files) > 5
    for f in files:
        assert (tmp_path / "w1" / f).read_bytes() == (tmp_path / "w2" / f).read_bytes(), f
    assert a.report["counts"] == b.report["counts"] and b.report["timing"]["workers"] == 2


@pytest.mark.needs_torch
@pytest.mark.needs_trl
def test_parquet_loads_with_datasets_and_feeds_trl_collator(packed: Any) -> None:
    datasets = pytest.importorskip("datasets")
    out, _, _ = packed
    ds = datasets.load_dataset("parquet", data_files=str(out / "data" / "*.parquet"), split="train")
    assert {k: repr(v) for k, v in ds.features.items()} == {
        "input_ids": "List(Value('int32'))", "labels": "List(Value('int64'))",
        "position_ids": "List(Value('int32'))", "seq_lengths": "List(Value('int32'))",
        "doc_source": "List(Value('int32'))", "doc_record": "List(Value('int64'))"}
    pytest.importorskip("torch")
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    batch = [ds[i] for i in range(4)]
    got = DataCollatorForLanguageModeling(pad_token_id=0, padding_free=True)(batch)
    assert "attention_mask" not in got  # the padding-free path: positions carry the boundaries
    assert got["position_ids"][0].tolist() == sum((r["position_ids"] for r in batch), [])
    assert got["labels"][0].tolist() == sum((r["labels"] for r in batch), [])  # our -100 at starts already


def test_unpacked_output(tmp_path: Path, enc: encoder.Encoder) -> None:
    recs = write_data(tmp_path / "in.jsonl", 30, seed=5)
    res = run(opts([tmp_path / "in.jsonl"], tmp_path / "out", pack=False, seq_len=None, shard_size=8))
    rows = parquet_rows(tmp_path / "out")
    assert len(rows) == 30 == res.report["counts"]["rows"]
    for row, rec in zip(rows, recs):
        r = enc.render(conversation_from_record(rec))
        assert row["input_ids"] == r.ids.tolist() and row["assistant_masks"] == r.mask.astype(int).tolist()
        assert row["labels"] == r.labels.tolist()
    flat = npy_shards(tmp_path / "out")
    ids = np.concatenate([s["input_ids"] for s in flat])
    assert ids.tolist() == sum((r["input_ids"] for r in rows), [])
    assert all(s["offsets"][-1] == s["input_ids"].shape[0] for s in flat)


def test_same_rows_from_every_input_kind(tmp_path: Path) -> None:
    import gzip

    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    recs = write_data(tmp_path / "in.jsonl", 40, seed=8)
    (tmp_path / "in.jsonl.gz").write_bytes(gzip.compress((tmp_path / "in.jsonl").read_bytes()))
    (tmp_path / "in.json").write_text(json.dumps(recs, indent=1))
    pq.write_table(pa.Table.from_pylist([{"messages": json.dumps(r["messages"])} for r in recs]),
                   tmp_path / "in.parquet", row_group_size=9)
    datasets.Dataset.from_list(recs).save_to_disk(str(tmp_path / "ds"))
    run(opts([tmp_path / "in.jsonl"], tmp_path / "o-ref"))
    ref = parquet_rows(tmp_path / "o-ref")
    for name in ("in.jsonl.gz", "in.json", "in.parquet", "ds"):
        out = tmp_path / f"o-{name}"
        res = run(opts([tmp_path / name], out))
        assert parquet_rows(out) == ref, name
        assert res.report["counts"]["bad_records"] == 0


def test_tools_as_arrow_structs_render_as_in_jsonl(tmp_path: Path) -> None:
    """Parquet written by ``datasets`` stores tools as structs: every row gets every schema key
    any row has, as null; those nulls must not reach the rendered tool declarations."""
    import datasets

    tools_a = [{"type": "function", "function": {"name": "f", "description": "F.", "parameters": {
        "type": "object", "properties": {"x": {"type": "integer", "minimum": 0}}, "required": ["x"]}}}]
    tools_b = [{"type": "function", "function": {"name": "g", "description": "G.", "parameters": {
        "type": "object", "properties": {"x": {"type": "string", "enum": ["a", "b"]}}}}}]
    recs = [{"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}],
             "tools": tools_a if i % 2 else tools_b} for i in range(6)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    datasets.Dataset.from_list(recs).to_parquet(str(tmp_path / "in.parquet"))
    for name in ("in.jsonl", "in.parquet"):
        run(opts([tmp_path / name], tmp_path / f"o-{name}", pack=False))
    assert parquet_rows(tmp_path / "o-in.parquet") == parquet_rows(tmp_path / "o-in.jsonl")


def test_strict_stops_at_first_bad_record(tmp_path: Path) -> None:
    write_data(tmp_path / "in.jsonl", 20, bad={12: "{", 15: "["})
    with pytest.raises(StrictStop) as info:
        run(opts([tmp_path / "in.jsonl"], tmp_path / "out", strict=True))
    assert "in.jsonl:12" in str(info.value) and "E-INPUT-JSON" in str(info.value)


def test_out_folder_rules(tmp_path: Path) -> None:
    write_data(tmp_path / "in.jsonl", 10)
    first = run(opts([tmp_path / "in.jsonl"], tmp_path / "out"))
    again = run(opts([tmp_path / "in.jsonl"], tmp_path / "out", workers=2))  # workers: not an output option
    assert again.already_done and again.report == first.report
    with pytest.raises(InputError) as info:
        run(opts([tmp_path / "in.jsonl"], tmp_path / "out", seq_len=SEQ * 2))
    assert info.value.code == "E-OUT-MISMATCH" and "--overwrite" in (info.value.hint or "")
    redone = run(opts([tmp_path / "in.jsonl"], tmp_path / "out", seq_len=SEQ * 2, overwrite=True))
    assert redone.report["pack"]["seq_len"] == SEQ * 2
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(InputError) as info:
        run(opts([tmp_path / "in.jsonl"], tmp_path / "other"))
    assert info.value.code == "E-OUT"
    run(opts([tmp_path / "in.jsonl"], tmp_path / "other", overwrite=True))
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"  # --overwrite removes only ocml's files


def test_bundled_sample(tmp_path: Path) -> None:
    res = run(PackOptions(inputs=(str(SAMPLE),), out=tmp_path / "out", seq_len=2048, workers=1))
    c = res.report["counts"]
    assert c["records"] >= 300 and c["documents"] == c["records"] - 5
    errors = [json.loads(x) for x in (tmp_path / "out" / "errors.jsonl").read_text().splitlines()]
    assert [(Path(e["file"]).name, e["line"]) for e in errors] == [("chat.jsonl", n) for n in (17, 58, 121, 190, 233)]
    assert {e["code"] for e in errors} == {"E-ROLE-UNKNOWN", "E-INPUT-JSON", "E-BODY-CONSTRAINT-VIOLATION", "E-INPUT"}
    p = res.report["pack"]
    assert p["overlong"] == "truncate" and p["truncated"] >= 1 and p["split"] == 0  # the conversation default
    assert (tmp_path / "out" / "lengths.png").stat().st_size > 10_000
    t = res.report["trained"]  # per-policy counts add up to the trained labels in the rows
    assert t["removed"]["overlong_truncate"] > 0
    assert t["after"] == t["rendered"] - sum(t["removed"].values()) == p["trained_tokens"] == c["trained_tokens"]
    assert res.report["untrained"]["count"] == 0 and "untrained   0 document(s)" in res.text
    assert "removed by policy: overlong drop 0, overlong truncate" in res.text
    assert sum(p.stat().st_size for p in SAMPLE.glob("*.jsonl")) < 1 << 20
