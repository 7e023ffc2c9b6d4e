"""Text pieces -> ids for the renderer (the only tokenizer calls a render makes).

A render (or a ``render_batch`` chunk) encodes all its text in one tokenizer call where the
backend can (``Tokenizer.encode_joined``: tiktoken, the texts joined by a special token only
that call allows, whose ids then cut the output): one call instead of one per piece, and no
Python ints.  ``encode_items`` then places the text ids among the cached id items with
numpy.  Text a backend cannot join (an HF tokenizer, a text that spells the separator, a lone
surrogate) is encoded one piece at a time (``encode``), as whole runs are (``whole_runs``).

One at a time, why the split by length: a short piece is cheapest as tiktoken's Python int list (one
call, appended to a running list); a long one is cheapest as tiktoken's u32 buffer viewed
as int32 (no Python ints at all, no list -> array copy).  With ``threads > 1`` (opt-in),
a render with a lot of long text and a tokenizer that runs without the GIL splits the
long pieces over a small thread pool: the caller encodes one share, the pool the others.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import compress
from operator import not_
from typing import Any

import numpy as np

from ocml.vocab import Tokenizer
from ocml.vocab.errors import InputError

from .grammar.text import encoding_error, surrogate_at

#: characters from which a piece is encoded to a numpy buffer instead of a list
LONG_TEXT = 256
#: total characters of long pieces from which threads pay for their hand-off
PARALLEL_MIN_CHARS = 16384

_pool_lock = threading.Lock()
# One pool per (pid, workers): a forked child never reuses its parent's dead threads, and
# encoders with different ``threads`` never replace each other's pool.
_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}


def default_threads() -> int:
    """``$OCML_NUM_THREADS`` if set, else 1.

    Threads are opt-in: on the 2-vCPU machine this was measured on, tiktoken on two threads
    was no faster than on one (hashlib reached 1.5x there), so the hand-off only cost time.
    On machines with real spare cores, ``threads=N`` lets long renders use them.
    """
    env = os.environ.get("OCML_NUM_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            pass
    return 1


def _get_pool(workers: int) -> ThreadPoolExecutor:
    key = (os.getpid(), workers)
    pool = _pools.get(key)
    if pool is None:
        with _pool_lock:
            pool = _pools.get(key)
            if pool is None:
                if any(pid != key[0] for pid, _ in _pools):
                    _pools.clear()  # inherited from the parent: their threads do not exist here
                pool = _pools[key] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ocml-encode")
    return pool


def _encoding_error(text: str) -> InputError:
    """The backstop of the input policy (``ocml.encoder.grammar.text``): inputs are checked where
    they are read, naming message and field; text that got past that is refused here too."""
    at = surrogate_at(text)
    return encoding_error(text, max(at, 0), index=None, field="text")


def _flat(seqs: list[Any]) -> np.ndarray:
    """Id sequences (tuples, lists, int32 arrays) one after the other as one int32 array: runs
    of Python ints become one array each, arrays join as they are."""
    parts: list[np.ndarray] = []
    run: list[int] = []
    ndarray = np.ndarray
    for it in seqs:
        if type(it) is ndarray:
            if run:
                parts.append(np.fromiter(run, dtype=np.int32, count=len(run)))  # 2x np.array
                run = []
            parts.append(it)
        else:
            run += it
    if run or not parts:
        parts.append(np.fromiter(run, dtype=np.int32, count=len(run)))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


class TextEncoder:
    """Encodes the text items of render jobs in place."""

    def __init__(self, tokenizer: Tokenizer, threads: int | None = None) -> None:
        self.tokenizer = tokenizer
        self.short = tokenizer.encode_text
        self.raw = tokenizer.encode_text_raw
        self.long = tokenizer.encode_text_array
        if threads is not None and (type(threads) is not int or threads < 1):
            raise InputError(f"threads={threads!r} must be an integer >= 1 (or None)", field="threads",
                             hint="1 = never start a thread")
        self.threads = default_threads() if threads is None else threads
        self.parallel = tokenizer.gil_free and self.threads > 1

    def encode(self, items: list[Any]) -> None:
        """Replace every ``str`` in ``items`` by its ids (list for short text, int32 array for long)."""
        raw = self.raw
        long_at: list[int] = []
        long_chars = 0
        for k, it in enumerate(items):
            if type(it) is str:
                if len(it) < LONG_TEXT:
                    try:
                        items[k] = raw(it)
                    except UnicodeEncodeError:  # lone surrogates: never repaired silently
                        raise _encoding_error(it) from None
                else:
                    if not it.isascii() and surrogate_at(it) >= 0:
                        raise _encoding_error(it)
                    long_at.append(k)
                    long_chars += len(it)
        if not long_at:
            return
        if self.parallel and long_chars >= PARALLEL_MIN_CHARS and len(long_at) > 1:
            self._parallel(items, long_at, long_chars)
            return
        enc = self.long
        for k in long_at:
            items[k] = enc(items[k])

    def encode_items(self, items: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        """The ids of ``items`` (id tuples or lists, int32 arrays, text) one after the other as
        one int32 array, and each item's count (int64).  The text is encoded in one tokenizer
        call where the backend can (``Tokenizer.encode_joined``), else one by one (``encode``);
        the ids of both kinds meet by boolean placement (no Python loop over tokens)."""
        is_text = [type(it) is str for it in items]
        texts = list(compress(items, is_text))
        if not texts:
            return _flat(items), np.array([len(it) for it in items], dtype=np.int64)
        text_ids, text_counts = self._encode_texts(texts)
        if len(texts) == len(items):
            return text_ids, text_counts
        others = list(compress(items, map(not_, is_text)))
        where = np.array(is_text, dtype=bool)
        counts = np.empty(len(items), dtype=np.int64)
        counts[where] = text_counts
        counts[~where] = [len(it) for it in others]
        ids = np.empty(int(counts.sum()), dtype=np.int32)
        token_is_text = where.repeat(counts)
        ids[token_is_text] = text_ids
        ids[~token_is_text] = _flat(others)
        return ids, counts

    def _encode_texts(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        joined = self.tokenizer.encode_joined
        if self.parallel and len(texts) > 1:
            total = sum(map(len, texts))
            if total >= PARALLEL_MIN_CHARS:
                return self._parallel_joined(texts, total)
        got = joined(texts)
        if got is not None:
            return got
        encoded: list[Any] = list(texts)
        self.encode(encoded)  # one by one: raises the typed error of a text no tokenizer takes
        return _flat(encoded), np.array([len(ids) for ids in encoded], dtype=np.int64)

    def _parallel_joined(self, texts: list[str], total: int) -> tuple[np.ndarray, np.ndarray]:
        """Contiguous shares of about equal characters, each joined in one call; the caller
        thread takes the first share, the pool the others (the Rust side runs without the GIL)."""
        n = min(self.threads, len(texts))
        cuts = [0]
        per = total / n
        acc = 0
        for k, t in enumerate(texts):
            acc += len(t)
            if acc >= per * len(cuts) and len(cuts) < n:
                cuts.append(k + 1)
        cuts.append(len(texts))
        shares = [texts[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]

        def run(share: list[str]) -> tuple[np.ndarray, np.ndarray]:
            got = self.tokenizer.encode_joined(share)
            if got is not None:
                return got
            encoded: list[Any] = list(share)
            self.encode(encoded)
            return _flat(encoded), np.array([len(ids) for ids in encoded], dtype=np.int64)

        pool = _get_pool(self.threads - 1)
        futures = [pool.submit(run, share) for share in shares[1:]]
        done = [run(shares[0]), *(f.result() for f in futures)]
        return np.concatenate([d[0] for d in done]), np.concatenate([d[1] for d in done])

    def ids(self, text: str) -> np.ndarray:
        """One text as int32 ids, exactly as ``encode`` encodes it in a render (section cache)."""
        items: list[Any] = [text]
        self.encode(items)
        return np.asarray(items[0], dtype=np.int32)

    def _parallel(self, items: list[Any], long_at: list[int], total: int) -> None:
        # Contiguous shares of about equal characters; the caller thread takes the first.
        n = min(self.threads, len(long_at))
        shares: list[list[int]] = [[] for _ in range(n)]
        per = total / n
        acc = 0
        for k in long_at:
            shares[min(int(acc / per), n - 1)].append(k)
            acc += len(items[k])
        enc = self.long

        def run(texts: Sequence[str]) -> list[np.ndarray]:
            return [enc(t) for t in texts]

        pool = _get_pool(self.threads - 1)
        futures = [(ks, pool.submit(run, [items[k] for k in ks])) for ks in shares[1:] if ks]
        for k, arr in zip(shares[0], run([items[k] for k in shares[0]])):
            items[k] = arr
        for ks, fut in futures:
            for k, arr in zip(ks, fut.result()):
                items[k] = arr
