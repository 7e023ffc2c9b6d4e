"""The adapters' cost (dicts -> ``Conversation``) against a reference checkout, as a ratio.

    python scripts/bench_adapters.py [--ref ../main] [--n 300] [--reps 7]

Runs the same workload (``bench_render.agentic`` OpenAI-style conversations with tools and
reasoning, and plain user/assistant string chats) through ``ocml.encoder.adapters.to_conversation``
of this tree and of ``--ref`` (another checkout, e.g. the branch point), each in its own
process, and the whole Harmony ``render_batch`` of the agentic set ("render"); prints µs per
conversation, fastest of ``--reps`` over three interleaved rounds, and new / ref.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

CHILD = r"""
import sys, time, json
sys.path[:0] = [ROOT + "/scripts", ROOT + "/tests"]  # ocml itself: installed
from bench_render import agentic
from ocml.encoder.adapters import to_conversation
from ocml.encoder.formats.harmony.format import HarmonyFormat
style = HarmonyFormat.chat_style
from ocml import encoder
assert encoder.__file__.startswith(ROOT), encoder.__file__
sets = {"agentic": agentic(N, shared=False), "plain": [[{"role": "user", "content": "q %d" % i},
                                          {"role": "assistant", "content": "a %d" % i}] * 3 for i in range(N)]}
out = {}
for name, convs in sets.items():
    best = 1e9
    for _ in range(REPS):
        t = time.perf_counter()
        for c in convs:
            to_conversation(c, style)
        best = min(best, time.perf_counter() - t)
    out[name] = best / len(convs) * 1e6
from ocml import encoder
enc = encoder.Encoder("harmony")
convs = sets["agentic"]
enc.render_batch(convs)  # warm the caches
best = 1e9
for _ in range(REPS):
    t = time.perf_counter()
    enc.render_batch(convs)
    best = min(best, time.perf_counter() - t)
out["render"] = best / len(convs) * 1e6
print(json.dumps(out))
"""


def run(root: Path, n: int, reps: int) -> dict[str, float]:
    code = CHILD.replace("ROOT", repr(str(root))).replace("(N", f"({n}")
    code = code.replace("REPS", str(reps))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default=str(HERE.parent / "main"))
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    new: dict[str, float] = {}
    ref: dict[str, float] = {}
    for _ in range(3):  # interleaved rounds, fastest of each: the machine's load hits both alike
        for acc, root in ((new, HERE), (ref, Path(a.ref).resolve())):
            for k, v in run(root, a.n, a.reps).items():
                acc[k] = min(acc.get(k, v), v)
    for k in new:
        print(f"{k:8} new {new[k]:8.1f} µs/conv   ref {ref[k]:8.1f} µs/conv   new/ref {new[k] / ref[k]:.2f}")


if __name__ == "__main__":
    main()
