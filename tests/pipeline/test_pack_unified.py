"""One set of guarantees for ``ocml pack`` whichever driver runs it.

A plain ``ocml pack INPUT...`` is a recipe run (``pipeline.recipe_run``: one source per input,
rows in a seeded order across all shards); ``--no-shuffle`` streams the inputs in one pass
(``pipeline.run``).  Every option applies to both, through the same modules (gates, untrained,
provenance, report, options.check), or is a usage error: each test below runs both ways.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ocml.encoder.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from ocml.encoder.pipeline import recipe_cli

from support.pipeline import write_data

DRIVERS = {"recipe": [], "stream": ["--no-shuffle"]}
SEQ = "384"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("unified-in")
    write_data(d / "a.jsonl", 50, seed=3)
    with open(d / "a.jsonl", "a", encoding="utf-8") as f:  # records 50, 51: nothing to train
        f.write(json.dumps({"messages": []}) + "\n")
        f.write(json.dumps({"messages": [{"role": "user", "content": "hello?"}]}) + "\n")
    write_data(d / "b.jsonl", 30, seed=4, bad={5: "{broken", 9: json.dumps({"nothing": 1})})
    return d


def pack(capsys: pytest.CaptureFixture[str], data: Path, out: Path, driver: str, *extra: str) -> tuple[int, str]:
    code = main(["pack", str(data / "a.jsonl"), str(data / "b.jsonl"), "--out", str(out), "--workers", "1",
                 "--no-progress", "--max-bad-fraction", "0.1", *DRIVERS[driver], *extra])
    return code, capsys.readouterr().err


def table(out: Path) -> pa.Table:
    return pa.concat_tables([pq.read_table(p) for p in sorted((out / "data").glob("train-*.parquet"))])


def report(out: Path) -> dict[str, Any]:
    return json.loads((out / "report.json").read_text("utf-8"))


@pytest.mark.parametrize("driver", list(DRIVERS))
def test_gate_untrained_trained_and_overlong_default(data: Path, tmp_path: Path, driver: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, err = pack(capsys, data, tmp_path / "o", driver, "--seq-len", SEQ)
    assert code == EXIT_OK, err
    r = report(tmp_path / "o")
    assert r["counts"]["bad_records"] == 2 and r["errors"]["max_bad_fraction"] == 0.1
    assert r["errors"]["bad_fraction"] == pytest.approx(2 / 84)
    # Documents with nothing to train: skipped, counted by reason, listed by source and record.
    u = r["untrained"]
    assert u["count"] == 2 and u["kept"] is False
    assert u["by_reason"] == {"no messages": 1, "no assistant message": 1}
    listed = [json.loads(line) for line in (tmp_path / "o" / "untrained.jsonl").read_text().splitlines()]
    assert sorted((e["source"], e["record"]) for e in listed) == [(0, 50), (0, 51)]
    # The overlong default for conversations is truncate (options.OVERLONG_DEFAULTS), as in the manifest.
    assert r["pack"]["overlong"] == "truncate" and r["pack"]["truncated"] >= 1
    assert json.loads((tmp_path / "o" / "manifest.json").read_text())["overlong"] == "truncate"
    t = r["trained"]
    assert t["rendered"] > t["after"] == r["counts"]["trained_tokens"] == r["pack"]["trained_tokens"]
    assert t["removed"]["overlong_truncate"] > 0
    assert t["rendered"] - sum(t["removed"].values()) == t["after"]
    # More than --max-bad-fraction bad: exit 1, no report.
    code, err = pack(capsys, data, tmp_path / "f", driver, "--seq-len", SEQ, "--max-bad-fraction", "0.01")
    assert code == EXIT_FAILED and "E-BAD-FRACTION" in err and "top error codes" in err
    assert not (tmp_path / "f" / "report.json").exists()


@pytest.mark.parametrize("driver", list(DRIVERS))
def test_provenance_pad_multiple_and_seq_idx(data: Path, tmp_path: Path, driver: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, err = pack(capsys, data, tmp_path / "o", driver, "--seq-len", SEQ, "--pad-to-multiple-of", "8",
                     "--seq-idx", "--keep-untrained")
    assert code == EXIT_OK, err
    t = table(tmp_path / "o")
    assert {"doc_source", "doc_record", "seq_idx"} <= set(t.column_names)
    lengths = [n for row in t.column("seq_lengths").to_pylist() for n in row]
    assert lengths and all(n % 8 == 0 for n in lengths)
    docs = Counter((s, k) for ss, kk in zip(t.column("doc_source").to_pylist(), t.column("doc_record").to_pylist())
                   for s, k in zip(ss, kk))
    # Every document (truncated ones too), the untrained one kept (record 51; record 50, messages: [],
    # renders no token: nothing to place in a row); bad records 4 and 8 of source 1 absent.
    assert set(docs) == {(0, k) for k in range(52) if k != 50} | {(1, k) for k in range(32) if k not in (4, 8)}
    m = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert [s["path"] for s in m["sources"]] == [str(data / "a.jsonl"), str(data / "b.jsonl")]
    assert m["pad_to_multiple_of"] == 8 and "seq_idx" in m["columns"] and "doc_record" in m["columns"]
    r = report(tmp_path / "o")
    assert r["untrained"]["kept"] is True and r["untrained"]["count"] == 2
    assert r["pack"]["pad_to_multiple_of"] == 8


@pytest.mark.parametrize("driver", list(DRIVERS))
def test_megatron_and_usage_errors(data: Path, tmp_path: Path, driver: str,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, err = pack(capsys, data, tmp_path / "m", driver, "--output", "megatron")
    assert code == EXIT_OK, err
    m = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert not m["packed"] and m["shards"]["megatron"] == ["megatron/train-00000"]
    assert report(tmp_path / "m")["counts"]["documents"] == 80  # 82 good records, 2 untrained skipped (84 read)
    for extra, field in ((["--output", "megatron", "--seq-len", SEQ, "--no-pack"], "--seq-len"),
                         (["--no-pack", "--seq-idx"], "--seq-idx"),
                         (["--seq-len", "100", "--pad-to-multiple-of", "8"], "--pad-to-multiple-of"),
                         (["--no-pack", "--overlong", "split"], "--overlong"),
                         ([], "--seq-len")):
        code, err = pack(capsys, data, tmp_path / "u", driver, *extra)
        assert code == EXIT_USAGE and err.startswith("ocml: [E-USAGE]") and field in err, (extra, err)


def test_default_rows_are_shuffled_across_shards(data: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The default (a recipe run, seed 0) writes the rows of a seeded document order in a seeded
    row order; --no-shuffle writes packing order (best-fit-decreasing: its rows' document
    counts fall with the row index).  Unpacked, both hold the same documents."""
    shuffled = []
    for name, driver in (("s", "recipe"), ("n", "stream")):
        code, err = pack(capsys, data, tmp_path / name, driver, "--no-pack", "--shard-size", "16")
        assert code == EXIT_OK, err
        t = table(tmp_path / name)
        shuffled.append(list(zip(t.column("source").to_pylist(), t.column("record").to_pylist())))
    assert Counter(shuffled[0]) == Counter(shuffled[1]) and len(shuffled[0]) == 80
    assert shuffled[1] == sorted(shuffled[1]) and shuffled[0] != shuffled[1]
    code, err = pack(capsys, data, tmp_path / "p", "recipe", "--seq-len", "1024")
    assert code == EXIT_OK, err
    order = report(tmp_path / "p")["recipe"]["splits"]["train"]["order"]
    assert abs(order["row_docs_correlation"]) < abs(order["packer_order_correlation"])
    # Same seed, same bytes: a rerun into a new folder.
    code, err = pack(capsys, data, tmp_path / "p2", "recipe", "--seq-len", "1024", "--workers", "2")
    assert code == EXIT_OK, err
    assert table(tmp_path / "p").equals(table(tmp_path / "p2"))


def test_an_unmapped_pack_flag_is_a_usage_error(data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A pack option the recipe driver has no key for is refused, never dropped."""
    monkeypatch.setattr(recipe_cli, "DEST_TO_KEY", {k: v for k, v in recipe_cli.DEST_TO_KEY.items()
                                                    if k != "seq_idx"})
    code, err = pack(capsys, data, tmp_path / "o", "recipe", "--seq-len", SEQ, "--seq-idx")
    assert code == EXIT_USAGE and "--seq-idx is not supported in a recipe run" in err
    assert not (tmp_path / "o").exists()


def test_recipe_file_takes_every_option(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"seq_len: 256\npad_to_multiple_of: 4\nseq_idx: true\nkeep_untrained: true\n"
                      f"max_bad_fraction: 0.5\noverlong: drop\nsources:\n  - path: {data / 'b.jsonl'}\n")
    code = main(["pack", "--recipe", str(recipe), "--out", str(tmp_path / "o"), "--workers", "1", "--no-progress"])
    assert code == EXIT_OK, capsys.readouterr().err
    r = report(tmp_path / "o")
    assert r["pack"]["overlong"] == "drop" and r["pack"]["pad_to_multiple_of"] == 4
    assert r["errors"]["max_bad_fraction"] == 0.5 and r["untrained"]["kept"] is True
    assert "seq_idx" in table(tmp_path / "o").column_names
    seq = np.concatenate([np.asarray(x) for x in table(tmp_path / "o").column("seq_lengths").to_pylist()])
    assert (seq % 4 == 0).all()


def test_every_pack_flag_maps_to_a_recipe_key() -> None:
    """A flag added to ``ocml pack`` must reach the recipe driver (``DEST_TO_KEY`` and a ``Recipe``
    field), or a default run refuses it: this names the flags that would be refused."""
    from ocml.encoder.cli import build_parser
    from ocml.encoder.pipeline.recipe import TOP_KEYS

    sub = next(a for a in build_parser()._actions if isinstance(getattr(a, "choices", None), dict))
    dests = {a.dest for a in sub.choices["pack"]._actions if a.option_strings}
    assert sorted(dests - set(recipe_cli.DEST_TO_KEY) - recipe_cli.NOT_RECIPE_KEYS) == []
    keys = {recipe_cli.DEST_TO_KEY[d] for d in dests if d in recipe_cli.DEST_TO_KEY}
    assert sorted(keys - set(TOP_KEYS)) == []
