"""Resume of a recipe run after ``kill -9``, at every phase: the rerun's output is byte-identical."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ocml.encoder.pipeline.recipe import resolve_recipe
from ocml.encoder.pipeline.recipe_run import run_recipe
from ocml.encoder.pipeline.run import FAULT_ENV

from support.pipeline import write_data
from support.pipeline import same_output
from support.paths import ROOT

CHILD = """
import json, sys
from ocml.encoder.pipeline.recipe import resolve_recipe
from ocml.encoder.pipeline.recipe_run import run_recipe
if __name__ == "__main__":
    run_recipe(resolve_recipe(json.loads(sys.argv[1])), sys.argv[2])
"""


def recipe(d: Path, workers: int = 1) -> dict[str, Any]:
    # Small epochs, chunks and shards: many scan checkpoints and shards to interrupt.
    return {"seed": 5, "seq_len": 256, "shard_size": 3, "epoch_tokens": 2500, "chunk_records": 8, "window": 40,
            "output": "both", "plot": False, "workers": workers, "validation": 0.15, "dedup": "exact",
            "sources": [{"path": str(d / "a.jsonl"), "weight": 1.5, "name": "a"},
                        {"path": str(d / "b.jsonl"), "weight": 0.5, "name": "b", "mask": "last"}]}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("recipe-resume-in")
    a = write_data(d / "a.jsonl", 60, seed=31, bad={9: "{broken"})
    write_data(d / "b.jsonl", 40, seed=32)
    with open(d / "b.jsonl", "a", encoding="utf-8") as f:  # duplicates across sources
        f.writelines(json.dumps(x) + "\n" for x in a[20:26] if x is not None)
    return d


@pytest.fixture(scope="module")
def reference(inputs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("recipe-resume-ref") / "out"
    res = run_recipe(resolve_recipe(recipe(inputs)), out)
    assert len(res.report["recipe"]["splits"]["train"]["shards"]) >= 6
    assert len(res.report["recipe"]["splits"]["validation"]["shards"]) >= 2
    return out


def child(inputs: Path, out: Path, fault: str | None = None) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.pop(FAULT_ENV, None)
    if fault:
        env[FAULT_ENV] = fault
    return subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(recipe(inputs, workers=2)), str(out)],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("fault", ["scan:2", "pack:1", "shard:2", "progress:3", "validation-shard:0"])
def test_recipe_resume_after_kill(inputs: Path, reference: Path, tmp_path: Path, fault: str) -> None:
    out = tmp_path / "out"
    p = child(inputs, out, fault)
    _, err = p.communicate(timeout=180)
    assert p.returncode == -signal.SIGKILL, err.decode()
    assert not (out / "report.json").exists()
    state = json.loads((out / ".ocml" / "progress.json").read_text())["recipe"]
    phase = fault.split(":")[0]
    if phase == "scan":  # killed mid-scan: the rerun reads on from a checkpoint inside the first source
        assert state["phase"] == "scan" and state["scan"]["source"] == 0 and state["scan"]["position"]
    elif phase == "pack":
        assert state["phase"] == "scan" and state["scan"]["source"] == 2  # scan complete, packing redone
    else:  # complete shards are kept
        n_train = len(json.loads((reference / "report.json").read_text())["recipe"]["splits"]["train"]["shards"])
        assert state["written"] == {"shard:2": {"train": 2, "validation": 0},  # shard 2 renamed, not recorded
                                    "progress:3": {"train": 4, "validation": 0},
                                    "validation-shard:0": {"train": n_train, "validation": 0}}[fault]
    res = run_recipe(resolve_recipe(recipe(inputs)), out)
    assert res.resumed
    # The speed is the resumed run's own: the records / tokens it scanned after the checkpoint.
    t, c = res.report["timing"], res.report["counts"]
    scanned = sum(x["records"] for x in state["scan"]["counts"])
    assert t["records"] == c["records"] - scanned and t["tokens"] <= c["tokens"]
    assert (0 < scanned < c["records"]) if phase == "scan" else t["records"] == t["tokens"] == 0
    if phase in ("shard", "progress"):
        assert t["resumed_from_shard"] == state["written"]["train"]
    same_output(reference, out)
    ra, rb = (json.loads((x / "report.json").read_text()) for x in (reference, out))
    assert ra["recipe"] == rb["recipe"]


def test_recipe_resume_after_external_kill(inputs: Path, reference: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    p = child(inputs, out)
    deadline = time.time() + 120
    progress = out / ".ocml" / "progress.json"
    while time.time() < deadline and p.poll() is None:
        try:
            if json.loads(progress.read_text())["recipe"]["phase"] in ("scan", "write"):
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.002)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL, "the run ended before it could be interrupted"
    rerun = child(inputs, out)  # the same command again
    _, err = rerun.communicate(timeout=180)
    assert rerun.returncode == 0, err.decode()
    same_output(reference, out)
    assert json.loads(progress.read_text())["status"] == "done"
