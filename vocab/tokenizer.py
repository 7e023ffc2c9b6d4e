"""The one ``Tokenizer`` interface both backends implement.

Contract every caller relies on:
- ``encode_text(s)`` never yields a registered special/control id, whatever ``s``
  contains (control text in content is ordinary text);
- ``control_id(tok)`` is the id a control token is registered at, or ``None``
  (the format then spells that token as ASCII text: the multi-token fallback);
- pickling is cheap: a tokenizer pickles as its recipe and is rebuilt (from the
  per-process cache) on the other side.
"""

from __future__ import annotations

import hashlib
import operator
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from functools import cached_property
from itertools import compress
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InputTypeError, OcmlError, UnknownNameError, VocabError, as_strings, expect

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast


class Tokenizer(ABC):
    """Common interface; see ``TiktokenTokenizer`` and ``HFTokenizer``."""

    name: str
    #: every registered special token (controls, markers, reserved, base specials) -> id
    specials: dict[str, int]
    #: formats whose control tokens were registered on this tokenizer
    registered: tuple[str, ...]

    @abstractmethod
    def encode_text(self, text: str) -> list[int]:
        """Ordinary text to ids; special-token text is never parsed."""

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        if isinstance(texts, str):
            as_strings(texts, "texts")  # raises: a bare str would be encoded char by char
        enc = self.encode_text
        try:
            return [enc(t) for t in texts]
        except TypeError:  # InputTypeError included
            as_strings(texts, "texts")  # names the argument; else the error was not about types
            raise

    def encode_continuation(self, text: str) -> list[int]:
        """``text`` as it is encoded right after other text, not after a special token: the
        same as ``encode_text`` except for tokenizers with a ``run_prefix``, where it has none.
        (A renderer that lays two text pieces side by side encodes the second with it.)"""
        return self.encode_text(text)

    @property
    def encode_text_raw(self) -> Any:
        """``encode_text`` minus its safety wrapper, for hot loops: may raise
        ``UnicodeEncodeError`` on lone surrogates, where the caller retries ``encode_text``."""
        return self.encode_text

    #: True when ``encode_text_array`` runs without the GIL, so a thread pool scales it
    gil_free: bool = False

    def encode_text_array(self, text: str) -> np.ndarray:
        """``encode_text`` as an int32 array (backends override it to skip the Python int list)."""
        return np.array(self.encode_text(text), dtype=np.int32)

    def encode_joined(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """Each text encoded as ``encode_text`` encodes it, all in one tokenizer call: the ids one
        text after the other (int32) and each text's count (int64).  None when this backend
        cannot, or not for these texts (lone surrogates...): the caller then encodes one by one."""
        return None

    @property
    @abstractmethod
    def n_vocab(self) -> int:
        """One past the largest id."""

    #: Bytes the tokenizer puts at the start of every text run (after a special token, or at
    #: the start of the input) that are not content: SentencePiece models that prepend
    #: ``\u2581`` to every run (Metaspace ``prepend_scheme="always"``, legacy Llama's
    #: ``Prepend`` normalizer) and byte-level BPE with ``add_prefix_space``.  ``encode_text``
    #: keeps it (those are the model's ids); ``decode``/``decode_bytes`` drop it at each run
    #: start; anything else that turns ids into text must drop it there too.
    run_prefix: bytes = b""

    def token_bytes(self, token_id: int) -> bytes:
        """Bytes of one id; ``E-VOCAB-ID`` for an id outside the vocabulary or in a gap."""
        try:
            data = self._decode_table[token_id]
        except TypeError:
            raise InputTypeError(f"token_id must be an integer id, got {type(token_id).__name__}",
                                 field="token_id") from None
        except IndexError:
            data = None
        if data is None:
            raise VocabError(f"id {token_id} is not in the vocabulary (n_vocab={self.n_vocab})", code="E-VOCAB-ID",
                             field="token_id", hint="ids must come from this tokenizer")
        return data

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """Bytes of ``ids`` (a list, tuple or 1-D integer array), minus ``run_prefix`` at run starts.

        ``E-INPUT-TYPE`` for anything but integer ids; ``E-VOCAB-ID`` for an id that is
        negative, ``>= n_vocab`` or a hole in the vocabulary; both name the position.
        """
        ids = self._id_list(ids)
        table = self._decode_table  # a negative id lands on its None half: no per-id range check
        try:
            parts = [table[i] for i in ids]
            if self.run_prefix:
                self._drop_run_prefixes(ids, parts)
            return b"".join(parts)  # type: ignore[arg-type]  # None (a hole, a negative id): TypeError
        except (IndexError, TypeError):
            raise self.id_error(ids) from None

    def decode(self, ids: Sequence[int], errors: str = "replace") -> str:
        return self.decode_bytes(ids).decode("utf-8", errors)

    def _id_list(self, ids: Any) -> list[int]:
        """``ids`` as a list (an array via ``tolist``: C speed); text and float arrays are refused."""
        if type(ids) is list:
            return ids
        if isinstance(ids, np.ndarray):
            if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
                raise InputTypeError(f"ids must be a 1-D array of integer ids, got shape {ids.shape} of {ids.dtype}",
                                     field="ids")
            listed: list[int] = ids.tolist()
            return listed
        if isinstance(ids, (str, bytes, bytearray)) or not hasattr(ids, "__iter__"):
            raise InputTypeError(f"ids must be a sequence of integer ids, got {type(ids).__name__}", field="ids",
                                 hint="e.g. tok.decode([200006, 1428])")
        return list(ids)

    def id_error(self, ids: Sequence[Any], field: str = "ids") -> OcmlError:
        """The error for the first entry of ``ids`` that is not a valid id (the slow path, for errors)."""
        table = self.token_bytes_table
        for k, i in enumerate(ids):
            try:
                i = operator.index(i)
            except TypeError:
                return InputTypeError(f"{field}[{k}] is {i!r}, not an integer id", field=field, position=k)
            if not 0 <= i < len(table) or table[i] is None:
                return VocabError(f"id {i} is not in the vocabulary (n_vocab={self.n_vocab})", code="E-VOCAB-ID",
                                  field=field, position=k, hint="ids must come from this tokenizer")
        return InputTypeError(f"{field} must be a sequence of integer ids", field=field)

    @cached_property
    def _decode_table(self) -> list[bytes | None]:
        """``token_bytes_table`` followed by as many ``None``: a negative id indexes the
        ``None`` half (or past the start: IndexError), so decoding needs no range check."""
        table = self.token_bytes_table
        return table + [None] * len(table)

    @cached_property
    def _special_set(self) -> frozenset[int]:
        """Ids of the special tokens (a text run ends at each)."""
        return frozenset(self.special_ids)

    def _drop_run_prefixes(self, ids: list[int], parts: list[bytes | None]) -> None:
        """Drop ``run_prefix`` from the first token of every text run, in place (C-level scan
        for the specials; ``parts`` may hold ``None`` for bad ids: the join raises after)."""
        special = self._special_set
        prefix = self.run_prefix
        n = len(ids)
        for k in (0, *[k + 1 for k in compress(range(n), map(special.__contains__, ids))]):
            if k < n and ids[k] not in special:
                part = parts[k]
                if part is not None and part.startswith(prefix):
                    parts[k] = part[len(prefix):]

    def control_id(self, token: str) -> int | None:
        """The id ``token`` is registered at, or ``None`` (then it is spelled as text: the fallback)."""
        if type(token) is not str:
            expect(token, str, "token", "a control token's text, e.g. '<|start|>'")
        return self.specials.get(token)

    def hf_roles(self, defaults: Mapping[str, str | None], **given: str | None) -> dict[str, str]:
        """Role tokens for ``to_hf`` (``eos_token``...): a ``given`` one wins over the default
        and must be one of this tokenizer's special tokens."""
        roles = {k: v for k, v in defaults.items() if v is not None}
        for role, value in given.items():
            if value is None:
                continue
            expect(value, str, role, "a special token's text, e.g. '<|return|>'")
            if value not in self.specials:
                raise UnknownNameError(f"{role} {value!r} is not a special token of {self.name}", field=role,
                                       hint="pass one of tok.specials (register the format first)")
            roles[role] = value
        return roles

    @cached_property
    def special_ids(self) -> dict[int, str]:
        return {i: s for s, i in self.specials.items()}

    @cached_property
    def token_bytes_table(self) -> list[bytes | None]:
        """``table[id]`` = the id's bytes, ``None`` for ids that do not exist."""
        return self._build_token_bytes_table()

    @abstractmethod
    def _build_token_bytes_table(self) -> list[bytes | None]: ...

    @abstractmethod
    def to_hf(self, *, eos_token: str | None = None, pad_token: str | None = None,
              bos_token: str | None = None) -> PreTrainedTokenizerFast:
        """A new ``transformers.PreTrainedTokenizerFast`` with exactly the same ids.

        Every call returns an object of its own (set ``chat_template``, add tokens...: nothing
        leaks into the next call); the conversion behind it is cached.  ``eos_token`` /
        ``pad_token`` / ``bos_token`` set those roles (each must be one of ``tok.specials``,
        e.g. ``to_hf(eos_token="<|return|>", pad_token="<|endoftext|>")``); left ``None``,
        a role keeps the backend's default.
        """

    @property
    @abstractmethod
    def fingerprint(self) -> str:
        """Stable hash of vocabulary + specials: a cache / dataset fingerprint key."""

    def __repr__(self) -> str:
        reg = f", registered={list(self.registered)}" if self.registered else ""
        return f"<{type(self).__name__} {self.name!r} n_vocab={self.n_vocab}{reg}>"


def specials_digest(specials: dict[str, int]) -> str:
    h = hashlib.sha256()
    for s, i in sorted(specials.items(), key=lambda kv: kv[1]):
        h.update(f"{i}\t{s}\n".encode())
    return h.hexdigest()
