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
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np

from .errors import VocabError


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
        enc = self.encode_text
        return [enc(t) for t in texts]

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

    @property
    @abstractmethod
    def n_vocab(self) -> int:
        """One past the largest id."""

    @abstractmethod
    def token_bytes(self, token_id: int) -> bytes:
        """Bytes of one id (raises VocabError for an id outside the vocabulary)."""

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        table = self.token_bytes_table
        try:
            return b"".join([table[i] for i in ids])  # type: ignore[misc]
        except (IndexError, TypeError):
            bad = next((k for k, i in enumerate(ids) if not (0 <= i < len(table)) or table[i] is None), None)
            raise VocabError(
                f"id {ids[bad] if bad is not None else '?'} is not in the vocabulary (n_vocab={self.n_vocab})",
                code="E-VOCAB-ID",
                position=bad,
                hint="ids must come from this tokenizer",
            ) from None

    def decode(self, ids: Sequence[int], errors: str = "replace") -> str:
        return self.decode_bytes(ids).decode("utf-8", errors)

    def control_id(self, token: str) -> int | None:
        return self.specials.get(token)

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
    def to_hf(self) -> Any:
        """A ``transformers.PreTrainedTokenizerFast`` with exactly the same ids."""

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
