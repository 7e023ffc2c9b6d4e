"""Cost of the record shapes (encoder.inputs) against the same content as conversations.

    python scripts/bench_shapes.py [--n 2000] [--format openchatml-2.2]

Every line is a ratio against a reference measured in the same run (the machine is shared
and noisy; absolute rates are printed for context only):
- prompt/completion (conversational), Alpaca: vs the same messages as a chat record;
- prompt/completion (standard), text: vs ``tokenizer.encode_text`` of the same strings;
- a preference pair (conversational): vs rendering its two sides as chat records.
"""

from __future__ import annotations

import argparse
import random
import time


from ocml import encoder  # noqa: E402
from ocml.encoder.inputs import render_pairs  # noqa: E402

WORDS = "the of and to in is was for on that with as by at from his her an which sky blue model data".split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--format", default="openchatml-2.2")
    args = ap.parse_args()
    rng = random.Random(0)
    enc = encoder.Encoder(args.format)
    tok = enc.tokenizer
    qs = [sentence(rng, rng.randint(8, 40)) for _ in range(args.n)]
    ans = [sentence(rng, rng.randint(20, 120)) for _ in range(args.n)]
    bad = [sentence(rng, rng.randint(20, 120)) for _ in range(args.n)]
    u = [{"role": "user", "content": q} for q in qs]
    a = [{"role": "assistant", "content": x} for x in ans]
    r = [{"role": "assistant", "content": x} for x in bad]
    chat = [[ui, ai] for ui, ai in zip(u, a)]
    cases = {
        "prompt/completion conversational": ([{"prompt": [ui], "completion": [ai]} for ui, ai in zip(u, a)], chat),
        "alpaca": ([{"instruction": q, "input": "", "output": x} for q, x in zip(qs, ans)], chat),
    }
    ref = best(lambda: enc.render_batch(chat))
    print(f"reference: chat render_batch {args.n / ref:,.0f} conv/s ({args.format}, {tok.name})")
    for name, (recs, _) in cases.items():
        t = best(lambda recs=recs: enc.render_batch(recs))
        print(f"{name:36} {t / ref:5.2f}x the chat render  ({args.n / t:,.0f} rec/s)")
    raw = best(lambda: [tok.encode_text(q) + tok.encode_text(x) for q, x in zip(qs, ans)])
    for name, recs in (("prompt/completion standard", [{"prompt": q, "completion": x} for q, x in zip(qs, ans)]),
                       ("text", [{"text": q + " " + x} for q, x in zip(qs, ans)])):
        t = best(lambda recs=recs: enc.render_batch(recs))
        print(f"{name:36} {t / raw:5.2f}x tokenizer.encode_text of its strings  ({args.n / t:,.0f} rec/s)")
    pairs = [{"prompt": [ui], "chosen": [ai], "rejected": [ri]} for ui, ai, ri in zip(u, a, r)]
    sides = chat + [[ui, ri] for ui, ri in zip(u, r)]
    two = best(lambda: enc.render_batch(sides))
    t = best(lambda: render_pairs(enc, pairs))
    print(f"{'preference pair conversational':36} {t / two:5.2f}x rendering both sides as chat  "
          f"({args.n / t:,.0f} pairs/s)")


if __name__ == "__main__":
    main()
