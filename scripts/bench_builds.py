"""Issue 18's table, one run: every goal as a ratio against the BPE floor, for each build.

    python scripts/bench_builds.py [--before PATH] [--before-python EXE] [--rounds 9] [--records 1500] [--n 200]

Builds: ``compiled`` (the installed compiled hot modules), ``pure`` (the same installation with
``OCML_PURE_PYTHON=1``: the ``.py`` files) and, with ``--before PATH``, an older tree put first on
``PYTHONPATH`` (a folder holding an ``ocml`` package whose ``encoder``/``vocab`` are that tree's,
e.g. made from ``git archive``) and, with ``--before-python EXE``, the interpreter of another
environment where an older tree is installed (``before-compiled``: its compiled build; make it with
``git archive main | tar -x -C SRC`` and ``pip install SRC`` in a fresh venv).  Each build is one warm server process (this script with
``--serve``); the parent runs the workloads round by round, one build after the other inside
each round, so load drifts of a shared machine hit all builds alike.  Every timed pass is
followed by its floor in the same process (``encode_ordinary`` over the text runs between the
control tokens of the same renders); fastest of ``--rounds``.  Rows (the issue's table):

- ``render_batch`` on chat-like records (``make_sample.chat_records``: system prompts, tools,
  reasoning, code): speed as % of the floor's (tokens/s, control tokens counted as
  ``bench_pipeline.py`` does);
- ``ocml pack --workers 1`` end to end on the same records as JSONL (read, render, pack, write
  Parquet): % of the floor's speed;
- agentic, own tools / shared tools (``bench_render.agentic``, Harmony, cot="harmony"; own tools
  clear the section caches every pass): time vs the floor, ``render`` one at a time and ``render_batch``;
- many-message chats (``bench_render.conversations("many")``, cot="keep-all"): time vs the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]


def serve(records: int, n: int) -> None:
    """One build: build the workloads, then time ``go NAME`` requests (stdin) -> JSON (stdout)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    sys.path.insert(0, str(ROOT / "tests"))
    import random

    import make_sample
    from bench_render import agentic, conversations, text_runs

    from ocml import encoder
    from ocml.encoder.pipeline.records import conversation_from_record
    from ocml.encoder.pipeline.run import PackOptions, run
    from ocml.encoder.sections import SECTIONS

    enc = encoder.Encoder("harmony")
    tok = enc.tokenizer
    core = tok.encoding._core_bpe.encode_ordinary
    tmp = Path(tempfile.mkdtemp(prefix="ocml-bench-builds-"))
    lines = make_sample.chat_records(random.Random(0), records, ())
    data = tmp / "chat.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    chat = [conversation_from_record(json.loads(x)) for x in lines]
    own, shared = agentic(n, False), agentic(n, True)
    many = conversations("many", max(n // 10, 5))

    def runs_of(convs: list[Any], **kw: Any) -> list[str]:
        return [r for c in convs for r in text_runs(tok, enc.render(c, **kw).ids)]

    def cold() -> None:
        SECTIONS.clear()
        enc.renderer.sections.clear()

    chat_runs, own_runs = runs_of(chat), runs_of(own, cot="harmony")
    shared_runs, many_runs = runs_of(shared, cot="harmony"), runs_of(many, cot="keep-all")
    chat_tokens = sum(len(r) for r in enc.render_batch(chat).results)
    floor_tokens = sum(len(core(r)) for r in chat_runs)
    out = tmp / "out"
    work: dict[str, tuple[Callable[[], Any], list[str]]] = {
        "chat_batch": (lambda: enc.render_batch(chat), chat_runs),
        "pack1": (lambda: run(PackOptions(inputs=(str(data),), out=out, seq_len=4096, workers=1, overwrite=True,
                                          progress=False)), chat_runs),
        "own": (lambda: (cold(), [enc.render(c, cot="harmony") for c in own]), own_runs),
        "own_batch": (lambda: (cold(), enc.render_batch(own, cot="harmony")), own_runs),
        "shared": (lambda: [enc.render(c, cot="harmony") for c in shared], shared_runs),
        "shared_batch": (lambda: enc.render_batch(shared, cot="harmony"), shared_runs),
        "many": (lambda: [enc.render(c, cot="keep-all") for c in many], many_runs),
        "many_batch": (lambda: enc.render_batch(many, cot="keep-all"), many_runs),
    }
    for fn, _ in work.values():
        fn()  # warm
    print(json.dumps({"ready": True, "compiled": getattr(encoder, "COMPILED", None), "file": encoder.__file__,
                      "chat_tokens": chat_tokens, "floor_tokens": floor_tokens}), flush=True)
    for line in sys.stdin:
        name = line.split()[1]
        fn, runs = work[name]
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        for r in runs:
            core(r)
        t2 = time.perf_counter()
        print(json.dumps({"t": t1 - t0, "floor": t2 - t1}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", help="PYTHONPATH entry holding the 'before' ocml package")
    ap.add_argument("--before-python", help="python of a venv where the 'before' tree is installed (compiled)")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--records", type=int, default=1500, help="chat-like records (render_batch, pack)")
    ap.add_argument("--n", type=int, default=200, help="agentic conversations (many-message: n / 10)")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.records, args.n)
        return
    base = {k: v for k, v in os.environ.items() if k not in ("OCML_PURE_PYTHON", "PYTHONPATH")}
    envs: list[tuple[str, dict[str, str], str]] = []
    if args.before:
        envs.append(("before", {**base, "PYTHONPATH": args.before}, sys.executable))
    if args.before_python:
        envs.append(("before-compiled", base, args.before_python))
    envs += [("pure", {**base, "OCML_PURE_PYTHON": "1"}, sys.executable), ("compiled", base, sys.executable)]
    procs: dict[str, tuple[subprocess.Popen, dict[str, Any]]] = {}
    for name, env, exe in envs:
        p = subprocess.Popen([exe, __file__, "--serve", "--records", str(args.records), "--n", str(args.n)],
                             env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
        hello = json.loads(p.stdout.readline())  # type: ignore[union-attr]
        print(f"[{name}] COMPILED={hello['compiled']} {hello['file']}", file=sys.stderr)
        procs[name] = (p, hello)
    names = ["chat_batch", "pack1", "own", "own_batch", "shared", "shared_batch", "many", "many_batch"]
    best: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for w in names:
            for b, (p, _) in procs.items():
                p.stdin.write(f"go {w}\n")  # type: ignore[union-attr]
                p.stdin.flush()  # type: ignore[union-attr]
                got = json.loads(p.stdout.readline())  # type: ignore[union-attr]
                cur = best.setdefault((b, w), [float("inf"), float("inf")])
                cur[0], cur[1] = min(cur[0], got["t"]), min(cur[1], got["floor"])
    for p, _ in procs.values():
        p.stdin.close()  # type: ignore[union-attr]
        p.wait()

    def speed(b: str, w: str) -> str:
        t, f = best[(b, w)]
        hello = procs[b][1]
        return f"{100 * (hello['chat_tokens'] / t) / (hello['floor_tokens'] / f):.0f}%"

    def ratio(b: str, w: str) -> str:
        t, f = best[(b, w)]
        return f"{t / f:.2f}x"

    rows = [("render_batch, chat-like: speed vs floor (goal >= 80%)", lambda b: speed(b, "chat_batch")),
            ("ocml pack --workers 1, chat-like: speed vs floor (goal >= 70%)", lambda b: speed(b, "pack1")),
            ("agentic, own tools: time vs floor, render / render_batch (goal <= 1.5x)",
             lambda b: f"{ratio(b, 'own')} / {ratio(b, 'own_batch')}"),
            ("agentic, shared tools: time vs floor, render / render_batch (goal < 1.0x)",
             lambda b: f"{ratio(b, 'shared')} / {ratio(b, 'shared_batch')}"),
            ("many-message chats: time vs floor, render / render_batch (goal <= 1.2x)",
             lambda b: f"{ratio(b, 'many')} / {ratio(b, 'many_batch')}")]
    order = list(procs)
    print(f"fastest of {args.rounds} interleaved rounds; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores")
    print("| workload | " + " | ".join(order) + " |")
    print("|---|" + "---|" * len(order))
    for label, fn in rows:
        print(f"| {label} | " + " | ".join(fn(b) for b in order) + " |")
    for ref, builds in (("before", ("pure",)), ("before-compiled", ("compiled",))):
        if ref in procs:
            print(f"\nspeedup vs {ref} (time {ref} / time build):")
            for w in names:
                print(f"  {w:13s} " + "  ".join(f"{b} {best[(ref, w)][0] / best[(b, w)][0]:.2f}x" for b in builds))


if __name__ == "__main__":
    main()
