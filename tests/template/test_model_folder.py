"""``--model DIR``: a local HF model folder's tokenizer, and its format detected from its own chat
template by comparing ids on probe conversations.

Folders are built the way users have them: a tokenizer saved with ``save_pretrained`` and the
real deployed templates (gpt-oss and Qwen2.5 from the ``trl`` wheel, the Apertus reference
template from ``../shared/refdata``), plus Phi-3's template, which no ocml format speaks.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import shared

from ocml.encoder.errors import OcmlError
from ocml.encoder.formats.chatml import QWEN_SYSTEM
from ocml.encoder.model import Detection, FormatDetectionError, ModelFolder, ModelFolderError, detect_format

from support.paths import ROOT


pytestmark = pytest.mark.needs_trl


def _trl_templates() -> Path:
    spec = importlib.util.find_spec("trl")  # installed by scripts/test.sh (no dependencies): its templates
    assert spec is not None and spec.submodule_search_locations, "trl is not installed (scripts/test.sh installs it)"
    return Path(list(spec.submodule_search_locations)[0]) / "chat_templates"


def _folder(hf_folders, root: Path, name: str, fmt: str, template: str, tok: str | None = None,  # type: ignore[no-untyped-def]
            **config) -> Path:
    """A model folder: ``Encoder(fmt, tok registered for fmt).save_pretrained`` (session cache) with
    the model's own chat template instead of ocml's."""
    d = hf_folders.folder(root / name, fmt, tok, register=fmt if tok else None)
    (d / "chat_template.jinja").write_text(template, "utf-8")
    shutil.rmtree(d / "additional_chat_templates", ignore_errors=True)
    # the model's template only: drop the ocml templates save_pretrained stores in the config
    cfg = d / "tokenizer_config.json"
    data = {k: v for k, v in json.loads(cfg.read_text("utf-8")).items() if k != "chat_template"}
    cfg.write_text(json.dumps({**data, **config}), "utf-8")
    return d


@pytest.fixture(scope="module")
def folders(tmp_path_factory, hf_folders) -> dict[str, Path]:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("models")
    trl = _trl_templates()
    apertus_template = shared("refdata/apertus_format.chat_template.jinja")
    out = {
        "gpt-oss": _folder(hf_folders, root, "gpt-oss", "harmony", (trl / "gptoss.jinja").read_text("utf-8")),
        "qwen2.5": _folder(hf_folders, root, "qwen2.5", "chatml", (trl / "qwen2_5.jinja").read_text("utf-8"),
                           "cl100k_base"),
        # the real Apertus folder declares <s> as bos (its template starts with {{ bos_token }})
        "apertus": _folder(hf_folders, root, "apertus", "apertus", apertus_template.read_text("utf-8"), bos_token="<s>"),
        "phi3": _folder(hf_folders, root, "phi3", "chatml", (trl / "phi3.jinja").read_text("utf-8"), "cl100k_base"),
        # Llama 3 folders: the llama3 encoding (Meta's ids), bos declared as the real folders do
        "llama3.1": _folder(hf_folders, root, "llama3.1", "llama3", (trl / "llama3_1.jinja").read_text("utf-8"),
                            bos_token="<|begin_of_text|>"),
        "llama3.2": _folder(hf_folders, root, "llama3.2", "llama3", (trl / "llama3_2.jinja").read_text("utf-8"),
                            bos_token="<|begin_of_text|>"),
        "llama3": _folder(hf_folders, root, "llama3", "llama3", (trl / "llama3.jinja").read_text("utf-8"),
                          bos_token="<|begin_of_text|>"),
    }
    gen = out["gpt-oss"] / "generation_config.json"
    gen.write_text(json.dumps({**json.loads(gen.read_text("utf-8")), "eos_token_id": [200002, 199999]}), "utf-8")
    return out


def _differing(det: Detection) -> set[str]:
    return {p.probe for p in det.result.probes if not p.matched}


def test_gpt_oss_template_is_harmony(folders):
    det = detect_format(folders["gpt-oss"])
    assert det.format == "harmony" and det.matched and not det.forced
    # the official template's documented departures from openai-harmony's bytes (docs/templates.md table):
    # a blank line after developer instructions, and `commentary json` without <|constrain|>
    assert _differing(det) == {"system+user", "tool-call+result"}
    call = next(p for p in det.result.probes if p.probe == "tool-call+result")
    assert "template ' json'" in call.detail
    # generation_config.json lists <|return|> but not <|call|>: generate() would run past a tool call
    assert any("<|call|>" in w and "200012" in w for w in det.warnings)
    assert any("strftime_now" in w for w in det.warnings)


def test_qwen_template_is_chatml_with_qwen_default_system(folders):
    det = detect_format(folders["qwen2.5"])
    assert det.format == "chatml" and det.options == {"default_system": QWEN_SYSTEM}
    assert {"user", "multi-turn", "system+user", "tools", "tool-call+result", "answer"} <= \
        {p.probe for p in det.result.probes if p.matched}


def test_apertus_reference_template_is_apertus(folders):
    det = detect_format(folders["apertus"])
    assert det.format == "apertus" and det.matched
    tools = next(p for p in det.result.probes if p.probe == "tools")
    assert tools.status == "template-error"  # the reference template does not read OpenAI-wrapped tools


def test_llama3_templates_are_llama3(folders):
    """3.1: the fixed date; 3.2: today's (strftime_now), passed as date= in Llama's spelling; 3.0: no
    system header."""
    det = detect_format(folders["llama3.1"])
    assert det.format == "llama3" and det.matched and det.options == {}
    det = detect_format(folders["llama3.2"])  # the template reads the clock: so does detection
    assert det.format == "llama3" and det.matched and det.result.candidate.dated == "encoder"
    assert det.result.candidate.encoder_options("2026-03-02") == {"date": "02 Mar 2026"}
    assert any("strftime_now" in w for w in det.warnings)
    det = detect_format(folders["llama3"])
    assert det.format == "llama3" and det.options == {"system_header": False}
    assert {"user", "multi-turn"} <= {p.probe for p in det.result.probes if p.matched}


def test_a_template_no_format_speaks_is_a_typed_error_naming_the_closest(folders):
    with pytest.raises(FormatDetectionError) as err:
        detect_format(folders["phi3"])
    e = err.value
    assert e.code == "E-MODEL-FORMAT" and e.field == "chat_template"
    assert "closest is" in e.message and "template '" in e.message and "ocml '" in e.message
    assert "--format" in (e.hint or "")


def test_given_format_is_compared_and_a_mismatch_warns(folders):
    det = detect_format(folders["phi3"], format="chatml")
    assert det.forced and not det.matched and det.format == "chatml"
    assert "matches no ocml format" in det.warnings[0]
    ok = detect_format(folders["qwen2.5"], format="chatml")
    assert ok.matched and ok.forced and ok.options == {"default_system": QWEN_SYSTEM}


def test_detected_encoder_gives_the_templates_ids_on_new_conversations(folders):
    folder = ModelFolder.open(folders["qwen2.5"])
    enc = detect_format(folder).encoder()
    assert enc.tokenizer.control_id("<|im_start|>") == folder.hf().convert_tokens_to_ids("<|im_start|>")
    msgs = [{"role": "user", "content": "Plan a trip to Kyoto."},
            {"role": "assistant", "content": "Day 1: temples.\nDay 2: food."},
            {"role": "user", "content": "Shorter, please — 🙂"}]
    want = folder.template_ids(msgs, None, add_generation_prompt=True)
    assert enc.render(msgs, mode="prompt").ids.tolist() == want


def test_bad_folders_are_typed_errors(tmp_path, folders):
    with pytest.raises(ModelFolderError) as err:
        ModelFolder.open(tmp_path / "nope")
    assert err.value.code == "E-MODEL-FOLDER"
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelFolderError, match="tokenizer.json"):
        ModelFolder.open(tmp_path / "empty")
    bare = tmp_path / "bare"
    shutil.copytree(folders["qwen2.5"], bare)
    (bare / "chat_template.jinja").unlink()
    with pytest.raises(ModelFolderError, match="no chat template") as err:
        ModelFolder.open(bare)
    assert isinstance(err.value, OcmlError) and err.value.field == "chat_template"


def _ocml(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ocml.encoder.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


def test_cli_pack_with_model_folder(tmp_path, folders):
    data = tmp_path / "chat.jsonl"
    rows = [{"messages": [{"role": "user", "content": f"Question {i}?"}, {"role": "assistant", "content": f"Answer {i}."}]}
            for i in range(20)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    out = tmp_path / "out"
    res = _ocml("pack", str(data), "--model", str(folders["qwen2.5"]), "--seq-len", "256", "--out", str(out),
                "--workers", "1", "--no-progress")
    assert res.returncode == 0, res.stderr
    assert "format chatml(default_system=" in res.stderr
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    assert manifest["format"] == "chatml" and manifest["model"]["format"] == "chatml"
    assert manifest["options"]["format_options"]["default_system"] == QWEN_SYSTEM
    assert manifest["tokenizer"]["name"] == "qwen2.5"

    bad = _ocml("pack", str(data), "--model", str(folders["phi3"]), "--seq-len", "256", "--out", str(tmp_path / "o2"))
    assert bad.returncode == 2 and "E-MODEL-FORMAT" in bad.stderr and "Traceback" not in bad.stderr
    both = _ocml("pack", str(data), "--model", str(folders["qwen2.5"]), "--tokenizer", "cl100k_base",
                 "--seq-len", "256", "--out", str(tmp_path / "o3"))
    assert both.returncode == 2 and "--model and --tokenizer" in both.stderr


def test_recipe_with_model_folder(tmp_path, folders):
    data = tmp_path / "chat.jsonl"
    rows = [{"messages": [{"role": "user", "content": f"Q{i}?"}, {"role": "assistant", "content": f"A{i}."}]}
            for i in range(30)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(f"model: {folders['qwen2.5']}\nseq_len: 256\nseed: 3\nvalidation: 0.2\n"
                      f"sources:\n  - path: {data}\n    weight: 2\n", "utf-8")
    out = tmp_path / "out"
    res = _ocml("pack", "--recipe", str(recipe), "--out", str(out), "--workers", "1", "--no-progress")
    assert res.returncode == 0, res.stderr
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    assert manifest["format"] == "chatml" and manifest["model"]["options"] == {"default_system": QWEN_SYSTEM}
    assert manifest["recipe"]["model"] == str(folders["qwen2.5"])
    again = _ocml("pack", "--recipe", str(out / "manifest.json"), "--out", str(tmp_path / "again"), "--workers", "1")
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "again" / "manifest.json").read_text("utf-8"))["fingerprint"] == manifest["fingerprint"]
