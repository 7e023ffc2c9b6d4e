"""A/B of the encoder's hot paths: this checkout against a git ref, run alternately, as ratios.

    python scripts/bench_ab.py [--ref main] [--rounds 3]

For refactors that must not slow anything (the shared VM's noise swamps before/after runs of
``bench_render`` / ``bench_stream``: their references move as much as ocml).  The ref is
exported (``git archive``) to a temporary ``ocml/encoder`` + ``ocml/vocab`` tree; each round
runs one child process per tree, alternating, and each child takes the fastest of its
repetitions of: ``render`` / ``render_batch`` (Harmony, OpenChatML 2.2 fallback), ``parse``,
and stream decoding (one id per ``feed`` on Harmony, 16 per ``feed`` in fallback mode), on
the agentic conversations ``bench_render`` uses.  Times are CPU time of the process
(``time.process_time``: time spent descheduled by other load does not count; every path here
is single-threaded).  Printed: the fastest time per tree over the rounds and ``new / ref``
(below 1: this checkout is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, random, sys, time
sys.path.insert(0, sys.argv[1])
import ocml
try:  # the tests' layout at the tree measured: by area (support/) or flat
    from support.openai_input import openai_conversation
except ImportError:
    from test_openai_input import openai_conversation

def best(f, reps):
    b = 1e9
    for _ in range(reps):
        t = time.process_time(); f(); b = min(b, time.process_time() - t)
    return b

rng = random.Random(0)
convs = [openai_conversation(rng) for _ in range(40)]
h = ocml.Encoder("harmony"); f = ocml.Encoder("openchatml-2.2", "o200k_base")
ids_h = [h.render(c).ids for c in convs]; ids_f = [f.render(c).ids for c in convs]
lh = [i.tolist() for i in ids_h]; lf = [i.tolist() for i in ids_f]

def stream(enc, lists, k):
    for ids in lists:
        d = enc.decoder()
        for j in range(0, len(ids), k):
            d.feed(ids[j:j + k])
        d.finish()

out = {
    "render harmony": best(lambda: [h.render(c) for c in convs], 25),
    "render_batch harmony": best(lambda: h.render_batch(convs), 25),
    "render 2.2 fallback": best(lambda: [f.render(c) for c in convs], 25),
    "parse harmony": best(lambda: [h.parse(i) for i in ids_h], 25),
    "parse 2.2 fallback": best(lambda: [f.parse(i) for i in ids_f], 25),
    "stream harmony, 1 id per feed": best(lambda: stream(h, lh, 1), 12),
    "stream 2.2 fallback, 16 ids per feed": best(lambda: stream(f, lf, 16), 12),
}
print(json.dumps(out))
"""


def export(ref: str, into: Path) -> Path:
    """``ref``'s ``encoder/`` and ``vocab/`` as an importable ``ocml`` package under ``into``."""
    tar = into / "ref.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(tar), ref, "encoder", "vocab", "ocml"], check=True)
    with tarfile.open(tar) as t:
        t.extractall(into / "src", filter="data")
    pkg = into / "ocml"
    (into / "src" / "ocml").rename(pkg)
    for top in ("encoder", "vocab"):
        (into / "src" / top).rename(pkg / top)
    return into


def run(path_entry: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if path_entry is not None:
        env["PYTHONPATH"] = path_entry  # before site-packages, so it wins over the editable install
    else:
        env.pop("PYTHONPATH", None)
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "tests")], env=env, cwd=tempfile.gettempdir(),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", default="main", help="git ref to compare against (default main)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ref_dir = str(export(args.ref, Path(tmp)))
        ref: dict[str, float] = {}
        new: dict[str, float] = {}
        for _ in range(args.rounds):
            for got, entry in ((ref, ref_dir), (new, None)):
                for k, v in run(entry).items():
                    got[k] = min(got.get(k, v), v)
    print(f"{'hot path (40 agentic conversations)':40s} {args.ref + ' ms':>10s} {'new ms':>10s} {'new/' + args.ref:>10s}")
    for k in ref:
        print(f"{k:40s} {ref[k] * 1e3:10.3f} {new[k] * 1e3:10.3f} {new[k] / ref[k]:10.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
