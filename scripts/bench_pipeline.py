"""``ocml pack`` end to end (JSONL -> packed Parquet): ratios against references, one run.

    .venv/bin/python scripts/bench_pipeline.py [--records 4000] [--seq-len 4096] [--reps 3]
                                               [--trl-records 600] [--memory-mb 48] [--quick]

Data: clean chat records from the bundled sample's generator (``scripts/make_sample.py``:
system prompts, multi-turn, tools with calls and results, reasoning, code), as JSONL.

1. **BPE floor**: tiktoken ``encode_ordinary`` over the same text (the runs between control
   tokens of the same renders), one core, nothing else: what any renderer must pay.
2. **ocml pack**, ``--workers 1`` and ``2``: read JSONL, parse, render with masks, pack
   (BFD), write Parquet + report + histogram; tokens/s = document tokens / wall time of
   ``ocml.encoder.pipeline.run.run`` (the process, imports and vocabulary are warm: the CLI's
   start-up, ~1 s, is reported separately).  Goal: >= 70% of the floor per worker.
3. **TRL preparation path** on the first ``--trl-records`` records (it is slow): ``datasets``
   ``load_dataset("json")`` -> ``map(apply_chat_template(..., tools=..., tokenize=True,
   return_dict=True, return_assistant_tokens_mask=True))`` per example (what TRL's
   ``SFTTrainer`` does) -> labels from ``assistant_masks`` -> ``trl.pack_dataset(bfd)`` ->
   ``to_parquet``; the tokenizer is ocml's own converted to HF with ocml's exported training
   chat template (same ids and masks as ocml, checked on a sample), so both sides do the same work.
4. **Memory**: ``ocml pack --workers 2`` in a subprocess on generated inputs of
   ``--memory-mb`` and half of that (both several packer epochs); peak RSS of the main process and of the largest
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
sys.path.insert(0, str(ROOT / "scripts"))

import make_sample  # noqa: E402

from ocml import encoder  # noqa: E402
from ocml.encoder.pipeline.records import conversation_from_record  # noqa: E402
from ocml.encoder.pipeline.run import PackOptions, run  # noqa: E402


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


MEMORY_CHILD = r"""
import os, sys, threading, time
from pathlib import Path

def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

def tree(root):
    # every live process under root (workers are children of the forkserver, a child of root)
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out

peak = {"main": 0, "workers": 0, "total": 0}
done = threading.Event()

def sample():
    me = os.getpid()
    while not done.wait(0.05):
        main = rss_kb(me)
        kids = [rss_kb(k) for k in tree(me)]
        peak["main"] = max(peak["main"], main)
        peak["workers"] = max([peak["workers"], *kids])
        peak["total"] = max(peak["total"], main + sum(kids))

if __name__ == "__main__":
    from ocml import encoder; import pyarrow.parquet, PIL.Image  # noqa: F401  (the baseline: imports + vocabulary)
    from ocml.encoder.pipeline.run import PackOptions, run
    encoder.Encoder("openchatml-2.2")
    base = rss_kb(os.getpid())
    threading.Thread(target=sample, daemon=True).start()
    t0 = time.perf_counter()
    r = run(PackOptions(inputs=(sys.argv[1],), out=Path(sys.argv[2]), seq_len=int(sys.argv[3]),
                        workers=int(sys.argv[4]), overwrite=True, progress=False))
    dt = time.perf_counter() - t0
    done.set()
    print(base, peak["main"], peak["workers"], peak["total"], r.report["counts"]["tokens"], dt)
"""


def memory_run(path: Path, out: Path, seq_len: int, workers: int) -> dict[str, float]:
    res = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(path), str(out), str(seq_len), str(workers)],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    base, main, worker, total, tokens, dt = res.stdout.split()[-6:]
    return {"baseline_mb": int(base) / 1024, "main_peak_mb": int(main) / 1024, "worker_peak_mb": int(worker) / 1024,
            "total_peak_mb": int(total) / 1024, "tokens": int(tokens), "seconds": float(dt)}


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


def long_records(path: Path, n: int, seed: int) -> None:
    """Long conversations: 10 turns of 100-160-word messages (``bench_render``'s "long")."""
    sys.path.insert(0, str(ROOT / "tests"))
    import bench_render

    with open(path, "w", encoding="utf-8") as f:
        for conv in bench_render.conversations("long", n, seed=seed):
            f.write(json.dumps({"messages": conv}) + "\n")


def head_by_tokens(enc: Any, src: Path, dst: Path, tokens: int) -> int:
    """The first records of ``src`` holding about ``tokens`` tokens (TRL is measured on less data)."""
    out, n = [], 0
    for line in src.open(encoding="utf-8"):
        out.append(line)
        n += len(enc.render(conversation_from_record(json.loads(line))))
        if n >= tokens:
            break
    dst.write_text("".join(out), encoding="utf-8")
    return len(out)


def render_fn(enc: Any, path: Path) -> Any:
    convs = [conversation_from_record(json.loads(line)) for line in path.open(encoding="utf-8")]

    def fn() -> int:
        return sum(len(r) for r in enc.render_batch(convs).results)

    return fn


def workload(name: str, data: Path, enc: Any, args: argparse.Namespace, tmp: Path) -> None:
    trl_data = tmp / f"{name}-trl.jsonl"
    trl_n = head_by_tokens(enc, data, trl_data, args.trl_tokens)
    print(f"\n== {name}: {sum(1 for _ in data.open()):,} records, {data.stat().st_size / 2**20:.1f} MiB JSONL, "
          f"seq_len {args.seq_len} (TRL on the first {trl_n} records)")
    floor, floor_tokens = floor_fn(enc, data)
    tiny = tmp / f"{name}-tiny.jsonl"
    tiny.write_text("".join(data.open(encoding="utf-8").readlines()[:8]), encoding="utf-8")
    contenders = {"floor: encode_ordinary, 1 core": floor,
                  "render_batch only (parsed, in memory)": render_fn(enc, data),
                  "ocml pack --workers 1": pack_fn(data, tmp / f"{name}-w1", args.seq_len, 1),
                  "ocml pack --workers 2": pack_fn(data, tmp / f"{name}-w2", args.seq_len, 2),
                  "TRL map + pack_dataset": trl_fn(enc, trl_data, args.seq_len, tmp),
                  # Fixed costs (pool start, report, histogram, fsyncs): the same run on 8 records.
                  "fixed: ocml pack --workers 1, 8 records": pack_fn(tiny, tmp / f"{name}-t1", args.seq_len, 1),
                  "fixed: ocml pack --workers 2, 8 records": pack_fn(tiny, tmp / f"{name}-t2", args.seq_len, 2)}
    pack_fn(data, tmp / f"{name}-warm", args.seq_len, 2)()  # warm-up: first-run imports, page cache
    times: dict[str, list[float]] = {k: [] for k in contenders}
    tokens: dict[str, int] = {}
    for _ in range(args.reps):
        for k, fn in contenders.items():
            dt, res = timed(fn)
            times[k].append(dt)
            tokens[k] = res if isinstance(res, int) else res["counts"]["tokens"]
    rate = {k: tokens[k] / statistics.median(v) for k, v in times.items()}
    fl, trl = rate["floor: encode_ordinary, 1 core"], rate["TRL map + pack_dataset"]
    print(f"{'contender':40} {'tokens':>11} {'median s':>9} {'k tok/s':>9} {'vs floor':>9} {'vs TRL':>8}")
    for k in times:
        print(f"{k:40} {tokens[k]:>11,} {statistics.median(times[k]):>9.2f} {rate[k] / 1e3:>9,.0f} "
              f"{rate[k] / fl:>8.0%} {rate[k] / trl:>7.1f}x")
    w1, w2 = rate["ocml pack --workers 1"], rate["ocml pack --workers 2"]
    rb = rate["render_batch only (parsed, in memory)"]
    med = {k: statistics.median(v) for k, v in times.items()}
    tok = tokens["ocml pack --workers 1"]
    s1 = tok / max(med["ocml pack --workers 1"] - med["fixed: ocml pack --workers 1, 8 records"], 1e-9)
    s2 = tok / max(med["ocml pack --workers 2"] - med["fixed: ocml pack --workers 2, 8 records"], 1e-9)
    print(f"end to end, per worker vs floor: 1 worker {w1 / fl:.0%}, 2 workers {w2 / 2 / fl:.0%}; "
          f"pipeline / render_batch {w1 / rb:.0%}; scaling 1 -> 2 workers {w2 / w1:.2f}x")
    print(f"steady state (fixed costs subtracted), per worker vs floor: 1 worker {s1 / fl:.0%}, "
          f"2 workers {s2 / 2 / fl:.0%} (goal >= 70%); pipeline / render_batch {s1 / rb:.0%}; "
          f"scaling {s2 / s1:.2f}x")
    print(f"(floor tokens {floor_tokens:,}: text only; the pipeline's {tokens['ocml pack --workers 1']:,} include "
          "control tokens, which need no BPE)")


def timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    res = fn()
    return time.perf_counter() - t0, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=6000, help="sample-like records (long workload: records / 10)")
    ap.add_argument("--seq-len", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--trl-tokens", type=int, default=200_000, help="tokens of data the TRL path is timed on")
    ap.add_argument("--memory-mb", type=float, default=64.0, help="size of the larger memory-test input")
    ap.add_argument("--quick", action="store_true", help="2,000 records, 1 rep, 100k TRL tokens, 16 MiB memory test")
    args = ap.parse_args()
    if args.quick:
        args.records, args.reps, args.trl_tokens, args.memory_mb = 2000, 1, 100_000, 16.0

    tmp = Path(tempfile.mkdtemp(prefix="ocml-bench-pipeline-"))
    enc = encoder.Encoder("openchatml-2.2")
    print(f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f} (shared machine: read the ratios)")
    sample = tmp / "sample.jsonl"
    write_jsonl(sample, args.records, seed=7)
    workload("sample-like (chat, tools, reasoning, code)", sample, enc, args, tmp)
    long_ = tmp / "long.jsonl"
    long_records(long_, max(20, args.records // 10), seed=1)
    workload("long (10 turns x ~450 tokens of prose)", long_, enc, args, tmp)

    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ocml.encoder.cli", "--version"], check=True, capture_output=True, cwd=ROOT)
    print(f"\nCLI start-up (python -m ocml.encoder.cli --version): {time.perf_counter() - t0:.2f} s")

    print("\nmemory: ocml pack --workers 2 in a subprocess, RSS sampled every 50 ms over the process tree "
          "(baseline = imports + vocabulary, before the run)")
    print(f"{'input MiB':>10} {'tokens':>12} {'as objects MiB':>15} {'baseline':>9} {'main peak':>10} "
          f"{'worker peak':>12} {'tree peak':>10} {'k tok/s':>8}")
    for mb in (args.memory_mb / 2, args.memory_mb):
        big = tmp / f"big-{mb:g}.jsonl"
        grow_jsonl(sample, big, mb)
        m = memory_run(big, tmp / f"mem-{mb:g}", args.seq_len, 2)
        print(f"{big.stat().st_size / 2**20:>10.1f} {m['tokens']:>12,} {loaded_size_mb(big):>15,.0f} "
              f"{m['baseline_mb']:>9.0f} {m['main_peak_mb']:>10.0f} {m['worker_peak_mb']:>12.0f} "
              f"{m['total_peak_mb']:>10.0f} {m['tokens'] / m['seconds'] / 1e3:>8,.0f}")
        big.unlink()
    print(f"\n(temporary files in {tmp})")



if __name__ == "__main__":
    main()
