"""Where render time goes on agentic data: µs per conversation for each phase, and the floor.

    python scripts/profile_render.py [--n 100] [--reps 15]

Phases of ``Encoder.render`` (Harmony, OpenAI-style conversations from ``bench_render.agentic``):
``read`` (adapters: dicts -> messages), ``normalize`` (system / developer sections), ``validate``
(+ CoT policy and mask flags), ``layout`` (header ids, pieces), ``assemble`` (text encoding and
numpy), against the floor (``encode_ordinary`` over the same renders' text runs).  Each phase is
timed over the whole workload, fastest of ``--reps`` rounds; "own" clears the section caches
every round (every conversation is new content), "shared" keeps them warm.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from ocml import encoder  # noqa: E402
from bench_render import agentic, text_runs  # noqa: E402
from ocml.encoder import cot as cot_mod  # noqa: E402
from ocml.encoder import sections  # noqa: E402
from ocml.encoder.adapters import to_conversation  # noqa: E402
from ocml.encoder.masks import message_flags  # noqa: E402
from ocml.encoder.messages import Mode  # noqa: E402


def phases(enc: encoder.Encoder, convs: list[dict], cold: bool) -> dict[str, float]:
    """Seconds per phase for one pass over ``convs``."""
    fmt, ren = enc.format, enc.renderer
    if cold:
        sections.SECTIONS.clear()
        ren.sections.clear()
    t: dict[str, float] = {}
    c0 = time.perf_counter()
    given = [to_conversation(c, fmt.chat_style, enc.shape) for c in convs]  # type: ignore[arg-type]
    c1 = time.perf_counter()
    normed = [fmt.normalize(g) for g in given]
    c2 = time.perf_counter()
    prepared = []
    for conv in normed:
        fmt.validate(conv)
        drop = cot_mod.dropped(conv.messages, enc.cot)
        keep = [i for i in range(len(conv.messages)) if i not in drop]
        kept = [conv.messages[i] for i in keep]
        prepared.append((conv, keep, message_flags(kept, enc.mask), tuple(sorted(drop))))
    c3 = time.perf_counter()
    jobs = [ren.layout(conv, keep, flags, True, False, dropped) for conv, keep, flags, dropped in prepared]
    c4 = time.perf_counter()
    for job in jobs:
        ren.assemble([job])
    c5 = time.perf_counter()
    t.update(read=c1 - c0, normalize=c2 - c1, validate=c3 - c2, layout=c4 - c3, assemble=c5 - c4)
    return t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    enc = encoder.Encoder("harmony")
    tok = enc.tokenizer
    core = tok.encoding._core_bpe.encode_ordinary
    print(f"{'workload':8} {'floor':>7} {'render':>7} " + " ".join(f"{k:>9}" for k in
          ("read", "normalize", "validate", "layout", "assemble")) + "   (µs per conversation, fastest round)")
    for name, shared in (("own", False), ("shared", True)):
        convs = agentic(args.n, shared)
        runs = [r for c in convs for r in text_runs(tok, enc.render(c, mode=Mode.TRAIN).ids)]
        best: dict[str, float] = {}
        for _ in range(args.reps):
            t0 = time.perf_counter()
            for r in runs:
                core(r)
            floor = time.perf_counter() - t0
            if not shared:
                sections.SECTIONS.clear()
                enc.renderer.sections.clear()
            t0 = time.perf_counter()
            for c in convs:
                enc.render(c)
            total = time.perf_counter() - t0
            sample = {"floor": floor, "render": total, **phases(enc, convs, cold=not shared)}
            for k, v in sample.items():
                best[k] = min(best.get(k, v), v)
        us = {k: 1e6 * v / len(convs) for k, v in best.items()}
        print(f"{name:8} {us['floor']:7.1f} {us['render']:7.1f} " + " ".join(
            f"{us[k]:9.1f}" for k in ("read", "normalize", "validate", "layout", "assemble"))
            + f"   render/floor {us['render'] / us['floor']:.2f}x, Python outside encoding "
              f"~{us['render'] - us['floor']:.0f} µs")


if __name__ == "__main__":
    main()
