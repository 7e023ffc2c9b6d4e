"""Section cache: system / developer sections seen before are neither rebuilt nor re-encoded.

Agentic training sets repeat one system prompt and tool set in every conversation; its
TypeScript and its ids (often most of a short conversation's tokens) are the same each time.
Two levels, both bounded LRUs:

- **by content** (process-wide, ``SECTIONS``): a key made from the section's content (the
  conversation options and leading system text, or an openai-harmony ``system_content`` /
  ``developer_content`` item, via ``content_key``: about 2 µs for four tools, a tenth of
  encoding them) -> the built ``SystemContent`` / ``DeveloperContent`` (or a synthesized system /
  developer message).  Equal content gives the *same* object: the object is *interned*.
- **by interned object** (per ``Renderer``: the ids depend on the format and tokenizer):
  ``SectionIds`` maps an interned object to its body ids.  Only interned objects are cached,
  never objects a caller built (they could be mutated in place between renders); an entry
  holds its object, so its ``id()`` cannot be reused while the entry lives.

Nothing here changes an id: a hit returns exactly the ids the uncached path encodes
(``tests/render/test_section_cache.py``).
"""

from __future__ import annotations

import marshal
import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar, cast

import numpy as np

V = TypeVar("V")

#: content cache bounds: entries and total key characters (~ the content held)
MAX_SECTIONS = 512
MAX_SECTION_CHARS = 8 << 20
#: per-renderer ids cache bounds: entries and total ids
MAX_SECTION_IDS = 512
MAX_SECTION_TOKENS = 4 << 20


def content_key(value: Any) -> bytes | str:
    """A key equal for equal JSON-like content and, for different content, different: ``marshal``
    format 2 (exact types only, no back-references, so the bytes depend on the content alone and
    ``marshal.loads`` would give the content back; 3x cheaper than ``repr``), else ``repr`` for
    anything marshal refuses (subclasses, custom objects).  bytes and str keys never meet."""
    try:
        return marshal.dumps(value, 2)
    except ValueError:
        return repr(value)


class LRU(Generic[V]):
    """A dict bounded by entry count and by a total ``weight`` (least recently used leaves first)."""

    __slots__ = ("max_entries", "max_weight", "weight", "_d", "hits", "misses", "_lock")

    def __init__(self, max_entries: int, max_weight: int) -> None:
        self.max_entries = max_entries
        self.max_weight = max_weight
        self.weight = 0
        self._d: dict[Hashable, tuple[V, int]] = {}
        self.hits = 0
        self.misses = 0
        # encoders are shared by threads (pipelines, servers): a pop and its re-insert must not interleave
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._d)

    def get(self, key: Hashable) -> V | None:
        d = self._d
        with self._lock:
            hit = d.pop(key, None)
            if hit is None:
                self.misses += 1
                return None
            d[key] = hit  # most recent last
            self.hits += 1
        return hit[0]

    def put(self, key: Hashable, value: V, weight: int) -> bool:
        """Keep ``value``; False when it is not kept (cache disabled, or bigger than the bound)."""
        if self.max_entries <= 0 or weight > self.max_weight:
            return False
        d = self._d
        with self._lock:
            old = d.pop(key, None)
            if old is not None:
                self.weight -= old[1]
            while d and (len(d) >= self.max_entries or self.weight + weight > self.max_weight):
                self.weight -= d.pop(next(iter(d)))[1]
            d[key] = (value, weight)
            self.weight += weight
        return True

    def clear(self) -> None:
        with self._lock:
            self._d.clear()
            self.weight = self.hits = self.misses = 0

    def values(self) -> list[V]:
        with self._lock:
            return [v for v, _ in self._d.values()]


class SectionCache:
    """Process-wide content cache that interns sections (see the module docstring)."""

    def __init__(self, max_entries: int = MAX_SECTIONS, max_chars: int = MAX_SECTION_CHARS) -> None:
        self._by_key: LRU[Any] = LRU(max_entries, max_chars)
        self._interned: dict[int, Any] = {}  # id -> object, for every object the cache handed out

    def intern(self, key: tuple[Any, ...], weight: int, build: Callable[[], V]) -> V:
        """The object cached under ``key``, else ``build()`` (interned when it fits the bounds)."""
        try:
            got = self._by_key.get(key)
        except TypeError:  # an unhashable option value: built as usual, its error raised there
            return build()
        if got is not None:
            return cast(V, got)  # what ``build`` made for this key (the cache holds every key's kind)
        value = build()
        if not self._by_key.put(key, value, weight):
            return value  # not kept: not interned either (its ids are not cached)
        if len(self._interned) > 2 * self._by_key.max_entries:  # forget objects the LRU let go
            self._interned = {id(o): o for v in self._by_key.values() for o in _objects(v)}
        for o in _objects(value):
            self._interned[id(o)] = o
        return value

    def interned(self, obj: Any) -> bool:
        """Did this cache hand ``obj`` out (so it is never mutated and its content is its key)?"""
        return self._interned.get(id(obj)) is obj

    def clear(self) -> None:
        self._by_key.clear()
        self._interned.clear()

    @property
    def stats(self) -> dict[str, int]:
        return {"entries": len(self._by_key), "hits": self._by_key.hits, "misses": self._by_key.misses}


def _objects(value: Any) -> list[Any]:
    """The section object of a cached value: the value itself, or a cached message's ``structured`` content."""
    structured = getattr(value, "structured", None)
    return [value] if structured is None else [structured]


#: the process-wide content cache (formats and adapters intern through it)
SECTIONS = SectionCache()


class SectionIds:
    """Per renderer: interned section object (+ the flag its text depends on) -> body ids."""

    def __init__(self, max_entries: int = MAX_SECTION_IDS, max_tokens: int = MAX_SECTION_TOKENS) -> None:
        self._lru: LRU[tuple[Any, np.ndarray]] = LRU(max_entries, max_tokens)

    def get(self, obj: Any, flag: bool) -> np.ndarray | None:
        hit = self._lru.get((id(obj), flag))
        # the entry holds its object, so an equal id is the same object unless it was evicted
        return hit[1] if hit is not None and hit[0] is obj else None

    def put(self, obj: Any, flag: bool, ids: np.ndarray) -> None:
        ids.flags.writeable = False  # shared by every render that hits it (results are views)
        self._lru.put((id(obj), flag), (obj, ids), len(ids) + 1)

    def clear(self) -> None:
        self._lru.clear()

    @property
    def stats(self) -> dict[str, int]:
        return {"entries": len(self._lru), "hits": self._lru.hits, "misses": self._lru.misses}
