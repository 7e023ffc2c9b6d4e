"""HF ``tokenizers`` / ``transformers`` backend.

We work on a private copy of the backend tokenizer: registering control tokens
never mutates the caller's object.  Special-token text in content is kept
ordinary by ``encode_special_tokens = True``; because HF still matches
*non-special* added tokens in text, every control token of a registered format
is (re)declared ``special`` in the copy.

Text runs: ``encode_text(s)`` gives the ids the model's own tokenizer gives ``s``
inside a whole sequence, right after a special token (every text piece of a render
follows a control).  For SentencePiece-style tokenizers that depends on where the
tokenizer prepends ``\u2581``:

* Metaspace ``prepend_scheme="first"`` (non-legacy Llama, Mistral conversions)
  prepends only to the run at offset 0 of the input: a run after a control gets
  nothing.  Encoding a piece on its own would put it at offset 0, so pieces are
  encoded by a copy whose scheme is ``"never"`` (the same thing for every run but
  the input's first: no extra cost per call).
* Metaspace ``"always"``, the legacy ``Prepend("\u2581")`` normalizer (Llama 2,
  Mistral v1 tokenizer.json files) and ByteLevel ``add_prefix_space`` prepend to
  every run between special tokens: a piece on its own already gets exactly that.
  The prefix is not content: ``run_prefix`` names it and decoding drops it at each
  run start.  (``"always"`` does not prepend to a run that starts with a space,
  so there ``"x"`` and ``" x"`` are the same ids, for the model too.)  Text that
  continues a run (a piece right after another text piece) gets no prefix inside a
  whole text: ``encode_continuation`` encodes it with every prefix switched off.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .bytelevel import BYTE_DECODER
from .errors import InputTypeError, VocabError, article, as_strings, expect, require
from .tables import canonical_formats, control_table
from .tokenizer import Tokenizer, specials_digest

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast


def _repair(text: str) -> str:
    """Lone surrogates (not encodable as UTF-8) become U+FFFD; other text is returned as is."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _is_byte_level(spec: dict[str, Any]) -> bool:
    text = json.dumps(spec.get("decoder")) + json.dumps(spec.get("pre_tokenizer"))
    return "ByteLevel" in text


def _piece_bytes(piece: str, byte_level: bool, space: str = "\u2581") -> bytes:
    if byte_level:
        try:
            return bytes(BYTE_DECODER[c] for c in piece)
        except KeyError:
            return piece.encode("utf-8")
    # SentencePiece-style vocabularies: <0xNN> byte tokens and U+2581 (``space``) for spaces.
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        try:
            return bytes([int(piece[3:5], 16)])
        except ValueError:
            pass
    return piece.replace(space, " ").encode("utf-8")


def _nodes(node: Any, key: str) -> list[dict[str, Any]]:
    """Every component of a tokenizer.json normalizer / pre-tokenizer / decoder tree
    (``key`` names a Sequence's list: ``normalizers``, ``pretokenizers``, ``decoders``)."""
    if isinstance(node, list):
        return [n for item in node for n in _nodes(item, key)]
    if not isinstance(node, dict):
        return []
    return [node, *_nodes(node.get(key), key)]


def _space_char(spec: dict[str, Any]) -> str:
    """The character a SentencePiece-style vocabulary writes for a space."""
    for node in _nodes(spec.get("pre_tokenizer"), "pretokenizers") + _nodes(spec.get("decoder"), "decoders"):
        rep = node.get("replacement") if node.get("type") == "Metaspace" else None
        if isinstance(rep, str) and len(rep) == 1:
            return rep
    return "\u2581"


def _scheme(node: dict[str, Any]) -> str:
    """A Metaspace's prepend scheme (tokenizers < 0.14 wrote ``add_prefix_space`` instead)."""
    return node.get("prepend_scheme") or ("always" if node.get("add_prefix_space", True) else "never")


def _prefix_free(tok: Any, tokenizers: Any, *, after_text: bool) -> Any:
    """A copy of ``tok`` that adds no prefix where ``tok`` would not inside a whole text, or
    ``None`` when ``tok`` already encodes a piece that way (see the module docstring).

    ``after_text=False``: a run right after a special token; only Metaspace ``"first"``
    differs (it prepends at input offset 0, where a piece encoded alone sits).
    ``after_text=True``: text that continues a run; nothing may prepend.
    """
    spec = json.loads(tok.to_str())
    changed = False
    for node in _nodes(spec.get("pre_tokenizer"), "pretokenizers"):
        kind = node.get("type")
        if kind == "Metaspace" and _scheme(node) in (("first", "always") if after_text else ("first",)):
            node["prepend_scheme"] = "never"
            node.pop("add_prefix_space", None)
            changed = True
        elif kind == "ByteLevel" and after_text and node.get("add_prefix_space"):
            node["add_prefix_space"] = False
            changed = True
    if after_text:
        space = _space_char(spec)

        def drop(node: Any) -> Any:  # legacy Llama: Prepend("\u2581") in the normalizer
            nonlocal changed
            if isinstance(node, dict) and node.get("type") == "Prepend" and node.get("prepend") in (space, " "):
                changed = True
                return None
            if isinstance(node, dict) and isinstance(node.get("normalizers"), list):
                node["normalizers"] = [n for n in map(drop, node["normalizers"]) if n is not None]
            return node

        spec["normalizer"] = drop(spec.get("normalizer"))
    if not changed:
        return None
    copy = tokenizers.Tokenizer.from_str(json.dumps(spec))
    copy.encode_special_tokens = True
    return copy


def _run_prefix(tok: Any, byte_level: bool, space: str) -> bytes:
    """What ``tok`` puts before every run of text (b" " for a prepended U+2581), found by
    running its normalizer and pre-tokenizer (not the model) on a probe."""
    text = "x"
    if tok.normalizer is not None:
        text = tok.normalizer.normalize_str(text)
    pieces = tok.pre_tokenizer.pre_tokenize_str(text) if tok.pre_tokenizer is not None else [(text, None)]
    got = b"".join(_piece_bytes(p, byte_level, space) for p, _ in pieces)
    return got[:-1] if len(got) > 1 and got.endswith(b"x") else b""


_ROLES = ("bos_token", "eos_token", "pad_token", "unk_token")


class HFTokenizer(Tokenizer):
    def __init__(self, backend: Any, register: tuple[str, ...] = (), *, name: str = "hf", hf_object: Any = None,
                 roles: dict[str, str] | None = None) -> None:
        tokenizers = require("tokenizers")
        spec = json.loads(backend.to_str())
        controls: set[str] = set()
        for fmt in register:
            controls.update(control_table(fmt).all_tokens)
        # Declare our controls special in the copy (see module docstring).
        for entry in spec.get("added_tokens", []):
            if entry["content"] in controls:
                entry["special"] = True
                entry["normalized"] = False
        tok = tokenizers.Tokenizer.from_str(json.dumps(spec))
        present = set(tok.get_vocab(with_added_tokens=True))
        missing = [t for fmt in register for t in control_table(fmt).all_tokens if t not in present]
        missing = list(dict.fromkeys(missing))
        if missing:
            tok.add_special_tokens([tokenizers.AddedToken(t, special=True, normalized=False) for t in missing])
        tok.encode_special_tokens = True
        self._tok = tok  # the model's tokenizer (+ our controls): what to_hf and pickling carry
        self._hf_object = hf_object
        if roles is None:
            roles = {r: str(v) for r in _ROLES if (v := getattr(hf_object, r, None)) is not None}
        self._roles = roles
        self.name = name
        self.registered = register
        self.specials = {
            a.content: i for i, a in tok.get_added_tokens_decoder().items() if a.special
        }
        self._byte_level = _is_byte_level(spec)
        self._space = _space_char(spec)
        # Text pieces are encoded as the model encodes them inside a whole text (module docstring).
        first = any(n.get("type") == "Metaspace" and _scheme(n) == "first"
                    for n in _nodes(spec.get("pre_tokenizer"), "pretokenizers"))
        runs = _prefix_free(tok, tokenizers, after_text=False) if first else None  # (a re-parse: only then)
        self._runs_rewritten = runs is not None
        self._runs = runs if runs is not None else tok
        self.run_prefix = _run_prefix(self._runs, self._byte_level, self._space)
        self._cont = self._runs
        if self.run_prefix:
            cont = _prefix_free(tok, tokenizers, after_text=True)
            if cont is not None and not _run_prefix(cont, self._byte_level, self._space):
                self._cont = cont
        self._encode = self._runs.encode
        # Safety net: a control must never come out of encode_text.
        for t in controls:
            if set(self.encode_text(t)) & set(self.specials.values()):
                raise VocabError(
                    f"this tokenizer still matches {t} inside ordinary text",
                    code="E-VOCAB-UNSAFE",
                    field=t,
                    hint="its normalizer or pre-tokenizer rewrites special text; report the tokenizer",
                )

    def encode_text(self, text: str) -> list[int]:
        """``text`` as the model tokenizes it right after a special token (see the module docstring)."""
        ids: list[int]  # tokenizers' Encoding.ids
        try:
            ids = self._encode(text, add_special_tokens=False).ids
        except TypeError:  # lone surrogates: U+FFFD, as tiktoken's encode does
            expect(text, str, "text", "a str")
            ids = self._encode(_repair(text), add_special_tokens=False).ids
        return ids

    def encode_continuation(self, text: str) -> list[int]:
        """``text`` as the model tokenizes it right after other text: no ``run_prefix``."""
        ids: list[int]
        try:
            ids = self._cont.encode(text, add_special_tokens=False).ids
        except TypeError:
            expect(text, str, "text", "a str")
            ids = self._cont.encode(_repair(text), add_special_tokens=False).ids
        return ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        if isinstance(texts, str):
            as_strings(texts, "texts")  # raises: a bare str would be encoded char by char
        try:
            batch = self._runs.encode_batch(list(texts), add_special_tokens=False)
        except TypeError:  # lone surrogates somewhere: repair only then (no extra pass otherwise)
            texts = as_strings(texts, "texts")
            batch = self._runs.encode_batch([_repair(t) for t in texts], add_special_tokens=False)
        return [e.ids for e in batch]

    @property
    def backend(self) -> Any:
        return self._tok

    @property
    def n_vocab(self) -> int:
        size: int = self._tok.get_vocab_size(with_added_tokens=True)
        return size

    def _build_token_bytes_table(self) -> list[bytes | None]:
        vocab = self._tok.get_vocab(with_added_tokens=True)
        size = max(vocab.values()) + 1 if vocab else 0
        table: list[bytes | None] = [None] * size
        added = {a.content for a in self._tok.get_added_tokens_decoder().values()}
        for piece, i in vocab.items():
            table[i] = piece.encode("utf-8") if piece in added else _piece_bytes(piece, self._byte_level, self._space)
        return table

    @cached_property
    def fingerprint(self) -> str:
        import hashlib

        digest = hashlib.sha256(self._tok.to_str().encode()).hexdigest()[:16]
        # Pieces encoded unlike a standalone encode (Metaspace "first"): say so, so caches of
        # ids made before that rule (a spurious U+2581 per piece) never match.
        runs = ":runs-after-special" if self._runs_rewritten else ""
        return f"hf:{digest}:{specials_digest(self.specials)[:16]}{runs}"

    @property
    def default_roles(self) -> dict[str, str]:
        """The role tokens (``bos_token``, ``eos_token``, ``pad_token``, ``unk_token``) of the
        transformers tokenizer this came from; ``to_hf`` declares them unless told otherwise."""
        return dict(self._roles)

    def to_hf(self, *, eos_token: str | None = None, pad_token: str | None = None,
              bos_token: str | None = None) -> PreTrainedTokenizerFast:
        """A new ``transformers.PreTrainedTokenizerFast`` of the model's tokenizer plus the
        registered controls (see ``Tokenizer.to_hf``); roles default to ``default_roles``."""
        transformers = require("transformers")
        roles = self.hf_roles(self._roles, eos_token=eos_token, pad_token=pad_token, bos_token=bos_token)
        # The wrapper deep-copies the backend (ours is never handed out) and applies
        # transformers' convention to its copy: special-token text in input is split out.
        fast: PreTrainedTokenizerFast = transformers.PreTrainedTokenizerFast(
            tokenizer_object=self._tok, split_special_tokens=False, **roles)
        return fast

    def __getstate__(self) -> dict[str, Any]:
        return {"json": self._tok.to_str(), "name": self.name, "registered": self.registered, "roles": self._roles}

    def __setstate__(self, state: dict[str, Any]) -> None:
        tokenizers = require("tokenizers")
        self.__init__(tokenizers.Tokenizer.from_str(state["json"]), (), name=state["name"],  # type: ignore[misc]
                      roles=state.get("roles", {}))
        self.registered = state["registered"]


def from_hf(obj: Any, register: str | Sequence[str] | None = None, *, name: str | None = None) -> HFTokenizer:
    """Wrap a transformers tokenizer, a ``tokenizers.Tokenizer`` or a folder/file with tokenizer.json.

    ``register``: a format name (or several) whose control tokens are added as special
    tokens (appended after the vocabulary; tokens the tokenizer already has keep their id).
    """
    tokenizers = require("tokenizers")
    formats = canonical_formats(register)
    if name is not None:
        expect(name, str, "name", "a str")
    hf_object = None
    if isinstance(obj, (str, os.PathLike)):
        path = Path(obj)
        file = path / "tokenizer.json" if path.is_dir() else path
        if not file.is_file():
            raise VocabError(f"no tokenizer.json at {path}", code="E-VOCAB-MISSING", field=str(path),
                             hint="pass a folder saved with save_pretrained(), or a tokenizer object")
        backend = tokenizers.Tokenizer.from_file(str(file))
        label = name or path.name
    elif isinstance(obj, tokenizers.Tokenizer):
        backend, label = obj, name or "hf"
    elif hasattr(obj, "backend_tokenizer"):
        backend, hf_object = obj.backend_tokenizer, obj
        label = name or getattr(obj, "name_or_path", "") or "hf"
    else:
        raise InputTypeError(
            f"from_hf() cannot read {article(type(obj).__name__)}",
            field="obj",
            hint="pass a transformers fast tokenizer, a tokenizers.Tokenizer, or a folder with tokenizer.json",
        )
    return HFTokenizer(backend, formats, name=str(label), hf_object=hf_object)
