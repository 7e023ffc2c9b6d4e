"""Recipe runs end to end: several sources with weights, the validation split, dedup, the
seeded shuffle, the per-source report, determinism, reproduction from the manifest."""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ocml import encoder
from ocml.encoder.cli import main
from ocml.encoder.pipeline.records import conversation_from_record
from ocml.encoder.pipeline.recipe import resolve_recipe
from ocml.encoder.pipeline.recipe_run import run_recipe
from ocml.encoder.pipeline.shuffle import order_correlation

from support.pipeline import write_data
from support.pipeline import documents

SEQ = 2048  # no conversation here is longer: every segment of a row is one whole document


def base_recipe(d: Path, **kw: Any) -> dict[str, Any]:
    r: dict[str, Any] = {
        "seed": 11, "seq_len": SEQ, "shard_size": 7, "output": "both", "workers": 1, "plot": False,
        "validation": 0.2, "dedup": "exact",
        "sources": [{"path": str(d / "a.jsonl"), "name": "a", "weight": 2},
                    {"path": str(d / "b.parquet"), "name": "b", "weight": 0.5},
                    {"path": str(d / "c.jsonl"), "name": "c", "weight": 1.5}]}
    r.update(kw)
    return r


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = tmp_path_factory.mktemp("recipe-in")
    a = write_data(d / "a.jsonl", 40, seed=21, bad={6: "{broken"})
    b = write_data(d / "tmp.jsonl", 30, seed=22)
    pq.write_table(pa.Table.from_pylist(b), d / "b.parquet", row_group_size=9)
    c = write_data(d / "tmp2.jsonl", 20, seed=23)
    # c repeats 6 conversations of a (across sources) and 2 of its own (within a source).
    good_a = [x for x in a if x is not None]
    c = c + [good_a[i] for i in (0, 4, 9, 15, 22, 30)] + [c[2], c[7]]
    random.Random(1).shuffle(c)
    (d / "c.jsonl").write_text("".join(json.dumps(x) + "\n" for x in c), encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def contents(data: Path) -> dict[str, list[tuple[int, ...]]]:
    """Each source's conversations as rendered ids, in input order (what a document is)."""
    import pyarrow.parquet as pq

    enc = encoder.Encoder("openchatml-2.2")
    recs = {"a": [json.loads(x) for x in (data / "a.jsonl").read_text().splitlines() if x != "{broken"],
            "b": pq.read_table(data / "b.parquet").to_pylist(),
            "c": [json.loads(x) for x in (data / "c.jsonl").read_text().splitlines()]}
    return {k: [tuple(enc.render(conversation_from_record(r)).ids.tolist()) for r in v] for k, v in recs.items()}


def files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and ".ocml" not in p.parts and p.name != "report.json"}


@pytest.fixture(scope="module")
def reference(data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("recipe-ref") / "out"
    res = run_recipe(resolve_recipe(base_recipe(data)), out)
    assert res.report["pack"]["split"] == 0
    return out


def test_no_conversation_on_both_sides_and_duplicates_together(reference: Path,
                                                               contents: dict[str, list[tuple[int, ...]]]) -> None:
    train, val = documents(reference, "train"), documents(reference, "validation")
    assert val and train
    assert not set(train) & set(val)
    everything = set(contents["a"]) | set(contents["b"]) | set(contents["c"])
    assert set(train) | set(val) <= everything
    shared = set(contents["a"]) & set(contents["c"])
    assert len(shared) == 6
    assert len(val) == len(set(val))  # dedup: exact, and the validation side is never weighted


def test_weights_give_exact_counts(reference: Path, contents: dict[str, list[tuple[int, ...]]]) -> None:
    train = Counter(documents(reference, "train"))
    val = set(documents(reference, "validation"))
    a, b = set(contents["a"]), set(contents["b"])
    c_only = set(contents["c"]) - a
    a_train = a - val
    assert all(train[t] == 2 for t in a_train)  # weight 2: every one twice (c's copies of a removed as duplicates)
    b_train = b - val
    b_taken = [t for t in b_train if train[t]]
    assert len(b_taken) == int(len(b_train) * 0.5 + 0.5) and all(train[t] == 1 for t in b_taken)  # a seeded half
    c_train = c_only - val
    twice = [t for t in c_train if train[t] == 2]
    assert all(train[t] >= 1 for t in c_train) and len(twice) == int(len(c_train) * 0.5 + 0.5)  # 1.5
    assert sum(train.values()) == 2 * len(a_train) + len(b_taken) + len(c_train) + len(twice)


def test_per_source_report(reference: Path, contents: dict[str, list[tuple[int, ...]]]) -> None:
    rep = json.loads((reference / "report.json").read_text())
    src = {s["name"]: s for s in rep["recipe"]["sources"]}
    assert [s["records"] for s in src.values()] == [41, 30, 28]
    assert [s["rejected"] for s in src.values()] == [1, 0, 0]
    assert [s["documents"] for s in src.values()] == [40, 30, 28]
    assert src["c"]["duplicates"] == 8 and src["c"]["deduplicated"] == 8
    assert rep["recipe"]["dedup"] == {"mode": "exact", "duplicates_seen": 8, "removed": 8}
    train = Counter(documents(reference, "train"))
    for name in ("a", "b", "c"):
        s = src[name]
        assert s["taken"] == s["candidates"] * {"a": 2, "b": 0, "c": 1}[name] + int(
            s["candidates"] * {"a": 0, "b": 0.5, "c": 0.5}[name] + 0.5)
        assert s["documents"] == s["validation"] + s["deduplicated"] + s["candidates"]
    assert src["b"]["skipped"] == src["b"]["candidates"] - src["b"]["taken"]
    assert sum(s["taken"] for s in src.values()) == sum(train.values())
    assert sum(s["tokens"] for s in src.values()) == sum(len(t) * n for t, n in train.items())
    assert abs(sum(s["share"] for s in src.values()) - 1) < 1e-5
    val_docs = documents(reference, "validation")
    assert sum(s["validation"] for s in src.values()) == len(val_docs) == rep["recipe"]["validation"]["documents"]
    text = (reference / "report.json").read_text()
    assert "trained_tokens" in text


def test_dedup_off_counts_duplicates_and_keeps_them(data: Path, tmp_path: Path,
                                                    contents: dict[str, list[tuple[int, ...]]]) -> None:
    res = run_recipe(resolve_recipe(base_recipe(data, dedup="off", validation=None,
                                                sources=[{"path": str(data / "c.jsonl"), "name": "c"}])),
                     tmp_path / "o")
    assert res.report["recipe"]["dedup"] == {"mode": "off", "duplicates_seen": 2, "removed": 0}
    assert Counter(documents(tmp_path / "o", "train")) == Counter(contents["c"])


def test_identical_for_any_worker_count_and_rerun(data: Path, reference: Path, tmp_path: Path) -> None:
    r2 = run_recipe(resolve_recipe(base_recipe(data, workers=2, chunk_records=5)), tmp_path / "w2")
    assert r2.report["timing"]["workers"] == 2
    ref = files(reference)
    assert files(tmp_path / "w2").keys() == ref.keys()
    assert {k for k, v in files(tmp_path / "w2").items() if ref[k] != v} == {"manifest.json", "recipe.yaml"}
    # chunk_records is part of the recipe (it is recorded); with the same recipe every byte is the same.
    run_recipe(resolve_recipe(base_recipe(data, workers=2)), tmp_path / "w2b")
    assert files(tmp_path / "w2b") == ref
    again = run_recipe(resolve_recipe(base_recipe(data)), reference)
    assert again.already_done
    assert not (reference / ".ocml" / "spool").exists()  # the spools are removed when the run is complete


def test_manifest_and_recipe_yaml_reproduce_the_run(data: Path, reference: Path, tmp_path: Path) -> None:
    for name in ("manifest.json", "recipe.yaml"):
        out = tmp_path / name
        assert main(["pack", "--recipe", str(reference / name), "--out", str(out), "--no-progress"]) == 0
        assert files(out) == files(reference)


def test_flags_override_the_recipe(data: Path, reference: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert main(["pack", "--recipe", str(reference / "recipe.yaml"), "--out", str(out), "--seed", "12",
                 "--validation", "10", "--output", "parquet", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["recipe"]["seed"] == 12
    man = json.loads((out / "manifest.json").read_text())
    assert man["recipe"]["seed"] == 12 and man["recipe"]["validation"] == 10 and man["recipe"]["output"] == "parquet"
    assert len(set(documents(out, "validation"))) == 10  # the count form: 10 distinct conversations
    assert not (out / "npy").exists()
    assert documents(out, "train") != documents(reference, "train")


def test_two_splits_load_as_a_dataset_dict(reference: Path) -> None:
    import datasets

    dd = datasets.load_dataset("parquet", data_dir=str(reference / "data"))
    assert set(dd) == {"train", "validation"}
    assert dd["train"].num_rows == json.loads((reference / "manifest.json").read_text())["splits"]["train"]["rows"]
    assert {p.name.split("-")[0] for p in (reference / "npy").iterdir()} == {"train", "validation"}
    x = np.load(next((reference / "npy").glob("validation-*")) / "input_ids.npy")
    assert x.shape[1] == SEQ


def test_validation_unpacked(data: Path, tmp_path: Path, contents: dict[str, list[tuple[int, ...]]]) -> None:
    import datasets

    out = tmp_path / "o"
    run_recipe(resolve_recipe(base_recipe(data, validation_pack=False, output="parquet")), out)
    # Other columns than the training rows: datasets reads each split with its own features.
    v = datasets.load_dataset("parquet", data_files=str(out / "data" / "validation-*.parquet"), split="train")
    t = datasets.load_dataset("parquet", data_files=str(out / "data" / "train-*.parquet"), split="train")
    assert "assistant_masks" in v.column_names and "seq_lengths" in t.column_names
    val = documents(out, "validation")
    assert not set(val) & set(documents(out, "train"))


def test_shuffle_statistic(data: Path, tmp_path: Path) -> None:
    src = [{"path": str(data / n), "name": n, "weight": 3} for n in ("a.jsonl", "b.parquet", "c.jsonl")]
    kw = dict(sources=src, seq_len=512, validation=None, dedup="off", overlong="split")

    def stat(out: Path, **more: Any) -> tuple[dict[str, Any], float]:
        rep = run_recipe(resolve_recipe(base_recipe(data, **kw, **more)), out).report
        import pyarrow.parquet as pq

        per_row = [len(r["seq_lengths"]) for f in sorted((out / "data").glob("train-*.parquet"))
                   for r in pq.read_table(f).to_pylist()]
        return rep["recipe"]["splits"]["train"]["order"], order_correlation(np.asarray(per_row))

    on, measured = stat(tmp_path / "on")
    assert on["rows"] >= 150
    assert round(measured, 4) == on["row_docs_correlation"]  # the report's figure is the written order's
    assert abs(on["row_docs_correlation"]) < 0.2 < abs(on["packer_order_correlation"])
    off, measured_off = stat(tmp_path / "off", shuffle=False)
    assert round(measured_off, 4) == off["row_docs_correlation"] == off["packer_order_correlation"]
    assert abs(off["row_docs_correlation"]) > 0.5


def test_cli_without_recipe_file(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert main(["pack", str(data / "a.jsonl"), str(data / "c.jsonl"), "--seq-len", "1024", "--seed", "3",
                 "--validation", "0.25", "--dedup", "exact", "--out", str(out), "--workers", "1"]) == 0
    text = capsys.readouterr().out
    assert "duplicate(s) seen" in text and "validation" in text
    man = json.loads((out / "manifest.json").read_text())
    assert [s["weight"] for s in man["recipe"]["sources"]] == [1.0, 1.0]
    assert main(["pack", "--recipe", str(tmp_path / "nope.yaml"), "--out", str(out / "x")]) == 2
    assert "E-RECIPE" in capsys.readouterr().err
    assert main(["pack", str(data / "a.jsonl"), "--recipe", str(out / "recipe.yaml"), "--out", str(out / "y")]) == 2
    assert "drop --recipe" in capsys.readouterr().err


def test_per_source_settings_apply_and_no_pack(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               contents: dict[str, list[tuple[int, ...]]]) -> None:
    import io

    import pyarrow.parquet as pq

    log = io.StringIO()
    sources = [{"path": str(data / "b.parquet"), "name": "all"},
               {"path": str(data / "b.parquet"), "name": "untrained", "mask": "none"}]
    # keep_untrained: the mask-none source's documents are packed (the recipe's per-source mask applied).
    rec = resolve_recipe({"pack": False, "progress": True, "workers": 1, "plot": False, "keep_untrained": True,
                          "sources": sources})
    res = run_recipe(rec, tmp_path / "o", log=log)
    assert "ocml pack (recipe)" in log.getvalue()  # progress: true shows the bar
    src = {s["name"]: s for s in res.report["recipe"]["sources"]}
    assert src["untrained"]["trained_tokens"] == 0 < src["all"]["trained_tokens"]
    assert src["untrained"]["duplicates"] == 30  # the same conversations again (dedup off: kept)
    assert src["untrained"]["untrained"] == 30 and res.report["untrained"]["kept"] is True
    rows = pq.read_table(next((tmp_path / "o" / "data").glob("train-*.parquet"))).to_pylist()
    # Unpacked rows carry their provenance (source number, record index in it), as a plain run's.
    assert set(rows[0]) == {"input_ids", "labels", "assistant_masks", "source", "record"} and len(rows) == 60
    assert Counter(tuple(r["input_ids"]) for r in rows) == Counter(contents["b"] * 2)
    assert Counter((r["source"], r["record"]) for r in rows) == Counter((s, k) for s in (0, 1) for k in range(30))

    # The default (as a plain run): documents with nothing to train are skipped, counted and listed.
    res = run_recipe(replace(rec, keep_untrained=False), tmp_path / "skip", log=io.StringIO())
    src = {s["name"]: s for s in res.report["recipe"]["sources"]}
    assert src["untrained"]["untrained"] == 30 and src["untrained"]["documents"] == 0
    assert src["untrained"]["taken"] == 0 and src["all"]["taken"] == 30
    u = res.report["untrained"]
    assert u["count"] == 30 and u["kept"] is False and u["by_reason"] == {"the mask policy trains none of it": 30}
    listed = [json.loads(line) for line in (tmp_path / "skip" / "untrained.jsonl").read_text().splitlines()]
    assert {(e["source"], e["name"], e["record"]) for e in listed} == {(1, "untrained", k) for k in range(30)}
    rows = pq.read_table(next((tmp_path / "skip" / "data").glob("train-*.parquet"))).to_pylist()
    assert Counter(tuple(r["input_ids"]) for r in rows) == Counter(contents["b"])
