"""``ocml pack`` output digests, to prove a speed change wrote the same bytes.

    python scripts/pack_identity.py --save before.json     # on the old code
    python scripts/pack_identity.py --check before.json    # on the new code: exit 1 on any difference

Packs the bundled sample (``examples/sample``) and a two-source recipe over it through the
CLI in several configurations (shuffled and ``--no-shuffle``, 1 and 2 workers, Parquet + npy,
``--no-pack``, a validation split) and records the sha256 of every file the run leaves in
``--out`` except the ones that carry timings or paths (``report.json``, ``manifest.json``,
``recipe.yaml``, ``lengths.png``, ``.ocml/``).  ``tests/pipeline/test_pack_identity.py`` runs the same
configurations and compares them with each other where the output must not depend on the
configuration (workers).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "sample"
#: files whose bytes carry timings, absolute paths or versions: not compared
VOLATILE = {"report.json", "manifest.json", "recipe.yaml", "lengths.png"}

RECIPE = """\
seed: 3
format: openchatml-2.2
seq_len: 1024
validation: 0.1
dedup: exact
sources:
  - path: {sample}/chat.jsonl
    weight: 2
  - path: {sample}/canonical.jsonl
    name: canon
    weight: 0.5
"""

#: name -> extra ``ocml pack`` arguments (the input is the sample folder unless a recipe is given)
CONFIGS: dict[str, list[str]] = {
    "shuffled-w1": ["--workers", "1", "--seq-len", "2048"],
    "shuffled-w2": ["--workers", "2", "--seq-len", "2048"],
    "noshuffle-w1": ["--workers", "1", "--seq-len", "2048", "--no-shuffle", "--output", "both"],
    "noshuffle-w2": ["--workers", "2", "--seq-len", "2048", "--no-shuffle", "--output", "both"],
    "nopack-w1": ["--workers", "1", "--seq-len", "2048", "--no-pack", "--no-shuffle"],
    "small-rows": ["--workers", "1", "--seq-len", "512", "--overlong", "split", "--shard-size", "7"],
    "recipe-w1": ["--workers", "1", "--recipe", "{recipe}"],
    "recipe-w2": ["--workers", "2", "--recipe", "{recipe}"],
}


def digests(out: Path) -> dict[str, str]:
    got = {}
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if p.is_file() and p.name not in VOLATILE and not rel.startswith(".ocml"):
            got[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return got


def run_config(name: str, tmp: Path, python: str = sys.executable) -> dict[str, str]:
    recipe = tmp / "recipe.yaml"
    recipe.write_text(RECIPE.format(sample=SAMPLE), encoding="utf-8")
    args = [a.format(recipe=recipe) for a in CONFIGS[name]]
    inputs = [] if "--recipe" in args else [str(SAMPLE)]
    out = tmp / name
    subprocess.run([python, "-m", "ocml.encoder.cli", "pack", *inputs, "--out", str(out), "--overwrite", *args],
                   check=True, capture_output=True, cwd=tmp)
    return digests(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", type=Path)
    g.add_argument("--check", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ocml-identity-") as t:
        got = {name: run_config(name, Path(t)) for name in CONFIGS}
    if args.save:
        args.save.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"saved {sum(map(len, got.values()))} digests of {len(got)} runs to {args.save}")
        return 0
    want = json.loads(args.check.read_text(encoding="utf-8"))
    bad = [f"{name}/{f}" for name in want for f in sorted(set(want[name]) | set(got.get(name, {})))
           if want[name].get(f) != got.get(name, {}).get(f)]
    for b in bad:
        print("DIFFERS:", b)
    print(f"{sum(map(len, want.values())) - len(bad)} files identical, {len(bad)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
