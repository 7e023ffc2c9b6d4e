"""``ocml pack``'s safe defaults and gates: --max-bad-fraction, documents with nothing to
train, per-policy trained-token counts, provenance columns, --overwrite that never deletes
user data, bounded unsaved work, and the speed of a resumed run."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ocml import encoder
from ocml.encoder.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from ocml.encoder.errors import InputError
from ocml.encoder.inputs.shapes import OVERLONG_DEFAULT, RecordShape
from ocml.encoder.pipeline.gates import NothingRendered
from ocml.encoder.pipeline.options import BAD_SAMPLE, resolve_overlong
from ocml.encoder.pipeline.records import conversation_from_record
from ocml.encoder.pipeline.run import PackOptions, TooManyBadRecords, run
from ocml.encoder.packing.packed import Overlong

from support.pipeline import conversation, opts, parquet_rows, write_data

SEQ = 384


def mixed(path: Path, n: int, bad_every: int | None = None, bad_share: float = 0.0, seed: int = 0,
          bad_after: int | None = None) -> list[Any]:
    """JSONL of ``n`` lines: good conversations and bad records (invalid JSON, unknown roles,
    missing messages) at ``bad_share``, or only after line ``bad_after``."""
    rng = random.Random(seed)
    lines: list[str] = []
    recs: list[Any] = []
    for i in range(n):
        bad = (rng.random() < bad_share) if bad_after is None else i >= bad_after
        if bad:
            lines.append(rng.choice(['{"messages": [{"role": "robot", "content": "x"}]}', "{not json",
                                     '{"txt": "no messages here"}']))  # ({"text": ...} is a record shape)
            recs.append(None)
        else:
            rec = conversation(rng, i)
            lines.append(json.dumps(rec))
            recs.append(rec)
    path.write_text("\n".join(lines) + "\n")
    return recs


# -- --max-bad-fraction -----------------------------------------------------------------------------

def test_a_mostly_bad_dataset_fails_early_with_the_top_codes(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    mixed(tmp_path / "in.jsonl", 6000, bad_share=0.8, seed=1)
    code = main(["pack", str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "out"), "--seq-len", "512",
                 "--workers", "2"])
    err = capsys.readouterr().err
    assert code == EXIT_FAILED and "Traceback" not in err
    assert "E-BAD-FRACTION" in err and "top error codes" in err and "over --max-bad-fraction 0.05" in err
    for c in ("E-ROLE-UNKNOWN", "E-INPUT-JSON", "E-INPUT"):
        assert c in err
    # Decided on the early sample: far fewer records than the input were read.
    seen = len((tmp_path / "out" / "errors.jsonl").read_text().splitlines())
    assert seen < 0.8 * 3000
    assert "in the first" in err and not (tmp_path / "out" / "report.json").exists()


def test_a_clean_start_and_a_bad_end_fails_at_the_final_check(tmp_path: Path) -> None:
    mixed(tmp_path / "in.jsonl", BAD_SAMPLE + 300, bad_after=BAD_SAMPLE + 100)  # 200 bad of 1300: 15%
    with pytest.raises(TooManyBadRecords) as info:
        run(opts([tmp_path / "in.jsonl"], tmp_path / "out", plot=False))
    assert info.value.code == "E-BAD-FRACTION" and "in 1,300 records" in str(info.value)
    res = run(opts([tmp_path / "in.jsonl"], tmp_path / "ok", max_bad_fraction=0.2))
    assert res.report["errors"]["bad_fraction"] == pytest.approx(200 / 1300)


def test_options_that_cannot_apply_are_usage_errors() -> None:
    for kw, field in ((dict(seq_len=8, max_bad_fraction=1.5), "--max-bad-fraction"),
                      (dict(pack=False, overlong="split"), "--overlong"), (dict(pack=False, pad_id=0), "--pad-id"),
                      (dict(seq_len=8, overlong="wrap"), "--overlong")):
        with pytest.raises(InputError) as info:
            run(PackOptions(inputs=("x",), out=Path("o"), **kw))  # type: ignore[arg-type]
        assert info.value.code == "E-USAGE" and info.value.field == field


# -- documents with nothing to train -------------------------------------------------------------

UNTRAINED_RECS = [
    {"messages": []},
    {"messages": [{"role": "user", "content": "only a question"}]},
    {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]},
]


@pytest.mark.parametrize("fmt", ["openchatml-2.2", "harmony", "chatml"])
def test_untrained_documents_are_skipped_and_counted_apart(tmp_path: Path, fmt: str) -> None:
    rng = random.Random(4)
    good = [conversation(rng, i) for i in range(20)]
    for g in good:  # chatml has no reasoning channel (its --reasoning policy is another test's)
        for m in g["messages"]:
            m.pop("reasoning_content", None)
    recs = good[:5] + UNTRAINED_RECS + good[5:]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    res = run(opts([tmp_path / "in.jsonl"], tmp_path / "out", format=fmt))
    rep = res.report
    assert rep["counts"]["bad_records"] == 0 and rep["counts"]["untrained"] == 3
    assert rep["counts"]["documents"] == 20 and rep["pack"]["documents"] == 20
    assert rep["untrained"]["by_reason"] == {"no messages": 1, "no assistant message": 2}
    listed = [json.loads(x) for x in (tmp_path / "out" / "untrained.jsonl").read_text().splitlines()]
    assert [(d["line"], d["record"], d["kept"]) for d in listed] == [(6, 5, False), (7, 6, False), (8, 7, False)]
    assert "untrained   3 document(s) with nothing to train skipped" in res.text
    records = {r for row in parquet_rows(tmp_path / "out") for r in row["doc_record"]}
    assert records == set(range(23)) - {5, 6, 7}
    kept = run(opts([tmp_path / "in.jsonl"], tmp_path / "kept", format=fmt, keep_untrained=True))
    assert kept.report["counts"]["documents"] == 23
    assert kept.report["untrained"]["kept"] and kept.report["counts"]["untrained"] == 3


def test_everything_masked_by_policy_is_untrained(tmp_path: Path) -> None:
    write_data(tmp_path / "in.jsonl", 10, seed=2)
    with pytest.raises(NothingRendered) as info:  # a run that renders nothing fails (issue 27)
        run(opts([tmp_path / "in.jsonl"], tmp_path / "out", mask="none"))
    assert "no document rendered from 10 record(s)" in info.value.message
    lines = [json.loads(x) for x in (tmp_path / "out" / "untrained.jsonl").read_text().splitlines()]
    assert [x["reason"] for x in lines] == ["the mask policy trains none of it"] * 10
    res = run(opts([tmp_path / "in.jsonl"], tmp_path / "kept", mask="none", keep_untrained=True))
    assert res.report["untrained"]["by_reason"] == {"the mask policy trains none of it": 10}
    assert res.report["counts"]["documents"] == 10


# -- overlong default and per-policy counts --------------------------------------------------------

def test_overlong_default_is_per_shape_in_one_place() -> None:
    assert resolve_overlong(None) is Overlong.TRUNCATE and OVERLONG_DEFAULT[RecordShape.CHAT] == Overlong.TRUNCATE
    assert resolve_overlong(None, "text") is Overlong.SPLIT and resolve_overlong("drop") is Overlong.DROP
    assert PackOptions(inputs=(), out=Path("o")).overlong_policy is Overlong.TRUNCATE
    with pytest.raises(InputError):
        resolve_overlong(None, "no-such-shape")


@pytest.mark.parametrize("policy", ["truncate", "split", "drop"])
def test_trained_tokens_after_every_policy(tmp_path: Path, policy: str) -> None:
    write_data(tmp_path / "in.jsonl", 60, seed=6)  # records 3 and 17 are longer than SEQ
    res = run(opts([tmp_path / "in.jsonl"], tmp_path / "out", overlong=policy))
    t, p = res.report["trained"], res.report["pack"]
    rows = parquet_rows(tmp_path / "out")
    in_rows = sum(sum(1 for x in r["labels"] if x != -100) for r in rows)
    assert t["after"] == in_rows == p["trained_tokens"] == res.report["counts"]["trained_tokens"]
    assert t["rendered"] - sum(t["removed"].values()) == t["after"]
    key = {"truncate": "overlong_truncate", "split": "overlong_split", "drop": "overlong_drop"}[policy]
    assert t["removed"][key] > 0 and all(v == 0 for k, v in t["removed"].items() if k not in (key, "document_start"))
    assert f"overlong {policy.replace('drop', 'drop')}" in res.text or policy in res.text


# -- provenance --------------------------------------------------------------------------------------

def test_every_segment_traces_back_to_its_record(tmp_path: Path) -> None:
    enc = encoder.Encoder("openchatml-2.2")
    folder = tmp_path / "folder"
    folder.mkdir()
    a = write_data(folder / "a.jsonl", 30, seed=7)
    b = write_data(folder / "b.jsonl", 25, seed=8, bad={4: "{broken"})
    (folder / "b.jsonl").write_text((folder / "b.jsonl").read_text() + "\n")  # a blank last line is a line too
    c = write_data(tmp_path / "c.jsonl", 20, seed=9)
    pq.write_table(pa.Table.from_pylist([{"messages": json.dumps(r["messages"])} for r in c]), tmp_path / "c.parquet",
                   row_group_size=6)
    res = run(opts([folder, tmp_path / "c.parquet"], tmp_path / "out", overlong="split"))
    by_source = {0: a + b + [None], 1: c}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    src = manifest["sources"]
    assert [s["path"] for s in src] == [str(folder), str(tmp_path / "c.parquet")]
    assert [(Path(f["path"]).name, f["first_record"], f["records"]) for f in src[0]["files"]] == \
        [("a.jsonl", 0, 30), ("b.jsonl", 30, 27)]
    pieces: dict[tuple[int, int], list[int]] = {}
    n = 0
    for row in parquet_rows(tmp_path / "out"):
        assert len(row["doc_source"]) == len(row["doc_record"]) == len(row["seq_lengths"])
        at = 0
        for s, r, length in zip(row["doc_source"], row["doc_record"], row["seq_lengths"]):
            pieces.setdefault((s, r), []).extend(row["input_ids"][at:at + length])
            at += length
            n += 1
    assert n > 0
    want_keys = {(s, i) for s, recs in by_source.items() for i, r in enumerate(recs) if r is not None}
    assert set(pieces) == want_keys  # every record, by source and record index
    for (s, i), ids in pieces.items():
        want = enc.render(conversation_from_record(by_source[s][i])).ids.tolist()
        assert sorted(ids) == sorted(want)  # a split document's pieces, in any row order
    assert res.report["counts"]["documents"] == len(want_keys)


def test_unpacked_rows_carry_source_and_record(tmp_path: Path) -> None:
    write_data(tmp_path / "x.jsonl", 8, seed=1, bad={3: "nope"})
    write_data(tmp_path / "y.jsonl", 5, seed=2)
    run(opts([tmp_path / "x.jsonl", tmp_path / "y.jsonl"], tmp_path / "out", pack=False, seq_len=None,
             max_bad_fraction=0.5))
    rows = parquet_rows(tmp_path / "out")
    assert [(r["source"], r["record"]) for r in rows] == [(0, i) for i in range(9) if i != 2] + [(1, i) for i in range(5)]
    npy = np.load(next((tmp_path / "out" / "npy").iterdir()) / "record.npy")
    assert npy.tolist()[:3] == [0, 1, 3]


# -- --overwrite never deletes user data ---------------------------------------------------------

def test_overwrite_keeps_the_users_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's scenario: ``ocml pack in.jsonl --out DIR --overwrite`` with the user's own
    ``DIR/data/mydata.jsonl``."""
    write_data(tmp_path / "in.jsonl", 30, seed=3)
    out = tmp_path / "DIR"
    (out / "data").mkdir(parents=True)
    mine = out / "data" / "mydata.jsonl"
    mine.write_text('{"messages": []}\n')
    args = ["pack", str(tmp_path / "in.jsonl"), "--out", str(out), "--seq-len", "384", "--workers", "1"]
    assert main([*args, "--overwrite"]) == EXIT_OK
    assert main([*args, "--overwrite", "--seq-len", "512"]) == EXIT_OK  # replaces its own run
    assert mine.read_text() == '{"messages": []}\n'
    assert (out / "data").is_dir() and sorted(p.name for p in (out / "data").iterdir()) == \
        ["mydata.jsonl", "train-00000.parquet"]
    owned = json.loads((out / ".ocml" / "owned.json").read_text())["owned"]
    assert "data/mydata.jsonl" not in owned and "data/train-00000.parquet" in owned
    # An input inside --out: refused before anything is written.
    capsys.readouterr()
    assert main(["pack", str(mine), "--out", str(out), "--seq-len", "384", "--overwrite"]) == EXIT_USAGE
    assert "E-OUT-INPUT" in capsys.readouterr().err and mine.exists()


def test_overwrite_never_replaces_a_file_it_did_not_write(tmp_path: Path) -> None:
    write_data(tmp_path / "in.jsonl", 10, seed=3)
    out = tmp_path / "DIR"
    out.mkdir()
    (out / "manifest.json").write_text("my own manifest")
    with pytest.raises(InputError) as info:
        run(opts([tmp_path / "in.jsonl"], out, overwrite=True))
    assert info.value.code == "E-OUT-CONFLICT" and "manifest.json" in str(info.value)
    assert (out / "manifest.json").read_text() == "my own manifest"


def test_overwrite_removes_every_file_of_the_previous_run(tmp_path: Path) -> None:
    write_data(tmp_path / "in.jsonl", 60, seed=5)
    out = tmp_path / "o"
    run(opts([tmp_path / "in.jsonl"], out, shard_size=4))
    before = {p for p in (out / "npy").rglob("*")}
    assert len(list((out / "data").iterdir())) > 3
    run(opts([tmp_path / "in.jsonl"], out, shard_size=1000, outputs=("parquet",), overwrite=True))
    assert [p.name for p in (out / "data").iterdir()] == ["train-00000.parquet"]
    assert before and not (out / "npy").exists()  # ocml made npy/, and it is empty now: gone


# -- unsaved work and resume speed ---------------------------------------------------------------

def test_an_epoch_is_saved_as_a_shard(tmp_path: Path) -> None:
    write_data(tmp_path / "in.jsonl", 200, seed=12)
    res = run(opts([tmp_path / "in.jsonl"], tmp_path / "out", window=40, chunk_records=10, shard_size=10_000))
    # 200 documents, epochs of 40: five shards, each complete (and resumable) as its epoch ends.
    assert res.report["shards"]["count"] == 5
    progress = json.loads((tmp_path / "out" / ".ocml" / "progress.json").read_text())
    assert progress["status"] == "done"


def test_overwrite_adopts_only_what_an_older_ocml_wrote(tmp_path: Path) -> None:
    """A folder packed before ocml kept its marker (``.ocml/progress.json`` only): --overwrite
    replaces that run's own names and shards, and still nothing else."""
    write_data(tmp_path / "in.jsonl", 10, seed=3)
    out = tmp_path / "old"
    (out / ".ocml").mkdir(parents=True)
    (out / ".ocml" / "progress.json").write_text(json.dumps({"fingerprint": "0" * 32, "status": "done"}))
    (out / "data").mkdir()
    for name in ("train-00000.parquet", "train-00007.parquet", "mydata.jsonl"):
        (out / "data" / name).write_text("x")
    (out / "manifest.json").write_text("{}")
    (out / "notes.txt").write_text("mine")
    run(opts([tmp_path / "in.jsonl"], out, overwrite=True, outputs=("parquet",)))
    assert sorted(p.name for p in (out / "data").iterdir()) == ["mydata.jsonl", "train-00000.parquet"]
    assert (out / "data" / "mydata.jsonl").read_text() == "x" and (out / "notes.txt").read_text() == "mine"
    assert json.loads((out / "manifest.json").read_text())["format"] == "openchatml-2.2"
