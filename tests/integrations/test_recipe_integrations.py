"""A recipe's rules through ``datasets`` and Ray Data: the same split and the same samples as ``ocml pack``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ocml.encoder.errors import InputError
from ocml.encoder.integrations import recipe as rx
from ocml.encoder.pipeline.recipe import resolve_recipe
from ocml.encoder.pipeline.recipe_run import run_recipe

from support.pipeline import write_data
from support.pipeline import documents

FMT = "openchatml-2.2"


def tuples(ds: Any) -> list[tuple[int, ...]]:
    return [tuple(x) for x in ds["input_ids"]]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("rx")
    recs = write_data(d / "a.jsonl", 60, seed=41)
    with open(d / "a.jsonl", "a", encoding="utf-8") as f:  # three duplicates
        f.writelines(json.dumps(r) + "\n" for r in recs[5:8])
    return d / "a.jsonl"


@pytest.fixture(scope="module")
def rendered(source: Path) -> Any:
    import datasets

    from ocml.encoder.integrations.hf_datasets import render_dataset

    ds = datasets.Dataset.from_list([{"text": line, "source": "a"} for line in source.read_text().splitlines()])
    return render_dataset(ds, FMT, json_field="text", remove_columns=["text"])  # keeps "source"


@pytest.fixture(scope="module")
def packed(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rx-pack") / "out"
    run_recipe(resolve_recipe({"seed": 9, "seq_len": 4096, "validation": 0.2, "workers": 1, "plot": False,
                               "sources": [{"path": str(source), "name": "a", "weight": 1.5}]}), out)
    return out


def test_datasets_split_is_ocml_packs(rendered: Any, packed: Path) -> None:
    parts = rx.split_rendered(rendered, 0.2, seed=9)
    assert set(tuples(parts["validation"])) == set(documents(packed, "validation"))
    assert not set(tuples(parts["validation"])) & set(tuples(parts["train"]))
    assert len(parts["train"]) + len(parts["validation"]) == len(rendered)
    counted = rx.split_rendered(rendered, 7, seed=9)["validation"]
    assert len(set(tuples(counted))) == 7


def test_datasets_weights_draw_ocml_packs_sample(rendered: Any, packed: Path) -> None:
    train = rx.split_rendered(rendered, 0.2, seed=9)["train"]
    mixed = rx.mix_rendered(train, {"a": 1.5}, seed=9)
    assert Counter(tuples(mixed)) == Counter(documents(packed, "train"))
    assert len(mixed) == len(train) + int(len(train) * 0.5 + 0.5)
    assert len(rx.mix_rendered(train, {"a": 2}, seed=9, max_samples=10)) == 10
    assert len(rx.mix_rendered(train, 0.5, seed=9)) == int(len(train) * 0.5 + 0.5)
    with pytest.raises(InputError, match="no weight"):
        rx.mix_rendered(train, {"b": 1}, seed=9)


def test_datasets_dedup(rendered: Any) -> None:
    kept, seen = rx.dedup_rendered(rendered)
    assert seen == 3 and len(kept) == len(rendered) - 3 and len(set(tuples(kept))) == len(kept)


@pytest.fixture(scope="module")
def ray_local() -> Any:
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             ignore_reinit_error=True)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    yield ray
    ray.shutdown()


@pytest.mark.needs_ray
def test_ray_split_weight_shuffle(ray_local: Any, rendered: Any) -> None:
    table = rendered.with_format("arrow")[:]
    ds = ray_local.data.from_arrow(table)
    train, val = rx.ray_split(ds, 0.2, seed=9)
    expected = rx.split_rendered(rendered, 0.2, seed=9)
    assert Counter(tuple(r["input_ids"]) for r in val.take_all()) == Counter(tuples(expected["validation"]))
    twice = rx.ray_weight(train, 2, seed=9).take_all()
    assert Counter(tuple(r["input_ids"]) for r in twice) == Counter({t: 2 * n for t, n in
                                                                     Counter(tuples(expected["train"])).items()})
    half = rx.ray_weight(train, 1.5, seed=9, name="a").count()
    assert len(expected["train"]) < half < 2 * len(expected["train"])
    shuffled = [tuple(r["input_ids"]) for r in rx.ray_shuffle(ds, seed=3).take_all()]
    assert Counter(shuffled) == Counter(tuples(rendered)) and shuffled != tuples(rendered)
    with pytest.raises(InputError, match="fraction only"):
        rx.ray_split(ds, 10)


def test_apply_recipe_takes_ocml_packs_documents(rendered: Any, source: Path, tmp_path: Path) -> None:
    rec = resolve_recipe({"seed": 4, "seq_len": 4096, "validation": 0.25, "dedup": "exact", "workers": 1,
                          "plot": False, "sources": [{"path": str(source), "name": "a", "weight": 1.5,
                                                      "max_samples": 40}]})
    run_recipe(rec, tmp_path / "o")
    parts = rx.apply_recipe(rendered, rec)
    assert Counter(tuples(parts["train"])) == Counter(documents(tmp_path / "o", "train"))
    assert Counter(tuples(parts["validation"])) == Counter(documents(tmp_path / "o", "validation"))
    assert len(parts["train"]) == 40
