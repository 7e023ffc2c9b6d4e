"""The recipe part of a recipe run's report: the summary lines (per source, splits, dedup, order),
the sources' shared setting, and the documents-per-row statistic that shows the shuffle's effect."""

from __future__ import annotations

from typing import Any

import numpy as np

from .report import format_report
from .shards import SPLITS
from .shuffle import order_correlation

__all__ = ["common_setting", "format_recipe_report", "row_order_statistic"]


def common_setting(values: list[str]) -> str:
    """The sources' shared setting, or ``per source`` (each source's is in the recipe)."""
    return values[0] if len(set(values)) == 1 else "per source"


def row_order_statistic(segs: np.ndarray, seg_doc: np.ndarray, order: np.ndarray) -> dict[str, Any]:
    """Documents per row vs row index, in the packer's order and as written (``order``: the
    shuffle's effect, the written correlation is near 0); ``segs`` = segments per packed row,
    ``seg_doc`` = each segment's document (-1: padding)."""
    seg_start = np.zeros(segs.shape[0] + 1, dtype=np.int64)
    np.cumsum(segs, out=seg_start[1:])
    pads = seg_doc == -1
    pad_rows = np.zeros(segs.shape[0], dtype=np.int64)
    if pads.any():
        row_of = np.searchsorted(seg_start, np.flatnonzero(pads), side="right") - 1
        np.add.at(pad_rows, row_of, 1)
    docs = segs - pad_rows
    return {"rows": int(segs.shape[0]), "row_docs_correlation": round(order_correlation(docs[order]), 4),
            "packer_order_correlation": round(order_correlation(docs), 4)}


def format_recipe_report(r: dict[str, Any]) -> str:
    """``format_report``'s summary plus the recipe's lines: per source, splits, dedup, order."""
    lines = [format_report(r)]
    rec = r.get("recipe")
    if not rec:
        return lines[0]
    lines.append(f"  recipe      seed {rec['seed']}, dedup {rec['dedup']['mode']} "
                 f"({rec['dedup']['duplicates_seen']:,} duplicate(s) seen, {rec['dedup']['removed']:,} removed), "
                 f"shuffle {'on' if rec['shuffle'] else 'off'}")
    # records = rejected + untrained (skipped) + docs; pieces (docs after text splits) = valid. + dedup'd + skipped
    # + distinct taken (weights take a piece more than once)
    lines.append(f"  {'source':<20} {'records':>8} {'rejected':>8} {'untr.':>6} {'docs':>8} {'pieces':>8} {'valid.':>7} "
                 f"{'dups':>6} {'skipped':>8} {'taken':>8} {'tokens':>11} {'trained':>11} {'share':>7}")
    for s in rec["sources"]:
        name = s["name"] if len(s["name"]) <= 20 else "…" + s["name"][-19:]
        untrained = 0 if r.get("untrained", {}).get("kept") else s["untrained"]
        lines.append(f"  {name:<20} {s['records']:>8,} {s['rejected']:>8,} {untrained:>6,} {s['documents']:>8,} "
                     f"{s.get('pieces', s['documents']):>8,} {s['validation']:>7,} "
                     f"{s['duplicates']:>6,} {s['skipped']:>8,} {s['taken']:>8,} {s['tokens']:>11,} "
                     f"{s['trained_tokens']:>11,} {s['share']:>7.1%}")
    for split in SPLITS:
        sp = rec["splits"][split]
        if not sp["documents"] and split == "validation":
            continue
        order = sp.get("order")
        corr = (f", docs-per-row vs row index r={order['row_docs_correlation']:+.3f} "
                f"(packer order {order['packer_order_correlation']:+.3f})" if order and order["rows"] >= 10 else "")
        lines.append(f"  {split:<11} {sp['documents']:,} documents -> {sp['rows']:,} rows in "
                     f"{len(sp['shards'])} shard(s){corr}")
    return "\n".join(lines)
