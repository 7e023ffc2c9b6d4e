"""HF ``tokenizers`` / ``transformers`` backend.

We work on a private copy of the backend tokenizer: registering control tokens
never mutates the caller's object.  Special-token text in content is kept
ordinary by ``encode_special_tokens = True``; because HF still matches
*non-special* added tokens in text, every control token of a registered format
is (re)declared ``special`` in the copy.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import InputError, VocabError, require
from .tables import canonical_format, control_table
from .tokenizer import Tokenizer, specials_digest


def _bytes_to_unicode() -> dict[int, str]:
    # GPT-2 byte-level alphabet: printable bytes map to themselves, the rest shift up.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


_BYTE_DECODER = {c: b for b, c in _bytes_to_unicode().items()}


def _repair(text: str) -> str:
    """Lone surrogates (not encodable as UTF-8) become U+FFFD; other text is returned as is."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _is_byte_level(spec: dict) -> bool:
    text = json.dumps(spec.get("decoder")) + json.dumps(spec.get("pre_tokenizer"))
    return "ByteLevel" in text


def _piece_bytes(piece: str, byte_level: bool) -> bytes:
    if byte_level:
        try:
            return bytes(_BYTE_DECODER[c] for c in piece)
        except KeyError:
            return piece.encode("utf-8")
    # SentencePiece-style vocabularies: <0xNN> byte tokens and U+2581 for spaces.
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        try:
            return bytes([int(piece[3:5], 16)])
        except ValueError:
            pass
    return piece.replace("\u2581", " ").encode("utf-8")


class HFTokenizer(Tokenizer):
    def __init__(self, backend: Any, register: tuple[str, ...] = (), *, name: str = "hf", hf_object: Any = None) -> None:
        tokenizers = require("tokenizers", "hf")
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
        self._tok = tok
        self._hf_object = hf_object
        self.name = name
        self.registered = register
        self.specials = {
            a.content: i for i, a in tok.get_added_tokens_decoder().items() if a.special
        }
        self._byte_level = _is_byte_level(spec)
        self._encode = tok.encode
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
        try:
            return self._encode(text, add_special_tokens=False).ids
        except TypeError:  # lone surrogates: U+FFFD, as tiktoken's encode does
            return self._encode(_repair(text), add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        try:
            batch = self._tok.encode_batch(list(texts), add_special_tokens=False)
        except TypeError:  # lone surrogates somewhere: repair only then (no extra pass otherwise)
            batch = self._tok.encode_batch([_repair(t) for t in texts], add_special_tokens=False)
        return [e.ids for e in batch]

    @property
    def backend(self) -> Any:
        return self._tok

    @property
    def n_vocab(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def token_bytes(self, token_id: int) -> bytes:
        table = self.token_bytes_table
        if 0 <= token_id < len(table) and table[token_id] is not None:
            return table[token_id]  # type: ignore[return-value]
        raise VocabError(f"id {token_id} is not in the vocabulary", code="E-VOCAB-ID")

    def _build_token_bytes_table(self) -> list[bytes | None]:
        vocab = self._tok.get_vocab(with_added_tokens=True)
        size = max(vocab.values()) + 1 if vocab else 0
        table: list[bytes | None] = [None] * size
        added = {a.content for a in self._tok.get_added_tokens_decoder().values()}
        for piece, i in vocab.items():
            table[i] = piece.encode("utf-8") if piece in added else _piece_bytes(piece, self._byte_level)
        return table

    @property
    def fingerprint(self) -> str:
        import hashlib

        return f"hf:{hashlib.sha256(self._tok.to_str().encode()).hexdigest()[:16]}:{specials_digest(self.specials)[:16]}"

    def to_hf(self) -> Any:
        transformers = require("transformers", "hf")
        tokenizers = require("tokenizers", "hf")
        copy = tokenizers.Tokenizer.from_str(self._tok.to_str())
        copy.encode_special_tokens = False  # transformers' own conventions apply to its object
        kwargs: dict[str, Any] = {}
        src = self._hf_object
        for attr in ("bos_token", "eos_token", "pad_token", "unk_token"):
            val = getattr(src, attr, None) if src is not None else None
            if val is not None:
                kwargs[attr] = str(val)
        return transformers.PreTrainedTokenizerFast(tokenizer_object=copy, **kwargs)

    def __getstate__(self) -> dict[str, Any]:
        return {"json": self._tok.to_str(), "name": self.name, "registered": self.registered}

    def __setstate__(self, state: dict[str, Any]) -> None:
        tokenizers = require("tokenizers", "hf")
        self.__init__(tokenizers.Tokenizer.from_str(state["json"]), (), name=state["name"])  # type: ignore[misc]
        self.registered = state["registered"]


def from_hf(obj: Any, register: str | Sequence[str] | None = None, *, name: str | None = None) -> HFTokenizer:
    """Wrap a transformers tokenizer, a ``tokenizers.Tokenizer`` or a folder/file with tokenizer.json."""
    tokenizers = require("tokenizers", "hf")
    formats = _formats(register)
    hf_object = None
    if isinstance(obj, (str, Path)):
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
        raise InputError(
            f"from_hf() cannot read a {type(obj).__name__}",
            field="tokenizer",
            hint="pass a transformers fast tokenizer, a tokenizers.Tokenizer, or a folder with tokenizer.json",
        )
    return HFTokenizer(backend, formats, name=str(label), hf_object=hf_object)


def _formats(register: str | Sequence[str] | None) -> tuple[str, ...]:
    if register is None:
        return ()
    if isinstance(register, str):
        register = [register]
    return tuple(canonical_format(r) for r in register)
