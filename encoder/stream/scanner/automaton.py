"""Aho-Corasick over bytes: the trie compiled to a dense DFA, and per-token root tables."""

from __future__ import annotations

from collections import deque

import numpy as np

# Token kinds (per id).
_ORDINARY = 0
_CONTROL = 1
_SPECIAL = 2
_INVALID = 3

# Pattern kinds.  Their numeric order is the priority for identical bytes.
_P_CONTROL = 0
_P_ESCAPE = 1
_P_STOP = 2


def _build_automaton(
    patterns: list[tuple[bytes, int, object]],
) -> tuple[np.ndarray, list[int], list[int]]:
    """Aho–Corasick trie + failure links, compiled to a dense byte DFA."""
    goto: list[dict[int, int]] = [{}]
    term: list[int] = [-1]
    depth: list[int] = [0]
    for idx, (pb, _kind, _value) in enumerate(patterns):
        s = 0
        for c in pb:
            nxt = goto[s].get(c)
            if nxt is None:
                nxt = len(goto)
                goto[s][c] = nxt
                goto.append({})
                term.append(-1)
                depth.append(depth[s] + 1)
            s = nxt
        if term[s] < 0:  # first registration wins: control > escape > stop
            term[s] = idx
    n = len(goto)
    delta = np.zeros((n, 256), dtype=np.int32)
    fail = [0] * n
    out = [-1] * n
    queue: deque[int] = deque()
    for c, nxt in goto[0].items():
        delta[0, c] = nxt
        queue.append(nxt)  # fail = root
    while queue:
        s = queue.popleft()
        # BFS order: fail[s] is shallower, so its row and output are final.
        out[s] = term[s] if term[s] >= 0 else out[fail[s]]
        row = delta[fail[s]].copy()
        for c, nxt in goto[s].items():
            fail[nxt] = int(row[c])
            row[c] = nxt
            queue.append(nxt)
        delta[s] = row
    return delta, out, depth


class _TokenArrays:
    """Flat byte storage of the vocabulary, shared by the per-mode builds."""

    __slots__ = ("kind", "flat", "starts", "lens")

    def __init__(self, token_bytes: list[bytes], kind: np.ndarray) -> None:
        self.kind = kind
        self.lens = np.fromiter(map(len, token_bytes), dtype=np.int64, count=len(token_bytes))
        self.flat = np.frombuffer(b"".join(token_bytes), dtype=np.uint8)
        self.starts = np.zeros(len(token_bytes), dtype=np.int64)
        np.cumsum(self.lens[:-1], out=self.starts[1:])


def _root_tables(
    delta: np.ndarray, terminal: np.ndarray, tok: _TokenArrays
) -> tuple[np.ndarray, np.ndarray]:
    """State after each token read from the root, and whether it holds a match.

    Only tokens containing a byte that leaves the root can end elsewhere or
    match, so only those are simulated; they are sorted by length so that
    column ``k`` of the simulation is a prefix slice of the arrays.
    """
    n = len(tok.lens)
    root_next = np.zeros(n, dtype=np.int32)
    matched = np.zeros(n, dtype=bool)
    leaves_root = delta[0] != 0
    if not leaves_root.any() or tok.flat.size == 0:
        return root_next, matched
    nonempty = np.flatnonzero(tok.lens > 0)
    hit = np.logical_or.reduceat(leaves_root[tok.flat], tok.starts[nonempty])
    cand = nonempty[hit]
    if cand.size == 0:
        return root_next, matched
    clen = tok.lens[cand]
    order = np.argsort(-clen, kind="stable")
    cand = cand[order]
    clen = clen[order]
    cstart = tok.starts[cand]
    neg = -clen  # ascending
    dflat = delta.ravel()
    state = np.zeros(cand.size, dtype=np.int64)
    hitm = np.zeros(cand.size, dtype=bool)
    for k in range(int(clen[0])):
        m = int(np.searchsorted(neg, -k, side="left"))  # tokens longer than k
        st = dflat[state[:m] * 256 + tok.flat[cstart[:m] + k]]
        state[:m] = st
        hitm[:m] |= terminal[st]
    root_next[cand] = state
    matched[cand] = hitm
    return root_next, matched
