"""``lengths.png``: the document-length histogram, drawn with Pillow in a few milliseconds.

It was drawn with matplotlib, whose import alone (~1.4 s, more on a loaded machine) was the
largest fixed cost of every ``ocml pack`` run (issue 30).  The chart is simple enough to draw
directly: bars on linear or log-spaced integer bins (``bin_edges``), the median (dotted) and
``seq_len`` (red) marked and named in a legend, "nice" ticks (1 / 2 / 5 x 10^k; decades on a
log axis), a title, axis labels, light horizontal grid lines.  Pillow's bundled font (Aileron,
drawn by the FreeType every Pillow wheel ships) is used, so nothing depends on the fonts of
the machine.  The file is written atomically (temp file + rename).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

SIZE = (800, 420)                      # pixels (matplotlib's 8 x 4.2 in at 100 dpi, as before)
BOX = (72, 34, 786, 366)               # plot area: left, top, right, bottom
BAR, MEDIAN, SEQ_LEN = "#4C72B0", "#555555", "#C44E52"
GRID, AXIS, TEXT = "#E3E3E3", "#333333", "#222222"
BINS = 50


def bin_edges(lo: int, hi: int) -> tuple[np.ndarray, bool]:
    """Integer bin edges over lengths ``lo``..``hi`` (exclusive) and whether they are log-spaced
    (lengths spanning more than a factor of 50); linear bins all hold the same number of lengths."""
    log = hi / lo > 50
    if log:
        return np.unique(np.geomspace(lo, hi, BINS).astype(np.int64)), True
    width = max(1, -(-(hi - lo) // BINS))
    return np.arange(lo, hi + width, width), False


def nice_ticks(lo: float, hi: float, target: int = 6) -> list[float]:
    """Ticks at 1 / 2 / 5 x 10^k between ``lo`` and ``hi`` (about ``target`` of them)."""
    span = max(hi - lo, 1e-9)
    raw = span / target
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step + 1e-9) + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Decades between ``lo`` and ``hi``, with 2x and 5x when fewer than three decades show."""
    ticks = [10.0 ** k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
    if sum(lo <= t <= hi for t in ticks) < 3:
        ticks = sorted(t * m for t in ticks for m in (1, 2, 5))
    return [t for t in ticks if lo <= t <= hi]


def label(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.1f}"


def draw_histogram(counts: np.ndarray, path: Path, seq_len: int | None, title: str, median: int | None) -> None:
    """Write the histogram of ``counts`` (``counts[n]`` documents of length ``n``) to ``path``."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", SIZE, "white")
    d = ImageDraw.Draw(img)
    font, title_font = ImageFont.load_default(size=12), ImageFont.load_default(size=13)  # Aileron (FreeType)
    left, top, right, bottom = BOX
    nz = np.flatnonzero(counts)
    hist = edges = None
    log = False
    if nz.size:
        edges, log = bin_edges(max(1, int(nz[0])), int(nz[-1]) + 1)
        hist, _ = np.histogram(nz, bins=edges, weights=counts[nz])
    xs = [float(v) for v in ((edges[0], edges[-1]) if edges is not None else ())] + \
        ([float(seq_len)] if seq_len is not None else [])
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if log:
        a, b = math.log10(x_lo), math.log10(x_hi)
        pad = (b - a) * 0.03 or 0.1
        x_lo, x_hi = 10 ** (a - pad), 10 ** (b + pad)
    else:
        pad = (x_hi - x_lo) * 0.03 or 1.0
        x_lo, x_hi = max(0.0, x_lo - pad), x_hi + pad
    y_hi = float(hist.max()) * 1.08 if hist is not None and hist.size and hist.max() > 0 else 1.0

    def X(v: float) -> float:
        if log:
            return left + (math.log10(max(v, 1e-9)) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo)) * (right - left)
        return left + (v - x_lo) / (x_hi - x_lo) * (right - left)

    def Y(v: float) -> float:
        return bottom - v / y_hi * (bottom - top)

    for t in nice_ticks(0, y_hi):  # grid + y ticks
        y = Y(t)
        d.line([(left, y), (right, y)], fill=GRID)
        d.line([(left - 4, y), (left, y)], fill=AXIS)
        d.text((left - 7, y), label(t), fill=TEXT, font=font, anchor="rm")
    if hist is not None and edges is not None:
        for c, e0, e1 in zip(hist.tolist(), edges[:-1].tolist(), edges[1:].tolist()):
            if c > 0:
                d.rectangle([X(e0), Y(c), max(X(e1) - 1, X(e0)), bottom], fill=BAR, outline="white")
    for t in (log_ticks(x_lo, x_hi) if log else nice_ticks(x_lo, x_hi, 8)):
        x = X(t)
        d.line([(x, bottom), (x, bottom + 4)], fill=AXIS)
        d.text((x, bottom + 7), label(t), fill=TEXT, font=font, anchor="mt")
    legend: list[tuple[str, int, bool, str]] = []
    if median is not None:
        x = X(median)
        for y in range(top, bottom, 6):
            d.line([(x, y), (x, min(y + 2, bottom))], fill=MEDIAN, width=1)
        legend.append((MEDIAN, 1, True, f"median {median:,}"))
    if seq_len is not None:
        over = int(counts[seq_len + 1:].sum())
        d.line([(X(seq_len), top), (X(seq_len), bottom)], fill=SEQ_LEN, width=2)
        legend.append((SEQ_LEN, 2, False, f"seq_len {seq_len:,} ({over:,} longer)"))
    d.rectangle([left, top, right, bottom], outline=AXIS)
    for k, (color, width, dotted, text) in enumerate(legend):
        y = top + 14 + 18 * k
        x0 = right - 12 - 26 - 6 - max(d.textlength(t[3], font=font) for t in legend)
        if dotted:
            for x in range(int(x0), int(x0) + 26, 6):
                d.line([(x, y), (x + 2, y)], fill=color, width=width)
        else:
            d.line([(x0, y), (x0 + 26, y)], fill=color, width=width)
        d.text((x0 + 32, y), text, fill=TEXT, font=font, anchor="lm")
    d.text(((left + right) / 2, top - 10), title, fill=TEXT, font=title_font, anchor="ms")
    d.text(((left + right) / 2, SIZE[1] - 8), "document length (tokens)", fill=TEXT, font=font, anchor="ms")
    side = Image.new("RGB", (200, 20), "white")
    ImageDraw.Draw(side).text((100, 10), "documents", fill=TEXT, font=font, anchor="mm")
    img.paste(side.rotate(90, expand=True), (4, int((top + bottom) / 2) - 100))
    tmp = path.with_name("." + path.name + ".tmp.png")
    img.save(tmp, format="PNG")
    os.replace(tmp, path)

