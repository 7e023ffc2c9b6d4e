"""Issue 18's table, one run: every goal as a ratio against the BPE floor, for each build.

    python scripts/bench_builds.py [--before PATH] [--reps 7] [--records 6000] [--quick]

Builds: ``compiled`` (the installed compiled hot modules), ``pure`` (the same installation with
``OCML_PURE_PYTHON=1``: the ``.py`` files) and, with ``--before PATH``, an older tree put first on
``PYTHONPATH`` (a folder holding an ``ocml`` package whose ``encoder``/``vocab`` are that tree's,
e.g. made from ``git archive``).  Each build runs ``scripts/bench_render.py`` (agentic and chat
workloads) and ``scripts/bench_pipeline.py`` in a subprocess, one after the other; the ratios of
a row come from the same process as their floor.  Rows:

- ``render_batch`` on chat-like data vs the floor (bench_pipeline, sample-like): % of the floor's speed;
- ``ocml pack --workers 1`` end to end, chat-like (bench_pipeline): % of the floor's speed;
- agentic, own tools / shared tools (bench_render ``agentic_own`` / ``agentic_shared``): time vs
  the floor (``render`` one at a time, and ``render_batch``);
- many-message chats (bench_render ``many``): time vs the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent


def run(script: str, args: list[str], env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, str(SCRIPTS / script), *args], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{script} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc.stdout


def render_rows(out: str) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    dec = json.JSONDecoder()
    i = out.find("{")
    while i >= 0:
        obj, end = dec.raw_decode(out, i)
        if isinstance(obj, dict) and "workload" in obj:
            rows[obj["workload"]] = obj
        i = out.find("{", end)
    return rows


def pipeline_rows(out: str) -> dict[str, str]:
    """The sample-like section's ``vs floor`` column of render_batch and pack --workers 1."""
    section = out.split("== long")[0]
    got = {}
    for key, label in (("render_batch", "render_batch only"), ("pack1", "ocml pack --workers 1 ")):
        m = re.search(re.escape(label) + r".*?(\d+)%", section)
        got[key] = f"{m.group(1)}%" if m else "?"
    m = re.search(r"steady state.*?1 worker (\d+)%", section)
    got["pack1_steady"] = f"{m.group(1)}%" if m else "?"
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", help="PYTHONPATH entry holding the 'before' ocml package")
    ap.add_argument("--reps", type=int, default=7, help="bench_render repetitions")
    ap.add_argument("--records", type=int, default=6000, help="bench_pipeline records")
    ap.add_argument("--quick", action="store_true", help="bench_pipeline --quick")
    args = ap.parse_args()
    builds: list[tuple[str, dict[str, str]]] = []
    base = {k: v for k, v in os.environ.items() if k not in ("OCML_PURE_PYTHON", "PYTHONPATH")}
    if args.before:
        builds.append(("before", {**base, "PYTHONPATH": args.before}))
    builds += [("pure", {**base, "OCML_PURE_PYTHON": "1"}), ("compiled", base)]
    pipe_args = ["--quick"] if args.quick else ["--records", str(args.records)]
    table: dict[str, dict[str, str]] = {}
    for name, env in builds:
        which = subprocess.run([sys.executable, "-c", "import ocml.encoder as e; print(getattr(e, 'COMPILED', 'n/a'), "
                                "e.__file__)"], env={**env, "PYTHONSAFEPATH": "1"}, capture_output=True,
                               text=True).stdout.strip()
        print(f"[{name}] ocml.encoder.COMPILED, file: {which}", file=sys.stderr)
        r = render_rows(run("bench_render.py", ["--reps", str(args.reps), "--stat", "min"], env))
        p = pipeline_rows(run("bench_pipeline.py", pipe_args, env))
        col = table.setdefault(name, {})
        col["render_batch vs floor, chat-like (speed, goal >= 80%)"] = p["render_batch"]
        col["ocml pack --workers 1, chat-like (speed, goal >= 70%)"] = f"{p['pack1']} (steady {p['pack1_steady']})"
        for wl, label, goal in (("agentic_own", "agentic, own tools", "<= 1.5x"),
                                ("agentic_shared", "agentic, shared tools", "< 1.0x")):
            row = r.get(wl, {})
            col[f"{label} (time vs floor, goal {goal})"] = (
                f"{row.get('ratio_vs_floor', '?')}x (batch {row.get('ratio_batch_vs_floor', '?')}x)")
        many = r.get("many", {})
        col["many-message chats (time vs floor, goal <= 1.2x)"] = (
            f"{many.get('ratio_vs_floor', '?')}x (batch {many.get('ratio_batch_vs_floor', '?')}x)")
    names = [n for n, _ in builds]
    labels = list(next(iter(table.values())))
    print("| workload | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label in labels:
        print(f"| {label} | " + " | ".join(table[n][label] for n in names) + " |")


if __name__ == "__main__":
    main()
