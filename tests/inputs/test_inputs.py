"""Issue 17, input shapes (``ocml.encoder.inputs``): prompt/completion (TRL's two forms), Alpaca,
plain text, preference pairs and KTO examples.  The mask invariants (registered and fallback),
typed errors, TRL's prompt extraction, the CLI.  Each shape's golden output in every format is
in the golden matrix (cases ``shape-*``, tests/formats/test_golden.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml import vocab
from ocml.encoder.inputs import ShapeOptions, detect_shape, render_pair, render_record, render_records
from ocml.encoder.inputs.preference import extract_prompt
from ocml.encoder.inputs.text import end_of_text_id

FORMATS = ["openchatml-2.2", "openchatml-2.0", "harmony", "chatml", "apertus"]
WHOLE_RUN = {"chatml", "apertus"}  # text runs encoded whole: the prompt's last token may straddle
_cache: dict[tuple, encoder.Encoder] = {}


def enc_(fmt: str, tokenizer: str | None = None, **kw) -> encoder.Encoder:
    key = (fmt, tokenizer, repr(sorted(kw.items())))
    if key not in _cache:
        _cache[key] = encoder.Encoder(fmt, tokenizer, **kw)
    return _cache[key]


# -- the mask invariants, registered and fallback ------------------------------------------------

TOKENIZERS = [None, "o200k_base"]  # the format's own (controls registered) / fallback (controls as text)


def _prompt_is_prefix(fmt: str, prompt_ids: np.ndarray, ids: np.ndarray) -> int:
    """Length of the prompt render inside the training ids (whole-run formats: all but a
    straddling last token)."""
    n = len(prompt_ids)
    if np.array_equal(ids[:n], prompt_ids):
        return n
    assert fmt in WHOLE_RUN and np.array_equal(ids[:n - 1], prompt_ids[:n - 1]), "prompt render is not a prefix"
    return n - 1


texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40)


@pytest.mark.parametrize("tok", TOKENIZERS)
@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=15, deadline=None)
@given(prompt=texts, completion=texts, system=st.one_of(st.none(), texts))
def test_conversational_prompt_completion(fmt, tok, prompt, completion, system):
    enc = enc_(fmt, tok)
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    rec = {"prompt": msgs, "completion": [{"role": "assistant", "content": completion}]}
    try:
        r = render_record(enc, rec)
    except encoder.OcmlError as exc:  # e.g. fallback mode: text that would read as a control
        with pytest.raises(encoder.OcmlError) as again:
            enc.render(msgs + rec["completion"])
        assert again.value.code == exc.code and exc.field.endswith(again.value.field)
        return
    p = render_record(enc, {"prompt": msgs, "completion": rec["completion"]}, mode="prompt")
    assert np.array_equal(p.ids, enc.render(msgs, mode="prompt").ids)  # the format's prompt render
    n = _prompt_is_prefix(fmt, p.ids, r.ids)
    assert not r.mask[:n].any()  # the prompt is never trained
    # trained = what the chat render of the same messages trains (the assistant's generated tokens)
    chat = enc.render(msgs + rec["completion"])
    assert np.array_equal(r.ids, chat.ids) and np.array_equal(r.mask, chat.mask)
    assert r.mask.any()
    full = render_record(encoder.Encoder(fmt, tok, shape_options={"completion_only_loss": False}), rec)
    assert np.array_equal(full.ids, r.ids) and full.mask.all()


@pytest.mark.parametrize("tok", TOKENIZERS)
@settings(max_examples=25, deadline=None)
@given(prompt=texts, completion=texts)
def test_standard_prompt_completion_is_plain_text(tok, prompt, completion):
    enc = enc_("openchatml-2.2", tok)
    t = enc.tokenizer
    r = render_record(enc, {"prompt": prompt, "completion": completion})
    eot = end_of_text_id(t)
    p, c = t.encode_text(prompt), t.encode_text(completion)
    assert r.ids.tolist() == p + c + [eot]  # encoded apart: no token straddles the seam
    assert r.mask.tolist() == [False] * len(p) + [True] * (len(c) + 1)
    assert render_record(enc, {"prompt": prompt, "completion": completion}, mode="prompt").ids.tolist() == p


@pytest.mark.parametrize("tok", TOKENIZERS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_text_every_token_trained(fmt, tok):
    enc = enc_(fmt, tok)
    text = "Plain <|start|><|im_start|><s> text, 東京, \U0001f600.\n"
    r = render_record(enc, {"text": text})
    assert r.ids.tolist() == enc.tokenizer.encode_text(text) + [end_of_text_id(enc.tokenizer)]
    assert r.mask.all()
    assert enc.tokenizer.decode(r.ids[:-1].tolist()) == text  # control spellings stay text
    with pytest.raises(encoder.OcmlError) as e:
        render_record(enc, {"text": text}, mode="prompt")
    assert e.value.code == "E-USAGE"


@pytest.mark.parametrize("fmt", FORMATS)
def test_alpaca_is_the_chat_turns(fmt):
    enc = enc_(fmt)
    rec = {"instruction": "Sum these.", "input": "1 2", "output": "3", "system": "Be exact.", "id": 7}
    chat = [{"role": "system", "content": "Be exact."}, {"role": "user", "content": "Sum these.\n1 2"},
            {"role": "assistant", "content": "3"}]
    a, b = render_record(enc, rec), enc.render(chat)
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.mask, b.mask)
    no_input = render_record(enc, {"instruction": "Sum.", "input": "", "output": "3"})
    assert np.array_equal(no_input.ids, enc.render([{"role": "user", "content": "Sum."},
                                                    {"role": "assistant", "content": "3"}]).ids)
    hist = render_record(enc, {**rec, "history": [["Sum 1 1.", "2"]]})
    want = enc.render(chat[:1] + [{"role": "user", "content": "Sum 1 1."}, {"role": "assistant", "content": "2"}]
                      + chat[1:])
    assert np.array_equal(hist.ids, want.ids) and np.array_equal(hist.mask, want.mask)
    renamed = encoder.Encoder(fmt, shape_options={"fields": ["instruction=q", "output=a"]})
    assert np.array_equal(render_record(renamed, {"q": "Sum these.", "input": "1 2", "a": "3", "system": "Be exact."}).ids,
                          a.ids)


@pytest.mark.parametrize("tok", TOKENIZERS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_preference_pair_columns(fmt, tok):
    enc = enc_(fmt, tok)
    user = [{"role": "user", "content": "What colour is the sky?"}]
    ch, rj = [{"role": "assistant", "content": "Blue."}], [{"role": "assistant", "content": "Green, at dusk."}]
    explicit = render_pair(enc, {"prompt": user, "chosen": ch, "rejected": rj})
    implicit = render_pair(enc, {"chosen": user + ch, "rejected": user + rj})
    for a, b in zip(explicit.to_dict().values(), implicit.to_dict().values()):
        assert a == b
    p = enc.render(user, mode="prompt").ids
    n = _prompt_is_prefix(fmt, p, np.concatenate([explicit.prompt_ids, explicit.chosen_ids]))
    assert np.array_equal(explicit.prompt_ids, p[:n])  # the shared prompt: rendered once
    for side, ids, mask in ((ch, explicit.chosen_ids, explicit.chosen_mask),
                            (rj, explicit.rejected_ids, explicit.rejected_mask)):
        full = enc.render(user + side)
        assert np.array_equal(np.concatenate([explicit.prompt_ids, ids]), full.ids)
        assert np.array_equal(mask, full.mask[len(explicit.prompt_ids):])
        assert not full.mask[:len(explicit.prompt_ids)].any()


def test_standard_pair_and_kto():
    enc = enc_("openchatml-2.2")
    t = enc.tokenizer
    eot = end_of_text_id(t)
    r = render_pair(enc, {"chosen": "The sky is blue.", "rejected": "The sky is green."})
    # TRL's extract_prompt: the shared prefix, the space before the divergence goes to the completions
    assert t.decode(r.prompt_ids.tolist()) == "The sky is"
    assert r.chosen_ids.tolist() == t.encode_text(" blue.") + [eot] and r.chosen_mask.all()
    k = render_pair(enc, {"prompt": "Q", "completion": " A", "label": True})
    assert k.label is True and k.chosen_ids.tolist() == t.encode_text(" A") + [eot]


@settings(max_examples=60, deadline=None)
@given(a=st.text(alphabet="ab ", min_size=1, max_size=8), b=st.text(alphabet="ab ", min_size=1, max_size=8))
def test_extract_prompt_matches_trl(a, b):
    from trl.data_utils import extract_prompt as trl_extract

    want = trl_extract({"chosen": a, "rejected": b})
    try:
        got = extract_prompt(a, b)
    except encoder.OcmlError as exc:
        # ocml refuses what TRL would train on: no shared prompt, or one side a prefix of the other
        # (TRL's loop then ends without a break and cuts one character early); when the first
        # characters differ TRL's space rule indexes chosen[-1] and returns a wrapped-around prompt
        assert exc.code == "E-SHAPE-PAIR-PROMPT"
        assert want["prompt"] == "" or a[0] != b[0] or a.startswith(b) or b.startswith(a)
        return
    assert got == (want["prompt"], want["chosen"], want["rejected"])


def test_extract_prompt_messages_matches_trl():
    from trl.data_utils import maybe_extract_prompt

    u = {"role": "user", "content": "Hi"}
    rec = {"chosen": [u, {"role": "assistant", "content": "A"}], "rejected": [u, {"role": "assistant", "content": "B"}]}
    want = maybe_extract_prompt(rec)
    assert extract_prompt(rec["chosen"], rec["rejected"]) == (want["prompt"], want["chosen"], want["rejected"])
    # maybe_extract_prompt ignores a string prompt next to conversational sides: so does ocml
    enc = enc_("openchatml-2.2")
    assert render_pair(enc, {**rec, "prompt": "Hi"}).to_dict() == render_pair(enc, rec).to_dict()


# -- detection and typed errors ---------------------------------------------------------------------

def test_detection():
    assert detect_shape({"messages": []}).value == "chat"
    assert detect_shape([{"role": "user"}]).value == "chat"
    assert detect_shape({"prompt": "a", "completion": "b"}).value == "prompt-completion"
    assert detect_shape({"prompt": "a", "completion": "b", "label": True}).value == "kto"
    assert detect_shape({"prompt": "a", "chosen": "b", "rejected": "c"}).value == "preference"
    assert detect_shape({"instruction": "a", "output": "b"}).value == "alpaca"
    assert detect_shape({"text": "a", "messages": None}).value == "text"  # Arrow nulls are absent
    opts = ShapeOptions.parse({"fields": {"text": "content"}})
    assert detect_shape({"content": "x"}, opts).value == "text"


BAD = [
    ({"prompt": "only a prompt"}, "E-SHAPE-MISSING", "completion"),
    ({"prompt": "p", "completion": None}, "E-SHAPE-MISSING", "completion"),
    ({"completion": "c"}, "E-SHAPE-MISSING", "prompt"),
    ({"prompt": "p", "completion": [{"role": "assistant", "content": "c"}]}, "E-SHAPE-MIXED", "completion"),
    ({"prompt": [{"role": "user", "content": "p"}], "completion": [{"role": "user", "content": "c"}]},
     "E-SHAPE-COMPLETION", "completion[0].role"),
    ({"prompt": [], "completion": [{"role": "assistant", "content": "c"}]}, "E-SHAPE-EMPTY", "prompt"),
    ({"prompt": 3, "completion": "c"}, "E-SHAPE-TYPE", "prompt"),
    ({"prompt": ["x"], "completion": ["y"]}, "E-SHAPE-TYPE", "prompt[0]"),
    ({"instruction": "do it", "input": "x"}, "E-SHAPE-MISSING", "output"),
    ({"output": "done"}, "E-SHAPE-MISSING", "instruction"),
    ({"instruction": "do", "output": 5}, "E-SHAPE-TYPE", "output"),
    ({"text": ""}, "E-SHAPE-EMPTY", "text"),
    ({"instruction": "i", "output": "o", "history": [["only one"]]}, "E-SHAPE-TYPE", "history[0]"),
    ({"text": ["a"]}, "E-SHAPE-TYPE", "text"),
    ({"id": 1, "body": "x"}, "E-SHAPE-UNKNOWN", "messages"),
    ({"prompt": [{"role": "user", "content": "p"}], "completion": [{"role": "assistant", "content": "c",
                                                                   "bogus_key": 1}]},
     "E-INPUT", "completion[0].bogus_key"),
]


@pytest.mark.parametrize("record,code,field", BAD, ids=[f"{c}-{i}" for i, (_, c, _) in enumerate(BAD)])
def test_malformed_records(record, code, field):
    with pytest.raises(encoder.OcmlError) as e:
        render_record(enc_("openchatml-2.2"), record)
    assert (e.value.code, e.value.field) == (code, field)


PAIR_BAD = [
    ({"prompt": "p", "chosen": "a"}, "E-SHAPE-MISSING", "rejected"),
    ({"chosen": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "x"}],
      "rejected": [{"role": "user", "content": "b"}, {"role": "assistant", "content": "y"}]}, "E-SHAPE-PAIR-PROMPT",
     "rejected"),
    ({"chosen": "same", "rejected": "same", "prompt": "p"}, "E-SHAPE-PAIR-SAME", "chosen"),
    ({"chosen": "abc", "rejected": [{"role": "assistant", "content": "x"}]}, "E-SHAPE-MIXED", "rejected"),
    ({"chosen": [{"role": "user", "content": "q"}], "rejected": [{"role": "user", "content": "q"},
                                                               {"role": "assistant", "content": "x"}]},
     "E-SHAPE-PAIR-PROMPT", "chosen"),
    ({"prompt": "p", "completion": "c", "label": "yes"}, "E-SHAPE-TYPE", "label"),
    ({"prompt": "p", "completion": "c"}, "E-SHAPE-NOT-PAIR", None),
]


@pytest.mark.parametrize("record,code,field", PAIR_BAD, ids=[f"{c}-{i}" for i, (_, c, _) in enumerate(PAIR_BAD)])
def test_malformed_pairs(record, code, field):
    with pytest.raises(encoder.OcmlError) as e:
        render_pair(enc_("openchatml-2.2"), record)
    assert (e.value.code, e.value.field) == (code, field)


def test_usage_errors():
    enc = enc_("openchatml-2.2")
    with pytest.raises(encoder.OcmlError) as e:
        render_record(enc, {"prompt": "p", "chosen": "a", "rejected": "b"})
    assert e.value.code == "E-SHAPE-PAIR"
    with pytest.raises(encoder.OcmlError):
        encoder.Encoder("openchatml-2.2", shape="tabular")
    with pytest.raises(encoder.OcmlError) as e:
        encoder.Encoder("openchatml-2.2", shape_options={"fields": ["outptu=x"]})
    assert "output" in str(e.value)
    with pytest.raises(encoder.OcmlError):
        encoder.Encoder("openchatml-2.2", shape_options={"string_prompt": "jinja"})
    forced = encoder.Encoder("openchatml-2.2", shape="text")
    with pytest.raises(encoder.OcmlError) as e:
        render_record(forced, {"messages": [{"role": "user", "content": "x"}]})
    assert (e.value.code, e.value.field) == ("E-SHAPE-MISSING", "text")
    batch = render_records(enc, [{"text": "a"}, {"prompt": "x"}, [{"role": "user", "content": "u"}]], errors="collect")
    assert [i for i, _ in batch.errors] == [1] and batch.results[0] is not None and batch.results[2] is not None


RECORDS = [  # (record, its shape, the field named)
    ({"prompt": [{"role": "user", "content": "Q"}], "completion": [{"role": "assistant", "content": "A"}]},
     "prompt-completion", "prompt"),
    ({"prompt": "Q", "completion": "A"}, "prompt-completion", "prompt"),
    ({"instruction": "Add.", "input": "2 2", "output": "4"}, "alpaca", "instruction"),
    ({"text": "plain"}, "text", "text"),
    ({"prompt": "p", "chosen": "a", "rejected": "b"}, "preference", "chosen"),
    ({"prompt": "p", "completion": "c", "label": True}, "kto", "prompt"),
]


@pytest.mark.parametrize("record,shape,field", RECORDS, ids=[s for _, s, _ in RECORDS])
def test_render_takes_conversations_and_names_the_record_api(record, shape, field):
    """Encoder.render reads conversations only: a dataset record (or its example) is E-INPUT-RECORD
    naming the input layer's call, whatever the encoder's shape; render_record reads it."""
    from ocml.encoder.inputs import read_record
    from ocml.encoder.inputs.shapes import RecordShape

    for enc in (enc_("openchatml-2.2"), encoder.Encoder("openchatml-2.2", shape="chat"),
                encoder.Encoder("openchatml-2.2", shape=shape)):
        with pytest.raises(encoder.OcmlError) as e:
            enc.render(record)
        assert (e.value.code, e.value.field) == ("E-INPUT-RECORD", field) and shape in e.value.message
        call = "render_pair" if shape in ("preference", "kto") else "render_record"
        assert f"ocml.encoder.inputs.{call}(enc, record)" in e.value.hint
        batch = enc.render_batch([record, [{"role": "user", "content": "u"}]], errors="collect")
        assert [(i, x.code) for i, x in batch.errors] == [(0, "E-INPUT-RECORD")] and batch.results[1] is not None
    example = read_record(record, RecordShape(shape))
    if not isinstance(example, dict):  # Alpaca reads as a conversation dict (rendered as one)
        with pytest.raises(encoder.OcmlError) as e:
            enc_("openchatml-2.2").render(example)
        assert e.value.code == "E-INPUT-RECORD"
    if shape not in ("preference", "kto"):
        r = render_record(enc_("openchatml-2.2"), record)
        assert r.mask.any()
        assert np.array_equal(render_record(enc_("openchatml-2.2"), example).ids, r.ids)


def test_render_still_reads_every_conversation_form():
    """Messages, a dict with messages, a Chat Completions body (request fields ignored), a
    ``Conversation``: rendered by render, the same ids as render_record gives them."""
    enc = enc_("openchatml-2.2")
    msgs = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]
    want = enc.render(msgs).ids
    for conv in ({"messages": msgs}, {"model": "m", "temperature": 0.2, "max_tokens": 9, "messages": msgs},
                 encoder.to_conversation(msgs)):
        assert np.array_equal(enc.render(conv).ids, want)
        assert np.array_equal(render_record(enc, conv).ids, want)
    with pytest.raises(encoder.OcmlError) as e:  # a dict of no shape: the adapters say what is missing
        enc.render({"foo": 1})
    assert e.value.field == "messages" and e.value.code != "E-INPUT-RECORD"


def test_encoder_pickles_with_shape_options():
    import pickle

    enc = encoder.Encoder("openchatml-2.2", shape="alpaca", shape_options={"fields": {"output": "answer"}})
    back = pickle.loads(pickle.dumps(enc))
    rec = {"instruction": "i", "answer": "a"}
    assert back.shape == "alpaca" and np.array_equal(render_record(back, rec).ids, render_record(enc, rec).ids)


# -- the CLI on a small file of each shape ---------------------------------------------------------

def _ocml(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    if args[:1] == ("pack",) and "--max-bad-fraction" not in args:
        # These few-record files hold a malformed record of each shape on purpose (its typed error is
        # asserted); the run-level gate on bad records has its own tests (test_pack_defaults.py).
        args = (*args, "--max-bad-fraction", "1")
    return subprocess.run([sys.executable, "-m", "ocml.encoder.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin"})


def _write(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


SFT_FILES = {
    "prompt-completion": [{"prompt": "The sky is", "completion": " blue."},
                          {"prompt": [{"role": "user", "content": "Sky?"}],
                           "completion": [{"role": "assistant", "content": "Blue."}]},
                          {"prompt": "no completion"}],
    "alpaca": [{"instruction": "Add.", "input": "2 2", "output": "4"}, {"instruction": "No output"}],
    "text": [{"text": "First document."}, {"text": "Second document, a bit longer than the first one."},
             {"text": 3}],
}


@pytest.mark.parametrize("shape", list(SFT_FILES))
def test_cli_pack_sft_shapes(tmp_path, shape):
    import pyarrow.parquet as pq

    recs = SFT_FILES[shape]
    src = _write(tmp_path / f"{shape}.jsonl", recs)
    enc = encoder.Encoder("openchatml-2.2")
    good = [r for r in recs if r is not recs[-1]]
    for forced in ("auto", shape):
        out = tmp_path / f"out-{forced}"
        res = _ocml("pack", str(src), "--no-pack", "--out", str(out), "--workers", "1", "--shape", forced,
                    "--json", cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        report = json.loads(res.stdout)
        assert report["counts"]["documents"] == len(good) and report["counts"]["bad_records"] == 1
        rows = pq.read_table(out / "data" / "train-00000.parquet").to_pylist()
        for row, rec in zip(rows, good):
            r = render_record(enc, rec)
            assert row["input_ids"] == r.ids.tolist() and row["labels"] == r.labels.tolist()
        err = json.loads((out / "errors.jsonl").read_text().splitlines()[0])
        assert err["line"] == len(recs) and err["code"].startswith("E-SHAPE")
    # a run read as text splits; a mixed (auto) run packs with the conversations' policy and splits
    # only its text documents, in the worker (encoder.inputs.overlong_text)
    forced = ("--shape", "text") if shape == "text" else ()
    packed = _ocml("pack", str(src), "--seq-len", "64", "--out", str(tmp_path / "packed"), "--workers", "1",
                   *forced, "--json", cwd=tmp_path)
    assert packed.returncode == 0, packed.stderr
    assert json.loads(packed.stdout)["pack"]["overlong"] == ("split" if shape == "text" else
                                                            encoder.inputs.OVERLONG_DEFAULT[
                                                                encoder.inputs.RecordShape.CHAT])


def test_cli_text_parquet_input_and_overlong_default(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    words = " ".join(f"word{i}" for i in range(300))
    pq.write_table(pa.table({"text": [words, "short"], "id": [1, 2]}), tmp_path / "t.parquet")
    res = _ocml("pack", "t.parquet", "--shape", "text", "--seq-len", "128", "--out", "o", "--workers", "1", "--json",
                cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["pack"]["overlong"] == "split" and rep["pack"]["split"] == 1 and rep["pack"]["dropped_tokens"] == 0
    enc = encoder.Encoder("openchatml-2.2")
    assert rep["counts"]["tokens"] == sum(len(render_record(enc, {"text": t})) for t in (words, "short"))


def test_cli_pack_preference(tmp_path):
    import pyarrow.parquet as pq

    u = [{"role": "user", "content": "Sky?"}]
    recs = [{"prompt": u, "chosen": [{"role": "assistant", "content": "Blue."}],
             "rejected": [{"role": "assistant", "content": "Green."}]},
            {"chosen": u + [{"role": "assistant", "content": "Blue!"}], "rejected": u + [{"role": "assistant",
                                                                                          "content": "Red."}]},
            {"chosen": [{"role": "user", "content": "A"}, {"role": "assistant", "content": "x"}],
             "rejected": [{"role": "user", "content": "B"}, {"role": "assistant", "content": "y"}]},
            {"prompt": "The sky is", "chosen": " blue.", "rejected": " green."}]
    src = _write(tmp_path / "pref.jsonl", recs)
    res = _ocml("pack", str(src), "--shape", "preference", "--no-pack", "--out", "o", "--workers", "1", "--json",
                cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    table = pq.read_table(tmp_path / "o" / "data" / "train-00000.parquet")
    assert table.schema.names == ["prompt_ids", "chosen_ids", "rejected_ids", "chosen_mask", "rejected_mask"]
    assert str(table.schema.field("prompt_ids").type) == "list<element: int64>"  # as TRL's tokenize_fn stores them
    rows = table.to_pylist()
    enc = encoder.Encoder("openchatml-2.2")
    want = [render_pair(enc, r).to_dict() for i, r in enumerate(recs) if i != 2]
    assert rows == want
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert manifest["columns"] == table.schema.names
    assert json.loads((tmp_path / "o" / "errors.jsonl").read_text())["code"] == "E-SHAPE-PAIR-PROMPT"
    # TRL's DPO collator reads the rows as they are (no re-tokenizing): prompt + chosen is the whole sequence
    orpo = _ocml("pack", str(src), "--shape", "preference", "--no-pack", "--pair-columns", "orpo", "--out", "o2",
                 "--workers", "1", cwd=tmp_path)
    assert orpo.returncode == 0, orpo.stderr
    o = pq.read_table(tmp_path / "o2" / "data" / "train-00000.parquet").to_pylist()[0]
    assert o["chosen_input_ids"] == want[0]["prompt_ids"] + want[0]["chosen_ids"]
    assert o["chosen_labels"] == [-100] * len(want[0]["prompt_ids"]) + want[0]["chosen_ids"]
    assert o["prompt_attention_mask"] == [1] * len(want[0]["prompt_ids"])


def test_cli_preference_usage_errors(tmp_path):
    src = _write(tmp_path / "p.jsonl", [{"prompt": "a", "chosen": "b", "rejected": "c"}])
    for extra, field in ((["--seq-len", "64"], "--no-pack"), (["--no-pack", "--output", "npy"], "--output"),
                         (["--no-pack", "--no-completion-only-loss"], "--no-completion-only-loss")):
        res = _ocml("pack", str(src), "--shape", "preference", "--out", "o", *extra, cwd=tmp_path)
        assert res.returncode == 2 and field in res.stderr, res.stderr
    res = _ocml("pack", str(src), "--no-pack", "--out", "o3", "--field", "bogus", cwd=tmp_path)
    assert res.returncode == 2 and "KEY=COLUMN" in res.stderr
    # a pair met in an SFT run is a bad record saying how to pack it (beside a conversation: a run
    # that renders nothing fails, E-NOTHING-RENDERED)
    mixed = _write(tmp_path / "m.jsonl", [{"prompt": "a", "chosen": "b", "rejected": "c"},
                                          {"messages": [{"role": "user", "content": "a"},
                                                        {"role": "assistant", "content": "b"}]}])
    res = _ocml("pack", str(mixed), "--no-pack", "--out", "o4", "--workers", "1", "--json",
                "--max-bad-fraction", "1", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "--shape preference" in (tmp_path / "o4" / "errors.jsonl").read_text()
    res = _ocml("pack", str(src), "--no-pack", "--out", "o5", "--workers", "1", "--max-bad-fraction", "1", cwd=tmp_path)
    assert res.returncode == 1 and "E-NOTHING-RENDERED" in res.stderr


def test_cli_kto(tmp_path):
    import pyarrow.parquet as pq

    src = _write(tmp_path / "k.jsonl", [{"prompt": [{"role": "user", "content": "Sky?"}],
                                         "completion": [{"role": "assistant", "content": "Green."}], "label": False}])
    res = _ocml("pack", str(src), "--shape", "kto", "--no-pack", "--out", "o", "--workers", "1", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    row = pq.read_table(tmp_path / "o" / "data" / "train-00000.parquet").to_pylist()[0]
    assert set(row) == {"prompt_ids", "completion_ids", "label", "completion_mask"} and row["label"] is False


def test_cli_render_reads_shapes(tmp_path):
    src = _write(tmp_path / "a.jsonl", [{"instruction": "Add.", "input": "2 2", "output": "4"}])
    res = _ocml("render", str(src), "--line", "1", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    want = render_record(encoder.Encoder("openchatml-2.2"), {"instruction": "Add.", "input": "2 2", "output": "4"})
    assert json.loads(res.stdout)["ids"] == want.ids.tolist()


def test_apertus_tokenizer_has_end_of_text():
    for fmt in FORMATS:
        assert end_of_text_id(enc_(fmt).tokenizer) is not None
    assert end_of_text_id(vocab.load("cl100k_base")) == 100257


def test_forced_record_shape_keeps_the_message_reading():
    """A record shape reads its messages as 'auto': the chat template it exports is the default one."""
    forced = encoder.Encoder("openchatml-2.2", shape="alpaca")
    assert forced.message_shape == "auto"
    assert forced.chat_template() == encoder.Encoder("openchatml-2.2").chat_template()


@pytest.mark.parametrize("tok", TOKENIZERS)
@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=12, deadline=None)
@given(prompt=texts, chosen=texts, rejected=texts)
def test_pair_rows_are_the_training_renders(fmt, tok, prompt, chosen, rejected):
    """prompt_ids + each side == that side's training render; the prompt is shared and never
    trained; where a whole-run format merges the seam, the cut moves back (TRL's common prefix)."""
    enc = enc_(fmt, tok)
    user = [{"role": "user", "content": prompt}]
    sides = [[{"role": "assistant", "content": c}] for c in (chosen, rejected)]
    if sides[0] == sides[1]:
        return
    try:
        r = render_pair(enc, {"prompt": user, "chosen": sides[0], "rejected": sides[1]})
    except encoder.OcmlError as exc:  # e.g. fallback mode: text that would read as a control
        key, _, rest = exc.field.partition("[0].")
        side = {"prompt": [], "chosen": sides[0], "rejected": sides[1]}[key]
        with pytest.raises(encoder.OcmlError) as again:
            enc.render(user + side)
        assert (again.value.code, again.value.field) == (exc.code, rest)
        return
    p = enc.render(user, mode="prompt").ids
    assert np.array_equal(r.prompt_ids, p[:len(r.prompt_ids)]) and len(r.prompt_ids) >= len(p) - (fmt in WHOLE_RUN)
    for side, ids, mask in ((sides[0], r.chosen_ids, r.chosen_mask), (sides[1], r.rejected_ids, r.rejected_mask)):
        full = enc.render(user + side)
        assert np.array_equal(np.concatenate([r.prompt_ids, ids]), full.ids)
        assert np.array_equal(mask, full.mask[len(r.prompt_ids):]) and not full.mask[:len(r.prompt_ids)].any()


def test_text_in_a_mixed_run_keeps_its_split_default(tmp_path, monkeypatch):
    """With the conversations' default at truncate, an overlong text record of an auto run is
    still split (its shape's default), reported in overlong.jsonl; an explicit --overlong wins."""
    from ocml.encoder.inputs import shapes
    from ocml.encoder.pipeline.run import PackOptions, run

    monkeypatch.setitem(shapes.OVERLONG_DEFAULT, shapes.RecordShape.CHAT, "truncate")
    long_text = " ".join(f"token{i}" for i in range(200))
    recs = [[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}],
            {"text": long_text}, {"text": "short text"},
            {"prompt": [{"role": "user", "content": "Q"}], "completion": [{"role": "assistant", "content": "A"}]}]
    src = _write(tmp_path / "mixed.jsonl", recs)
    enc = encoder.Encoder("openchatml-2.2")
    n_text = len(render_record(enc, {"text": long_text}))
    assert n_text > 64
    res = run(PackOptions(inputs=(str(src),), out=tmp_path / "o", seq_len=64, workers=1, progress=False, plot=False))
    pack = res.report["pack"]
    assert pack["overlong"] == "truncate" and pack["split"] == 1 and pack["dropped_tokens"] == 0
    assert res.report["counts"]["documents"] == 4
    assert pack["tokens"] == sum(len(render_record(enc, r)) for r in recs)
    line = json.loads((tmp_path / "o" / "overlong.jsonl").read_text().splitlines()[0])
    assert (line["line"], line["action"], line["length"], line["pieces"]) == (2, "split", n_text, -(-n_text // 64))
    given = run(PackOptions(inputs=(str(src),), out=tmp_path / "o2", seq_len=64, workers=1, progress=False,
                            plot=False, overlong="truncate"))
    assert given.report["pack"]["split"] == 0 and given.report["pack"]["dropped_tokens"] >= n_text


def test_parquet_message_columns(tmp_path):
    """Arrow rows: message lists as list<struct> (every key, null where absent) or as JSON text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    prompt = [{"role": "user", "content": "Sky?", "tool_calls": None}]
    completion = [{"role": "assistant", "content": "Blue.", "tool_calls": None}]
    pq.write_table(pa.table({"prompt": [prompt, prompt], "completion": [completion, completion]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"prompt": [json.dumps(prompt)], "chosen": [json.dumps(completion)],
                             "rejected": [json.dumps([{"role": "assistant", "content": "Red."}])]}),
                   tmp_path / "p.parquet")
    res = _ocml("pack", "a.parquet", "--no-pack", "--out", "o", "--workers", "1", "--json", cwd=tmp_path)
    assert res.returncode == 0 and json.loads(res.stdout)["counts"]["documents"] == 2, res.stderr
    enc = encoder.Encoder("openchatml-2.2")
    row = pq.read_table(tmp_path / "o" / "data" / "train-00000.parquet").to_pylist()[0]
    assert row["input_ids"] == render_record(enc, {"prompt": prompt, "completion": completion}).ids.tolist()
    res = _ocml("pack", "p.parquet", "--shape", "preference", "--no-pack", "--out", "o2", "--workers", "1",
                cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    row = pq.read_table(tmp_path / "o2" / "data" / "train-00000.parquet").to_pylist()[0]
    assert row["chosen_ids"] == render_pair(enc, {"prompt": prompt, "chosen": completion,
                                                  "rejected": [{"role": "assistant", "content": "Red."}]}
                                            ).chosen_ids.tolist()
