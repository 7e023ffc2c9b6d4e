"""Byte scanner cost per token (``ocml.encoder.stream.scanner``), as a ratio to decoding the same ids.

    python scripts/bench_scanner.py [--tokens 20000] [--reps 7]

Scans one long text (o200k_base ids, the OpenChatML 2.2 controls spelled as text, a few stop
strings) in two ways: all ids in one ``feed`` (the per-token loop) and token by token (one
``feed`` per id, as a server streams).  The reference in the same run is
``Tokenizer.decode_bytes`` of the same ids (what any detokenizer must do at least); the
ratios are what to compare across machines, absolute µs are noisy on shared VMs.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Optional, Sequence

from ocml import vocab
from ocml.encoder.stream.scanner import Scanner, ScannerTables

TEXT_CONTROLS = ("<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>")
STOPS = ("Observation:", "\n\nUser:")


def bench(tables: ScannerTables, ids: Sequence[int], *, chunk: Optional[int] = None, repeat: int = 5) -> float:
    """Best-of-``repeat`` cost in µs per token of scanning ``ids``.

    ``chunk=None`` feeds everything in one call (the per-token loop cost);
    ``chunk=1`` is token-by-token streaming (includes per-call overhead).
    ``finish()`` is included.
    """
    ids = list(ids)
    if not ids:
        return 0.0
    chunks = [ids] if chunk is None else [ids[k : k + chunk] for k in range(0, len(ids), chunk)]
    best = float("inf")
    for _ in range(max(1, repeat)):
        sc = Scanner(tables)
        feed = sc.feed
        t0 = time.perf_counter()
        for c in chunks:
            feed(c)
        sc.finish()
        best = min(best, time.perf_counter() - t0)
    return best / len(ids) * 1e6


def sample_text(rng: random.Random, n_words: int) -> str:
    words = ["the", "quick", "brown", "fox", "café", "日本語", "🙂", "x<y", "a|b", "Observation", "<|end|>",
             "<<|start|>", "{\"a\": 1}", "123", "\n", "jumps", "over", "lazy", "dog."]
    return " ".join(rng.choice(words) for _ in range(n_words))


def reference(tok: vocab.Tokenizer, ids: list[int], repeat: int) -> float:
    best = float("inf")
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        tok.decode_bytes(ids)
        best = min(best, time.perf_counter() - t0)
    return best / len(ids) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    tok = vocab.load("o200k_base")
    t0 = time.perf_counter()
    tables = ScannerTables(tok.token_bytes_table, text_controls=list(TEXT_CONTROLS), escapable=True,
                           stop_strings=list(STOPS))
    build = time.perf_counter() - t0
    ids: list[int] = []
    rng = random.Random(0)
    while len(ids) < args.tokens:
        ids += tok.encode_text(sample_text(rng, 200))
    ids = ids[: args.tokens]
    ref = reference(tok, ids, args.reps)
    whole = bench(tables, ids, repeat=args.reps)
    single = bench(tables, ids, chunk=1, repeat=args.reps)
    print(f"tables built in {build:.2f} s; {len(ids)} tokens")
    print(f"decode_bytes (reference): {ref:.3f} µs/token")
    print(f"scan, one feed:           {whole:.3f} µs/token  ratio {whole / ref:.1f}x")
    print(f"scan, token by token:     {single:.3f} µs/token  ratio {single / ref:.1f}x")


if __name__ == "__main__":
    main()
