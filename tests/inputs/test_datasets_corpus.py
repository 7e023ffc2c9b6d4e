"""Issue 27: records shaped as the popular fine-tuning datasets publish them
(``tests/fixtures/datasets``) render as their model expects or get their typed error, in
Harmony and ChatML, registered and fallback, JSON Lines and Parquet alike.

Each record's meaning is written by hand in ``expected.json`` (an OpenAI / HF conversation);
the record must render exactly as that conversation does, and the conversation is checked
with the consumers' own code: openai-harmony's renderer (Harmony) and Qwen2.5's chat template
from the trl wheel (ChatML).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ocml import encoder
from ocml.encoder.errors import OcmlError
from ocml.encoder.inputs import render_record
from ocml.encoder.pipeline.records import conversation_from_record
from ocml.encoder.pipeline.run import PackOptions, run

from support.paths import FIXTURES

CORPUS = FIXTURES / "datasets"
EXPECTED: dict[str, Any] = json.loads((CORPUS / "expected.json").read_text("utf-8"))
FILES = sorted(EXPECTED)
#: format -> tokenizers: registered (the format's default) and fallback (controls spelled as text)
MODES = [("harmony", None), ("harmony", "o200k_base"), ("chatml", None), ("chatml", "cl100k_base")]
_ENCODERS: dict[tuple[str, str | None], encoder.Encoder] = {}


def enc(fmt: str, tok: str | None) -> encoder.Encoder:
    if (fmt, tok) not in _ENCODERS:
        _ENCODERS[fmt, tok] = encoder.Encoder(fmt, tok)
    return _ENCODERS[fmt, tok]


def records(name: str) -> list[Any]:
    return [json.loads(line) for line in (CORPUS / name).read_text("utf-8").splitlines() if line.strip()]


def expected_conversation(want: dict[str, Any]) -> Any:
    if "record" in want:
        return want["record"]
    return {"messages": want["messages"], **({"tools": want["tools"]} if want.get("tools") else {})}


def outcome(e: encoder.Encoder, conv: Any) -> tuple[list[int], list[bool]] | str:
    try:
        r = render_record(e, conv)  # a record of any shape, as ocml pack reads it
    except OcmlError as exc:
        return exc.code
    return r.ids.tolist(), r.mask.tolist()


def test_corpus_is_complete():
    for name in FILES:
        assert len(records(name)) == len(EXPECTED[name]["records"]), name
    assert sorted(p.name for p in CORPUS.glob("*.jsonl")) == FILES


@pytest.mark.parametrize("fmt,tok", MODES)
@pytest.mark.parametrize("name", FILES)
def test_each_record_renders_as_its_meaning(name, fmt, tok):
    e = enc(fmt, tok)
    ignored: Counter[str] = Counter()
    for line, (rec, want) in enumerate(zip(records(name), EXPECTED[name]["records"]), 1):
        try:
            got = outcome(e, conversation_from_record(rec, ignored=ignored))
        except OcmlError as exc:
            got = exc.code
        error = want.get("error") or want.get("error_in", {}).get(fmt)
        if error:
            assert got == error, f"{name}:{line}"
        else:
            assert got == outcome(e, expected_conversation(want)), f"{name}:{line}"
            assert not isinstance(got, str), f"{name}:{line}: {got}"
    assert dict(ignored) == EXPECTED[name]["ignored"]


def _conversations() -> list[tuple[str, int, dict[str, Any]]]:
    return [(name, k + 1, want) for name in FILES for k, want in enumerate(EXPECTED[name]["records"])
            if "messages" in want]


def to_harmony(oh: Any, want: dict[str, Any]) -> Any:
    """The conversation as openai-harmony objects: the gpt-oss template's mapping of chat data."""
    msgs = want["messages"]
    out = [oh.Message.from_role_and_content(oh.Role.SYSTEM, oh.SystemContent.new())]
    dev = None
    if msgs and msgs[0]["role"] == "system":
        dev = oh.DeveloperContent.new().with_instructions(msgs[0]["content"])
        msgs = msgs[1:]
    if want.get("tools"):
        tools = [oh.ToolDescription.new(t["name"], t.get("description", ""), parameters=t.get("parameters"))
                 for t in want["tools"]]
        dev = (dev or oh.DeveloperContent.new()).with_function_tools(tools)
    if dev is not None:
        out.append(oh.Message.from_role_and_content(oh.Role.DEVELOPER, dev))
    pending: list[str] = []
    for m in msgs:
        if m["role"] == "user":
            out.append(oh.Message.from_role_and_content(oh.Role.USER, m["content"]))
        elif m["role"] == "tool":
            author = oh.Author.new(oh.Role.TOOL, "functions." + pending.pop(0))
            out.append(oh.Message.from_author_and_content(author, m["content"]).with_channel("commentary")
                       .with_recipient("assistant"))
        else:
            if m.get("thinking"):
                out.append(oh.Message.from_role_and_content(oh.Role.ASSISTANT, m["thinking"]).with_channel("analysis"))
            for c in m.get("tool_calls") or []:
                fn = c["function"]
                pending.append(fn["name"])
                out.append(oh.Message.from_role_and_content(oh.Role.ASSISTANT, fn["arguments"])
                           .with_channel("commentary").with_recipient("functions." + fn["name"])
                           .with_content_type("<|constrain|>json"))
            if m.get("content"):
                out.append(oh.Message.from_role_and_content(oh.Role.ASSISTANT, m["content"]).with_channel("final"))
    return oh.Conversation.from_messages(out)


@pytest.mark.parametrize("name,line,want", _conversations(), ids=lambda v: v if isinstance(v, (str, int)) else "")
def test_harmony_ids_are_openai_harmonys(harmony, name, line, want):
    oh = pytest.importorskip("openai_harmony")
    rec = records(name)[line - 1]
    got = render_record(enc("harmony", None), conversation_from_record(rec)).ids.tolist()
    # the last turn's analysis is trained (ocml's default cot, the gpt-oss cookbook's fine-tuning)
    keep = oh.RenderConversationConfig(auto_drop_analysis=False)
    assert got == harmony.render_conversation_for_training(to_harmony(oh, want), keep), f"{name}:{line}"
    assert harmony.decode(got).endswith("<|return|>")  # the answer: final channel, then <|return|>


@pytest.mark.parametrize("name,line,want", [c for c in _conversations() if not any(
    m.get("thinking") for m in c[2]["messages"])], ids=lambda v: v if isinstance(v, (str, int)) else "")
@pytest.mark.needs_trl
def test_chatml_text_is_qwen25_templates(name, line, want):
    trl = pytest.importorskip("trl")
    from transformers.utils.chat_template_utils import render_jinja_template

    template = (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text("utf-8")
    msgs = [{**m, "tool_calls": [{**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
                                 for c in m["tool_calls"]]} if m.get("tool_calls") else m for m in want["messages"]]
    tools = [{"type": "function", "function": t} for t in want.get("tools") or []] or None
    text, _ = render_jinja_template([msgs], tools=tools, chat_template=template)
    rec = records(name)[line - 1]
    from ocml.encoder.formats.chatml import QWEN_SYSTEM

    for tok in (None, "cl100k_base"):
        e = encoder.Encoder("chatml", tok, default_system=QWEN_SYSTEM)  # the template's own default system
        assert e.tokenizer.decode(render_record(e, conversation_from_record(rec)).ids.tolist()) == text[0], f"{name}:{line}"
    if any(m["role"] == "tool" for m in want["messages"]):
        assert text[0].count("<tool_response>") == sum(m["role"] == "tool" for m in want["messages"])


def _parquet(src: Path, dst: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = records(src.name)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows]), dst)


@pytest.mark.parametrize("name", FILES)
def test_jsonl_and_parquet_give_the_same_verdict(tmp_path, name):
    """The same records as JSON Lines and as Parquet: identical rows, errors and ignored
    columns in ``ocml pack`` (the one column rule), and the report's counts add up."""
    _parquet(CORPUS / name, tmp_path / "in.parquet")
    out = {}
    for kind, path in (("jsonl", CORPUS / name), ("parquet", tmp_path / "in.parquet")):
        try:
            res = run(PackOptions(inputs=(str(path),), out=tmp_path / kind, format="harmony", pack=False,
                                  workers=1, plot=False, max_bad_fraction=1.0))
        except OcmlError as exc:  # every record bad: the run fails (nothing rendered)
            assert exc.code == "E-NOTHING-RENDERED"
            assert all("error" in w for w in EXPECTED[name]["records"])
            out[kind] = None
            continue
        import pyarrow.parquet as pq

        rows = pq.read_table(sorted((tmp_path / kind / "data").glob("*.parquet"))).to_pydict() \
            if res.report["counts"]["documents"] else {}
        errors = [json.loads(x) for x in (tmp_path / kind / "errors.jsonl").read_text().splitlines()]
        c = res.report["counts"]
        assert c["records"] == c["bad_records"] + c["documents"] + c["untrained"]
        out[kind] = (rows.get("input_ids"), rows.get("labels"), rows.get("record"),
                     [(e["code"], e["line"] - 1 if "line" in e else e["row"]) for e in errors],
                     res.report["columns"]["ignored"])
    assert out["jsonl"] == out["parquet"]
    if out["jsonl"] is not None:
        want_errors = [(w["error"], k) for k, w in enumerate(EXPECTED[name]["records"]) if "error" in w]
        assert sorted(out["jsonl"][3], key=lambda e: e[1]) == want_errors
        assert out["jsonl"][4] == {k: v for k, v in EXPECTED[name]["ignored"].items()}


def test_misspelled_option_column_is_refused_with_the_suggestion():
    with pytest.raises(OcmlError) as info:
        conversation_from_record({"messages": [{"role": "user", "content": "x"}], "reasoning_efort": "high"})
    assert info.value.code == "E-INPUT-OPTION" and "reasoning_effort" in (info.value.hint or "")
    opts = {"ignore_columns": ["reasoning_efort"]}
    assert "reasoning_efort" not in conversation_from_record(
        {"messages": [{"role": "user", "content": "x"}], "reasoning_efort": "high"}, shape_options=opts)


def test_options_mapped_from_columns_and_extra_columns_by_flag():
    e = enc("harmony", None)
    rec = {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}],
           "effort": "high", "system_prompt": "Be brief.", "category": "c"}
    conv = conversation_from_record(rec, shape_options={"fields": {"reasoning_effort": "effort",
                                                                   "system": "system_prompt"}})
    text = e.tokenizer.decode(e.render(conv).ids.tolist())
    assert "Reasoning: high" in text and "# Instructions\n\nBe brief." in text
    with pytest.raises(OcmlError) as info:
        conversation_from_record(rec, shape_options={"extra_columns": "error", "fields": {"reasoning_effort": "effort"}})
    assert info.value.code == "E-INPUT-COLUMN" and info.value.field in ("system_prompt", "category")
    ok = conversation_from_record(rec, shape_options={"extra_columns": "error", "ignore_columns": ["system_prompt", "category"],
                                                      "fields": {"reasoning_effort": "effort"}})
    assert ok["reasoning_effort"] == "high"


def test_hermes_results_are_not_wrapped_twice():
    rec = records("hermes_function_calling.jsonl")[0]
    e = enc("chatml", None)
    text = e.tokenizer.decode(render_record(e, conversation_from_record(rec)).ids.tolist())
    assert text.count("<tool_response>") == 1 and "<tool_response>\n<tool_response>" not in text
    assert "<|im_start|>user\n<tool_response>\n{\"name\": \"get_weather\"" in text


def test_null_text_names_its_column():
    with pytest.raises(OcmlError) as info:
        conversation_from_record({"text": None})
    assert info.value.code == "E-SHAPE-MISSING" and info.value.field == "text" and "null" in info.value.message


def test_preference_with_identical_sides_has_its_own_code():
    from ocml.encoder.inputs import render_pair

    side = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hi!"}]
    with pytest.raises(OcmlError) as info:
        render_pair(enc("harmony", None), {"chosen": side, "rejected": side})
    assert info.value.code == "E-SHAPE-PAIR-SAME"


def test_ultrafeedback_as_preference_pairs(tmp_path):
    """Under --shape preference the same file reads chosen / rejected (messages is then extra)."""
    res = run(PackOptions(inputs=(str(CORPUS / "ultrafeedback.jsonl"),), out=tmp_path / "o", format="harmony",
                          pack=False, workers=1, plot=False, shape="preference", max_bad_fraction=1.0))
    c = res.report["counts"]
    assert (c["records"], c["documents"], c["bad_records"]) == (2, 1, 1)
    assert res.report["errors"]["by_code"] == {"E-SHAPE-PAIR-SAME": 1}
    assert res.report["columns"]["ignored"] == {"messages": 2, "prompt_id": 2, "score_chosen": 2, "score_rejected": 2}


def test_every_record_bad_fails_even_at_max_bad_fraction_1(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"text": null}\n{"foo": 1}\n', encoding="utf-8")
    for shuffle in (False, True):
        from ocml.encoder.cli import main

        code = main(["pack", str(tmp_path / "bad.jsonl"), "--out", str(tmp_path / f"o{shuffle}"), "--format", "harmony",
                     "--seq-len", "64", "--workers", "1", "--max-bad-fraction", "1", "--no-progress",
                     "--shuffle" if shuffle else "--no-shuffle"])
        assert code == 1


@pytest.mark.parametrize("shuffle", [False, True])
def test_text_split_under_default_flags_is_reported(tmp_path, shuffle):
    words = " ".join(f"w{k}" for k in range(80))
    (tmp_path / "t.jsonl").write_text("".join(json.dumps({"text": words}) + "\n" for _ in range(2)), encoding="utf-8")
    from ocml.encoder.cli import main

    out = tmp_path / "o"
    code = main(["pack", str(tmp_path / "t.jsonl"), "--out", str(out), "--format", "harmony", "--seq-len", "64",
                 "--workers", "1", "--no-progress", "--shuffle" if shuffle else "--no-shuffle"])
    assert code == 0
    rep = json.loads((out / "report.json").read_text())
    c = rep["counts"]
    assert (c["records"], c["documents"]) == (2, 2) and c["pieces"] > 2
    assert rep["pack"]["split"] == 2
    lines = [json.loads(x) for x in (out / "overlong.jsonl").read_text().splitlines()]
    assert [(x["action"], x["record"]) for x in lines] == [("split", 0), ("split", 1)]
    if shuffle:
        src = rep["recipe"]["sources"][0]
        assert (src["documents"], src["pieces"]) == (2, c["pieces"])
        assert src["validation"] + src["deduplicated"] + src["candidates"] == src["pieces"]


def test_parquet_reads_llamafactory_system_and_refuses_a_misspelled_option(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}],
             "system": "Be brief.", "reasoning_efort": None},
            {"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}],
             "system": None, "reasoning_efort": "high"}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in.parquet")
    res = run(PackOptions(inputs=(str(tmp_path / "in.parquet"),), out=tmp_path / "o", format="harmony", pack=False,
                          workers=1, plot=False, max_bad_fraction=1.0))
    assert res.report["errors"]["by_code"] == {"E-INPUT-OPTION": 1}
    ids = pq.read_table(sorted((tmp_path / "o" / "data").glob("*.parquet"))).column("input_ids").to_pylist()[0]
    e = enc("harmony", None)
    assert "# Instructions\n\nBe brief." in e.tokenizer.decode(ids)
    assert np.asarray(ids).size > 0


@pytest.mark.parametrize("name", ["multilingual_thinking.jsonl", "hermes_function_calling.jsonl",
                                  "sharegpt_tools.jsonl", "ultrafeedback.jsonl", "alpaca.jsonl"])
def test_datasets_and_ray_stage_gives_the_same_verdict(name):
    """``OcmlRender`` (``datasets.map`` / Ray ``map_batches``) on the records as an Arrow table:
    the one column rule too (extra columns ignored, a misspelled option refused)."""
    import pyarrow as pa

    from ocml.encoder.integrations import OcmlRender

    rows = records(name)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    out = OcmlRender(enc("harmony", None))(pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows]))
    for k, (rec, want) in enumerate(zip(rows, EXPECTED[name]["records"])):
        if "error" in want:
            assert out.column("error_code")[k].as_py() == want["error"], (name, k)
        else:
            assert out.column("input_ids")[k].as_py() == enc("harmony", None).render(
                expected_conversation(want)).ids.tolist(), (name, k)


def test_inspect_source_takes_the_names_the_report_prints(tmp_path, capsys):
    from ocml.encoder.cli import EXIT_OK, main
    from ocml.encoder.pipeline.recipe_report import format_recipe_report

    src = tmp_path / "a_rather_long_source_file_name.jsonl"
    src.write_text((CORPUS / "sharegpt_tools.jsonl").read_text("utf-8"), encoding="utf-8")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"sources:\n  - path: {src}\n    name: weather-tools\n  - path: {CORPUS / 'alpaca.jsonl'}\n"
                      f"format: harmony\nseq_len: 512\nmax_bad_fraction: 1\n", encoding="utf-8")
    out = tmp_path / "o"
    assert main(["pack", "--recipe", str(recipe), "--out", str(out), "--workers", "1", "--no-progress"]) == EXIT_OK
    report = json.loads((out / "report.json").read_text())
    printed = format_recipe_report(report)
    capsys.readouterr()
    for name in ("weather-tools", str(CORPUS / "alpaca.jsonl")):
        short = name if len(name) <= 20 else "…" + name[-19:]  # as the per-source table prints it
        assert short in printed
        assert main(["inspect", str(out), "--source", short, "--count", "1"]) == EXIT_OK, capsys.readouterr().err
