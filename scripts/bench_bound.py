"""Issue 18's bound: how close to the BPE floor can *any* Python renderer get on chat-like data?

    python scripts/bench_bound.py [--records 1500] [--rounds 9]

On the same chat-like records as ``bench_builds.py`` (``make_sample.chat_records``, Harmony), one
process, fastest of ``--rounds`` interleaved rounds, each timed against the floor in the same round:

- ``floor``: ``encode_ordinary`` over the text runs between the control tokens of the renders
  (what the issue's percentages divide by);
- ``skeleton: BPE lists -> one array``: the floor's calls, their lists joined and turned into one
  numpy array per conversation - what any renderer on tiktoken's API does, compiled or not
  (no controls, no mask);
- ``skeleton: assemble``: a renderer that already knows every conversation's layout (its text
  runs and control ids, precomputed) and only does what no renderer can skip: one BPE call per
  run, the ids and the mask appended, one numpy array of each per conversation;
- ``skeleton: read + assemble``: the same plus one pass over every record's dicts (each
  message's keys and values, tool calls' JSON arguments parsed once), the least work any
  reader of OpenAI dicts does;
- ``skeleton: joined BPE + numpy`` (``read +`` it): the same layouts, 256 conversations per
  tokenizer call (``Tokenizer.encode_joined``, as ``render_batch`` encodes a chunk), ids and
  mask placed by numpy: the cheapest assembly on tiktoken's API, below the per-run floor;
- ``ocml render_batch`` as installed.

Speeds are tokens/s as % of the floor's (control tokens counted, as ``bench_builds.py`` does).
The skeletons bound what the goal rows can reach while rendering happens in Python objects:
whatever ocml adds on top of ``read + assemble`` (validation, layout, masks by policy, error
positions) comes out of the gap between that skeleton and 100%.

    python scripts/bench_bound.py --formats [--ref main] [--records 600] [--rounds 7]

Issue 30's render row: ``render_batch`` per format (Harmony, OpenChatML 2.2, ChatML) on agentic
chat data vs the BPE floor, as ``floor time / render time`` (the issue's measure; 70% is its
goal).  Two data sets: ``sample`` (``make_sample.chat_records``: system prompts, tools with calls
and results, reasoning, code: the records ``bench_pipeline.py`` packs) and ``agentic``
(``bench_render.agentic``: OpenAI conversations each with its own random tools and JSON Schemas,
section caches cleared every round: every conversation is new content).  ChatML has no reasoning
channel nor a developer role: its copy of the data drops reasoning and reads developer as
system.  Each (format, data) pair times the floor and ``render_batch`` in the same round,
fastest of ``--rounds``.  ``--ref REF`` also runs REF's code (``git archive`` of ``encoder``,
``vocab``, ``ocml``, as ``bench_ab.py`` does) in child processes alternating with this
checkout's, so before and after are measured in one run on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


FORMATS = ("harmony", "openchatml-2.2", "chatml")


def format_data(fmt: str, records: int) -> dict[str, list[Any]]:
    """The two data sets of ``--formats``, as ``fmt`` can carry them."""
    import make_sample
    from bench_render import agentic

    from ocml.encoder.pipeline.records import conversation_from_record

    data: dict[str, list[Any]] = {
        "sample": [conversation_from_record(json.loads(x))
                   for x in make_sample.chat_records(random.Random(0), records, ())],
        "agentic": agentic(records, False)}
    if fmt == "chatml":  # no reasoning channel, no developer role
        for convs in data.values():
            for conv in convs:
                for m in conv["messages"] if isinstance(conv, dict) else conv:
                    for key in ("reasoning_content", "thinking", "reasoning"):
                        m.pop(key, None)
                    if m["role"] == "developer":
                        m["role"] = "system"
    return data


def format_ratios(records: int, rounds: int) -> dict[str, float]:
    """``floor time / render_batch time`` per (format, data set), fastest of ``rounds``."""
    from bench_render import text_runs

    from ocml import encoder
    from ocml.encoder.section_cache import SECTIONS

    out: dict[str, float] = {}
    for fmt in FORMATS:
        enc = encoder.Encoder(fmt)
        core = enc.tokenizer.encoding._core_bpe.encode_ordinary
        for name, convs in format_data(fmt, records).items():
            runs = [t for r in enc.render_batch(convs).results for t in text_runs(enc.tokenizer, r.ids)]

            def render(convs: list[Any] = convs) -> None:
                SECTIONS.clear()  # every conversation new content, as in a pass over a data set
                enc.renderer.sections.clear()
                enc.render_batch(convs)

            best_floor = best_render = float("inf")
            for _ in range(rounds):
                t0 = time.perf_counter()
                for t in runs:
                    core(t)
                t1 = time.perf_counter()
                render()
                t2 = time.perf_counter()
                best_floor, best_render = min(best_floor, t1 - t0), min(best_render, t2 - t1)
            out[f"{fmt} {name}"] = best_floor / best_render
    return out


def formats_main(args: argparse.Namespace) -> None:
    """``--formats``: this checkout (and ``--ref``'s code) per format, one run."""
    trees: dict[str, str | None] = {"this checkout": None}
    with tempfile.TemporaryDirectory() as tmp:
        if args.ref:
            from bench_ab import export

            trees = {args.ref: str(export(args.ref, Path(tmp))), **trees}
        best: dict[str, dict[str, float]] = {name: {} for name in trees}
        for _ in range(args.repeat):  # child processes alternate, so load drifts hit both alike
            for name, entry in trees.items():
                env = dict(os.environ)
                env.pop("PYTHONPATH", None)
                if entry is not None:
                    env["PYTHONPATH"] = entry  # before site-packages: wins over the editable install
                res = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--records", str(args.records),
                                      "--rounds", str(args.rounds)], env=env, capture_output=True, text=True,
                                     check=True, cwd=tempfile.gettempdir())
                for k, v in json.loads(res.stdout.strip().splitlines()[-1]).items():
                    best[name][k] = max(best[name].get(k, 0.0), v)
    print(f"render_batch vs the BPE floor (floor time / render time), {args.records} conversations per data set, "
          f"fastest of {args.rounds} rounds x {args.repeat} processes per tree; "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    names = list(trees)
    print("| format, data | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for k in best[names[-1]]:
        print(f"| {k} | " + " | ".join(f"{100 * best[n].get(k, 0.0):.0f}%" for n in names) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--formats", action="store_true", help="render_batch vs the floor per format (issue 30)")
    ap.add_argument("--ref", help="with --formats: also time this git ref's code, in the same run")
    ap.add_argument("--repeat", type=int, default=2, help="with --formats: child processes per tree")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "scripts"))
    sys.path.insert(0, str(ROOT / "tests"))
    if args.child:
        print(json.dumps(format_ratios(args.records, args.rounds)))
        return
    if args.formats:
        formats_main(args)
        return
    import make_sample
    from bench_render import text_runs

    from ocml import encoder
    from ocml.encoder.pipeline.records import conversation_from_record

    enc = encoder.Encoder("harmony")
    tok = enc.tokenizer
    core = tok.encoding._core_bpe.encode_ordinary
    special = np.fromiter(tok.special_ids, dtype=np.int64)
    records = [json.loads(x) for x in make_sample.chat_records(random.Random(0), args.records, ())]
    chat = [conversation_from_record(r) for r in records]
    renders = enc.render_batch(chat).results
    tokens = sum(len(r) for r in renders)
    # per conversation: [(text run or None, control id or None), ...] in order, and its mask bits
    layouts: list[list[tuple[str | None, int | None, bool]]] = []
    for r in renders:
        ids = np.asarray(r.ids)
        mask = np.asarray(r.mask, dtype=bool)
        ctl = np.isin(ids, special)
        plan: list[tuple[str | None, int | None, bool]] = []
        a = 0
        for b in [*np.flatnonzero(ctl).tolist(), len(ids)]:
            if b > a:
                plan.append((tok.decode_bytes(ids[a:b].tolist()).decode("utf-8"), None, bool(mask[a])))
            if b < len(ids):
                plan.append((None, int(ids[b]), bool(mask[b])))
            a = b + 1
        layouts.append(plan)
    runs = [t for r in renders for t in text_runs(tok, r.ids)]

    def floor() -> None:
        for t in runs:
            core(t)

    conv_runs = [[text for text, _, _ in plan if text is not None] for plan in layouts]

    def arrays() -> None:
        for texts in conv_runs:  # what no renderer on tiktoken's API avoids: its lists -> one array
            ids: list[int] = []
            for text in texts:
                ids += core(text)
            np.array(ids, dtype=np.int64)

    def assemble() -> None:
        for plan in layouts:  # the cheapest Python assembly: C-level extends, the mask as run lengths
            ids: list[int] = []
            bits: list[bool] = []
            lens: list[int] = []
            for text, cid, trained in plan:
                if text is not None:
                    got = core(text)
                    ids += got
                    lens.append(len(got))
                else:
                    ids.append(cid)  # type: ignore[arg-type]
                    lens.append(1)
                bits.append(trained)
            np.array(ids, dtype=np.int64)
            np.repeat(np.array(bits, dtype=bool), lens)

    def read() -> None:
        for rec in records:
            for m in rec["messages"]:
                for k, v in m.items():
                    if k == "tool_calls" and v:
                        for c in v:
                            json.loads(c["function"]["arguments"]) if isinstance(c["function"]["arguments"], str) else None
            for t in rec.get("tools") or ():
                t.get("function")

    def read_assemble() -> None:
        read()
        assemble()

    chunks = [layouts[k:k + 256] for k in range(0, len(layouts), 256)]  # render_batch's chunk

    def joined() -> None:
        for chunk in chunks:  # one BPE call per chunk (Tokenizer.encode_joined), numpy places the ids
            texts: list[str] = []
            cids: list[int] = []
            is_text: list[bool] = []
            bits: list[bool] = []
            for plan in chunk:
                for text, cid, trained in plan:
                    if text is not None:
                        texts.append(text)
                    else:
                        cids.append(cid)  # type: ignore[arg-type]
                    is_text.append(text is not None)
                    bits.append(trained)
            text_ids, counts = tok.encode_joined(texts)
            where = np.array(is_text, dtype=bool)
            lens = np.ones(len(is_text), dtype=np.int64)
            lens[where] = counts
            ids = np.empty(int(lens.sum()), dtype=np.int32)
            at = where.repeat(lens)
            ids[at] = text_ids
            ids[~at] = cids
            np.array(bits, dtype=bool).repeat(lens)

    def read_joined() -> None:
        read()
        joined()

    def ocml() -> None:
        enc.render_batch(chat)

    work: dict[str, Any] = {"skeleton: BPE lists -> one array": arrays, "skeleton: assemble": assemble,
                            "skeleton: read + assemble": read_assemble,
                            "skeleton: joined BPE + numpy": joined, "skeleton: read + joined BPE + numpy": read_joined,
                            "ocml render_batch": ocml}
    for fn in (floor, *work.values()):
        fn()
    best = {name: float("inf") for name in work}
    best_floor = float("inf")
    for _ in range(args.rounds):
        for name, fn in work.items():
            t0 = time.perf_counter()
            fn()
            t1 = time.perf_counter()
            floor()
            t2 = time.perf_counter()
            best[name] = min(best[name], t1 - t0)
            best_floor = min(best_floor, t2 - t1)
    floor_tokens = sum(len(core(t)) for t in runs)
    print(f"{len(records)} chat-like records, {tokens} tokens; fastest of {args.rounds} rounds; "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| workload | time vs floor | speed vs floor |")
    print("|---|---|---|")
    for name, t in best.items():
        speed = (tokens / t) / (floor_tokens / best_floor)
        print(f"| {name} | {t / best_floor:.2f}x | {100 * speed:.0f}% |")


if __name__ == "__main__":
    main()
