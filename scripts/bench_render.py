"""Render benchmark: ratios against references measured in the same run.

    python scripts/bench_render.py [--reps 15] [--n 200] [--only agentic|chats] [--stat median|min]

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

Agentic workloads (issue 9: system prompt, 1-4 function tools with JSON Schemas, turns with
tool calls, results and reasoning, from ``tests/test_openai_input.openai_conversation``):
``agentic_own`` (every conversation its own tools) and ``agentic_shared`` (one tool set,
system prompt and options shared by all, as in SFT sets), each given as OpenAI chat dicts
(Harmony and ``openchatml-2.2``) and as openai-harmony JSON (``*_json``: the parsed
``Conversation.to_json()``; openai-harmony gets its own objects, prebuilt, untimed).
The floor of every workload (``ratio_vs_floor``) is the text runs between control tokens of
the same renders, each encoded plainly with ``encode_ordinary``.
Medians (or ``--stat min``) of interleaved repetitions; timings on a shared VM are noisy, the
ratios are the result.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from ocml import encoder  # noqa: E402
from ocml.encoder.section_cache import SECTIONS  # noqa: E402

from support.gen import WORDS  # noqa: E402

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


def agentic(n: int, shared: bool, seed: int = 9) -> list[dict]:
    """OpenAI-style agentic conversations; ``shared``: one tool set, system prompt and options for all."""
    from support.gen import TOOL_NAMES, schema, text
    from support.openai_input import openai_conversation

    rng = random.Random(seed)
    out = [openai_conversation(rng) for _ in range(n)]
    if not shared:
        return out
    srng = random.Random(seed + 1)
    tools = [{"type": "function", "function": {"name": name, "description": f"{text(srng, 12)}.",
                                               "parameters": schema(srng)}} for name in TOOL_NAMES]
    system = " ".join(text(srng, 12) for _ in range(6)) or "Be brief."
    for conv in out:
        msgs = [m for m in conv["messages"] if m["role"] not in ("system", "developer")]
        for m in msgs:
            for c in m.get("tool_calls") or ():
                c["function"]["name"] = rng.choice(TOOL_NAMES)
        conv.clear()
        conv.update({"messages": [{"role": "system", "content": system}, *msgs], "tools": tools,
                     "reasoning_effort": "high"})
    return out


def text_runs(tok, ids) -> list[str]:  # type: ignore[no-untyped-def]
    """The text between control tokens of a render (the floor encodes each run plainly)."""
    import numpy as np

    ctl = np.isin(ids, np.fromiter(tok.special_ids, dtype=np.int64))
    cuts = np.flatnonzero(ctl)
    runs = []
    a = 0
    for b in [*cuts.tolist(), len(ids)]:
        if b > a:
            runs.append(tok.decode_bytes(ids[a:b].tolist()).decode("utf-8"))
        a = b + 1
    return runs


def agentic_rows(args, oh, henc) -> list[dict]:  # type: ignore[no-untyped-def]
    """Issue 9 workloads: ratio to the floor (text runs between controls) and to openai-harmony
    (whose default training render drops analysis the gpt-oss way: ``cot="harmony"``)."""
    from support.openai_input import to_harmony_objects

    rows = []
    enc = encoder.Encoder("harmony")
    tok = enc.tokenizer
    core = tok.encoding._core_bpe.encode_ordinary
    ocml22 = encoder.Encoder("openchatml-2.2")
    core22 = ocml22.tokenizer.encoding._core_bpe.encode_ordinary
    def cold() -> None:
        """Own tools: every conversation is new content, as in a real pass over a data set (the
        bench repeats the same conversations, which would otherwise hit the section cache)."""
        if not shared:
            SECTIONS.clear()
            for e in (enc, ocml22):
                e.renderer.sections.clear()

    for shared in (False, True):
        convs = agentic(args.n, shared)
        name = "agentic_shared" if shared else "agentic_own"
        runs = [r for c in convs for r in text_runs(tok, enc.render(c, cot="harmony").ids)]
        runs22 = [r for c in convs for r in text_runs(ocml22.tokenizer, ocml22.render(c).ids)]
        fns = {
            "ocml": lambda: (cold(), [enc.render(c, cot="harmony") for c in convs]),
            "ocml_batch": lambda: (cold(), enc.render_batch(convs, cot="harmony")),
            "floor": lambda: [core(r) for r in runs],
            "ocml_openchatml22": lambda: (cold(), [ocml22.render(c) for c in convs]),
            "floor_openchatml22": lambda: [core22(r) for r in runs22],
        }
        hconvs = jsons = None
        if henc is not None:
            hconvs = [to_harmony_objects(c, oh) for c in convs]
            jsons = [json.loads(h.to_json()) for h in hconvs]
            jruns = [r for j in jsons for r in text_runs(tok, enc.render(j, cot="harmony").ids)]
            fns["ocml_json"] = lambda: (cold(), [enc.render(j, cot="harmony") for j in jsons])
            fns["floor_json"] = lambda: [core(r) for r in jruns]
            fns["openai_harmony"] = lambda: [henc.render_conversation_for_training(h) for h in hconvs]
        t = contest(fns, args.reps)
        row: dict[str, object] = {"workload": name, "conversations": len(convs),
                                  "tokens": sum(len(enc.render(c, cot="harmony")) for c in convs)}
        row["ocml_us_per_conv"] = 1e6 * t["ocml"] / len(convs)
        row["floor_us_per_conv"] = 1e6 * t["floor"] / len(convs)
        row["ratio_vs_floor"] = t["ocml"] / t["floor"]
        row["ratio_batch_vs_floor"] = t["ocml_batch"] / t["floor"]
        row["ratio_openchatml22_vs_floor"] = t["ocml_openchatml22"] / t["floor_openchatml22"]
        if henc is not None:
            row["harmony_ids_identical"] = all(
                enc.render(c, cot="harmony").ids.tolist() == henc.render_conversation_for_training(h)
                and enc.render(j, cot="harmony").ids.tolist() == henc.render_conversation_for_training(h)
                for c, j, h in zip(convs, jsons, hconvs))
            row["openai_harmony_us_per_conv"] = 1e6 * t["openai_harmony"] / len(convs)
            row["ratio_json_vs_floor"] = t["ocml_json"] / t["floor_json"]
            row["speedup_ocml_vs_openai_harmony"] = t["openai_harmony"] / t["ocml"]
            row["speedup_ocml_json_vs_openai_harmony"] = t["openai_harmony"] / t["ocml_json"]
        rows.append(row)
    return rows


STAT = statistics.median


def contest(fns: dict[str, object], reps: int) -> dict[str, float]:
    """Median (``--stat min``: fastest) seconds per contender, runs interleaved round by round so
    load drifts hit all alike."""
    for fn in fns.values():
        fn()  # warm caches
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            samples[k].append(time.perf_counter() - t)
    return {k: STAT(v) for k, v in samples.items()}


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
    ap.add_argument("--only", choices=["agentic", "chats"], help="run one group of workloads")
    ap.add_argument("--stat", choices=["median", "min"], default="median",
                    help="min: the fastest round, steadier than the median on a loaded machine")
    args = ap.parse_args()
    global STAT
    STAT = min if args.stat == "min" else statistics.median
    enc = encoder.Encoder("harmony")
    tok = enc.tokenizer
    oh, henc = harmony_encoding()
    hf = None
    try:
        hf = tok.to_hf()
    except Exception as exc:  # noqa: BLE001
        print(f"(skipping apply_chat_template: {exc})")
    rows = [] if args.only == "chats" else agentic_rows(args, oh, henc)
    two = encoder.Encoder("harmony", threads=2)  # opt-in encode threads, for comparison
    for kind in () if args.only == "agentic" else ("short", "long", "many"):
        convs = conversations(kind, args.n if kind == "short" else max(args.n // 10, 5))
        # the same text pieces ocml encodes, for the encode_ordinary floor
        pieces = []
        for c in convs:
            for m in c:
                pieces += [m["role"], m.get("channel") or "", m["content"]]
        core = tok.encoding._core_bpe.encode_ordinary
        n_tokens = sum(len(enc.render(c, cot="keep-all")) for c in convs)
        runs = [r for c in convs for r in text_runs(tok, enc.render(c, cot="keep-all").ids)]
        fns = {
            "ocml": lambda: [enc.render(c, cot="keep-all") for c in convs],
            "ocml_batch": lambda: enc.render_batch(convs, cot="keep-all"),
            "ocml_2threads": lambda: [two.render(c, cot="keep-all") for c in convs],
            "encode_ordinary": lambda: [core(p) for p in pieces],
            "floor": lambda: [core(r) for r in runs],
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
        row["ratio_vs_floor"] = t["ocml"] / t["floor"]  # the text runs between controls, as in the agentic rows
        row["ratio_batch_vs_floor"] = t["ocml_batch"] / t["floor"]
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
