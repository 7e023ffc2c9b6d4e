"""Resume after ``kill -9``: rerunning the same pack job gives exactly the uninterrupted output."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ocml.encoder.pipeline.run import FAULT_ENV, PackOptions, run

from support.pipeline import write_data
from support.pipeline import same_output
from support.paths import ROOT

# Small epochs, chunks and shards so that a short input crosses many resume points.
KW: dict[str, Any] = dict(seq_len=256, shard_size=6, epoch_tokens=2500, chunk_records=8, window=40,
                          outputs=("parquet", "npy"), plot=False)
CHILD = """
import json, sys
from pathlib import Path
from ocml.encoder.pipeline.run import PackOptions, run
if __name__ == "__main__":
    kw = json.loads(sys.argv[1])
    kw["outputs"] = tuple(kw["outputs"])
    run(PackOptions(inputs=tuple(sys.argv[2:-1]), out=Path(sys.argv[-1]), workers=2, **kw))
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = tmp_path_factory.mktemp("resume-in")
    write_data(d / "a.jsonl", 70, seed=11, bad={9: "{broken", 33: json.dumps({"nothing": 1})})
    recs = write_data(d / "tmp.jsonl", 50, seed=12)
    (d / "b.jsonl.gz").write_bytes(gzip.compress((d / "tmp.jsonl").read_bytes()))
    pq.write_table(pa.Table.from_pylist(write_data(d / "tmp2.jsonl", 60, seed=13) + recs[:5]), d / "c.parquet",
                   row_group_size=7)
    return [d / "a.jsonl", d / "b.jsonl.gz", d / "c.parquet"]


@pytest.fixture(scope="module")
def reference(inputs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("resume-ref") / "out"
    res = run(PackOptions(inputs=tuple(map(str, inputs)), out=out, workers=1, **KW))
    assert res.report["shards"]["count"] >= 8  # enough shards to interrupt in the middle
    return out


def child(inputs: list[Path], out: Path, fault: str | None = None) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.pop(FAULT_ENV, None)
    if fault:
        env[FAULT_ENV] = fault
    return subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(KW), *map(str, inputs), str(out)],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("fault", ["shard:2", "progress:4", "epoch:3"])
def test_resume_after_kill_at_fault_point(inputs: list[Path], reference: Path, tmp_path: Path, fault: str) -> None:
    out = tmp_path / "out"
    p = child(inputs, out, fault)
    p.communicate(timeout=120)
    assert p.returncode == -signal.SIGKILL
    assert not (out / "report.json").exists()
    saved = json.loads((out / ".ocml" / "progress.json").read_text())["checkpoint"]
    res = run(PackOptions(inputs=tuple(map(str, inputs)), out=out, workers=1, **KW))
    assert res.resumed
    # The speed is the resumed run's own: its records / tokens from the checkpoint on.
    t, c = res.report["timing"], res.report["counts"]
    assert saved["counters"]["records"] > 0 and t["records"] == c["records"] - saved["counters"]["records"]
    assert t["tokens"] == c["tokens"] - saved["counters"]["tokens"] < c["tokens"]
    assert t["tokens_per_s"] == pytest.approx(t["tokens"] / t["seconds"], rel=1e-2)
    if fault != "epoch:3":
        assert res.report["timing"]["resumed_from_shard"] == int(fault.split(":")[1]) + (fault[0] == "p")
    same_output(reference, out)


def test_resume_after_external_kill(inputs: list[Path], reference: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    p = child(inputs, out)
    deadline = time.time() + 120
    progress = out / ".ocml" / "progress.json"
    while time.time() < deadline and p.poll() is None:
        try:
            if json.loads(progress.read_text())["shards"] >= 3:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.005)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL, "the run ended before it could be interrupted"
    assert not (out / "report.json").exists()
    rerun = child(inputs, out)  # the same command again
    _, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err.decode()
    same_output(reference, out)
    assert json.loads(progress.read_text())["status"] == "done"
