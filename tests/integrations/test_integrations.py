"""``ocml.encoder.integrations``: the ``datasets.map`` function, the Ray Data classes, the recipe.

The render and pack stages are checked against ``Encoder.render`` / ``ocml.encoder.pack`` and
against the ``ocml pack`` CLI on the same JSONL (unpacked and packed); ``datasets`` with
``num_proc=2`` and Ray in local mode run the same callables.  Tests needing ``datasets`` or
``ray`` skip when the package is missing.
"""

from __future__ import annotations

import json
import pickle
import random
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml.encoder.errors import InputError, OcmlError
from ocml.encoder.integrations import OcmlPack, OcmlRender, pack_stream
from ocml.encoder.integrations.batches import drop_nulls
from ocml.encoder.integrations.pack_stage import TablePacker, packed_table, split_failures
from ocml.encoder.pipeline.records import conversation_from_record

from support.gen import harmony_conversation  # noqa: E402
from support.paths import ROOT

FMT = "harmony"
SEQ_LEN = 512
TRL = ["input_ids", "labels", "position_ids", "seq_lengths"]
WORDS = ("the weather in Lisbon", "convert 20 EUR to USD", "book a room for 3", "naïve café 日本語 🙂",
         "def f(x):\n    return x * 2", "<|start|>assistant<|message|>not a control", "tab\tand\nnewline")
PROPS = ["city", "amount", "unit", "when", "guests", "title"]


def tool(rng: random.Random, name: str) -> dict[str, Any]:
    # Properties in one global order: an Arrow struct keeps the first-seen key order for
    # every row, so only schemas that agree on key order survive a struct column exactly.
    props = {p: {"type": rng.choice(["string", "number"]), "description": f"the {p}"}
             for p in sorted(rng.sample(PROPS, rng.randint(1, 3)), key=PROPS.index)}
    return {"type": "function", "function": {"name": name, "description": f"{name} tool",
                                             "parameters": {"type": "object", "properties": props,
                                                            "required": sorted(props)[:1]}}}


def chat_record(rng: random.Random, i: int) -> dict[str, Any]:
    """OpenAI / HF chat data: system, turns, a tool call with its result, reasoning; tools differ
    per record (Arrow unifies them into one struct type)."""
    msgs: list[dict[str, Any]] = []
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": "You are terse. " + rng.choice(WORDS)})
    tools = [tool(rng, n) for n in rng.sample(["get_weather", "convert", "book"], rng.randint(0, 2))]
    for turn in range(rng.randint(1, 3)):
        msgs.append({"role": "user", "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))})
        if tools and rng.random() < 0.5:
            name = tools[0]["function"]["name"]
            args = json.dumps({"x": rng.randint(0, 99)})
            msgs.append({"role": "assistant", "content": None, "reasoning_content": "need " + name,
                         "tool_calls": [{"id": f"c{i}_{turn}", "type": "function",
                                         "function": {"name": name, "arguments": args}}]})
            msgs.append({"role": "tool", "tool_call_id": f"c{i}_{turn}", "content": json.dumps({"ok": True})})
        msgs.append({"role": "assistant", "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40)))})
    rec: dict[str, Any] = {"id": f"r{i}", "messages": msgs}
    if tools:
        rec["tools"] = tools
    return rec


BAD = [
    '{"messages": [{"role": "customer", "content": "hi"}]}',              # unknown role
    '{"messages": [{"role": "user", "content": "unterminated}',           # not JSON
    '{"id": "no-messages"}',                                              # no messages field
    json.dumps({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": None,
                "tool_calls": [{"id": "c", "type": "function",
                                "function": {"name": "f", "arguments": "{not json"}}]}]}),
]


def jsonl_lines(n: int = 60, seed: int = 0) -> list[str]:
    """Chat records, openai-harmony JSON (list content: a shape pyarrow's JSON reader cannot
    mix with string content) and bad records, as JSON lines."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        rec = harmony_conversation(rng) if i % 4 == 3 else chat_record(rng, i)
        lines.append(json.dumps(rec, ensure_ascii=False))
    for k, bad in enumerate(BAD):
        lines.insert(7 + 13 * k, bad)
    return lines


_ENC = encoder.Encoder(FMT)  # for hypothesis tests (no function-scoped fixtures there)
_RENDERED = OcmlRender(_ENC, json_field="text")(pa.table({"text": jsonl_lines(40, seed=2)}))


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return jsonl_lines()


@pytest.fixture(scope="module")
def enc() -> encoder.Encoder:
    return encoder.Encoder(FMT)


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory: pytest.TempPathFactory, lines: list[str]) -> Path:
    path = tmp_path_factory.mktemp("in") / "chats.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def direct(enc: encoder.Encoder, line: str) -> Any:
    """What ``Encoder.render`` gives for one JSON line (None when the record is bad)."""
    try:
        return enc.render(conversation_from_record(json.loads(line)))
    except (OcmlError, json.JSONDecodeError):
        return None


def rows(table: pa.Table, columns: list[str]) -> dict[str, list[Any]]:
    return {c: table.column(c).to_pylist() for c in columns}


# -- render stage ----------------------------------------------------------------------------

ALL_OUT = ["input_ids", "labels", "assistant_masks", "message_index", "length"]


def test_render_matches_encoder_row_by_row(enc: encoder.Encoder, lines: list[str]) -> None:
    out = OcmlRender(enc, json_field="text", outputs=ALL_OUT)(pa.table({"text": lines}))
    assert out.num_rows == len(lines)
    assert out.column_names == ALL_OUT + ["error_code", "error"]
    bad = 0
    for i, line in enumerate(lines):
        r = direct(enc, line)
        row = {c: out.column(c)[i].as_py() for c in out.column_names}
        if r is None:
            bad += 1
            assert row["input_ids"] is None and row["length"] is None
            assert row["error_code"].startswith("E-") and row["error"].startswith(f"[{row['error_code']}]")
            continue
        assert row["error_code"] is None and row["error"] is None
        assert row["input_ids"] == r.ids.tolist()
        assert row["labels"] == r.labels.tolist()
        assert row["assistant_masks"] == r.mask.astype(int).tolist()
        assert row["message_index"] == r.message_index.tolist()
        assert row["length"] == len(r)
    assert bad == len(BAD)
    assert sorted(out.column("error_code").drop_null().to_pylist()) == sorted(
        ["E-ROLE-UNKNOWN", "E-INPUT-JSON", "E-INPUT", "E-BODY-CONSTRAINT-VIOLATION"])


def test_table_and_column_dict_batches_agree(enc: encoder.Encoder, lines: list[str]) -> None:
    recs = [json.loads(l) for l in lines if direct(enc, l) is not None]
    fn = OcmlRender(enc)
    as_dict = fn({"messages": [r["messages"] for r in recs], "tools": [r.get("tools") for r in recs]})
    as_json = OcmlRender(enc, json_field="j")(pa.table({"j": [json.dumps(r) for r in recs]}))
    assert isinstance(as_dict, dict) and as_dict == as_json.to_pydict()  # a plain dict in: lists out (streaming map)
    assert as_dict["input_ids"] == [direct(enc, json.dumps(r)).ids.tolist() for r in recs]


def test_arrow_struct_nulls_do_not_reach_tool_schemas(enc: encoder.Encoder, lines: list[str]) -> None:
    # A struct column gives every row the keys of every other row's tools ("amount": null):
    # without pruning, the rendered tool schemas would change.  (Key order is the struct's,
    # not the row's: tools whose key orders differ need JSON text columns; see docs/training/scaling.md.)
    ok = [json.loads(l) for l in lines if direct(enc, l) is not None]
    recs = [{"messages": r["messages"], "tools": r["tools"]} for r in ok if "tools" in r]
    full = tool(random.Random(0), "everything")  # first row: every property, in the global order
    full["function"]["parameters"]["properties"] = {p: {"type": "string", "description": p} for p in PROPS}
    recs.insert(0, {"messages": recs[0]["messages"], "tools": [full]})
    table = pa.Table.from_pylist(recs)
    assert None in table.column("tools").to_pylist()[1][0]["function"]["parameters"]["properties"].values()
    out = OcmlRender(enc)(table)
    assert out.column("input_ids").to_pylist() == [enc.render(conversation_from_record(r)).ids.tolist() for r in recs]
    assert drop_nulls({"a": None, "b": [{"c": None, "d": 1}, None]}) == {"b": [{"d": 1}, None]}


@settings(max_examples=15, deadline=None)
@given(cuts=st.lists(st.integers(0, 64), max_size=6))
def test_rows_do_not_depend_on_batching(cuts: list[int]) -> None:
    lines = jsonl_lines(20, seed=1)
    fn = OcmlRender(_ENC, json_field="text", outputs=ALL_OUT)
    whole = fn(pa.table({"text": lines}))
    bounds = sorted({0, len(lines), *[c % (len(lines) + 1) for c in cuts]})
    parts = [fn(pa.table({"text": lines[a:b]})) for a, b in zip(bounds, bounds[1:])]
    assert pa.concat_tables(parts).combine_chunks().equals(whole.combine_chunks())


def test_errors_raise_names_the_row(enc: encoder.Encoder, lines: list[str]) -> None:
    fn = OcmlRender(enc, json_field="text", errors="raise")
    with pytest.raises(InputError, match=r"row 7 of the batch: .*customer") as info:
        fn(pa.table({"text": lines}))
    assert info.value.code == "E-ROLE-UNKNOWN"
    with pytest.raises(InputError, match=r"^\[E-ROLE-UNKNOWN\] row 1007: "):
        fn(pa.table({"text": lines}), list(range(1000, 1000 + len(lines))))
    ok = [l for l in lines if direct(enc, l) is not None]
    assert "error" not in fn(pa.table({"text": ok})).column_names


def test_json_field_rows_that_hold_no_text(enc: encoder.Encoder) -> None:
    out = OcmlRender(enc, json_field="t")(pa.table({"t": ["", None, '[{"role": "user", "content": "hi"}]']}))
    assert out.column("error_code").to_pylist() == ["E-INPUT", "E-INPUT", None]
    assert "blank" in out.column("error")[0].as_py() and "NoneType" in out.column("error")[1].as_py()
    assert out.column("input_ids")[2].as_py() == enc.render([{"role": "user", "content": "hi"}]).ids.tolist()


def test_keep_copies_input_columns(enc: encoder.Encoder) -> None:
    t = pa.table({"messages": [[{"role": "user", "content": "hi"}]], "id": ["a"]})
    out = OcmlRender(enc, keep=["id"])(t)
    assert out.column("id").to_pylist() == ["a"]


def test_pickles_as_a_recipe(enc: encoder.Encoder, lines: list[str]) -> None:
    fn = OcmlRender(FMT, json_field="text", outputs=["input_ids", "labels"], mask="final")
    blob = pickle.dumps(fn)
    assert len(blob) < 4096  # the vocabulary is rebuilt from the worker's cache, never shipped
    again = pickle.loads(blob)
    batch = pa.table({"text": lines[:10]})
    assert again(batch).equals(fn(batch))


@pytest.mark.parametrize("kwargs, field", [
    ({"outputs": ["input_ids", "bogus"]}, "outputs"),
    ({"outputs": "input_ids"}, "outputs"),
    ({"outputs": []}, "outputs"),
    ({"keep": ["labels"]}, "keep"),
    ({"errors": "ignore"}, "errors"),
    ({"messages_field": ""}, "messages_field"),
])
def test_bad_arguments_are_typed(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(OcmlError) as info:
        OcmlRender(_ENC, **kwargs)
    assert info.value.field == field


def test_bad_batches_are_typed() -> None:
    fn = OcmlRender(_ENC)
    with pytest.raises(OcmlError, match="batch"):
        fn([{"messages": []}])  # type: ignore[arg-type]
    with pytest.raises(InputError, match="different lengths"):
        fn({"messages": [[]], "tools": [None, None]})
    with pytest.raises(InputError, match="indices"):
        fn({"messages": [[]]}, [1, 2])
    with pytest.raises(InputError):
        OcmlRender(_ENC, tokenizer="o200k_base")


# -- pack stage -------------------------------------------------------------------------------

def rendered(lines: list[str], **kw: Any) -> pa.Table:
    return OcmlRender(_ENC, json_field="text", **kw)(pa.table({"text": lines}))


def test_pack_stage_is_encoder_pack(lines: list[str]) -> None:
    out = rendered(lines, outputs=["input_ids", "labels", "message_index"])
    results = [direct(_ENC, l) for l in lines]
    for overlong in ("split", "truncate", "drop"):
        want = packed_table(encoder.pack(results, SEQ_LEN // 2, encoder=_ENC, overlong=overlong))
        got = OcmlPack(SEQ_LEN // 2, encoder=FMT, overlong=overlong)(out)
        assert got.equals(want), overlong
    # every document's tokens are in the rows exactly once (split: nothing dropped)
    got = OcmlPack(SEQ_LEN // 2, encoder=_ENC)(out)
    assert sum(map(len, got.column("input_ids").to_pylist())) == sum(len(r) for r in results if r is not None)
    assert all(sum(s) == len(i) for s, i in zip(got.column("seq_lengths").to_pylist(),
                                                got.column("input_ids").to_pylist()))


def test_pass_errors_reports_every_missing_record(lines: list[str]) -> None:
    out = rendered(lines)
    lengths = [len(r) if (r := direct(_ENC, l)) is not None else 0 for l in lines]
    seq_len = sorted(lengths)[-3]  # the two longest documents do not fit
    table = OcmlPack(seq_len, encoder=_ENC, overlong="drop", pass_errors=True)(out, list(range(100, 100 + len(lines))))
    packed, failures = split_failures(table)
    assert packed.column_names == TRL
    codes = {row - 100: code for row, code, _ in failures}
    bad_rows = [i for i, l in enumerate(lines) if direct(_ENC, l) is None]
    long_rows = [i for i, n in enumerate(lengths) if n > seq_len]
    assert len(long_rows) == 2
    assert codes == {**{i: c for i, c in zip(bad_rows, out.column("error_code").drop_null().to_pylist())},
                     **{i: "E-PACK-OVERLONG" for i in long_rows}}
    assert packed.equals(OcmlPack(seq_len, encoder=_ENC, overlong="drop")(out))


def test_truncate_needs_message_index(lines: list[str]) -> None:
    with pytest.raises(InputError, match="message_index"):
        OcmlPack(SEQ_LEN, encoder=_ENC, overlong="truncate")(rendered(lines))
    with pytest.raises(OcmlError):
        OcmlPack(0, encoder=_ENC)
    with pytest.raises(OcmlError):
        OcmlPack(SEQ_LEN)  # no pad id and no encoder to take it from


@settings(max_examples=10, deadline=None)
@given(sizes=st.lists(st.integers(1, 30), min_size=1, max_size=5), window=st.sampled_from([None, 7, 25]))
def test_stream_packing_ignores_batch_boundaries(sizes: list[int], window: int | None) -> None:
    out = _RENDERED
    tables, a = [], 0
    for n in sizes + [out.num_rows]:
        tables.append(out.slice(a, n))
        a += n
        if a >= out.num_rows:
            break
    got = pa.concat_tables(list(pack_stream(tables, SEQ_LEN, encoder=_ENC, window=window)))
    want = pa.concat_tables(list(pack_stream([out], SEQ_LEN, encoder=_ENC, window=window)))
    assert got.equals(want)


# -- the same rows as the CLI ------------------------------------------------------------------

@pytest.fixture(scope="module")
def cli_out(tmp_path_factory: pytest.TempPathFactory, jsonl: Path) -> dict[str, pa.Table]:
    from ocml.encoder.cli import main

    out: dict[str, pa.Table] = {}
    # Unpacked: the default run (rows in a seeded order), put back in input order by each row's provenance
    # column ``record``.  Packed: the integrations pack documents in input order, so the CLI must too
    # (--no-shuffle: the default packs a seeded document order and shuffles the rows).
    for name, extra in (("unpacked", ["--no-pack"]),
                        ("packed", ["--seq-len", str(SEQ_LEN), "--overlong", "split", "--no-shuffle"])):
        d = tmp_path_factory.mktemp(name)
        code = main(["pack", str(jsonl), "--format", FMT, "--out", str(d / "o"), "--workers", "1",
                     "--max-bad-fraction", "1", "--keep-untrained", *extra])
        assert code == 0
        out[name] = pq.read_table(d / "o" / "data")
        if name == "unpacked":
            assert out[name].column("record").to_pylist() != sorted(out[name].column("record").to_pylist())
            out[name] = out[name].sort_by("record")
        out[name + "_errors"] = [json.loads(l) for l in (d / "o" / "errors.jsonl").read_text().splitlines()]
    return out


def test_render_stage_gives_the_cli_rows(cli_out: dict[str, Any], lines: list[str]) -> None:
    out = rendered(lines, outputs=["input_ids", "labels", "assistant_masks"])
    ok = out.filter(out.column("error_code").is_null())
    cols = [c for c in cli_out["unpacked"].column_names if c not in ("source", "record")]  # provenance: CLI only
    assert rows(ok, cols) == rows(cli_out["unpacked"], cols)
    assert sorted(e["code"] for e in cli_out["unpacked_errors"]) == sorted(out.column("error_code").drop_null().to_pylist())


def test_table_packer_gives_the_cli_rows(cli_out: dict[str, Any], lines: list[str]) -> None:
    out = rendered(lines)
    tp = TablePacker(SEQ_LEN, encoder=_ENC)
    got = pa.concat_tables([t for k in range(0, out.num_rows, 16) for t in tp.add(out.slice(k, 16))] + list(tp.finish()))
    assert rows(got, TRL) == rows(cli_out["packed"], TRL)
    assert len(tp.failures) == len(BAD) == len(tp.report.skipped)


# -- datasets ------------------------------------------------------------------------------------

def test_datasets_map_num_proc_2_gives_the_cli_rows(cli_out: dict[str, Any], lines: list[str],
                                                      tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    from ocml.encoder.integrations.hf_datasets import pack_dataset, render_dataset

    datasets.disable_progress_bars()
    ds = datasets.Dataset.from_dict({"text": lines})
    one = render_dataset(ds, FMT, json_field="text", batch_size=16,
                         outputs=["input_ids", "labels", "assistant_masks"])
    two = render_dataset(ds, FMT, json_field="text", batch_size=16, num_proc=2,
                         outputs=["input_ids", "labels", "assistant_masks"])
    assert one.features == two.features and one[:] == two[:]
    ok = one.filter(lambda e: e is None, input_columns="error_code")
    cols = [c for c in cli_out["unpacked"].column_names if c not in ("source", "record")]  # provenance: CLI only
    assert ok.select_columns(cols)[:] == rows(cli_out["unpacked"], cols)
    assert [e for e in one["error_code"] if e] and one.features["input_ids"].feature.dtype == "int32"
    packed = pack_dataset(ok, SEQ_LEN, encoder=FMT)
    assert packed[:] == rows(cli_out["packed"], TRL)
    mapped = pack_dataset(ok, SEQ_LEN, encoder=FMT, cache_file=str(tmp_path / "p.arrow"))
    assert mapped[:] == packed[:]
    per_batch = pack_dataset(ok, SEQ_LEN, encoder=FMT, scope="batch", batch_size=20)
    assert sum(map(len, per_batch["input_ids"])) == sum(map(len, packed["input_ids"]))


def test_streaming_iterable_dataset_in_arrow_format(lines: list[str]) -> None:
    datasets = pytest.importorskip("datasets")
    ids = datasets.Dataset.from_dict({"text": lines[:20]}).to_iterable_dataset()
    out = ids.with_format("arrow").map(OcmlRender(_ENC, json_field="text"), batched=True, batch_size=6,
                                       remove_columns=["text"])
    assert [r["input_ids"] for r in out.with_format(None)] == rendered(lines[:20]).column("input_ids").to_pylist()


def test_datasets_fingerprint_is_the_recipe() -> None:
    fingerprint = pytest.importorskip("datasets.fingerprint")
    h = fingerprint.Hasher.hash
    a = OcmlRender(FMT, json_field="text")
    a(pa.table({"text": ['[{"role": "user", "content": "hi"}]']}))  # using it changes nothing
    assert h(a) == h(OcmlRender(FMT, json_field="text"))
    assert h(a) != h(OcmlRender(FMT, json_field="text", mask="final"))
    assert h(a) != h(OcmlRender("openchatml-2.2", json_field="text"))


# -- Ray Data (local mode) ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ray_local() -> Any:
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             ignore_reinit_error=True)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.execution_no_progress_timeout_s = 120  # a scheduling deadlock fails the test, not the suite
    yield ray
    ray.shutdown()


@pytest.mark.needs_ray
def test_ray_map_batches_class_and_global_pack_give_the_cli_rows(ray_local: Any, jsonl: Path,
                                                                   cli_out: dict[str, Any]) -> None:
    from ocml.encoder.integrations import ray_data

    ray_local.data.DataContext.get_current().execution_options.preserve_order = False  # pack() asks for order
    ds = ray_local.data.read_text(str(jsonl))
    rendered_ds = ds.map_batches(OcmlRender, fn_constructor_kwargs={"encoder": FMT, "json_field": "text"},
                                 batch_format="pyarrow", batch_size=16,
                                 compute=ray_local.data.ActorPoolStrategy(size=1))
    stream = ray_data.pack(rendered_ds, SEQ_LEN, encoder=FMT, scope="global", batch_size=16)
    got = pa.concat_tables(list(stream))
    assert rows(got, TRL) == rows(cli_out["packed"], TRL)
    assert sorted(c for _, c, _ in stream.failures) == sorted(e["code"] for e in cli_out["packed_errors"])
    assert stream.report["rows"] == got.num_rows


@pytest.mark.needs_ray
def test_ray_block_packing_conserves_every_document(ray_local: Any, lines: list[str]) -> None:
    from ocml.encoder.integrations import ray_data

    items = [{"text": l} for l in lines]
    ds = ray_local.data.from_items(items, override_num_blocks=3)
    rendered_ds = ray_data.render(ds, FMT, json_field="text", batch_size=16)
    stream = ray_data.pack(rendered_ds, SEQ_LEN, encoder=FMT, scope="block")
    got = pa.concat_tables(list(stream))
    results = [r for r in (direct(_ENC, l) for l in lines) if r is not None]
    flat = got.column("input_ids").to_pylist()
    assert sum(map(len, flat)) == sum(len(r) for r in results) == stream.report["tokens"]
    assert all(len(x) <= SEQ_LEN for x in flat)
    assert len(stream.failures) == len(BAD)
    assert {c for _, c, _ in stream.failures} == {"E-ROLE-UNKNOWN", "E-INPUT-JSON", "E-INPUT",
                                                  "E-BODY-CONSTRAINT-VIOLATION"}


@pytest.mark.needs_ray
def test_ray_recipe_writes_the_cli_shards(ray_local: Any, jsonl: Path, cli_out: dict[str, Any],
                                          tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    import ray_pack

    out = tmp_path / "o"
    assert ray_pack.main([str(jsonl), "--out", str(out), "--format", FMT, "--seq-len", str(SEQ_LEN),
                          "--shard-rows", "10", "--actors", "1"]) == 0
    shards = sorted((out / "data").glob("*.parquet"))
    assert len(shards) > 1 and not list((out / "data").glob(".*"))
    assert rows(pq.read_table(out / "data"), TRL) == rows(cli_out["packed"], TRL)
    errors = [json.loads(l) for l in (out / "errors.jsonl").read_text().splitlines()]
    assert [e["row"] for e in errors] == [i for i, l in enumerate(lines_of(jsonl)) if direct(_ENC, l) is None]
    report = json.loads((out / "report.json").read_text())
    assert report["bad_records"] == len(BAD) and report["rows"] == cli_out["packed"].num_rows


def lines_of(path: Path) -> list[str]:
    return [l for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
