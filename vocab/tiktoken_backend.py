"""tiktoken backend: the fast path.

Specials are registered on the ``tiktoken.Encoding`` only for decoding; text is
always encoded with ``encode_ordinary`` so special-token text stays ordinary.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from .base import load_base
from .errors import VocabError, require
from .registry import plan_specials
from .tokenizer import Tokenizer, specials_digest

_LOCK = threading.Lock()


class TiktokenTokenizer(Tokenizer):
    def __init__(self, base: str, register: tuple[str, ...] = (), *, name: str | None = None) -> None:
        tiktoken = require("tiktoken")
        bv = load_base(base)
        self._base = base
        self.registered = register
        self.name = name or (bv.name + ("+" + "+".join(register) if register else ""))
        self.specials = plan_specials(bv.specials, bv.n_ranks, register)
        self.ranks_sha256 = bv.sha256
        self._pat_str = bv.pat_str
        self._enc = tiktoken.Encoding(
            name=self.name, pat_str=bv.pat_str, mergeable_ranks=bv.ranks, special_tokens=self.specials
        )
        core = self._enc._core_bpe  # the Rust object: one call, no wrapper frame on the hot path
        fallback = self._enc.encode_ordinary

        def encode_text(text: str, _core: Any = core.encode_ordinary, _fb: Any = fallback) -> list[int]:
            try:
                return _core(text)
            except UnicodeEncodeError:  # lone surrogates: tiktoken's wrapper repairs them
                return _fb(text)

        self.encode_text = encode_text  # type: ignore[method-assign]
        self._encode_raw = core.encode_ordinary

        # Long text: tiktoken's u32 buffer viewed as int32, no Python ints on the way.  With
        # nothing allowed, ``encode`` equals ``encode_ordinary`` (a special's text is ordinary
        # text), and the Rust side runs without the GIL.
        to_buffer = core.encode_to_tiktoken_buffer
        nothing: frozenset[str] = frozenset()

        def encode_text_array(text: str, _buf: Any = to_buffer, _none: Any = nothing,
                              _fb: Any = fallback) -> np.ndarray:
            try:
                return np.frombuffer(_buf(text, _none), dtype=np.int32)
            except UnicodeEncodeError:
                return np.array(_fb(text), dtype=np.int32)

        self.encode_text_array = encode_text_array  # type: ignore[method-assign]

    def encode_text(self, text: str) -> list[int]:  # replaced per instance in __init__
        raise NotImplementedError

    gil_free = True

    @property
    def encode_text_raw(self) -> Any:
        return self._encode_raw

    def encode_text_array(self, text: str) -> np.ndarray:  # replaced per instance in __init__
        raise NotImplementedError

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        try:
            return self._enc.decode_bytes(ids)  # Rust: no per-token Python on the parse hot path
        except (KeyError, TypeError, OverflowError, ValueError):
            return super().decode_bytes(ids)  # bad ids: the base class names the offending position

    @property
    def encoding(self) -> Any:
        """The underlying ``tiktoken.Encoding`` (specials registered)."""
        return self._enc

    @property
    def n_vocab(self) -> int:
        return self._enc.n_vocab

    def token_bytes(self, token_id: int) -> bytes:
        table = self.token_bytes_table
        if 0 <= token_id < len(table) and table[token_id] is not None:
            return table[token_id]  # type: ignore[return-value]
        raise VocabError(f"id {token_id} is not in the vocabulary", code="E-VOCAB-ID", hint="ids must come from this tokenizer")

    def _build_token_bytes_table(self) -> list[bytes | None]:
        table: list[bytes | None] = [None] * self.n_vocab
        for tok, rank in load_base(self._base).ranks.items():
            table[rank] = tok
        for s, i in self.specials.items():
            table[i] = s.encode("utf-8")
        return table

    @property
    def fingerprint(self) -> str:
        return f"tiktoken:{self.ranks_sha256[:16]}:{specials_digest(self.specials)[:16]}"

    def to_hf(self) -> Any:
        from .hf_convert import build_hf_tokenizer, to_pretrained_fast

        key = f"{self.ranks_sha256}"
        tok = build_hf_tokenizer(load_base(self._base).ranks, self._pat_str, self.specials, cache_key=key)
        eos = "<|endoftext|>" if "<|endoftext|>" in self.specials else None
        return to_pretrained_fast(tok, self.specials, eos_token=eos, pad_token=eos)

    def __reduce__(self) -> tuple[Any, ...]:
        # Ship the recipe, not 200k ranks: workers rebuild from their own cache.
        return (_restore, (self._base, self.registered, self.name, self.fingerprint))


@lru_cache(maxsize=32)
def _cached(base: str, register: tuple[str, ...], name: str | None) -> TiktokenTokenizer:
    return TiktokenTokenizer(base, register, name=name)


def get_tiktoken(base: str, register: tuple[str, ...], name: str | None = None) -> TiktokenTokenizer:
    with _LOCK:
        return _cached(base, register, name)


def _restore(base: str, register: tuple[str, ...], name: str, fingerprint: str) -> TiktokenTokenizer:
    tok = get_tiktoken(base, register, name)
    if tok.fingerprint != fingerprint:
        raise VocabError(
            f"unpickled tokenizer {name!r} differs from the one pickled ({tok.fingerprint} != {fingerprint})",
            code="E-VOCAB-HASH",
            hint="the worker has a different vocabulary file or ocml version",
        )
    return tok
