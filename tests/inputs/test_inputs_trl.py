"""The preference / KTO rows of ``ocml pack`` read by TRL's own collators, as they are (no
re-tokenizing): ``DataCollatorForPreference`` and ``DataCollatorForUnpairedPreference`` (TRL 1.x
DPO / KTO, ``--pair-columns dpo``) and ``DPODataCollatorWithPadding`` (TRL's ORPO / CPO,
``--pair-columns orpo``).  Needs torch and accelerate (TRL's trainer modules import them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")  # trl.trainer imports it

from ocml import encoder  # noqa: E402
from ocml.encoder.inputs import render_pair  # noqa: E402

U = [{"role": "user", "content": "What colour is the sky?"}]
PAIRS = [{"prompt": U, "chosen": [{"role": "assistant", "content": "Blue."}],
          "rejected": [{"role": "assistant", "content": "Green, mostly, at dusk."}]},
         {"chosen": U + [{"role": "assistant", "content": "Blue!"}], "rejected": U + [{"role": "assistant",
                                                                                      "content": "Red."}]}]


pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_trl]


def _pack(tmp_path: Path, name: str, records: list, *args: str) -> list[dict]:
    import pyarrow.parquet as pq

    src = tmp_path / f"{name}.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    res = subprocess.run([sys.executable, "-m", "ocml.encoder.cli", "pack", str(src), "--no-pack", "--out",
                          str(tmp_path / name), "--workers", "1", *args], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    return pq.read_table(tmp_path / name / "data" / "train-00000.parquet").to_pylist()


def test_dpo_collator_reads_rows(tmp_path):
    from trl.trainer.dpo_trainer import DataCollatorForPreference

    rows = _pack(tmp_path, "dpo", PAIRS, "--shape", "preference")
    enc = encoder.Encoder("openchatml-2.2")
    batch = DataCollatorForPreference(pad_token_id=0)(
        [{k: r[k] for k in ("prompt_ids", "chosen_ids", "rejected_ids")} for r in rows])
    n = len(rows)
    for i, rec in enumerate(PAIRS):
        conv = (rec.get("prompt") or []) + rec["chosen"] if "prompt" in rec else rec["chosen"]
        full = enc.render(conv)  # prompt + chosen rendered for training, as one conversation
        got = batch["input_ids"][i][batch["attention_mask"][i].bool()].tolist()
        assert got == full.ids.tolist()
        # TRL trains the completion: exactly the tokens after the shared prompt
        assert batch["completion_mask"][i].tolist()[:len(got)] == [0] * len(rows[i]["prompt_ids"]) + \
            [1] * len(rows[i]["chosen_ids"])
        rej = batch["input_ids"][n + i][batch["attention_mask"][n + i].bool()].tolist()
        assert rej == rows[i]["prompt_ids"] + rows[i]["rejected_ids"]
        assert render_pair(enc, rec).to_dict()["chosen_ids"] == rows[i]["chosen_ids"]


def test_kto_collator_reads_rows(tmp_path):
    from trl.trainer.kto_trainer import DataCollatorForUnpairedPreference

    recs = [{"prompt": U, "completion": [{"role": "assistant", "content": "Blue."}], "label": True},
            {"prompt": U, "completion": [{"role": "assistant", "content": "Green."}], "label": False}]
    rows = _pack(tmp_path, "kto", recs, "--shape", "kto")
    batch = DataCollatorForUnpairedPreference(pad_token_id=0)(
        [{k: r[k] for k in ("prompt_ids", "completion_ids", "label")} for r in rows])
    assert batch["label"].tolist() == [True, False]
    got = batch["input_ids"][0][batch["attention_mask"][0].bool()].tolist()
    assert got == rows[0]["prompt_ids"] + rows[0]["completion_ids"]


def test_orpo_collator_reads_rows(tmp_path):
    from trl.experimental.utils import DPODataCollatorWithPadding

    rows = _pack(tmp_path, "orpo", PAIRS, "--shape", "preference", "--pair-columns", "orpo")
    batch = DPODataCollatorWithPadding(pad_token_id=0)(rows)
    r = rows[0]
    n = len(r["chosen_input_ids"])
    assert batch["chosen_input_ids"][0][:n].tolist() == r["chosen_input_ids"]
    labels = batch["chosen_labels"][0][:n].tolist()
    assert labels[:len(r["prompt_input_ids"])] == [-100] * len(r["prompt_input_ids"])
    assert labels[len(r["prompt_input_ids"]):] == r["chosen_input_ids"][len(r["prompt_input_ids"]):]
