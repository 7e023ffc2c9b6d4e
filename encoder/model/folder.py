"""A local HF model folder as ocml reads it: its tokenizer, its chat template, its stop ids.

Only files on disk (``tokenizer.json``, ``tokenizer_config.json``, ``chat_template.jinja`` or
the config's ``chat_template``, ``generation_config.json``); nothing is downloaded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ocml.vocab import Tokenizer


class ModelFolderError(InputError):
    """The folder is not a usable HF model / tokenizer folder."""

    code = "E-MODEL-FOLDER"


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelFolderError(f"{path} is not valid JSON ({exc})", field=path.name) from None
    return data if isinstance(data, dict) else None


def _chat_template(path: Path, config: dict[str, Any] | None) -> str | None:
    """The default template as transformers picks it: ``chat_template.jinja``, else the config's
    ``chat_template`` (a string, or a list of named templates with one named "default")."""
    file = path / "chat_template.jinja"
    if file.is_file():
        return file.read_text("utf-8")
    tpl = (config or {}).get("chat_template")
    if isinstance(tpl, str):
        return tpl
    if isinstance(tpl, list):
        named = {t.get("name"): t.get("template") for t in tpl if isinstance(t, dict)}
        return named.get("default")
    return None


@dataclass
class ModelFolder:
    path: Path
    chat_template: str
    config: dict[str, Any]
    generation_config: dict[str, Any] | None
    _tokenizer: Tokenizer | None = field(default=None, repr=False)
    _hf: Any = field(default=None, repr=False)

    @classmethod
    def open(cls, path: str | Path) -> ModelFolder:
        p = Path(path)
        if not p.is_dir():
            raise ModelFolderError(f"{p} is not a folder", field="--model",
                                   hint="give a local HF model folder (tokenizer.json, tokenizer_config.json, chat template)")
        if not (p / "tokenizer.json").is_file():
            raise ModelFolderError(f"{p} has no tokenizer.json", field="tokenizer.json",
                                   hint="ocml reads fast (tokenizers) tokenizers; save one with tokenizer.save_pretrained(dir)")
        config = _read_json(p / "tokenizer_config.json") or {}
        template = _chat_template(p, config)
        if not template:
            raise ModelFolderError(f"{p} has no chat template (chat_template.jinja or tokenizer_config.json 'chat_template')",
                                   field="chat_template", hint="pass --format F and --tokenizer DIR instead of --model")
        return cls(p, template, config, _read_json(p / "generation_config.json"))

    # -- the two renderers' inputs ----------------------------------------------------------
    def tokenizer(self) -> Tokenizer:
        """The model's own tokenizer as an ocml ``Tokenizer``: its special tokens at its ids."""
        if self._tokenizer is None:
            from ocml import vocab

            self._tokenizer = vocab.from_hf(self.path)
        return self._tokenizer

    def hf(self) -> Any:
        """transformers' ``AutoTokenizer`` of the folder, with its chat template (the reference renderer)."""
        if self._hf is None:
            from ocml.vocab.errors import require

            transformers = require("transformers")
            self._hf = transformers.AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
            self._hf.chat_template = self.chat_template
        return self._hf

    def template_ids(self, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None, *,
                     add_generation_prompt: bool) -> list[int] | Exception:
        """The ids transformers gives: the template's text, tokenized with special tokens parsed
        and none added.  A template that raises gives the exception (some refuse tools).
        Templates that write a date read the clock (``strftime_now``), as in deployment."""
        try:
            text = self.hf().apply_chat_template(
                list(messages), tools=tools, add_generation_prompt=add_generation_prompt, tokenize=False)
            return list(self.hf().encode(text, add_special_tokens=False))
        except Exception as exc:  # noqa: BLE001 - any template failure is evidence, not a crash
            return exc

    def decode_token(self, i: int) -> str:
        return self.tokenizer().token_bytes(i).decode("utf-8", "replace")

    # -- stops ------------------------------------------------------------------------------
    def eos_ids(self) -> set[int]:
        ids = (self.generation_config or {}).get("eos_token_id")
        if isinstance(ids, int):
            return {ids}
        return {i for i in ids if isinstance(i, int)} if isinstance(ids, list) else set()

    def stop_warnings(self, fmt: str) -> list[str]:
        """A format stop id that generation_config.json does not list: generate() would run past it."""
        if self.generation_config is None:
            return []
        from ..stops.ids import stop_ids

        tok = self.tokenizer()
        have = self.eos_ids()
        out = []
        for i in stop_ids(fmt, tokenizer=tok):
            if i not in have:
                out.append(f"generation_config.json eos_token_id does not list {self.decode_token(i)!r} (id {i}): "
                           "transformers generate() will not stop there (ocml.stops.hf_stopping_criteria does)")
        return out
