"""ocml inspect / ocml render --color: packed rows and rendered conversations shown as text
(plain [[...]] markers off a terminal, ANSI colours on one), selection by row / doc / source /
record, and the option set shared with ocml pack."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from ocml import encoder
from ocml.encoder.cli import EXIT_OK, EXIT_USAGE, main
from ocml.encoder.pack import pack
from ocml.encoder.pipeline.shards import Block, parquet_table
from ocml.encoder.tokenview import TokenView, Style

CONVS = [
    {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]},
    {"messages": [{"role": "user", "content": "Say <|start|> please"},
                  {"role": "assistant", "content": "<|start|>", "reasoning_content": "odd"}]},
    {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "東京?"},
                  {"role": "assistant", "content": "Tokyo 😀\nyes"}]},
]
HI = ("[[<|start|>]]user[[<|message|>]]Hi[[<|end|>]][[<|start|>]]assistant[[trained]][[<|channel|>]]final"
      "[[<|message|>]]Hello![[<|return|>]][[/trained]]")
# The user typed "<|start|>": text, shown without brackets; the real control ids are bracketed.
SAY = ("[[<|start|>]]user[[<|message|>]]Say <|start|> please[[<|end|>]][[<|start|>]]assistant[[trained]]"
       "[[<|channel|>]]analysis[[<|message|>]]odd[[<|end|>]][[<|start|>]]assistant[[<|channel|>]]final"
       "[[<|message|>]]<|start|>[[<|return|>]][[/trained]]")
TOKYO = ("[[<|start|>]]system[[<|message|>]]Be brief.[[<|end|>]][[<|start|>]]user[[<|message|>]]東京?[[<|end|>]]"
         "[[<|start|>]]assistant[[trained]][[<|channel|>]]final[[<|message|>]]Tokyo 😀\nyes[[<|return|>]][[/trained]]")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("inspect")
    src = d / "chats.jsonl"
    src.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in CONVS) + "\n")
    for out, extra in (("parquet", []), ("npy", ["--output", "npy"]), ("unpacked", ["--no-pack"]),
                       ("megatron", ["--output", "megatron"])):
        seq = [] if out in ("unpacked", "megatron") else ["--seq-len", "64"]
        # --no-shuffle: the rows below are checked in packing order (the default's seeded row order is
        # tested in test_recipe_run / test_pack_unified).
        assert main(["pack", str(src), "--workers", "1", "--no-shuffle", "--out", str(d / out), *seq,
                     *extra]) == EXIT_OK
    return d


def test_inspect_packed_parquet_plain(packed: Path, capsys: pytest.CaptureFixture[str]):
    code, out, _ = run(capsys, "inspect", str(packed / "parquet"))
    assert code == EXIT_OK
    # Best-fit-decreasing: the two longer documents share row 0, "Hi" is alone in row 1.
    assert out == ("[[row 0 · train-00000 row 0 · 52 tokens · 2 document(s) · 24 trained]]\n"
                   "[[doc 0 · tokens 0-29 · 29 tokens, 16 trained · source 0 · record 1]]\n" + SAY + "\n"
                   "[[doc 1 · tokens 29-52 · 23 tokens, 8 trained · source 0 · record 2]]\n" + TOKYO + "\n")
    code, out, _ = run(capsys, "inspect", str(packed / "parquet"), "--row", "1")
    assert out == ("[[row 1 · train-00000 row 1 · 13 tokens · 1 document(s) · 6 trained]]\n"
                   "[[doc 0 · tokens 0-13 · 13 tokens, 6 trained · source 0 · record 0]]\n" + HI + "\n")
    code, out, _ = run(capsys, "inspect", str(packed / "parquet"), "--doc", "1")
    assert out.splitlines()[1:] == ["[[doc 1 · tokens 29-52 · 23 tokens, 8 trained · source 0 · record 2]]",
                                    *TOKYO.split("\n")]


def test_inspect_npy_shows_padding(packed: Path, capsys: pytest.CaptureFixture[str]):
    code, out, _ = run(capsys, "inspect", str(packed / "npy"), "--count", "5")
    assert code == EXIT_OK
    assert out == ("[[row 0 · train-00000 row 0 · 64 tokens · 2 document(s) · 24 trained]]\n"
                   "[[doc 0 · tokens 0-29 · 29 tokens, 16 trained · source 0 · record 1]]\n" + SAY + "\n"
                   "[[doc 1 · tokens 29-52 · 23 tokens, 8 trained · source 0 · record 2]]\n" + TOKYO + "\n"
                   "[[padding · tokens 52-64 · 12 tokens]]\n"
                   "[[row 1 · train-00000 row 1 · 64 tokens · 1 document(s) · 6 trained]]\n"
                   "[[doc 0 · tokens 0-13 · 13 tokens, 6 trained · source 0 · record 0]]\n" + HI + "\n"
                   "[[padding · tokens 13-64 · 51 tokens]]\n")


@pytest.mark.parametrize("layout", ["unpacked", "megatron"])
def test_inspect_unpacked_layouts(packed: Path, capsys: pytest.CaptureFixture[str], layout: str):
    code, out, _ = run(capsys, "inspect", str(packed / layout), "--row", "0", "--count", "3")
    assert code == EXIT_OK
    docs = [line for line in out.splitlines() if not line.startswith("[[row") and not line.startswith("[[doc")]
    # Unpacked rows keep every mask bit (no -100 forced at a document start, nothing packed).
    assert "\n".join(docs) == "\n".join([HI, SAY, TOKYO])


def hand_built(folder: Path) -> None:
    """A packed shard with the provenance columns doc_source / doc_record (written by hand)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    enc = encoder.Encoder("openchatml-2.2")
    results = [enc.render(c) for c in CONVS]
    p = pack(results, 64, encoder=enc)
    (folder / "data").mkdir(parents=True)
    table = parquet_table(Block(p.rows, p.input_ids, p.labels, p.position_ids, p.segment_offsets, p.segment_lengths,
                                p.segment_doc))
    # documents 0, 1, 2 came from source 1 record 7, source 0 record 0, source 1 record 8
    where = {0: (1, 7), 1: (0, 0), 2: (1, 8)}
    docs = [[int(d) for d in row if d != -1] for row in p.doc_index]
    table = table.append_column("doc_source", pa.array([[where[d][0] for d in r] for r in docs], pa.list_(pa.int32())))
    table = table.append_column("doc_record", pa.array([[where[d][1] for d in r] for r in docs], pa.list_(pa.int64())))
    pq.write_table(table, folder / "data" / "train-00000.parquet")
    (folder / "manifest.json").write_text(json.dumps({
        "format": "openchatml-2.2", "pad_id": p.pad_id,
        "tokenizer": {"name": enc.tokenizer.name, "vocab_hash": enc.tokenizer.fingerprint},
        "sources": [{"source": 0, "path": "a.jsonl", "files": []},
                    {"source": 1, "path": "data/b", "files": [{"path": "data/b/part-1.jsonl"}]}]}))


def test_inspect_finds_documents_by_provenance(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    hand_built(tmp_path / "h")
    h = str(tmp_path / "h")
    code, out, _ = run(capsys, "inspect", h, "--source", "1", "--record", "7")
    assert code == EXIT_OK
    assert out == ("[[row 1 · train-00000 row 1 · 13 tokens · 1 document(s) · 6 trained]]\n"
                   "[[doc 0 · tokens 0-13 · 13 tokens, 6 trained · source 1 · record 7]]\n" + HI + "\n")
    for by_name in ("part-1.jsonl", "data/b"):  # a file name or the input as given
        assert run(capsys, "inspect", h, "--source", by_name, "--record", "8")[1].splitlines()[1] == \
            "[[doc 1 · tokens 29-52 · 23 tokens, 8 trained · source 1 · record 8]]"
    code, out, _ = run(capsys, "inspect", h, "--source", "1", "--count", "5")  # every document of source 1
    assert [line for line in out.splitlines() if line.startswith("[[doc")] == [
        "[[doc 1 · tokens 29-52 · 23 tokens, 8 trained · source 1 · record 8]]",
        "[[doc 0 · tokens 0-13 · 13 tokens, 6 trained · source 1 · record 7]]"]
    code, out, _ = run(capsys, "inspect", h, "--record", "0")
    assert SAY in out and "source 0 · record 0" in out
    code, out, _ = run(capsys, "inspect", h, "--row", "0")  # provenance on every boundary line
    assert "[[doc 0 · tokens 0-29 · 29 tokens, 16 trained · source 0 · record 0]]" in out.splitlines()
    code, _, err = run(capsys, "inspect", h, "--source", "1", "--record", "99")
    assert code == EXIT_USAGE and "no document matches --source 1 --record 99" in err
    code, _, err = run(capsys, "inspect", h, "--source", "c.jsonl")
    assert code == EXIT_USAGE and "no source 'c.jsonl'" in err


def test_inspect_usage_errors(packed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    d = str(packed / "parquet")
    # Megatron's .bin/.idx hold ids and masks only (ocml pack's Parquet / .npy rows carry provenance).
    code, out, err = run(capsys, "inspect", str(packed / "megatron"), "--source", "0")
    assert code == EXIT_USAGE and "no provenance columns" in err and not out, err
    cases = [
        (["--row", "9"], "row 9 out of range"),
        (["--doc", "5"], "no document 5"),
        (["--count", "0"], "--count must be >= 1"),
        (["--mask", "last"], "--mask applies to `ocml pack` / `ocml render`, not `ocml inspect`"),
        (["--seq-len", "64"], "--seq-len applies to `ocml pack`, not `ocml inspect`"),
    ]
    for extra, msg in cases:
        code, out, err = run(capsys, "inspect", d, *extra)
        assert code == EXIT_USAGE and msg in err and err.startswith("ocml: ") and not out, (extra, err)
    (tmp_path / "empty").mkdir()
    assert run(capsys, "inspect", str(tmp_path / "empty"))[0] == EXIT_USAGE
    # no manifest: the tokenizer must be named
    hand_built(tmp_path / "h")
    (tmp_path / "h" / "manifest.json").unlink()
    code, _, err = run(capsys, "inspect", str(tmp_path / "h"))
    assert code == EXIT_USAGE and "--format" in err
    code, out, _ = run(capsys, "inspect", str(tmp_path / "h"), "--format", "openchatml-2.2", "--row", "1")
    assert code == EXIT_OK and HI in out


def test_inspect_ansi(packed: Path, capsys: pytest.CaptureFixture[str]):
    code, out, _ = run(capsys, "inspect", str(packed / "parquet"), "--row", "1", "--color=always")
    assert code == EXIT_OK
    assert "\x1b[48;5;22m" in out and "\x1b[48;5;236m" in out and "\x1b[1;38;5;213m<|start|>" in out
    plain = ANSI.sub("", out).splitlines()
    assert plain[0] == " trained   untrained  <|control|>"
    assert plain[1] == "── row 1 · train-00000 row 1 · 13 tokens · 1 document(s) · 6 trained ──"
    assert plain[3] == "<|start|>user<|message|>Hi<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|>"
    # token by token: every token has its own background, alternating
    enc = encoder.Encoder("openchatml-2.2")
    r = enc.render(CONVS[0]["messages"])
    text = TokenView(enc.tokenizer).document(r.ids, r.mask, Style.ANSI)
    assert text.count("\x1b[0m") == len(r)
    bgs = re.findall(r"\x1b\[48;5;(\d+)m", text)
    assert bgs == [["236", "239"][k % 2] if not r.mask[k] else ["22", "28"][k % 2] for k in range(len(r))]


def test_ansi_joins_a_character_split_over_tokens():
    enc = encoder.Encoder("openchatml-2.2")
    ids = np.array(enc.tokenizer.encode_text("𝔘𝔫𝔦 ꙮ"), dtype=np.int64)
    parts = [enc.tokenizer.token_bytes(int(i)) for i in ids]
    assert any(not _utf8(p) for p in parts)  # characters split into byte pieces
    shown = ANSI.sub("", TokenView(enc.tokenizer).document(ids, np.ones(len(ids), bool), Style.ANSI))
    assert shown == "𝔘𝔫𝔦 ꙮ"


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


# -- ocml render --color / the shared option set -------------------------------------------------

def test_render_color_plain(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    f = tmp_path / "c.json"
    f.write_text(json.dumps(CONVS[0]))
    code, out, _ = run(capsys, "render", str(f), "--color")
    assert code == EXIT_OK
    assert out == ("[[openchatml-2.2 · o200k_base+openchatml-2.2 · 13 tokens, 6 trained]]\n"
                   "[[message 0 · tokens 0-5]]\n[[<|start|>]]user[[<|message|>]]Hi[[<|end|>]]\n"
                   "[[message 1 · tokens 5-13]]\n[[<|start|>]]assistant[[trained]][[<|channel|>]]final"
                   "[[<|message|>]]Hello![[<|return|>]][[/trained]]\n")


def test_render_takes_packs_mask_and_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    conv = {"chat": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                     {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]}
    f = tmp_path / "c.json"
    f.write_text(json.dumps(conv))
    code, out, _ = run(capsys, "render", str(f), "--messages-field", "chat", "--mask", "last", "--color=never")
    assert code == EXIT_OK
    assert out.count("[[trained]]") == 1 and "[[trained]][[<|channel|>]]final[[<|message|>]]d" in out
    code, out, _ = run(capsys, "render", str(f), "--messages-field", "chat", "--mask", "none", "--json")
    assert code == EXIT_OK and sum(json.loads(out)["mask"]) == 0


def test_render_takes_packs_shape_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """--shape / --field / --completion-only-loss / --string-prompt: one record as ``ocml pack`` reads it."""
    from ocml import encoder
    from ocml.encoder.inputs import render_record
    from ocml.encoder.inputs.shapes import Fields, ShapeOptions

    f = tmp_path / "r.json"
    f.write_text(json.dumps({"instruction": "Add", "input": "1+1", "response": "2"}))
    code, out, _ = run(capsys, "render", str(f), "--shape", "alpaca", "--field", "output=response", "--json")
    want = encoder.Encoder(shape="alpaca", shape_options=ShapeOptions(Fields.parse(("output=response",))))
    assert code == EXIT_OK and json.loads(out)["ids"] == render_record(want, json.loads(f.read_text())).ids.tolist()
    code, _, err = run(capsys, "render", str(f), "--shape", "alpaca")  # no 'output' without --field
    assert code == EXIT_USAGE and "[E-SHAPE-MISSING] alpaca record has no 'output'" in err and "--field output=" in err
    f.write_text(json.dumps({"prompt": "The sky is", "completion": " blue."}))
    masks = {}
    for flags in ((), ("--no-completion-only-loss",), ("--string-prompt", "chat")):
        code, out, _ = run(capsys, "render", str(f), *flags, "--json")
        assert code == EXIT_OK
        masks[flags] = json.loads(out)["mask"]
    assert 0 < sum(masks[()]) < len(masks[()]) and all(masks[("--no-completion-only-loss",)])
    assert len(masks[("--string-prompt", "chat")]) > len(masks[()])  # a user turn and the answer, with controls
    f.write_text(json.dumps({"prompt": [{"role": "user", "content": "q"}], "chosen": [{"role": "assistant", "content": "a"}],
                             "rejected": [{"role": "assistant", "content": "b"}]}))
    code, _, err = run(capsys, "render", str(f))  # a pair is two sequences: pack rows, not one render
    assert code == EXIT_USAGE and "E-SHAPE-PAIR" in err


@pytest.mark.parametrize("extra, opt", [
    (["--pair-columns", "orpo"], "--pair-columns"),
    (["--out", "x"], "--out"), (["--seq-len", "8"], "--seq-len"), (["--overlong", "split"], "--overlong"),
    (["--no-pack"], "--no-pack"), (["--pad-to-multiple-of", "8"], "--pad-to-multiple-of"),
    (["--workers", "1"], "--workers"), (["--no-progress"], "--progress/--no-progress"),
])
def test_render_rejects_pack_only_options(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra, opt):
    f = tmp_path / "c.json"
    f.write_text(json.dumps(CONVS[0]))
    code, out, err = run(capsys, "render", str(f), *extra)
    assert code == EXIT_USAGE and not out
    assert err.startswith(f"ocml: [E-USAGE] {opt} applies to `ocml pack`, not `ocml render`"), err


# -- the plain form is a faithful, reversible view ----------------------------------------------

MARK = re.compile(r"\[\[(/?trained|<\|[^|\]]+\|>(?: x\d+)?)\]\]")


def parse_plain(text: str) -> list[tuple[str, bool]]:
    """The plain form back into (piece, trained) pairs: control tokens as their names."""
    out: list[tuple[str, bool]] = []
    on, pos = False, 0
    for m in MARK.finditer(text):
        if m.start() > pos:
            out.append((text[pos:m.start()], on))
        tag = m.group(1)
        if tag in ("trained", "/trained"):
            assert on == (tag == "/trained"), "markers nest and alternate"
            on = tag == "trained"
        else:
            name, _, times = tag.partition(" x")
            out += [(name, on)] * (int(times) if times else 1)
        pos = m.end()
    if pos < len(text):
        out.append((text[pos:], on))
    assert not on, "every [[trained]] is closed"
    return out


@pytest.mark.parametrize("fmt, tokenizer", [("openchatml-2.2", None), ("harmony", None),
                                            ("openchatml-2.2", "o200k_base")])  # registered and fallback
def test_plain_view_round_trips(fmt: str, tokenizer: str | None):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    enc = encoder.Encoder(fmt, tokenizer)
    tok = enc.tokenizer
    view = TokenView(tok)
    controls = sorted(tok.special_ids)
    words = ["Hi", " there", "東京", "😀", "\n", " [x]", "<|start|>", "ok."]

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(st.one_of(st.sampled_from(words), st.sampled_from(controls or [0])), st.booleans()),
                    max_size=30))
    def check(parts):
        ids, trained = [], []
        for p, flag in parts:
            got = tok.encode_text(p) if isinstance(p, str) else ([p] if controls else tok.encode_text("x"))
            ids += got
            trained += [flag] * len(got)
        ids_a, tr_a = np.array(ids, dtype=np.int64), np.array(trained, dtype=bool)
        pieces = parse_plain(view.document(ids_a, tr_a, Style.PLAIN))
        # Joined, the pieces are the decoded ids (control ids as their names) ...
        assert "".join(p for p, _ in pieces) == tok.decode(ids)
        # ... and the trained pieces are exactly the trained tokens' text, run by run.
        want = [tok.decode([i for i, t in zip(ids, trained) if t])]
        assert "".join(p for p, t in pieces if t) == want[0]

    check()


def test_help_pages(capsys: pytest.CaptureFixture[str]):
    for cmd in ("render", "inspect"):
        with pytest.raises(SystemExit) as e:
            main([cmd, "--help"])
        assert e.value.code == 0
        out = capsys.readouterr().out
        assert "--color" in out and "\n  --out" not in out and "--seq-len" not in out  # pack-only options hidden
    assert " ".join(out.split()).count("(default: as DIR/manifest.json says)") == 2
