"""chatml / apertus render speed: ratios against tiktoken encoding the same whole text, in one run.

    python scripts/bench_formats.py

``render`` (ids + mask + message index; whole-run encoding, the straddling rule) vs
``Encoding.encode(text, allowed_special=controls)`` of the rendered text (the floor), for
small generated conversations (tools, calls, outputs) and for long content; openchatml-2.2
(piece-by-piece encoding) as the reference point.  Medians of interleaved repetitions.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from ocml import encoder  # noqa: E402
from support.apertus import conversation as apertus_conversation  # noqa: E402
from support.chatml import chat_conv, words  # noqa: E402


def ratio(enc: encoder.Encoder, convs: list, reps: int = 7) -> tuple[float, float]:
    texts = [enc.tokenizer.decode(enc.render(c, mode="history").ids.tolist()) for c in convs]
    ctl = set(enc.format.table.controls)
    tik = enc.tokenizer.encoding
    a, b = [], []
    for _ in range(reps):
        t = time.perf_counter()
        for c in convs:
            enc.render(c, mode="history")
        a.append(time.perf_counter() - t)
        t = time.perf_counter()
        for x in texts:
            tik.encode(x, allowed_special=ctl)
        b.append(time.perf_counter() - t)
    return statistics.median(a) / statistics.median(b), statistics.median(a) / len(convs) * 1e6


def main() -> None:
    rng = random.Random(0)
    small = {"chatml": [chat_conv(rng) for _ in range(300)],
             "apertus": [apertus_conversation(rng, True) for _ in range(300)]}
    small["openchatml-2.2"] = small["chatml"]
    long = [[{"role": "user" if k % 2 == 0 else "assistant",
              "content": " ".join(words(rng, 8, safe=True) for _ in range(120))} for k in range(8)] for _ in range(40)]
    for fmt in ("chatml", "apertus", "openchatml-2.2"):
        enc = encoder.Encoder(fmt, date="2025-01-01") if fmt == "apertus" else encoder.Encoder(fmt)
        r_small, us = ratio(enc, small[fmt])
        r_long, _ = ratio(enc, long)
        print(f"{fmt:15} small: {r_small:.2f}x encode ({us:.0f} us/conv)   long content: {r_long:.2f}x encode")


if __name__ == "__main__":
    main()
