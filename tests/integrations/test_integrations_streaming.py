"""``datasets`` integration: input columns kept on request, streaming ``IterableDataset``s,
and ``ds.map(OcmlRender(...), batched=True)`` in every dataset kind and format."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ocml import encoder
from ocml.encoder.errors import InputError
from ocml.encoder.integrations import OcmlRender
from ocml.encoder.pipeline.records import conversation_from_record

datasets = pytest.importorskip("datasets")
from ocml.encoder.integrations.hf_datasets import render_dataset  # noqa: E402

FMT = "openchatml-2.2"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def records() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(12):
        msgs: list[dict[str, Any]] = [{"role": "user", "content": f"weather {i}?"}]
        if i % 3 == 0:
            msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
                         "function": {"name": "get_weather", "arguments": json.dumps({"city": f"T{i}"})}}]})
            msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": "Sunny."})
        msgs.append({"role": "assistant", "content": f"answer {i}"})
        out.append({"id": i, "source": f"s{i % 2}", "messages": msgs, "tools": json.dumps(TOOLS)})
    out[5]["messages"] = [{"role": "robot", "content": "x"}]  # a bad record: error columns, no tokens
    return out


@pytest.fixture(scope="module", autouse=True)
def quiet() -> None:
    datasets.disable_progress_bars()


def expected(recs: list[dict[str, Any]]) -> list[list[int] | None]:
    enc = encoder.Encoder(FMT)
    out: list[list[int] | None] = []
    for r in recs:
        try:
            out.append(enc.render(conversation_from_record(r)).ids.tolist())
        except InputError:
            out.append(None)
    return out


def test_remove_columns_false_keeps_the_input_columns() -> None:
    recs = records()
    ds = datasets.Dataset.from_list(recs)
    out = render_dataset(ds, FMT, remove_columns=False)
    assert out.column_names == ["id", "source", "messages", "tools", "input_ids", "labels", "error_code", "error"]
    assert out["id"] == list(range(12)) and out["source"] == ds["source"] and out["tools"] == ds["tools"]
    assert out["input_ids"] == expected(recs) and out.format["type"] is None
    assert out["error_code"][5] == "E-ROLE-UNKNOWN"
    some = render_dataset(ds, FMT, remove_columns=["messages", "tools"])
    assert some.column_names == ["id", "source", "input_ids", "labels", "error_code", "error"]
    assert render_dataset(ds, FMT).column_names == ["input_ids", "labels", "error_code", "error"]
    with pytest.raises(InputError) as info:
        render_dataset(ds, FMT, remove_columns=["nope"])
    assert info.value.field == "remove_columns"


def test_streaming_iterable_dataset() -> None:
    recs = records()
    ids = datasets.Dataset.from_list(recs).to_iterable_dataset(num_shards=3)
    out = render_dataset(ids, FMT, batch_size=5)
    assert isinstance(out, datasets.IterableDataset)
    rows = list(out)
    assert [r["input_ids"] for r in rows] == expected(recs) and set(rows[0]) == {"input_ids", "labels", "error_code",
                                                                                 "error"}
    kept = list(render_dataset(ids, FMT, remove_columns=False, batch_size=5))
    assert [r["id"] for r in kept] == list(range(12)) and kept[0]["messages"] == list(ids.take(1))[0]["messages"]
    dropped = list(render_dataset(ids, FMT, remove_columns=["messages"]))
    assert "messages" not in dropped[0] and dropped[0]["source"] == "s0"
    with pytest.raises(InputError) as info:
        render_dataset(ids, FMT, num_proc=2)
    assert info.value.field == "num_proc"


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("fmt", [None, "arrow"])
def test_map_with_ocmlrender_directly(streaming: bool, fmt: str | None) -> None:
    recs = records()
    ds = datasets.Dataset.from_list(recs)
    if streaming:
        ds = ds.to_iterable_dataset()
    ds = ds.with_format(fmt)
    out = ds.map(OcmlRender(FMT, keep=["id"]), batched=True, batch_size=4)
    rows = list(out.with_format(None))
    assert [r["input_ids"] for r in rows] == expected(recs) and [r["id"] for r in rows] == list(range(12))
    assert [r["error_code"] for r in rows].count("E-ROLE-UNKNOWN") == 1
    if streaming and fmt is None:  # lists back: the streaming map merges them into the batch
        assert rows[3]["source"] == "s1" and rows[3]["messages"][0]["content"] == "weather 3?"
    else:  # a typed table back replaces the batch: the kept columns only
        assert set(rows[3]) == {"id", "input_ids", "labels", "error_code", "error"}
