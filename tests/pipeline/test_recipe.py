"""Recipe parsing and the mixing rules on their own: weights, caps, the split, dedup, the shuffle statistic."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocml.encoder.cli import build_parser
from ocml.encoder.errors import InputError
from ocml.encoder.pipeline.content import content_keys
from ocml.encoder.pipeline.dedup import first_occurrences
from ocml.encoder.pipeline.mix import weighted_take
from ocml.encoder.pipeline.recipe import (Recipe, RecipeError, SourceSpec, Validation, read_recipe_file, resolve_recipe)
from ocml.encoder.pipeline.recipe_cli import explicit_dests
from ocml.encoder.pipeline.shuffle import order_correlation, permutation
from ocml.encoder.pipeline.validation_split import validation_mask

# -- parsing -------------------------------------------------------------------------------------


def test_defaults_are_filled_and_sources_inherit() -> None:
    r = resolve_recipe({"seq_len": 512, "mask": "last", "sources": ["a.jsonl", {"path": "b", "cot": "keep-all"}]})
    assert r.sources[0] == SourceSpec(path="a.jsonl", name="a.jsonl", mask="last")
    assert r.sources[1].cot == "keep-all" and r.sources[1].mask == "last"
    assert (r.seed, r.validation, r.dedup, r.shuffle, r.validation_pack) == (0, None, "off", True, True)
    assert r.outputs == ("parquet",)


@pytest.mark.parametrize("data, key, hint", [
    ({"seq_len": 8, "sources": [{"path": "a", "wieght": 2}]}, "wieght", "did you mean 'weight'"),
    ({"seq_len": 8, "sed": 1, "sources": ["a"]}, "sed", "did you mean 'seed'"),
    ({"seq_len": 8, "weight": 2, "sources": ["a"]}, "weight", "belongs under a source"),
    ({"seq_len": 8, "sources": [{"path": "a", "seed": 3}]}, "seed", "top level"),
    ({"seq-len": 8, "sources": [{"path": "a", "mask": "lst"}]}, "mask", "did you mean 'last'"),
    ({"seq_len": 8, "dedup": "fuzzy", "sources": ["a"]}, "dedup", "exact"),
    ({"seq_len": "4096", "sources": ["a"]}, "seq_len", None),
    ({"seq_len": 8, "sources": [{"path": "a", "weight": -1}]}, "weight", "seeded half"),
    ({"seq_len": 8, "sources": [{"path": "a", "max_samples": 0}]}, "max_samples", None),
    ({"seq_len": 8, "sources": ["a", "a"]}, "name", "own name"),
    ({"seq_len": 8, "sources": [{"name": "x"}]}, "path", None),
    ({"seq_len": 8, "sources": []}, "sources", None),
    ({"sources": ["a"]}, "seq_len", "pack: false"),
    ({"seq_len": 8, "validation": 1.5, "sources": ["a"]}, "validation", "integer"),
    ({"seq_len": 8, "validation": True, "sources": ["a"]}, "validation", None),
    ({"seq_len": 8, "format": "harmonyy", "sources": ["a"]}, "format", "did you mean 'harmony'"),
])
def test_bad_recipes_name_the_key_with_a_hint(data: dict, key: str, hint: str | None) -> None:
    with pytest.raises(RecipeError) as ei:
        resolve_recipe(data)
    assert ei.value.code == "E-RECIPE" and isinstance(ei.value, InputError)
    assert ei.value.field == key
    if hint:
        assert hint in (ei.value.hint or ""), ei.value


@pytest.mark.parametrize("value, expected", [
    (0.01, Validation(fraction=0.01)), (500, Validation(count=500)), ("0.2", Validation(fraction=0.2)),
    ("7", Validation(count=7)), (None, None), (0, None), (False, None)])
def test_validation_forms(value: object, expected: Validation | None) -> None:
    assert Validation.parse(value) == expected


@pytest.mark.parametrize("value", [1.0, -3, True, "lots", float("nan")])
def test_validation_bad_values(value: object) -> None:
    with pytest.raises(RecipeError):
        Validation.parse(value)


def test_overrides_win_also_over_per_source_settings() -> None:
    r = resolve_recipe({"seq_len": 8, "seed": 1, "sources": [{"path": "a", "mask": "last"}, "b"]},
                       {"seed": 9, "mask": "final", "seq-len": 16})
    assert r.seed == 9 and r.seq_len == 16
    assert [s.mask for s in r.sources] == ["final", "final"]


def test_resolved_recipe_round_trips(tmp_path: Path) -> None:
    r = resolve_recipe({"seq_len": 64, "validation": 0.05, "dedup": True, "output": ["npy", "parquet"],
                        "sources": [{"path": str(tmp_path / "a.jsonl"), "weight": 1.5, "max_samples": 9,
                                     "name": "a"}, {"path": str(tmp_path / "b.jsonl"), "weight": 0}]})
    assert r.dedup == "exact" and r.output == "both"
    assert resolve_recipe(r.to_dict()) == r
    (tmp_path / "m.json").write_text(json.dumps({"ocml_version": "x", "recipe": r.to_dict()}))
    assert resolve_recipe(read_recipe_file(tmp_path / "m.json")) == r


def test_relative_paths_read_against_the_recipe_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "r.yaml").write_text("seq_len: 32\nsources:\n  - path: data/a.jsonl\n    weight: 2\n")
    r = resolve_recipe(read_recipe_file(tmp_path / "sub" / "r.yaml"))
    assert r.sources[0].path == str(tmp_path / "sub" / "data" / "a.jsonl")
    assert r.sources[0].name == "data/a.jsonl"  # named as written


@pytest.mark.parametrize("text, code", [("sources: [a\n", "E-RECIPE"), ("- a\n- b\n", "E-RECIPE")])
def test_unreadable_recipe_files(tmp_path: Path, text: str, code: str) -> None:
    (tmp_path / "r.yaml").write_text(text)
    with pytest.raises(RecipeError) as ei:
        read_recipe_file(tmp_path / "r.yaml")
    assert ei.value.code == code
    with pytest.raises(RecipeError, match="no such recipe"):
        read_recipe_file(tmp_path / "missing.yaml")


def test_glob_sources(tmp_path: Path) -> None:
    from ocml.encoder.pipeline.recipe import expand_path

    for n in ("b.jsonl", "a.jsonl", "c.txt"):
        (tmp_path / n).write_text("")
    assert expand_path(str(tmp_path / "*.jsonl")) == [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]
    assert expand_path(str(tmp_path / "c.txt")) == [str(tmp_path / "c.txt")]
    with pytest.raises(RecipeError, match="matches no file"):
        expand_path(str(tmp_path / "*.parquet"))


def test_reasoning_is_passed_to_the_encoder_only_when_set() -> None:
    assert SourceSpec("a", "a").encoder_kwargs() == {"mask": "default", "cot": "default"}
    assert SourceSpec("a", "a", reasoning="drop").encoder_kwargs()["reasoning"] == "drop"
    assert resolve_recipe({"seq_len": 8, "reasoning": "keep", "sources": ["a"]}).sources[0].reasoning == "keep"


def test_explicit_flags_are_found_in_argv() -> None:
    parser = build_parser()
    pack = parser._subparsers._group_actions[0].choices["pack"]  # type: ignore[union-attr]
    argv = ["pack", "--recipe", "r.yaml", "--seq-len=64", "--form", "harmony", "--no-shuffle", "--out", "o"]
    assert explicit_dests(pack, argv) == {"recipe", "seq_len", "format", "shuffle", "out"}


# -- weights and caps ------------------------------------------------------------------------------


def test_weight_two_takes_every_conversation_twice() -> None:
    take = weighted_take(100, 2, None, seed=5, name="a")
    assert np.array_equal(np.bincount(take, minlength=100), np.full(100, 2))


def test_weight_half_takes_a_seeded_half() -> None:
    take = weighted_take(100, 0.5, None, seed=5, name="a")
    assert take.shape[0] == 50 and np.unique(take).shape[0] == 50
    assert np.array_equal(take, weighted_take(100, 0.5, None, seed=5, name="a"))
    assert not np.array_equal(take, weighted_take(100, 0.5, None, seed=6, name="a"))
    assert not np.array_equal(take, weighted_take(100, 0.5, None, seed=5, name="b"))  # own stream per source


def test_weight_one_and_a_half() -> None:
    counts = np.bincount(weighted_take(100, 1.5, None, seed=5, name="a"), minlength=100)
    assert counts.min() == 1 and counts.sum() == 150 and np.count_nonzero(counts == 2) == 50


def test_max_samples_caps_after_weighting() -> None:
    take = weighted_take(100, 2, 150, seed=5, name="a")
    assert take.shape[0] == 150 and np.bincount(take).max() == 2
    assert weighted_take(100, 0.5, 80, seed=5, name="a").shape[0] == 50  # under the cap: untouched
    assert weighted_take(10, 0, None, seed=5, name="a").shape[0] == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 300), st.floats(0, 4.5, allow_nan=False), st.one_of(st.none(), st.integers(1, 500)),
       st.integers(0, 2**40))
def test_weighted_counts_property(n: int, w: float, cap: int | None, seed: int) -> None:
    take = weighted_take(n, w, cap, seed, "s")
    expected = math.floor(w) * n + math.floor((w - math.floor(w)) * n + 0.5)
    assert take.shape[0] == (expected if cap is None else min(cap, expected))
    assert np.all(np.diff(take) >= 0) and (n == 0 or take.shape[0] == 0 or take.max() < n)
    if cap is None or expected <= cap:
        assert np.bincount(take, minlength=n).min(initial=math.floor(w)) >= math.floor(w)


# -- split and dedup -------------------------------------------------------------------------------

def _keys(contents: list[int]) -> np.ndarray:
    ids = np.asarray(contents, dtype=np.int32)
    return content_keys(ids, np.arange(ids.shape[0] + 1))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=200), st.floats(0.01, 0.99), st.integers(0, 2**32))
def test_duplicates_fall_on_the_same_side(contents: list[int], frac: float, seed: int) -> None:
    keys = _keys(contents)
    val = validation_mask(keys, Validation(fraction=frac), seed)
    side: dict[int, bool] = {}
    for c, v in zip(contents, val.tolist()):
        assert side.setdefault(c, v) == v


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=2, max_size=200), st.integers(0, 2**32), st.data())
def test_count_form_takes_exactly_n_distinct(contents: list[int], seed: int, data: st.DataObject) -> None:
    distinct = len(set(contents))
    if distinct < 2:
        return
    n = data.draw(st.integers(1, distinct - 1))
    val = validation_mask(_keys(contents), Validation(count=n), seed)
    assert len({c for c, v in zip(contents, val.tolist()) if v}) == n


def test_fraction_form_is_seeded_and_near_the_fraction() -> None:
    keys = _keys(list(range(20000)))
    a = validation_mask(keys, Validation(fraction=0.1), 1)
    assert abs(a.mean() - 0.1) < 0.01
    assert np.array_equal(a, validation_mask(keys, Validation(fraction=0.1), 1))
    assert not np.array_equal(a, validation_mask(keys, Validation(fraction=0.1), 2))
    assert not validation_mask(keys, None, 1).any()


def test_count_form_larger_than_the_input() -> None:
    with pytest.raises(RecipeError, match="only 3 distinct"):
        validation_mask(_keys([1, 2, 3, 3]), Validation(count=3), 0)


def test_first_occurrences() -> None:
    assert first_occurrences(_keys([5, 6, 5, 7, 6, 5])).tolist() == [False, False, True, False, True, True]
    assert first_occurrences(np.zeros((0, 2), dtype=np.uint64)).shape == (0,)


def test_content_keys_follow_ids_only() -> None:
    ids = np.array([1, 2, 3, 1, 2, 3, 1, 2], dtype=np.int32)
    k = content_keys(ids, np.array([0, 3, 6, 8, 8]))
    assert (k[0] == k[1]).all() and not (k[0] == k[2]).all() and not (k[3] == k[2]).all()


# -- the shuffle statistic ----------------------------------------------------------------------------

def test_order_correlation_sees_sorted_rows_and_not_shuffled_ones() -> None:
    docs = np.sort(np.random.default_rng(0).integers(1, 30, 2000))[::-1]
    assert order_correlation(docs) < -0.9
    shuffled = docs[permutation(docs.shape[0], 3, "train-rows")]
    assert abs(order_correlation(shuffled)) < 0.06  # ~ 2.7 standard errors at 2,000 rows
    assert order_correlation(np.ones(10)) == 0.0 and order_correlation(np.ones(1)) == 0.0


def test_recipe_dataclass_outputs() -> None:
    assert Recipe(sources=(), output="both").outputs == ("parquet", "npy")
