"""Faults in ``ocml pack``'s inputs (issue 25): every reader tells a truncated or corrupt file
from its end, lines and recipes are bounded, a FIFO or a device is refused without hanging, and
one record's pathology (depth, huge numbers, NaN, an endless line) is that record's typed error
in ``errors.jsonl``, never the run's crash (nor the rerun's)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from ocml.encoder.cli import EXIT_OK, EXIT_USAGE, main
from ocml.encoder.errors import OcmlError
from ocml.encoder.pipeline.options import MAX_SEQ_LEN, PackOptions, check
from ocml.encoder.pipeline.readers import iter_chunks, resolve
from ocml.encoder.pipeline.recipe import RecipeError, read_recipe_file, resolve_recipe

from support.paths import ROOT

N = 3000


def _lines(n: int = N) -> bytes:
    return b"".join(json.dumps({"messages": [{"role": "user", "content": f"q{i} hello"},
                                             {"role": "assistant", "content": f"answer {i} " * 4}]}).encode() + b"\n"
                    for i in range(n))


def _zstd(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


COMPRESS = {"gz": gzip.compress, "zst": _zstd, "bz2": bz2.compress, "xz": lzma.compress}


def _records(path: Path, **kw: Any) -> int:
    return sum(c.count for c in iter_chunks(resolve([str(path)]), **kw))


# -- compressed inputs: the end of a stream vs a cut or damage ---------------------------------------

@pytest.mark.parametrize("codec", list(COMPRESS))
def test_complete_and_concatenated_streams_read_every_record(tmp_path: Path, codec: str) -> None:
    data = _lines()
    one = tmp_path / f"one.jsonl.{codec}"
    one.write_bytes(COMPRESS[codec](data))
    two = tmp_path / f"two.jsonl.{codec}"  # two members / frames / streams back to back, then zero padding
    two.write_bytes(COMPRESS[codec](data[:len(data) // 2]) + COMPRESS[codec](data[len(data) // 2:]) + bytes(16))
    assert _records(one) == N and _records(two) == N


def test_zstd_skippable_frames_are_read_past(tmp_path: Path) -> None:
    import struct

    data = _lines()
    skip = struct.pack("<II", 0x184D2A50, 4) + b"meta"  # what pzstd and seekable zstd write
    path = tmp_path / "skip.jsonl.zst"
    path.write_bytes(skip + _zstd(data[:1000]) + skip + _zstd(data[1000:]))
    assert _records(path) == N


@pytest.mark.parametrize("codec", list(COMPRESS))
@pytest.mark.parametrize("cut", ["half", "head", "last-byte"])
def test_a_truncated_stream_is_a_typed_error_naming_file_and_byte(tmp_path: Path, codec: str, cut: str) -> None:
    blob = COMPRESS[codec](_lines())
    keep = {"half": len(blob) // 2, "head": 20, "last-byte": len(blob) - 1}[cut]
    path = tmp_path / f"cut.jsonl.{codec}"
    path.write_bytes(blob[:keep])
    with pytest.raises(OcmlError) as info:
        _records(path)
    assert info.value.code == "E-INPUT-TRUNCATED", info.value
    assert path.name in info.value.message and f"byte {keep:,}" in info.value.message


@pytest.mark.parametrize("codec", list(COMPRESS))
@pytest.mark.parametrize("damage", ["garbage", "trailing"])
def test_a_corrupt_stream_is_a_typed_error(tmp_path: Path, codec: str, damage: str) -> None:
    blob = bytearray(COMPRESS[codec](_lines()))
    if damage == "garbage":
        mid = len(blob) // 2
        blob[mid:mid + 64] = b"\xa5" * 64
    else:
        blob += b"not another member"
    path = tmp_path / f"bad.jsonl.{codec}"
    path.write_bytes(bytes(blob))
    with pytest.raises(OcmlError) as info:
        _records(path)
    assert info.value.code in ("E-INPUT-CORRUPT", "E-INPUT-TRUNCATED"), info.value
    assert path.name in info.value.message and "byte" in info.value.message


def _pack(*args: str) -> int:
    return main(["pack", *args, "--workers", "1", "--no-progress"])


@pytest.mark.parametrize("cut", ["half", "head"])
def test_ocml_pack_fails_on_a_truncated_zst_and_never_exits_0(tmp_path: Path, cut: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    blob = _zstd(_lines())
    path = tmp_path / "in.jsonl.zst"
    path.write_bytes(blob[:len(blob) // 2] if cut == "half" else blob[:20])
    code = _pack(str(path), "--out", str(tmp_path / "out"), "--no-pack")
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "[E-INPUT-TRUNCATED]" in err and "in.jsonl.zst" in err, err
    assert "Traceback" not in err


def test_ocml_pack_fails_on_a_corrupt_zst(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blob = bytearray(_zstd(_lines()))
    blob[len(blob) // 2:len(blob) // 2 + 64] = b"\xa5" * 64
    path = tmp_path / "in.jsonl.zst"
    path.write_bytes(bytes(blob))
    code = _pack(str(path), "--out", str(tmp_path / "out"), "--no-pack", "--max-bad-fraction", "1")
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "[E-INPUT-CORRUPT]" in err and "Traceback" not in err, err


# -- Parquet / Arrow ------------------------------------------------------------------------------

def _table(n: int = 200) -> Any:
    import pyarrow as pa

    return pa.table({"messages": [json.dumps([{"role": "user", "content": f"q{i}"},
                                              {"role": "assistant", "content": f"a{i}"}]) for i in range(n)]})


def test_truncated_or_corrupt_parquet_is_a_typed_error(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    pq.write_table(_table(), tmp_path / "ok.parquet", row_group_size=50)
    blob = (tmp_path / "ok.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(blob[:len(blob) // 2])
    bad = bytearray(blob)
    bad[len(bad) // 3:len(bad) // 3 + 64] = b"\xa5" * 64
    (tmp_path / "bad.parquet").write_bytes(bytes(bad))
    assert _records(tmp_path / "ok.parquet") == 200
    for name in ("cut.parquet", "bad.parquet"):
        with pytest.raises(OcmlError) as info:
            _records(tmp_path / name)
        assert info.value.code.startswith("E-INPUT") and name in info.value.message, info.value


def test_an_arrow_stream_cut_between_batches_is_truncated(tmp_path: Path) -> None:
    import pyarrow as pa

    table = _table()
    path = tmp_path / "data.arrow"
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_stream(f, table.schema) as w:
        for batch in table.to_batches(max_chunksize=50):
            w.write_batch(batch)
    assert _records(path) == 200
    blob = path.read_bytes()
    (tmp_path / "cut.arrow").write_bytes(blob[:-8])  # the end-of-stream marker gone: a clean cut between batches
    (tmp_path / "mid.arrow").write_bytes(blob[:len(blob) // 2])
    for name in ("cut.arrow", "mid.arrow"):
        with pytest.raises(OcmlError) as info:
            _records(tmp_path / name)
        assert info.value.code == "E-INPUT-TRUNCATED" and name in info.value.message, info.value


# -- lines, FIFOs, devices --------------------------------------------------------------------------

def test_a_line_over_the_limit_is_that_records_error_and_the_rest_is_read(tmp_path: Path) -> None:
    from ocml.encoder.pipeline.workers import decode_records

    good = _lines(3)
    path = tmp_path / "long.jsonl"
    path.write_bytes(good + b'{"messages": "' + b"a" * 100_000 + b'"}\n' + good + b"b" * 50_000)
    chunks = list(iter_chunks(resolve([str(path)]), max_line_bytes=4096))
    decoded = [rec for c in chunks for rec in decode_records(c)]
    codes = [(loc, getattr(r, "code", None)) for loc, r in decoded]
    assert codes == [(1, None), (2, None), (3, None), (4, "E-INPUT-LINE-TOO-LONG"), (5, None), (6, None), (7, None),
                     (8, "E-INPUT-LINE-TOO-LONG")]
    # Positions stay byte-exact across a skipped line (resume seeks to them).
    assert chunks[-1].end.offset == path.stat().st_size


def _ocml(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ocml.encoder.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    proc = _ocml("pack", str(fifo), "--out", str(tmp_path / "out"), "--no-pack", "--workers", "1")
    assert proc.returncode == EXIT_USAGE and "FIFO" in proc.stderr and "[E-INPUT-FILE]" in proc.stderr, proc.stderr
    assert time.monotonic() - t0 < 100


def test_dev_zero_is_refused_not_read_to_memory_error(tmp_path: Path) -> None:
    proc = _ocml("pack", "/dev/zero", "--out", str(tmp_path / "out"), "--no-pack", "--workers", "1")
    assert proc.returncode == EXIT_USAGE and "[E-INPUT-FILE]" in proc.stderr, proc.stderr
    assert "MemoryError" not in proc.stderr and "Traceback" not in proc.stderr


def test_an_endless_first_line_is_bounded(tmp_path: Path) -> None:
    """A file that is one line of 80 MiB (sparse: no disk cost): sniffed and read in bounded memory."""
    path = tmp_path / "endless.jsonl"
    with open(path, "wb") as f:
        f.write(b'{"messages": "')
        f.truncate(80 << 20)  # NUL bytes, no newline
    with pytest.raises(OcmlError) as info:
        _records(path)
    assert info.value.code == "E-INPUT-FILE"


# -- one record's pathology, through ocml pack ----------------------------------------------------------

DEEP = "[" * 3000 + "]" * 3000
BIG = "9" * 5000
TOOL = {"type": "function", "function": {"name": "get", "parameters": {"type": "object",
                                                                          "properties": {"lat": {"type": "number"}}}}}


def _call(args: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "where?"},
                         {"role": "assistant", "content": None,
                          "tool_calls": [{"type": "function", "function": {"name": "get", "arguments": args}}]}],
            "tools": [TOOL]}


#: raw JSON Lines text of one bad record -> the code it must get
BAD_LINES = {
    '{"messages": [{"role": "user", "content": ' + DEEP + '}]}': "E-INPUT-DEPTH",
    '{"id": ' + BIG + ', "messages": [{"role": "user", "content": "x"}]}': "E-INPUT-NUMBER",
    json.dumps(_call('{"lat": NaN}')): "E-INPUT-NUMBER",
    json.dumps(_call('{"lat": ' + BIG + '}')): "E-INPUT-NUMBER",
    json.dumps(_call('{"a": ' + DEEP + '}')): "E-INPUT-DEPTH",
    json.dumps({**_call("{}"), "tools": '[{"type": "function", "function": {"name": "get", "parameters": '
                                        '{"type": "object", "maximum": ' + BIG + '}}}]'}): "E-INPUT-NUMBER",
    json.dumps({**_call("{}"), "tools": json.dumps([{"type": "function", "function": {
        "name": "get", "parameters": json.loads("{\"a\": " + "{\"b\": " * 200 + "1" + "}" * 201)}}])}): "E-INPUT-DEPTH",
    '{"messages": "' + "x" * 40_000 + '"}': "E-INPUT-LINE-TOO-LONG",
}


def _bad_file(tmp_path: Path, good: int = 40) -> tuple[Path, dict[int, str]]:
    lines = _lines(good).splitlines()
    want: dict[int, str] = {}
    for k, (text, code) in enumerate(BAD_LINES.items()):
        at = 3 + 4 * k
        lines.insert(at, text.encode())
        want[at + 1] = code
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    # Line numbers of the bad records (1-based), after all insertions.
    got = {i + 1: BAD_LINES[ln.decode()] for i, ln in enumerate(lines) if ln.decode() in BAD_LINES}
    return path, got


@pytest.mark.parametrize("shuffle", [True, False])
def test_pathological_records_are_bad_records_and_the_rerun_does_not_crash(
        tmp_path: Path, shuffle: bool, capsys: pytest.CaptureFixture[str]) -> None:
    path, want = _bad_file(tmp_path)
    out = tmp_path / "out"
    args = [str(path), "--out", str(out), "--no-pack", "--max-bad-fraction", "0.5", "--max-line-bytes", "30000",
            *([] if shuffle else ["--no-shuffle"])]
    assert _pack(*args) == EXIT_OK, capsys.readouterr().err
    errors = [json.loads(x) for x in (out / "errors.jsonl").read_text("utf-8").splitlines()]
    assert {e["line"]: e["code"] for e in errors} == want
    assert all(len(e["message"]) < 300 for e in errors)  # never the value itself
    assert _pack(*args) == EXIT_OK  # the rerun: already complete, no crash
    assert "already complete" in capsys.readouterr().err


def test_pathological_records_fail_the_run_past_max_bad_fraction(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = _bad_file(tmp_path, good=10)
    assert _pack(str(path), "--out", str(tmp_path / "out"), "--no-pack", "--max-line-bytes", "30000") == 1
    err = capsys.readouterr().err
    assert "[E-BAD-FRACTION]" in err and "Traceback" not in err, err


def test_pathological_parquet_columns_are_bad_records(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ocml.encoder.pipeline.run import run

    ok = json.dumps([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}])
    rows = [
        (ok, None),
        ('[{"role": "user", "content": ' + DEEP + "}]", None),                       # messages text too deep
        (ok, '[{"type": "function", "function": {"name": "g", "parameters": {"maximum": ' + BIG + "}}}]"),
        (json.dumps(_call('{"lat": Infinity}')["messages"]), json.dumps([TOOL])),    # Infinity in arguments
        (ok, None),
    ]
    pq.write_table(pa.table({"messages": [m for m, _ in rows], "tools": [t for _, t in rows]}), tmp_path / "in.parquet")
    opts = PackOptions(inputs=(str(tmp_path / "in.parquet"),), out=tmp_path / "out", pack=False, workers=1,
                       plot=False, max_bad_fraction=1.0)
    result = run(opts)
    assert result.exit_code == 0
    errors = [json.loads(x) for x in (tmp_path / "out" / "errors.jsonl").read_text("utf-8").splitlines()]
    assert {e["row"]: e["code"] for e in errors} == {1: "E-INPUT-DEPTH", 2: "E-INPUT-NUMBER", 3: "E-INPUT-NUMBER"}


# -- recipes and options --------------------------------------------------------------------------------

BOMB = """\
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
seed: *i
sources: *i
"""


def test_a_yaml_alias_bomb_is_refused_fast_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB, "utf-8")
    assert len(path.read_bytes()) < 600
    tracemalloc.start()
    t0 = time.process_time()
    try:
        with pytest.raises(RecipeError) as info:
            read_recipe_file(path)
        seconds = time.process_time() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "values" in info.value.message and len(str(info.value)) < 400
    assert seconds < 5 and peak < 100 << 20, (seconds, peak)


@pytest.mark.parametrize("text, words", [
    ("seed: " + "[" * 5000 + "]" * 5000 + "\nsources: [a.jsonl]\n", "nest"),
    ("seed: " + BIG + "\nsources: [a.jsonl]\n", "digits"),
    ("seed: '" + "x" * 100_000 + "'\nsources: [a.jsonl]\n", "characters"),
    ("format: " + "y" * 3000 + "\nsources: [a.jsonl]\n", "unknown value"),
])
def test_bad_recipe_values_are_typed_errors_quoting_a_bounded_excerpt(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(text, "utf-8")
    with pytest.raises(OcmlError) as info:
        resolve_recipe(read_recipe_file(path))
    assert words in str(info.value) and len(str(info.value)) < 600, str(info.value)[:800]


def test_an_api_recipe_mapping_is_bounded_too() -> None:
    shared: list[Any] = ["x"] * 10
    for _ in range(8):
        shared = [shared] * 10
    with pytest.raises(RecipeError):
        resolve_recipe({"sources": shared})


@pytest.mark.parametrize("flag, value", [("--seq-len", str(10 ** 12)), ("--seq-len", str(MAX_SEQ_LEN + 1)),
                                         ("--max-line-bytes", str(1 << 40)), ("--max-line-bytes", "0")])
def test_huge_sizes_are_usage_errors_up_front(tmp_path: Path, flag: str, value: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in.jsonl").write_bytes(_lines(3))
    extra = [] if flag == "--seq-len" else ["--no-pack"]
    assert _pack(str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "out"), flag, value, *extra) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "[E-USAGE]" in err and flag in err and "Traceback" not in err, err
    with pytest.raises(OcmlError):
        check(PackOptions(inputs=("x",), out=tmp_path, seq_len=10 ** 12))
    check(PackOptions(inputs=("x",), out=tmp_path, seq_len=MAX_SEQ_LEN))
