"""``ocml.encoder.pipeline.records`` and ``readers``: finding conversations in records, reading files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml.encoder.errors import InputError
from ocml.encoder.pipeline.readers import Kind, Position, iter_chunks, resolve
from ocml.encoder.pipeline.records import conversation_from_record
from ocml.encoder.pipeline.workers import RenderSpec, render_chunk

CHAT = [{"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 3}"},
        {"role": "assistant", "content": "3 °C in Oslo."}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


@pytest.fixture(scope="module")
def enc() -> encoder.Encoder:
    return encoder.Encoder("openchatml-2.2")


def test_record_fields_and_json_string_columns(enc: encoder.Encoder) -> None:
    plain = enc.render({"messages": CHAT, "tools": TOOLS})
    as_strings = conversation_from_record({"msgs": json.dumps(CHAT), "fns": json.dumps(TOOLS), "id": 7},
                                          messages_field="msgs", tools_field="fns")
    assert np.array_equal(enc.render(as_strings).ids, plain.ids)
    assert np.array_equal(enc.render(conversation_from_record(CHAT)).ids, enc.render(CHAT).ids)  # a bare list


def test_record_options_pass_through(enc: encoder.Encoder) -> None:
    conv = conversation_from_record({"messages": CHAT[:1], "reasoning_effort": "high", "source": "x"})
    assert conv["reasoning_effort"] == "high"
    h = encoder.Encoder("harmony")
    assert "Reasoning: high" in h.to_text(conversation_from_record({"messages": CHAT[:1], "reasoning_effort": "high"}))


def test_sharegpt_with_function_calls(enc: encoder.Encoder) -> None:
    rec = {"conversations": [{"from": "human", "value": "Weather in Oslo?"},
                             {"from": "function_call", "value": json.dumps({"name": "get_weather",
                                                                            "arguments": {"city": "Oslo"}})},
                             {"from": "observation", "value": "{\"temp\": 3}"},
                             {"from": "gpt", "value": "3 °C in Oslo."}],
           "tools": json.dumps([TOOLS[0]["function"]])}
    text = enc.to_text(conversation_from_record(rec))
    assert "to=functions.get_weather" in text and "name=functions.get_weather" in text
    assert "call_id" not in text  # none invented: they would be rendered


@pytest.mark.parametrize("record, field, code_hint", [
    ({"mesages": CHAT}, "messages", "mesages"),
    ({"id": 3}, "messages", "--messages-field"),
    ({"messages": "not json"}, "messages", None),
    ({"messages": {"role": "user"}}, "messages", None),
    ({"messages": CHAT, "tools": {"name": "x"}}, "tools", None),
    ({"conversations": [{"from": "alien", "value": "hi"}]}, "conversations[0].from", None),
    ("a string", "messages", None),
])
def test_bad_records_name_the_field(record: object, field: str, code_hint: str | None) -> None:
    with pytest.raises(InputError) as info:
        conversation_from_record(record)  # type: ignore[arg-type]
    assert info.value.field == field
    if code_hint:
        assert code_hint in (info.value.hint or "")


# -- readers --------------------------------------------------------------------------------------

def _lines(n: int) -> list[bytes]:
    return [json.dumps({"messages": [{"role": "user", "content": f"q{i}"},
                                     {"role": "assistant", "content": f"a{i}"}]}).encode() for i in range(n)]


def _read_all(paths: list[str], **kw: object) -> list[tuple[int, int, object]]:
    """(source, location, record) of every record, decoded as the workers do."""
    from ocml.encoder.pipeline.workers import decode_records

    return [(ch.source, loc, rec) for ch in iter_chunks(resolve(paths), **kw)  # type: ignore[arg-type]
            for loc, rec in decode_records(ch)]


def test_sniffing_by_content_not_extension(tmp_path: Path) -> None:
    lines = _lines(5)
    (tmp_path / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "b.json").write_bytes(gzip.compress(b"\n".join(lines)))            # gzip JSONL named .json
    import zstandard

    (tmp_path / "c.zst").write_bytes(zstandard.ZstdCompressor().compress(b"\n".join(lines)))
    (tmp_path / "d.jsonl").write_text(json.dumps([json.loads(x) for x in lines], indent=2))  # a JSON document
    (tmp_path / "e.json").write_text(json.dumps(json.loads(lines[0]), indent=2))  # one pretty-printed record
    srcs = resolve([str(tmp_path / n) for n in ("a.jsonl", "b.json", "c.zst", "d.jsonl", "e.json")])
    assert [(s.kind, s.compression) for s in srcs] == [(Kind.JSONL, None), (Kind.JSONL, "gz"), (Kind.JSONL, "zst"),
                                                      (Kind.JSON, None), (Kind.JSON, None)]
    got = _read_all([str(tmp_path / n) for n in ("a.jsonl", "b.json", "c.zst", "d.jsonl", "e.json")])
    want = [json.loads(x) for x in lines]
    assert [r for _, _, r in got] == want * 4 + want[:1]
    assert [loc for s, loc, _ in got if s == 0] == [1, 2, 3, 4, 5]   # JSONL: 1-based lines
    assert [loc for s, loc, _ in got if s == 3] == [0, 1, 2, 3, 4]   # JSON document: 0-based items


def test_tabular_inputs_and_save_to_disk(tmp_path: Path) -> None:
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    recs = [json.loads(x) for x in _lines(7)]
    pq.write_table(pa.Table.from_pylist(recs), tmp_path / "x.parquet", row_group_size=3)
    datasets.Dataset.from_list(recs).save_to_disk(str(tmp_path / "ds"))
    datasets.DatasetDict({"train": datasets.Dataset.from_list(recs[:2]),
                          "test": datasets.Dataset.from_list(recs[2:])}).save_to_disk(str(tmp_path / "dd"))
    for path, n in (("x.parquet", 7), ("ds", 7), ("dd", 2)):
        got = _read_all([str(tmp_path / path)])
        assert [r["messages"] for _, _, r in got] == [r["messages"] for r in recs[:n]], path
        assert [loc for _, loc, _ in got] == list(range(n))  # rows, 0-based


def test_folder_of_shards_in_path_order(tmp_path: Path) -> None:
    lines = _lines(6)
    (tmp_path / "shards" / "b").mkdir(parents=True)
    (tmp_path / "shards" / "b" / "part-1.jsonl").write_bytes(b"\n".join(lines[3:]))
    (tmp_path / "shards" / "a.jsonl").write_bytes(b"\n".join(lines[:3]))
    (tmp_path / "shards" / "dataset_info.json").write_text("{}")  # metadata next to shards: ignored
    (tmp_path / "shards" / ".hidden.jsonl").write_text("garbage")
    got = _read_all([str(tmp_path / "shards")])
    assert [r for _, _, r in got] == [json.loads(x) for x in lines]


def test_resume_positions_for_every_kind(tmp_path: Path) -> None:
    """Starting at any chunk's ``start`` (or the previous chunk's ``end``) reads exactly the rest."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = _lines(23)
    (tmp_path / "a.jsonl").write_bytes(b"\n".join(lines[:10]) + b"\n\n")  # a trailing blank line
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(b"\n".join(lines[10:16])))
    pq.write_table(pa.Table.from_pylist([json.loads(x) for x in lines[16:]]), tmp_path / "c.parquet",
                   row_group_size=2)
    paths = [str(tmp_path / n) for n in ("a.jsonl", "b.jsonl.gz", "c.parquet")]
    from ocml.encoder.pipeline.workers import decode_records

    full = _read_all(paths, chunk_records=3)
    chunks = list(iter_chunks(resolve(paths), chunk_records=3))
    assert len({c.source for c in chunks}) == 3
    before = 0
    for k, ch in enumerate(chunks):
        want = full[before:]
        assert _read_all(paths, chunk_records=3, start=ch.start) == want, k
        if k:
            assert _read_all(paths, chunk_records=3, start=chunks[k - 1].end) == want, k
        before += len(decode_records(ch))
    assert _read_all(paths, chunk_records=3, start=chunks[-1].end) == []
    assert Position.from_dict(chunks[3].start.to_dict()) == chunks[3].start


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 40), chunk=st.integers(1, 9), blanks=st.lists(st.integers(0, 45), max_size=5))
def test_chunking_never_changes_records(tmp_path: Path, n: int, chunk: int, blanks: list[int]) -> None:
    lines = _lines(n)
    for b in sorted(blanks, reverse=True):
        lines.insert(min(b, len(lines)), b"   ")
    p = tmp_path / f"h-{n}-{chunk}.jsonl"
    p.write_bytes(b"\n".join(lines))
    got = _read_all([str(p)], chunk_records=chunk)
    assert [r for _, _, r in got] == [json.loads(x) for x in lines if x.strip()]
    assert [loc for _, loc, _ in got] == [i + 1 for i, x in enumerate(lines) if x.strip()]


def test_bad_lines_become_record_errors(tmp_path: Path, enc: encoder.Encoder) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_bytes(b"\n".join([_lines(1)[0], b"{\"messages\": [", b"\xff\xfe{}", b"[1, 2]",
                              json.dumps({"messages": [{"role": "robot", "content": "x"}]}).encode(), _lines(2)[1]]))
    (ch,) = iter_chunks(resolve([str(p)]))
    out = render_chunk(enc, ch, RenderSpec())
    assert out.locations.tolist() == [1, 6]
    assert [(e.location, e.code) for e in out.errors] == [
        (2, "E-INPUT-JSON"), (3, "E-INPUT-UTF8"), (4, "E-INPUT"), (5, "E-ROLE-UNKNOWN")]
    assert out.errors[3].field == "role" and out.errors[3].message_index == 0


@pytest.mark.parametrize("make, code", [
    (lambda p: None, "no such file"),
    (lambda p: p.mkdir(), "holds no"),
    (lambda p: p.write_bytes(b"\x00\x01binary\x00"), "binary"),
])
def test_unusable_inputs_fail_before_work(tmp_path: Path, make: object, code: str) -> None:
    p = tmp_path / "in.jsonl"
    make(p)  # type: ignore[operator]
    with pytest.raises(InputError) as info:
        resolve([str(p)])
    assert info.value.code == "E-INPUT-FILE" and code in str(info.value)


def test_parquet_without_messages_column_says_so(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"mesages": [json.dumps(CHAT)]}), tmp_path / "x.parquet")
    with pytest.raises(InputError) as info:
        list(iter_chunks(resolve([str(tmp_path / "x.parquet")])))
    assert info.value.code == "E-INPUT-FIELD" and "--messages-field mesages" in (info.value.hint or "")


def test_encoder_pickles_small(enc: encoder.Encoder) -> None:
    import pickle

    e = encoder.Encoder("harmony", mask="final", cot="keep-all")
    blob = pickle.dumps(e)
    assert len(blob) < 2048  # the recipe, never the vocabulary
    back = pickle.loads(blob)
    assert back.mask == e.mask and back.cot == e.cot and back.format_name == "harmony"
    conv = {"messages": CHAT, "tools": TOOLS}
    assert np.array_equal(back.render(conv).mask, e.render(conv).mask)
