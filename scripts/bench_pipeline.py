"""``ocml pack`` end to end (JSONL -> packed Parquet): ratios against references, one run.

    .venv/bin/python scripts/bench_pipeline.py [--records 4000] [--seq-len 4096] [--reps 3]
                                               [--trl-records 600] [--memory-mb 48] [--quick]

Data: clean chat records from the bundled sample's generator (``scripts/make_sample.py``:
system prompts, multi-turn, tools with calls and results, reasoning, code), as JSONL.

1. **BPE floor**: tiktoken ``encode_ordinary`` over the same text (the runs between control
   tokens of the same renders), one core, nothing else: what any renderer must pay.
2. **ocml pack**, ``--workers 1`` and ``2``: read JSONL, parse, render with masks, pack
   (BFD), write Parquet + report + histogram; tokens/s = document tokens / wall time of
   ``encoder.pipeline.run.run`` (the process, imports and vocabulary are warm: the CLI's
   start-up, ~1 s, is reported separately).  Goal: >= 70% of the floor per worker.
3. **TRL preparation path** on the first ``--trl-records`` records (it is slow): ``datasets``
   ``load_dataset("json")`` -> ``map(apply_chat_template(..., tools=..., tokenize=True,
   return_dict=True, return_assistant_tokens_mask=True))`` per example (what TRL's
   ``SFTTrainer`` does) -> labels from ``assistant_masks`` -> ``trl.pack_dataset(bfd)`` ->
   ``to_parquet``; the tokenizer is ocml's own converted to HF with ocml's exported training
   chat template (same ids and masks as ocml, checked on a sample), so both sides do the same work.
4. **Memory**: ``ocml pack --workers 2`` in a subprocess on generated inputs of
   ``--memory-mb`` and a quarter of that; peak RSS of the main process and of the largest
   worker (``ru_maxrss``), and the in-memory size of the same input if it were loaded with
   ``json.loads`` (sampled).  Flat peak across input sizes = bounded memory.

Interleaved repetitions, medians; a shared 2-vCPU VM is noisy, read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import make_sample  # noqa: E402

import encoder  # noqa: E402
from encoder.pipeline.records import conversation_from_record  # noqa: E402
from encoder.pipeline.run import PackOptions, run  # noqa: E402


def write_jsonl(path: Path, records: int, seed: int) -> None:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        left = records
        while left > 0:
            n = min(left, 2000)
            f.write("\n".join(make_sample.chat_records(rng, n, ())) + "\n")
            left -= n


def grow_jsonl(src: Path, dst: Path, megabytes: float) -> int:
    """``dst``: ``src``'s lines repeated up to ``megabytes`` (the pipeline cannot tell)."""
    lines = src.read_bytes().splitlines(keepends=True)
    size, n = 0, 0
    with open(dst, "wb") as f:
        while size < megabytes * 2**20:
            line = lines[n % len(lines)]
            f.write(line)
            size += len(line)
            n += 1
    return n


def text_runs(tok: Any, ids: Any) -> list[str]:
    """The text between control tokens of one render."""
    import numpy as np

    cuts = np.flatnonzero(np.isin(ids, np.fromiter(tok.special_ids, dtype=np.int64)))
    runs, a = [], 0
    for b in [*cuts.tolist(), len(ids)]:
        if b > a:
            runs.append(tok.decode_bytes(ids[a:b].tolist()).decode("utf-8"))
        a = b + 1
    return runs


def floor_fn(enc: Any, path: Path) -> tuple[Any, int]:
    runs: list[str] = []
    for line in path.open(encoding="utf-8"):
        r = enc.render(conversation_from_record(json.loads(line)))
        runs += text_runs(enc.tokenizer, r.ids)
    encode = enc.tokenizer.encoding.encode_ordinary

    def fn() -> int:
        n = 0
        for t in runs:
            n += len(encode(t))
        return n

    return fn, fn()


def pack_fn(path: Path, out: Path, seq_len: int, workers: int) -> Any:
    def fn() -> dict[str, Any]:
        return run(PackOptions(inputs=(str(path),), out=out, seq_len=seq_len, workers=workers, overwrite=True,
                               progress=False)).report

    return fn


def trl_fn(enc: Any, path: Path, seq_len: int, out: Path) -> Any:
    import datasets
    from trl import pack_dataset

    datasets.disable_caching()
    datasets.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    hf = enc.tokenizer.to_hf()
    hf.chat_template = enc.chat_template(training=True)

    # Same ids and masks as ocml (else the comparison would be unfair): checked on a sample.
    for line in path.open(encoding="utf-8").readlines()[:50]:
        rec = json.loads(line)
        got = hf.apply_chat_template(rec["messages"], tools=rec.get("tools"), tokenize=True, return_dict=True,
                                     return_assistant_tokens_mask=True)
        r = enc.render(conversation_from_record(rec))
        assert list(got["input_ids"]) == r.ids.tolist() and [bool(m) for m in got["assistant_masks"]] == \
            r.mask.tolist(), "HF template and ocml disagree: the comparison would not be like for like"

    def tokenize(ex: dict[str, Any]) -> dict[str, Any]:
        out_ = hf.apply_chat_template(ex["messages"], tools=ex.get("tools"), tokenize=True, return_dict=True,
                                      return_assistant_tokens_mask=True)
        ids, mask = out_["input_ids"], out_["assistant_masks"]
        return {"input_ids": ids, "labels": [i if m else -100 for i, m in zip(ids, mask)]}

    def fn() -> int:
        ds = datasets.load_dataset("json", data_files=str(path), split="train", keep_in_memory=True)
        ds = ds.map(tokenize, remove_columns=ds.column_names, keep_in_memory=True)
        packed = pack_dataset(ds, seq_len, strategy="bfd", map_kwargs={"keep_in_memory": True})
        packed.to_parquet(str(out / "trl.parquet"))
        return sum(len(x) for x in ds["input_ids"])

    return fn


def median_time(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    res = fn()
    return time.perf_counter() - t0, res


MEMORY_CHILD = r"""
import resource, sys, time
from pathlib import Path
from encoder.pipeline.run import PackOptions, run
if __name__ == "__main__":
    import encoder, pyarrow.parquet, matplotlib.pyplot  # noqa: F401  (the baseline: imports + vocabulary)
    encoder.Encoder("openchatml-2.2")
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    r = run(PackOptions(inputs=(sys.argv[1],), out=Path(sys.argv[2]), seq_len=int(sys.argv[3]),
                        workers=int(sys.argv[4]), overwrite=True, progress=False))
    dt = time.perf_counter() - t0
    main = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(base, main, kids, r.report["counts"]["tokens"], dt)
"""


def memory_run(path: Path, out: Path, seq_len: int, workers: int) -> dict[str, float]:
    res = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(path), str(out), str(seq_len), str(workers)],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    base, main, kids, tokens, dt = res.stdout.split()[-5:]
    return {"baseline_mb": int(base) / 1024, "main_peak_mb": int(main) / 1024, "worker_peak_mb": int(kids) / 1024,
            "tokens": int(tokens), "seconds": float(dt)}


def loaded_size_mb(path: Path, sample: int = 300) -> float:
    """Estimated RSS of ``[json.loads(line) for line in file]`` (measured on a sample)."""
    import tracemalloc

    lines = path.read_bytes().splitlines()
    k = min(sample, len(lines))
    tracemalloc.start()
    objs = [json.loads(x) for x in lines[:k]]
    cur, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del objs
    return cur / k * len(lines) / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=4000)
    ap.add_argument("--seq-len", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--trl-records", type=int, default=600)
    ap.add_argument("--memory-mb", type=float, default=48.0, help="size of the larger memory-test input")
    ap.add_argument("--quick", action="store_true", help="1,500 records, 1 rep, 300 TRL records, 16 MB memory test")
    args = ap.parse_args()
    if args.quick:
        args.records, args.reps, args.trl_records, args.memory_mb = 1500, 1, 300, 16.0

    tmp = Path(tempfile.mkdtemp(prefix="ocml-bench-pipeline-"))
    data = tmp / "data.jsonl"
    write_jsonl(data, args.records, seed=7)
    trl_data = tmp / "trl.jsonl"
    trl_data.write_bytes(b"".join(data.read_bytes().splitlines(keepends=True)[: args.trl_records]))
    enc = encoder.Encoder("openchatml-2.2")
    print(f"data: {args.records:,} records, {data.stat().st_size / 2**20:.1f} MiB JSONL; seq_len {args.seq_len}; "
          f"cores {os.cpu_count()}")

    floor, floor_tokens = floor_fn(enc, data)
    contenders = {"floor (encode_ordinary, 1 core)": floor,
                  "ocml pack --workers 1": pack_fn(data, tmp / "w1", args.seq_len, 1),
                  "ocml pack --workers 2": pack_fn(data, tmp / "w2", args.seq_len, 2)}
    trl_out = tmp / "trl"
    trl_out.mkdir()
    trl = trl_fn(enc, trl_data, args.seq_len, trl_out)
    pack_fn(data, tmp / "warm", args.seq_len, 2)()  # warm-up: worker start-up paths, imports
    times: dict[str, list[float]] = {k: [] for k in [*contenders, "TRL map+pack_dataset"]}
    tokens: dict[str, int] = {}
    for _ in range(args.reps):
        for name, fn in contenders.items():
            dt, res = median_time(fn)
            times[name].append(dt)
            tokens[name] = res if isinstance(res, int) else res["counts"]["tokens"]
        dt, res = median_time(trl)
        times["TRL map+pack_dataset"].append(dt)
        tokens["TRL map+pack_dataset"] = res
    rate = {k: tokens[k] / statistics.median(v) for k, v in times.items()}
    fl = rate["floor (encode_ordinary, 1 core)"]
    print(f"\n{'contender':34} {'tokens':>11} {'median s':>9} {'k tok/s':>9} {'vs floor':>9} {'vs TRL':>8}")
    for k in times:
        print(f"{k:34} {tokens[k]:>11,} {statistics.median(times[k]):>9.2f} {rate[k] / 1e3:>9,.0f} "
              f"{rate[k] / fl:>8.0%} {rate[k] / rate['TRL map+pack_dataset']:>7.1f}x")
    w1, w2 = rate["ocml pack --workers 1"], rate["ocml pack --workers 2"]
    print(f"\nper worker vs floor: 1 worker {w1 / fl:.0%}, 2 workers {w2 / 2 / fl:.0%} (goal >= 70%); "
          f"scaling 1 -> 2 workers {w2 / w1:.2f}x")
    print(f"floor tokens {floor_tokens:,} vs pipeline document tokens {tokens['ocml pack --workers 1']:,} "
          "(the difference: control tokens, which need no BPE)")

    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "encoder.cli", "--version"], check=True, capture_output=True, cwd=ROOT)
    print(f"CLI start-up (python -m encoder.cli --version): {time.perf_counter() - t0:.2f} s")

    print(f"\nmemory (ocml pack --workers 2 in a subprocess; baseline = imports + vocabulary):")
    print(f"{'input MiB':>10} {'tokens':>12} {'as objects MiB':>15} {'baseline MiB':>13} {'main peak MiB':>14} "
          f"{'worker peak MiB':>16} {'k tok/s':>8}")
    for mb in (args.memory_mb / 4, args.memory_mb):
        big = tmp / f"big-{mb:g}.jsonl"
        grow_jsonl(data, big, mb)
        m = memory_run(big, tmp / f"mem-{mb:g}", args.seq_len, 2)
        print(f"{big.stat().st_size / 2**20:>10.1f} {m['tokens']:>12,} {loaded_size_mb(big):>15,.0f} "
              f"{m['baseline_mb']:>13.0f} {m['main_peak_mb']:>14.0f} {m['worker_peak_mb']:>16.0f} "
              f"{m['tokens'] / m['seconds'] / 1e3:>8,.0f}")
        big.unlink()
    print(f"\n(temporary files in {tmp})")


if __name__ == "__main__":
    main()
