"""``save_pretrained`` folders load in every transformers version pyproject allows.

transformers 5 names its fast tokenizer class ``TokenizersBackend``; a folder that says so
fails in 4.x ("Tokenizer class TokenizersBackend does not exist").  ocml writes
``PreTrainedTokenizerFast``, which both read.  Checked here with the installed transformers
(every format: class name, templates, eos/pad, response template where transformers has
them), and with transformers 4.x in a separate Python given by ``OCML_TRANSFORMERS4_PYTHON``
(``scripts/test.sh`` makes one: a scratch venv with ``transformers==4.57.*``): there the
folder loads, and both chat templates give ocml's ids.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ocml import encoder
from ocml import vocab

import transformers

FORMATS = list(vocab.FORMAT_NAMES)
CONV = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi 🙂"},
        {"role": "assistant", "content": "Hello!"}]


@pytest.mark.parametrize("fmt", FORMATS)
def test_folder_names_a_portable_class_and_loads(tmp_path, fmt, hf_folders):
    enc = encoder.Encoder(fmt)
    tmp_path = hf_folders.folder(tmp_path / "tok", fmt)  # enc.save_pretrained, once per session
    cfg = json.loads((tmp_path / "tokenizer_config.json").read_text("utf-8"))
    assert cfg["tokenizer_class"] == "PreTrainedTokenizerFast"
    tok = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert set(tok.chat_template) == {"default", "training", "inference"}
    out = tok.apply_chat_template(CONV, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    r = enc.render(CONV)
    assert out["input_ids"] == r.ids.tolist() and out["assistant_masks"] == r.mask.astype(int).tolist()
    from ocml.encoder.template.save import special_roles

    assert tok.bos_token == special_roles(enc).get("bos_token")  # Apertus: <s>
    # a bos token in the folder adds nothing when text is encoded (templates write it themselves)
    assert tok("Hi 🙂")["input_ids"] == enc.tokenizer.encode_text("Hi 🙂")
    if hasattr(tok, "parse_response"):
        assert tok.response_template == cfg["response_template"]


LOADER = r"""
import json, sys
import transformers
from transformers import AutoTokenizer
folder, conv = sys.argv[1], json.loads(sys.argv[2])
tok = AutoTokenizer.from_pretrained(folder)
train = tok.apply_chat_template(conv, chat_template="training", tokenize=True, return_dict=True,
                                return_assistant_tokens_mask=True)
prompt = tok.apply_chat_template(conv[:-1], add_generation_prompt=True, tokenize=True)
print(json.dumps({"version": transformers.__version__, "class": type(tok).__name__, "eos": tok.eos_token,
                  "ids": list(train["input_ids"]), "mask": list(train["assistant_masks"]), "prompt": list(prompt)}))
"""


@pytest.mark.parametrize("fmt", FORMATS)
def test_folder_loads_in_transformers_4(tmp_path, fmt, hf_folders):
    py = os.environ.get("OCML_TRANSFORMERS4_PYTHON")
    if not py:
        pytest.skip("set OCML_TRANSFORMERS4_PYTHON to a Python with transformers 4.x (scripts/test.sh does)")
    enc = encoder.Encoder(fmt)
    tmp_path = hf_folders.folder(tmp_path / "tok", fmt)  # enc.save_pretrained, once per session
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["HF_HUB_OFFLINE"] = "1"
    run = subprocess.run([py, "-c", LOADER, str(tmp_path), json.dumps(CONV)], capture_output=True, text=True,
                         env=env, cwd=str(tmp_path), timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["version"].startswith("4.") and got["class"] == "PreTrainedTokenizerFast"
    r = enc.render(CONV)
    assert got["ids"] == r.ids.tolist() and got["mask"] == r.mask.astype(int).tolist()
    assert got["prompt"] == enc.render(CONV[:-1], mode="prompt").ids.tolist()
    from ocml.encoder.template.save import special_roles

    assert got["eos"] == special_roles(enc)["eos_token"]
