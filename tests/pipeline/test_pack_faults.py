"""Fault injection on ``ocml pack``'s ``--out`` (issue 25): ``kill -9`` at each phase, a full disk,
two runs at once, hostile folder contents.  Every case ends in a typed error or a correct run:
every good input record packed exactly once, nothing outside what ocml wrote touched, no spool
left behind.  Plain (``--no-shuffle``) and recipe runs alike.

Faults come from the test hook (``OCML_PACK_FAULT``, ``encoder/pipeline/faults.py``): ``kill``,
``stop`` (the run pauses holding its lock, so a second run meets it deterministically) and
``enospc`` at a named point; a disk that fills mid-shard is a monkeypatched writer.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import shutil
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ocml.encoder.cli import main as cli_main
from ocml.encoder.errors import InputError
from ocml.encoder.pipeline import outlock
from ocml.encoder.pipeline.faults import FAULT_ENV
from ocml.encoder.pipeline.recipe import resolve_recipe
from ocml.encoder.pipeline.recipe_run import run_recipe
from ocml.encoder.pipeline.run import PackOptions, RunResult, run

from support.pipeline import write_data

SEQ = 2048  # no document is overlong: every good record must come out whole, once
KINDS = ("plain", "recipe")
# Small shards and epochs: several shards and checkpoints to interrupt.
TUNING: dict[str, Any] = dict(seq_len=SEQ, shard_size=2, epoch_tokens=3000, chunk_records=8, window=40, plot=False,
                              workers=1)


# -- helpers -----------------------------------------------------------------------------------------

def pack(kind: str, inputs: list[Path], out: Path, log: Any = None, **over: Any) -> RunResult:
    """One run in this process (plain = ``--no-shuffle``, recipe = the default ``ocml pack``);
    Parquet and .npy shards."""
    kw = {**TUNING, **over}
    if kind == "recipe":
        return run_recipe(resolve_recipe({"sources": [{"path": str(p)} for p in inputs], "output": "both", **kw}),
                          out, log=log or io.StringIO())
    return run(PackOptions(inputs=tuple(map(str, inputs)), out=out, outputs=("parquet", "npy"), **kw),
               log=log or io.StringIO())


def forked(kind: str, inputs: list[Path], out: Path, fault: str | None = None, **over: Any) -> int:
    """Run ``pack`` in a forked process (a real second process, without the import and vocabulary
    costs of a new interpreter); exit 0, 2 with the typed error in ``out``'s sibling
    ``<pid>.err``, 1 on anything else.  ``fault``: ``OCML_PACK_FAULT`` in the child."""
    pid = os.fork()
    if pid:
        return pid
    code = 1  # the child never returns into pytest
    try:
        os.environ.pop(FAULT_ENV, None)
        if fault:
            os.environ[FAULT_ENV] = fault
        pack(kind, inputs, out, **over)
        code = 0
    except InputError as exc:
        (out.parent / f"{os.getpid()}.err").write_text(str(exc))
        code = 2
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        (out.parent / f"{os.getpid()}.err").write_text(repr(exc))
    finally:
        os._exit(code)


def reap(pid: int, stopped: bool = False) -> int:
    """The child's exit code (``-N`` when killed by signal N); ``stopped``: wait until it has
    stopped itself (SIGSTOP at its fault point) instead."""
    _, status = os.waitpid(pid, os.WUNTRACED if stopped else 0)
    if stopped:
        assert os.WIFSTOPPED(status), f"the run ended (status {status}) before its fault point"
        return 0
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def error_of(out: Path, pid: int) -> str:
    f = out.parent / f"{pid}.err"
    return f.read_text() if f.exists() else ""


def documents(out: Path) -> Counter[tuple[int, int]]:
    """(input / source number, record index) of every document in the output's rows."""
    import pyarrow.parquet as pq

    seen: Counter[tuple[int, int]] = Counter()
    for f in sorted((out / "data").glob("*.parquet")):
        t = pq.read_table(f, columns=["doc_source", "doc_record"])
        for src, rec in zip(t.column("doc_source").to_pylist(), t.column("doc_record").to_pylist()):
            seen.update(zip(src, rec))
    return seen


def snapshot(root: Path, skip: tuple[str, ...] = (".ocml/lock",)) -> dict[str, str]:
    """Every entry under ``root`` (links not followed): its content hash, link target or ``dir``."""
    out: dict[str, str] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if rel in skip:
                continue
            out[rel] = ("link:" + os.readlink(p) if p.is_symlink() else "dir" if p.is_dir()
                        else hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def assert_correct(out: Path, expected: set[tuple[int, int]]) -> None:
    """Every good record exactly once, the bad one logged once, the run recorded as done, no
    spool or temporary file left."""
    docs = documents(out)
    assert [d for d, n in docs.items() if n > 1] == [], "documents packed twice"
    assert set(docs) == expected, f"lost: {sorted(expected - set(docs))[:5]}, extra: {sorted(set(docs) - expected)[:5]}"
    assert json.loads((out / ".ocml" / "progress.json").read_text())["status"] == "done"
    bad = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()]
    assert [(Path(b["file"]).name, b["line"]) for b in bad] == [("a.jsonl", 9)], bad  # the one bad record, once
    assert not (out / ".ocml" / "spool").exists(), "spool left behind"
    assert not list(out.rglob(".*.tmp")), "temporary files left behind"


def refused(code: str, fn: Any, *args: Any, **kw: Any) -> InputError:
    with pytest.raises(InputError) as info:
        fn(*args, **kw)
    assert info.value.code == code, str(info.value)
    return info.value


# -- fixtures ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("faults-in")
    write_data(d / "a.jsonl", 60, seed=41, bad={9: "{broken"})
    write_data(d / "b.jsonl", 40, seed=42)
    return [d / "a.jsonl", d / "b.jsonl"]


@pytest.fixture(scope="module")
def expected() -> set[tuple[int, int]]:
    return {(0, i) for i in range(61) if i != 8} | {(1, i) for i in range(40)}  # line 9 of a.jsonl is bad


@pytest.fixture(scope="module")
def complete(inputs: list[Path], expected: set[tuple[int, int]],
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A finished output of each kind (copied by the tests that need one)."""
    outs = {}
    for kind in KINDS:
        out = tmp_path_factory.mktemp(f"faults-{kind}") / "out"
        res = pack(kind, inputs, out)
        assert res.report["pack"]["dropped"] == res.report["pack"]["truncated"] == 0
        assert len(list((out / "data").glob("train-*.parquet"))) >= 5
        assert_correct(out, expected)
        outs[kind] = out
    return outs


def copy_of(complete: dict[str, Path], kind: str, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(complete[kind], out, symlinks=True)
    return out


# -- one writer per --out ------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_a_second_run_is_refused_while_one_runs(inputs: list[Path], expected: set[tuple[int, int]], tmp_path: Path,
                                                kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Seconds apart, the same command, --overwrite, the other kind, the CLI: refused at once,
    naming the holder, nothing touched; the first run then ends correct."""
    out = tmp_path / "out"
    first = forked(kind, inputs, out, fault="progress:1:stop")  # paused mid-run, two shards written
    try:
        reap(first, stopped=True)
        before = snapshot(out)
        for other, over in ((kind, {}), (kind, {"overwrite": True}), (KINDS[kind == "plain"], {"overwrite": True})):
            t0 = time.monotonic()
            exc = refused("E-OUT-LOCKED", pack, other, inputs, out, **over)
            assert time.monotonic() - t0 < 30 and f"pid {first}" in exc.message, exc.message
            assert snapshot(out) == before
        args = ["pack", *map(str, inputs), "--out", str(out), "--seq-len", str(SEQ), "--overwrite", "--workers", "1",
                "--wait-lock", "0.3"]
        assert cli_main(args + (["--no-shuffle"] if kind == "plain" else [])) == 2
        err = capsys.readouterr().err
        assert "waiting up to 0.3 s" in err and "[E-OUT-LOCKED]" in err and snapshot(out) == before
        os.kill(first, signal.SIGCONT)
        assert reap(first) == 0, error_of(out, first)
    finally:
        try:
            os.kill(first, signal.SIGKILL)
            os.waitpid(first, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    assert_correct(out, expected)
    assert pack(kind, inputs, out).already_done  # and the lock was released


@pytest.mark.parametrize("kind", KINDS)
def test_two_runs_started_together(inputs: list[Path], expected: set[tuple[int, int]], tmp_path: Path,
                                   kind: str) -> None:
    """One packs, the other is refused by the lock (or came after the end: "already complete")."""
    out = tmp_path / "out"
    pids = [forked(kind, inputs, out) for _ in range(2)]
    codes = [reap(p) for p in pids]
    assert sorted(codes) in ([0, 0], [0, 2]), [error_of(out, p) for p in pids]
    for pid, code in zip(pids, codes):
        assert code == 0 or "[E-OUT-LOCKED]" in error_of(out, pid), error_of(out, pid)
    assert_correct(out, expected)


def test_a_lock_left_by_a_killed_run_is_taken_over(inputs: list[Path], expected: set[tuple[int, int]],
                                                   tmp_path: Path) -> None:
    out = tmp_path / "out"
    pid = forked("recipe", inputs, out, fault="locked:1")  # killed holding the lock, nothing else written
    assert reap(pid) == -signal.SIGKILL
    assert json.loads((out / ".ocml" / "lock").read_text())["pid"] == pid
    log = io.StringIO()
    pack("recipe", inputs, out, log=log)
    assert f"taking over the lock of {out} left by ocml pid {pid}" in log.getvalue()
    assert_correct(out, expected)
    assert (out / ".ocml" / "lock").read_text() == ""  # a clean release names no holder
def test_wait_lock_waits_for_the_holder(inputs: list[Path], expected: set[tuple[int, int]], tmp_path: Path) -> None:
    out = tmp_path / "out"
    held = outlock.acquire(out)
    t0 = time.monotonic()
    refused("E-OUT-LOCKED", pack, "plain", inputs, out, wait_lock=0.5)
    assert 0.5 <= time.monotonic() - t0 < 20
    threading.Timer(1.0, held.release).start()
    log = io.StringIO()
    t0 = time.monotonic()
    pack("plain", inputs, out, log=log, wait_lock=60)
    assert time.monotonic() - t0 >= 0.9 and "waiting up to 60 s" in log.getvalue()
    assert_correct(out, expected)
    refused("E-USAGE", pack, "plain", inputs, tmp_path / "x", wait_lock=-1)


def test_forked_children_do_not_keep_the_lock(tmp_path: Path) -> None:
    """A render worker (forked) that outlives its run never holds the run's lock."""
    held = outlock.acquire(tmp_path)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: linger a while, as an orphaned worker would
        os.write(w, b"up")  # (its fork handlers have run)
        time.sleep(5)
        os._exit(0)
    try:
        assert os.read(r, 2) == b"up"
        held.release()
        outlock.acquire(tmp_path).release()  # free although the child still runs
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


# -- kill -9 at each phase ---------------------------------------------------------------------------

PHASES = [("plain", "locked:1"), ("plain", "epoch:3"), ("plain", "shard:2"), ("plain", "progress:2"),
          ("recipe", "locked:1"), ("recipe", "scan:2"), ("recipe", "pack:1"), ("recipe", "shard:2"),
          ("recipe", "progress:2"), ("recipe", "done:1")]


@pytest.mark.parametrize(("kind", "fault"), PHASES, ids=[f"{k}-{f}" for k, f in PHASES])
def test_kill_at_each_phase(inputs: list[Path], expected: set[tuple[int, int]], tmp_path: Path, kind: str,
                            fault: str) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("not ocml's")
    pid = forked(kind, inputs, out, fault=fault)
    assert reap(pid) == -signal.SIGKILL, error_of(out, pid)
    assert not (out / "report.json").exists() or fault == "done:1"
    if (out / ".ocml" / "progress.json").exists():  # a started run: the user's files beside it stay
        (out / "notes.txt").write_text("mine")
    if fault == "done:1":  # killed after "done": the spool is left, and any next run removes it
        assert (out / ".ocml" / "spool").is_dir()
        refused("E-OUT-MISMATCH", pack, kind, inputs, out, seq_len=SEQ * 2)
        assert not (out / ".ocml" / "spool").exists()
    before = snapshot(outside)
    res = pack(kind, inputs, out)
    assert res.already_done if fault == "done:1" else (res.resumed or fault == "locked:1")
    assert_correct(out, expected)
    assert snapshot(outside) == before
    assert not (out / "notes.txt").exists() or (out / "notes.txt").read_text() == "mine"


def test_a_killed_recipe_runs_spool_goes_with_overwrite(inputs: list[Path], expected: set[tuple[int, int]],
                                                        tmp_path: Path) -> None:
    """The spool of a run killed mid-scan is removed by the next run that replaces it (a plain one)."""
    out = tmp_path / "out"
    assert reap(forked("recipe", inputs, out, fault="scan:2")) == -signal.SIGKILL
    assert any((out / ".ocml" / "spool").rglob("*.bin"))
    refused("E-OUT-MISMATCH", pack, "plain", inputs, out)  # another run's state: kept for its resume
    assert any((out / ".ocml" / "spool").rglob("*.bin"))
    pack("plain", inputs, out, overwrite=True)
    assert_correct(out, expected)


# -- a full disk -------------------------------------------------------------------------------------

def _enospc(*args: Any, **kw: Any) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


FULL = [(k, w) for k in KINDS for w in ("after-rename", "mid-shard", "spool") if (k, w) != ("plain", "spool")]


@pytest.mark.parametrize(("kind", "where"), FULL, ids=[f"{k}-{w}" for k, w in FULL])
def test_disk_full_then_rerun(inputs: list[Path], expected: set[tuple[int, int]], tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch, kind: str, where: str) -> None:
    """ENOSPC at a shard's rename, inside a shard, or on the recipe spool: the run fails with the
    OSError (the CLI: exit 1, E-OUT-WRITE), releases the lock, and the rerun completes."""
    from ocml.encoder.pipeline import shards, spool

    out = tmp_path / "out"
    calls = {"n": 0}
    if where == "after-rename":
        monkeypatch.setenv(FAULT_ENV, "shard:1:enospc")
    else:
        target, name = (shards._ParquetPart, "write") if where == "mid-shard" else (spool.Spool, "append")
        real = getattr(target, name)

        def flaky(self: Any, *a: Any) -> Any:
            calls["n"] += 1
            if calls["n"] == (4 if where == "mid-shard" else 40):  # past the first checkpoint
                _enospc()
            return real(self, *a)

        monkeypatch.setattr(target, name, flaky)
    with pytest.raises(OSError) as info:
        pack(kind, inputs, out)
    assert info.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert pack(kind, inputs, out).resumed  # not refused: the failed run let its lock go
    assert_correct(out, expected)


def test_disk_full_on_the_command_line(inputs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(FAULT_ENV, "progress:0:enospc")
    out = tmp_path / "out"
    args = ["pack", *map(str, inputs), "--out", str(out), "--seq-len", str(SEQ), "--workers", "1", "--shard-size", "4"]
    assert cli_main(args) == 1
    err = capsys.readouterr().err
    assert "[E-OUT-WRITE]" in err and "No space left on device" in err and "rerun the same command" in err


# -- hostile --out contents --------------------------------------------------------------------------

def _outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "victim.txt").write_text("not ocml's")
    (d / "train-00000.parquet").write_text("not ocml's either")
    return d


FOREIGN = ["data/train-00003-of-00004.parquet", "data/train-notes.txt", "data/validation-00000.parquet",
           "data/train-extra/x.parquet", "npy/train-00000/notes.txt", "npy/.train-00999.tmp/input_ids.npy"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", FOREIGN)
def test_a_file_ocml_did_not_write_in_a_shard_folder(inputs: list[Path], complete: dict[str, Path], tmp_path: Path,
                                                     kind: str, name: str) -> None:
    """Refused by name (--overwrite or not), before anything is removed: never deleted, never a crash."""
    out = copy_of(complete, kind, tmp_path)
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    (out / name).write_text("the user's")
    before = snapshot(out)
    for over in ({"overwrite": True}, {}):
        exc = refused("E-OUT-CONFLICT", pack, kind, inputs, out, **over)
        owned = set(json.loads((out / ".ocml" / "owned.json").read_text())["owned"])
        parts = name.split("/")
        first_foreign = next(out.joinpath(*parts[:i]) for i in range(2, len(parts) + 1)
                             if not {"/".join(parts[:i]), "/".join(parts[:i]) + "/"} & owned)
        assert str(first_foreign) in exc.message and "move it out of --out" in str(exc.hint), exc
        assert snapshot(out) == before


@pytest.mark.parametrize("kind", KINDS)
def test_overwrite_keeps_the_users_files_beside(inputs: list[Path], expected: set[tuple[int, int]],
                                                complete: dict[str, Path], tmp_path: Path, kind: str) -> None:
    out = copy_of(complete, kind, tmp_path)
    (out / "notes.txt").write_text("mine")
    (out / "train-00000.parquet").write_text("mine too")  # beside, not in a shard folder
    (out / "data" / "mydata.jsonl").write_text("mine three")  # not a shard name
    pack(kind, inputs, out, overwrite=True)
    assert_correct(out, expected)
    assert (out / "notes.txt").read_text() == "mine" and (out / "train-00000.parquet").read_text() == "mine too"
    assert (out / "data" / "mydata.jsonl").read_text() == "mine three"


def _link_data(out: Path, outside: Path) -> None:
    shutil.move(str(out / "data"), str(outside / "data"))
    (out / "data").symlink_to(outside / "data")


def _marker_escapes(out: Path, outside: Path) -> None:
    marker = out / ".ocml" / "owned.json"
    owned = json.loads(marker.read_text())["owned"]
    marker.write_text(json.dumps({"owned": owned + ["../outside/victim.txt", str(outside / "train-00000.parquet")]}))


def _link_errors(out: Path, outside: Path) -> None:
    (out / "errors.jsonl").unlink()
    (out / "errors.jsonl").symlink_to(outside / "victim.txt")


def _link_state(out: Path, outside: Path) -> None:
    shutil.move(str(out / ".ocml"), str(outside / "state"))
    (out / ".ocml").symlink_to(outside / "state")


def _link_in_state(out: Path, outside: Path) -> None:
    (out / ".ocml" / ".progress.json.tmp").symlink_to(outside / "victim.txt")


def _link_shard(out: Path, outside: Path) -> None:
    shutil.move(str(out / "npy" / "train-00001"), str(outside / "shard"))
    (out / "npy" / "train-00001").symlink_to(outside / "shard")


ESCAPES = {"linked data/": _link_data, "marker naming ../ and /abs": _marker_escapes,
           "linked errors.jsonl": _link_errors, "linked .ocml/": _link_state, "link in .ocml/": _link_in_state,
           "linked shard folder": _link_shard}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", list(ESCAPES))
def test_nothing_leads_outside_out(inputs: list[Path], complete: dict[str, Path], tmp_path: Path, kind: str,
                                   case: str) -> None:
    """Links and marker keys that lead out of --out: E-OUT-ESCAPE; nothing outside (or inside) touched."""
    out, outside = copy_of(complete, kind, tmp_path), _outside(tmp_path)
    ESCAPES[case](out, outside)
    before, before_out = snapshot(outside), snapshot(out)
    for over in ({"overwrite": True}, {}):
        try:
            pack(kind, inputs, out, **over)
        except InputError as exc:
            assert exc.code == "E-OUT-ESCAPE", exc
        else:  # only a complete run that has nothing to write may pass
            assert not over and case == "linked errors.jsonl"
        assert snapshot(outside) == before
        assert snapshot(out) == before_out


@pytest.mark.parametrize("kind", KINDS)
def test_a_new_out_with_a_linked_shard_folder(inputs: list[Path], tmp_path: Path, kind: str) -> None:
    outside = _outside(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "data").symlink_to(outside)
    before = snapshot(outside)
    refused("E-OUT-ESCAPE", pack, kind, inputs, out, overwrite=True)
    assert snapshot(outside) == before
