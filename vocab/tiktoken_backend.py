"""tiktoken backend: the fast path.

Specials are registered on the ``tiktoken.Encoding`` only for decoding; text is
always encoded with ``encode_ordinary`` so special-token text stays ordinary.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from .base import load_base
from .errors import VocabError, expect, require
from .registry import plan_specials
from .tokenizer import Tokenizer, specials_digest

_LOCK = threading.Lock()
_HF_LOCK = threading.Lock()
#: fingerprint -> converted HF backend (LRU; o200k's holds ~150 MB)
_HF_BACKENDS: OrderedDict[str, Any] = OrderedDict()
_HF_BACKENDS_MAX = 2


class TiktokenTokenizer(Tokenizer):
    def __init__(self, base: str, register: tuple[str, ...] = (), *, name: str | None = None) -> None:
        tiktoken = require("tiktoken")
        bv = load_base(base)
        self._base = base
        self.registered = register
        self.name = name or (bv.name + ("+" + "+".join(register) if register else ""))
        self.specials = plan_specials(bv.specials, bv.n_ranks, register)
        self.ranks_sha256 = bv.sha256
        #: the encoding's role tokens (``encodings.json``), read like an HF tokenizer's (``inputs.text``)
        self._roles = dict(bv.roles)
        self._pat_str = bv.pat_str
        self._enc = tiktoken.Encoding(
            name=self.name, pat_str=bv.pat_str, mergeable_ranks=bv.ranks, special_tokens=self.specials
        )
        core = self._enc._core_bpe  # the Rust object: one call, no wrapper frame on the hot path
        fallback = self._enc.encode_ordinary

        def encode_text(text: str, _core: Callable[[str], list[int]] = core.encode_ordinary,
                        _fb: Callable[[str], list[int]] = fallback) -> list[int]:
            try:
                return _core(text)
            except UnicodeEncodeError:  # lone surrogates: tiktoken's wrapper repairs them
                return _fb(text)
            except TypeError:  # not a str: name the argument (free until it happens)
                expect(text, str, "text", "a str")
                raise

        self.encode_text = encode_text  # type: ignore[method-assign]
        self._encode_raw = core.encode_ordinary
        self._decode_core: Callable[[list[int]], bytes] = core.decode_bytes

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
            except TypeError:
                expect(text, str, "text", "a str")
                raise

        self.encode_text_array = encode_text_array  # type: ignore[method-assign]

        # Many texts in one call: joined by a special token this call alone allows.  tiktoken
        # encodes the text between two allowed specials exactly as ``encode_ordinary`` encodes it
        # alone (its split pattern runs on that slice), so the separator's ids cut the output
        # into each text's ids.  A text that spells the separator -> None (one by one).
        if self.specials:
            sep = max(self.specials, key=self.specials.__getitem__)
            sep_id = self.specials[sep]
            only_sep = frozenset((sep,))

            def encode_joined(texts: Sequence[str], _buf: Any = to_buffer) -> tuple[np.ndarray, np.ndarray] | None:
                joined = sep.join(texts)
                if joined.count(sep) != len(texts) - 1:
                    return None
                try:
                    out = np.frombuffer(_buf(joined, only_sep), dtype=np.int32)
                except (UnicodeEncodeError, TypeError):  # lone surrogates, not a str: one by one names it
                    return None
                cuts = np.flatnonzero(out == sep_id)
                counts = np.diff(cuts, prepend=-1, append=len(out)) - 1
                return (out if not len(cuts) else np.delete(out, cuts)), counts

            self.encode_joined = encode_joined  # type: ignore[method-assign]

    def encode_text(self, text: str) -> list[int]:  # replaced per instance in __init__
        raise NotImplementedError

    gil_free = True

    @property
    def encode_text_raw(self) -> Any:
        return self._encode_raw

    def encode_text_array(self, text: str) -> np.ndarray:  # replaced per instance in __init__
        raise NotImplementedError

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        # Rust checks every id (negative, too large, a gap, not an int): no Python pass on
        # the hot path; only a failure pays for finding and naming the offending position.
        if type(ids) is not list:
            ids = self._id_list(ids)
        try:
            return self._decode_core(ids)
        except (KeyError, TypeError, OverflowError, ValueError):
            raise self.id_error(ids) from None

    @property
    def encoding(self) -> Any:
        """The underlying ``tiktoken.Encoding`` (specials registered)."""
        return self._enc

    @property
    def n_vocab(self) -> int:
        size: int = self._enc.n_vocab
        return size

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

    def to_hf(self, *, eos_token: str | None = None, pad_token: str | None = None,
              bos_token: str | None = None) -> Any:
        """A new ``transformers.PreTrainedTokenizerFast`` with the same ids (see ``Tokenizer.to_hf``).

        Defaults: the encoding's own roles where ``encodings.json`` names them (``llama3``), else
        ``eos_token`` and ``pad_token`` are ``<|endoftext|>`` where the vocabulary has it, no
        ``bos_token``.  The conversion runs once per vocabulary + specials and
        process (plus the on-disk cache across processes); each call then only pays for
        transformers' own copy of the backend (~1.3 s for o200k).
        """
        from .hf_convert import to_pretrained_fast

        eot = "<|endoftext|>" if "<|endoftext|>" in self.specials else None
        roles = self.hf_roles(self._roles or {"eos_token": eot, "pad_token": eot},
                              eos_token=eos_token, pad_token=pad_token, bos_token=bos_token)
        # The wrapper deep-copies the backend: the cached one is never handed out or mutated.
        return to_pretrained_fast(self._hf_backend(), self.specials, **roles)

    def _hf_backend(self) -> Any:
        """The converted ``tokenizers.Tokenizer``, shared by every tokenizer with this fingerprint."""
        from .hf_convert import build_hf_tokenizer

        key = self.fingerprint
        with _HF_LOCK:
            tok = _HF_BACKENDS.get(key)
            if tok is None:
                tok = build_hf_tokenizer(load_base(self._base).ranks, self._pat_str, self.specials,
                                         cache_key=self.ranks_sha256)
                _HF_BACKENDS[key] = tok
                while len(_HF_BACKENDS) > _HF_BACKENDS_MAX:
                    _HF_BACKENDS.popitem(last=False)
            _HF_BACKENDS.move_to_end(key)
            return tok

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
