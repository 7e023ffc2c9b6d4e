"""Text pieces -> ids for the renderer (the only tokenizer calls a render makes).

Why the split by length: a short piece is cheapest as tiktoken's Python int list (one
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
