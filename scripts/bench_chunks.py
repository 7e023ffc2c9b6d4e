"""OpenAI chunk streaming cost: ``enc.chunker().feed([id])`` vs the stream decoder alone, per token.

    python scripts/bench_chunks.py [--tokens 4000] [--reps 7] [--format harmony|apertus|...] [--reasoning think]

Streams one long gpt-oss style assistant turn (analysis + final; Apertus: thoughts +
response; ChatML with ``--reasoning think``: a Qwen3 ``<think>`` block + answer) token by token through ``Encoder(FORMAT).decoder(role="assistant").feed([id])``
and through ``Encoder(FORMAT).chunker().feed([id])`` (the decoder plus one complete
``chat.completion.chunk`` dict per content token), and also ``json.dumps`` of each chunk
(what a server then sends).  Repetitions are interleaved; medians and the ratio
chunker / decoder in this run are printed (absolute numbers are noisy on shared VMs).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from ocml import encoder  # noqa: E402


def completion(enc: encoder.Encoder, n: int) -> list[int]:
    rng = random.Random(0)
    words = "the of weather Paris sunny tool 24 °C 🌞 analysis answer, because: think".split()
    text = lambda k: " ".join(rng.choice(words) for _ in range(k))  # noqa: E731
    user = {"role": "user", "content": "Tell me."}
    turn = {"role": "assistant", "reasoning_content": text(n // 3), "content": text(n // 3)}
    full = enc.render([user, turn]).ids.tolist()
    prompt = enc.render([user], mode="prompt").ids.tolist()
    return full[len(prompt):]


def run(make, ids: list[int], dump: bool) -> float:
    s = make()
    t = time.perf_counter()
    feed = s.feed
    if dump:
        dumps = json.dumps
        for i in ids:
            for c in feed([i]):
                dumps(c)
    else:
        for i in ids:
            feed([i])
    return (time.perf_counter() - t) / len(ids) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--format", default="harmony")
    ap.add_argument("--reasoning", default=None, help="ChatML's reasoning= option (think: Qwen3's <think> layout)")
    a = ap.parse_args()
    enc = encoder.Encoder(a.format, **({"reasoning": a.reasoning} if a.reasoning else {}))
    ids = completion(enc, a.tokens)
    cases = {"decoder": (lambda: enc.decoder(role="assistant"), False),
             "chunker": (lambda: enc.chunker(id="x", created=0), False),
             "chunker+json.dumps": (lambda: enc.chunker(id="x", created=0), True)}
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(a.reps):
        for k, (make, dump) in cases.items():
            times[k].append(run(make, ids, dump))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{a.format}: {len(ids)} tokens, {a.reps} reps (median µs/token)")
    for k, v in med.items():
        print(f"  {k:20s} {v:7.2f} µs/token   x{v / med['decoder']:.2f} of the decoder")


if __name__ == "__main__":
    main()
