"""Batched stream decoding cost per token: BatchDecoder.step vs per-row loops, in one run.

    python scripts/bench_stream_batch.py [--rows 64] [--steps 1000] [--reps 5]
                                                        [--sizes 1,4,8,16,64]

B rows, each its own generated gpt-oss style assistant turn (analysis + final, ~``steps``
ids, lengths differ by up to 10%, ending with ``<|return|>``; after its end a row gets the
pad id -1), stepped in lock step (one id per row per step) through:

* ``BatchDecoder.step(ids)``, numpy path (``vectorized=True``) and Python row loop
  (``vectorized=False``, the default below ``VECTOR_MIN_ROWS``), long-lived (warmed once on
  other completions, ``reset_all()`` between runs: the serving case), and the loop on a
  fresh decoder per run (cold Delta caches)
* a Python loop of B ``StreamDecoder.feed([id])`` calls (pad ids skipped)
* openai-harmony: B ``StreamableParser``, ``process(id)`` per row (pad ids skipped; id mode only)

in id mode (Harmony encoding) and fallback mode (OpenChatML 2.2 on plain o200k_base,
controls as text), for two texts: ``words`` (tests/support/gen.py words: many emoji / CJK tokens,
which leave the lean path) and ``prose`` (ASCII sentences).  µs per token = time / number of
non-pad ids.  Repetitions are interleaved in a shuffled order; medians are reported.
``--sizes`` also times the two BatchDecoder paths (warm) and the feed loop at other batch
sizes (id mode, prose, 300 steps) to place ``VECTOR_MIN_ROWS``.  Runs offline (see bench_stream.offline_harmony).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_stream import completion, offline_harmony  # noqa: E402

PROSE = ("The quick brown fox jumps over the lazy dog. Serving systems decode many sequences at once, "
         "and every step samples one token per sequence. Paris is the capital of France; the answer is 42. "
         "We compare the cost per token of three ways to turn ids into events.").split()


def words_text(rng: random.Random, n: int) -> str:
    from support.gen import WORDS

    ws = [w for w in WORDS if "<|" not in w]  # no control spellings: same text in both modes
    return "".join(rng.choice(ws) + rng.choice([" ", " ", "", "\n"]) for _ in range(n))


def prose_text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(PROSE) for _ in range(n))


def rows_for(enc, kind: str, n_rows: int, steps: int, seed: int) -> list[list[int]]:
    """n_rows completions of about ``steps`` ids (90-100%), each ending with <|return|>."""
    rng = random.Random(seed)
    make = words_text if kind == "words" else prose_text
    out = []
    for _ in range(n_rows):
        target = int(steps * rng.uniform(0.9, 1.0))
        n_words = max(target // (3 if kind == "words" else 1), 4)
        conv = {"messages": [
            {"role": "user", "content": "Tell me everything."},
            {"role": "assistant", "channel": "analysis", "content": make(rng, n_words // 4)},
            {"role": "assistant", "channel": "final", "content": make(rng, n_words - n_words // 4)},
        ]}
        ids = completion(enc, conv)
        if len(ids) > steps:  # keep the end: cut words out of the final message's middle
            ids = ids[:steps - 20] + ids[-20:]
        out.append(ids)
    return out


def matrix(rows: list[list[int]]) -> tuple[np.ndarray, int]:
    """[steps, B] ids, -1 after each row's end; and the number of real ids."""
    steps = max(len(r) for r in rows)
    m = np.full((steps, len(rows)), -1, dtype=np.int64)
    for j, r in enumerate(rows):
        m[:len(r), j] = r
    return m, sum(len(r) for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", default="1,8,32,64,128,256,512",
                    help="batch sizes for the loop / numpy crossover, 300 steps each ('' = skip)")
    args = ap.parse_args()

    oh, harmony = offline_harmony()
    from ocml import encoder
    from ocml.encoder.stream.batch import VECTOR_MIN_ROWS, BatchDecoder
    from ocml.encoder.stream.decoder import tables_for

    encs = {"id": encoder.Encoder("harmony", shape="native"),  # canonical messages: prefixes read alike
            "fallback": encoder.Encoder("openchatml-2.2", tokenizer="o200k_base", shape="native")}
    for e in encs.values():
        e.decoder(role="assistant")  # build the cached scanner tables outside the timings
        BatchDecoder(e, 1)           # and the lean masks

    def batch(enc, m, vectorized, warm=None):
        """A fresh BatchDecoder per run (cold Delta caches), or with ``warm`` (other completions)
        one long-lived decoder, warmed once, reset between runs: a serving process."""
        kept = []
        if warm is not None:
            bd = BatchDecoder(enc, m.shape[1], vectorized=vectorized)
            for ids in warm:
                bd.step(ids)
            kept.append(bd)

        def run():
            if kept:
                bd = kept[0]
                bd.reset_all()
            else:
                bd = BatchDecoder(enc, m.shape[1], vectorized=vectorized)
            step = bd.step
            t = time.perf_counter()
            for ids in m:
                step(ids)
            bd.finish()
            return time.perf_counter() - t
        return run

    def loop(enc, m):
        ml = m.tolist()

        def run():
            decs = [enc.decoder(role="assistant") for _ in range(m.shape[1])]
            feeds = [d.feed for d in decs]
            t = time.perf_counter()
            for ids in ml:
                out = [f([i]) if i >= 0 else [] for f, i in zip(feeds, ids)]  # noqa: F841
            for d in decs:
                d.finish()
            return time.perf_counter() - t
        return run

    def hp(m):
        ml = m.tolist()

        def run():
            ps = [oh.StreamableParser(harmony, oh.Role.ASSISTANT) for _ in range(m.shape[1])]
            procs = [p.process for p in ps]
            t = time.perf_counter()
            for ids in ml:
                for proc, i in zip(procs, ids):
                    if i >= 0:
                        proc(i)
            return time.perf_counter() - t
        return run

    runs: dict[str, tuple] = {}
    info = []
    for kind in ("prose", "words"):
        for mode, enc in encs.items():
            rows = rows_for(enc, kind, args.rows, args.steps, seed=7)
            m, n = matrix(rows)
            # sanity: the batch and the per-row decoders agree on the messages
            bd = BatchDecoder(enc, m.shape[1])
            for ids in m:
                bd.step(ids)
            bd.finish()
            for j, r in enumerate(rows):
                assert bd.messages(j) == enc.parse(r, role="assistant"), (kind, mode, j)
            ft = tables_for(enc).normal.fast_text
            lean = sum(1 for r in rows for i in r if ft[i] is not None)
            info.append(f"{kind:5s} {mode:8s}: {m.shape[0]} steps x {m.shape[1]} rows, {n} ids, "
                        f"{100 * lean / n:.1f}% with fast_text")
            warm, _ = matrix(rows_for(enc, kind, args.rows, args.steps, seed=8))
            runs[f"{kind} {mode}: BatchDecoder.step numpy"] = (batch(enc, m, True, warm), n)
            runs[f"{kind} {mode}: BatchDecoder.step loop"] = (batch(enc, m, False, warm), n)
            runs[f"{kind} {mode}: BatchDecoder.step loop, fresh"] = (batch(enc, m, False), n)
            runs[f"{kind} {mode}: B x StreamDecoder.feed([id])"] = (loop(enc, m), n)
            if mode == "id":
                runs[f"{kind} {mode}: B x harmony process(id)"] = (hp(m), n)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if sizes:
        enc = encs["id"]
        steps = min(args.steps, 300)
        base = rows_for(enc, "prose", max(sizes), steps, seed=9)
        warm_base = rows_for(enc, "prose", max(sizes), steps, seed=10)
        for b in sizes:
            m, n = matrix(base[:b])
            w, _ = matrix(warm_base[:b])
            runs[f"B={b:<4d} prose id: numpy"] = (batch(enc, m, True, w), n)
            runs[f"B={b:<4d} prose id: loop"] = (batch(enc, m, False, w), n)
            runs[f"B={b:<4d} prose id: feed loop"] = (loop(enc, m), n)

    samples: dict[str, list[float]] = {k: [] for k in runs}
    order = list(runs)
    for rep in range(args.reps):
        random.Random(rep).shuffle(order)
        for k in order:
            fn, n = runs[k]
            samples[k].append(fn() / n * 1e6)
    med = {k: statistics.median(v) for k, v in samples.items()}

    print("\n".join(info))
    print(f"VECTOR_MIN_ROWS = {VECTOR_MIN_ROWS}; medians of {args.reps} interleaved runs, µs per token:")
    for k, v in med.items():
        extra = ""
        if "BatchDecoder" in k or k.endswith(("numpy", "loop")) and "feed" not in k:
            ref = k.split(":")[0] + (": B x StreamDecoder.feed([id])" if "BatchDecoder" in k else ": feed loop")
            if ref in med:
                extra = f"   ({med[ref] / v:4.2f}x the feed loop's speed)"
        print(f"  {k:52s} {v:7.3f}{extra}")


if __name__ == "__main__":
    main()
