"""``ocml`` command line: exit codes and one-line messages instead of tracebacks."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ocml.encoder.cli import EXIT_FAILED, EXIT_OK, EXIT_PIPE, EXIT_USAGE, main

from support.paths import ROOT

EXAMPLE = ROOT / "examples" / "weather_tool_call.json"
CONV = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}


def ocml(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "ocml.encoder.cli", *args], input=stdin, capture_output=True, cwd=ROOT,
                          timeout=120)


def no_traceback(err: str) -> None:
    assert "Traceback" not in err and err.startswith("ocml: ") and err.count("\n") <= 1, err


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    jsonl = tmp_path / "data.jsonl"
    jsonl.write_text("\n".join(json.dumps(CONV) for _ in range(3)) + "\n")
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps([CONV, CONV], indent=2))
    latin = tmp_path / "latin.json"
    latin.write_bytes(json.dumps(CONV).replace("hello", "caf\u00e9").encode("latin-1"))
    one = tmp_path / "one.json"
    one.write_text(json.dumps(CONV))
    gz = tmp_path / "one.json.gz"
    gz.write_bytes(gzip.compress(one.read_bytes()))
    return {"jsonl": jsonl, "pretty": pretty, "latin": latin, "one": one, "gz": gz, "dir": tmp_path,
            "missing": tmp_path / "nope.json"}


@pytest.mark.parametrize("cmd", ["render", "text"])
@pytest.mark.parametrize("case, code, words", [
    ("missing", "E-INPUT-FILE", "no such file"),
    ("dir", "E-INPUT-FILE", "is a directory"),
    ("latin", "E-INPUT-UTF8", "not UTF-8"),
    ("jsonl", "E-INPUT-JSONL", "--line N"),
])
def test_one_conversation_commands_fail_cleanly(cmd: str, case: str, code: str, words: str,
                                                files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([cmd, str(files[case])]) == EXIT_USAGE
    err = capsys.readouterr().err
    no_traceback(err)
    assert code in err and words in err


def test_render_reads_gz_stdin_and_a_jsonl_line(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", str(files["gz"]), "--json"]) == EXIT_OK
    ref = json.loads(capsys.readouterr().out)
    assert main(["render", str(files["jsonl"]), "--line", "2", "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == ref
    p = ocml("render", "-", "--json", stdin=files["one"].read_bytes())
    assert p.returncode == 0 and json.loads(p.stdout) == ref
    assert main(["text", str(files["jsonl"]), "--line", "9"]) == EXIT_USAGE
    assert "no line 9" in capsys.readouterr().err


def test_closed_pipe_is_quiet() -> None:
    cmd = f"{sys.executable} -m ocml.encoder.cli render {EXAMPLE}; echo \"rc=$?\" >&2"
    p = subprocess.run(f"({cmd}) | head -1", shell=True, capture_output=True, cwd=ROOT, timeout=120)
    assert p.stdout.decode().startswith("format=")
    err = p.stderr.decode()
    assert "Traceback" not in err and "BrokenPipe" not in err and f"rc={EXIT_PIPE}" in err


def test_help_version_and_usage_errors() -> None:
    top = ocml("--help").stdout.decode()
    assert "exit codes" in top and "pack" in top and "render" in top
    h = ocml("pack", "--help").stdout.decode()
    for opt in ("--format", "--tokenizer", "--seq-len", "--out", "--mask", "--cot", "--workers", "--messages-field",
                "--tools-field", "--overlong", "--strict", "--shard-size", "--output", "--no-pack", "--overwrite",
                "--progress", "{truncate,split,drop}", "--max-bad-fraction", "--keep-untrained",
                "{parquet,npy,both,megatron}", "harmony", "keep-all", "no-analysis",
                "141"):
        assert opt in h, opt
    v = ocml("--version")
    assert v.returncode == 0 and v.stdout.decode().startswith("ocml ")
    bad = ocml("pack", "x.jsonl", "--out", "o", "--overlong", "wrap")
    assert bad.returncode == EXIT_USAGE and b"invalid choice" in bad.stderr and b"Traceback" not in bad.stderr


def test_pack_exit_codes(files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "out")
    assert main(["pack", str(files["missing"]), "--out", out, "--seq-len", "64"]) == EXIT_USAGE
    no_traceback(capsys.readouterr().err)
    assert main(["pack", str(files["jsonl"]), "--out", out]) == EXIT_USAGE  # no --seq-len
    assert "--seq-len" in capsys.readouterr().err
    # JSON where JSON Lines was expected: read as the document it is.
    assert main(["pack", str(files["pretty"]), str(files["jsonl"]), "--out", out, "--seq-len", "64",
                 "--workers", "1", "--json"]) == EXIT_OK
    rep = json.loads(capsys.readouterr().out)
    assert rep["counts"]["documents"] == 5 and rep["counts"]["bad_records"] == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(files["jsonl"].read_bytes() + b"{oops\n" + json.dumps(CONV).encode() + b"\n")
    assert main(["pack", str(bad), "--out", str(tmp_path / "s"), "--seq-len", "64", "--workers", "1",
                 "--strict"]) == EXIT_FAILED
    err = capsys.readouterr().err
    no_traceback(err)
    assert "bad.jsonl:4" in err and "--strict" in err
    # 1 bad record in 5 is over the default --max-bad-fraction (0.05): exit 1, naming the codes.
    assert main(["pack", str(bad), "--out", str(tmp_path / "f"), "--seq-len", "64", "--workers", "1"]) == EXIT_FAILED
    err = capsys.readouterr().err
    no_traceback(err)
    assert "E-BAD-FRACTION" in err and "E-INPUT-JSON x1" in err and "--max-bad-fraction" in err
    assert main(["pack", str(bad), "--out", str(tmp_path / "n"), "--seq-len", "64", "--workers", "1",
                 "--max-bad-fraction", "0.5"]) == EXIT_OK
    text = capsys.readouterr().out
    assert "1 bad record(s) skipped" in text and "bad.jsonl:4: [E-INPUT-JSON]" in text
    assert main(["pack", str(bad), "--out", str(tmp_path / "n"), "--seq-len", "128", "--workers", "1",
                 "--max-bad-fraction", "0.5"]) == EXIT_USAGE
    assert "E-OUT-MISMATCH" in capsys.readouterr().err


def test_template_slot_convention() -> None:
    """Subcommands dispatch through set_defaults(fn=...), so `ocml template` can slot in."""
    from ocml.encoder.cli import build_parser

    p = build_parser()
    for cmd in (["formats"], ["render", "x"], ["text", "x"], ["pack", "x", "--out", "o"]):
        assert callable(p.parse_args(cmd).fn)


def test_tokenizer_option_takes_an_hf_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str], hf_folders) -> None:
    """``--tokenizer DIR`` (a save_pretrained folder) renders the same ids as the format's own tokenizer."""
    hf_folders.folder(tmp_path / "tok", "harmony")
    conv = ROOT / "examples" / "weather_tool_call.json"
    assert main(["render", str(conv), "--format", "harmony", "--json"]) == EXIT_OK
    want = json.loads(capsys.readouterr().out)["ids"]
    for spec in (tmp_path / "tok", tmp_path / "tok" / "tokenizer.json"):
        assert main(["render", str(conv), "--format", "harmony", "--tokenizer", str(spec), "--json"]) == EXIT_OK
        assert json.loads(capsys.readouterr().out)["ids"] == want
