"""Render benchmark: ratios against references measured in the same run.

    python scripts/bench_render.py [--reps 15]

Compares, on the same conversations and with identical ids where a reference makes ids:
1. ocml render (ids + mask + message index, numpy) vs plain tiktoken ``encode_ordinary``
   over the same text pieces (the floor);
2. ocml vs openai-harmony ``render_conversation_for_training`` (ids checked identical),
   and harmony vs the ``encode_ordinary`` floor: the best speedup over harmony that any
   renderer that must tokenize the same text with tiktoken can reach;
3. ocml vs transformers ``apply_chat_template(..., return_assistant_tokens_mask=True)``
   with a Harmony-like template carrying ``{% generation %}`` tags, on the same tokenizer
   converted to HF (``Tokenizer.to_hf()``).
``ocml`` is ``render`` one conversation at a time, ``ocml_batch`` is ``render_batch``,
``ocml_2threads`` is ``render`` with ``threads=2`` (opt-in).
Medians of interleaved repetitions; timings on a shared VM are noisy, the ratios are the result.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import encoder  # noqa: E402
from gen import WORDS  # noqa: E402

TEMPLATE = (
    "{%- for m in messages -%}"
    "{%- if m.role == 'assistant' -%}<|start|>assistant{% generation %}<|channel|>{{ m.channel }}<|message|>"
    "{{ m.content }}{%- if loop.last -%}<|return|>{%- else -%}<|end|>{%- endif -%}{% endgeneration %}"
    "{%- else -%}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>{%- endif -%}"
    "{%- endfor -%}"
)


def make_text(rng: random.Random, n_words: int) -> str:
    prose = ["the", "model", "answer", "question", "because", "however", "result", "data", "value", "function"]
    return " ".join(rng.choice(prose + WORDS[:12]) for _ in range(n_words))


def conversations(kind: str, n: int, seed: int = 0) -> list[list[dict]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if kind == "many":  # a long chat of many short messages: per-message cost dominates
            msgs = []
            for _t in range(100):
                msgs.append({"role": "user", "content": make_text(rng, 12)})
                msgs.append({"role": "assistant", "channel": "analysis", "content": make_text(rng, 10)})
                msgs.append({"role": "assistant", "channel": "final", "content": make_text(rng, 16)})
        elif kind == "short":
            msgs = [{"role": "user", "content": "What is 2 + 2?"},
                    {"role": "assistant", "channel": "analysis", "content": "Simple arithmetic."},
                    {"role": "assistant", "channel": "final", "content": "4."}]
        else:
            msgs = []
            for _t in range(10):
                msgs.append({"role": "user", "content": make_text(rng, 120)})
                msgs.append({"role": "assistant", "channel": "analysis", "content": make_text(rng, 100)})
                msgs.append({"role": "assistant", "channel": "final", "content": make_text(rng, 160)})
        out.append(msgs)
    return out


def contest(fns: dict[str, object], reps: int) -> dict[str, float]:
    """Median seconds per contender, runs interleaved round by round so load drifts hit all alike."""
    for fn in fns.values():
        fn()  # warm caches
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            samples[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in samples.items()}


def harmony_encoding():
    """openai-harmony loaded offline (bench_stream.offline_harmony), or (None, None) without it."""
    from bench_stream import offline_harmony

    try:
        return offline_harmony()
    except ImportError:
        return None, None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--n", type=int, default=200, help="conversations per workload")
    args = ap.parse_args()
    enc = encoder.Encoder("harmony")
    tok = enc.tokenizer
    oh, henc = harmony_encoding()
    hf = None
    try:
        hf = tok.to_hf()
    except Exception as exc:  # noqa: BLE001
        print(f"(skipping apply_chat_template: {exc})")
    rows = []
    two = encoder.Encoder("harmony", threads=2)  # opt-in encode threads, for comparison
    for kind in ("short", "long", "many"):
        convs = conversations(kind, args.n if kind == "short" else max(args.n // 10, 5))
        # the same text pieces ocml encodes, for the encode_ordinary floor
        pieces = []
        for c in convs:
            for m in c:
                pieces += [m["role"], m.get("channel") or "", m["content"]]
        core = tok.encoding._core_bpe.encode_ordinary
        n_tokens = sum(len(enc.render(c, cot="keep-all")) for c in convs)
        fns = {
            "ocml": lambda: [enc.render(c, cot="keep-all") for c in convs],
            "ocml_batch": lambda: enc.render_batch(convs, cot="keep-all"),
            "ocml_2threads": lambda: [two.render(c, cot="keep-all") for c in convs],
            "encode_ordinary": lambda: [core(p) for p in pieces],
        }
        same = None
        if henc is not None:
            keep = oh.RenderConversationConfig(auto_drop_analysis=False)
            hconvs = [oh.Conversation.from_messages([
                oh.Message.from_role_and_content(oh.Role(m["role"]), m["content"]).with_channel(m["channel"])
                if m.get("channel") else oh.Message.from_role_and_content(oh.Role(m["role"]), m["content"])
                for m in c]) for c in convs]
            same = all(enc.render(c, cot="keep-all").ids.tolist() == henc.render_conversation_for_training(h, keep)
                       for c, h in zip(convs, hconvs))
            same = same and all(a.ids.tolist() == b.ids.tolist() for a, b in
                                zip(enc.render_batch(convs, cot="keep-all"), two.render_batch(convs, cot="keep-all")))
            fns["openai_harmony"] = lambda: [henc.render_conversation_for_training(h, keep) for h in hconvs]
        t = contest(fns, args.reps)
        if hf is not None:
            t_hf = contest({"act": lambda: [hf.apply_chat_template(c, chat_template=TEMPLATE, tokenize=True,
                                                                   return_dict=True, return_assistant_tokens_mask=True)
                                            for c in convs],
                            "ocml": fns["ocml"], "encode_ordinary": fns["encode_ordinary"]}, max(5, args.reps // 2))
        row: dict[str, object] = {"workload": kind, "conversations": len(convs), "tokens": n_tokens}
        for k in ("ocml", "ocml_batch", "ocml_2threads"):
            row[f"{k}_us_per_conv"] = 1e6 * t[k] / len(convs)
        row["ratio_vs_encode_ordinary"] = t["ocml"] / t["encode_ordinary"]
        if henc is not None:
            row["harmony_ids_identical"] = same
            row["openai_harmony_us_per_conv"] = 1e6 * t["openai_harmony"] / len(convs)
            # the best speedup any renderer that must run encode_ordinary over these pieces can reach
            row["speedup_bound_openai_harmony_vs_encode_ordinary"] = t["openai_harmony"] / t["encode_ordinary"]
            for k in ("ocml", "ocml_batch", "ocml_2threads"):
                row[f"speedup_{k}_vs_openai_harmony"] = t["openai_harmony"] / t[k]
        if hf is not None:
            row["speedup_ocml_vs_apply_chat_template"] = t_hf["act"] / t_hf["ocml"]
            row["speedup_bound_apply_chat_template_vs_encode_ordinary"] = t_hf["act"] / t_hf["encode_ordinary"]
        rows.append(row)
    for row in rows:
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, indent=1))


if __name__ == "__main__":
    main()
