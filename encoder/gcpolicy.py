"""Garbage-collector policy while ``ocml pack``'s render workers render.

Rendering a chunk allocates many short-lived objects (messages, pieces, small lists) that die
by reference counting; generational GC passes over them find nothing to free, yet cost 6-16%
of a render pass (measured on 1,500 to 6,000 agentic records, Harmony).  So a chunk renders
with the cyclic collector off; after it the collector is back on and one young-generation
pass frees any cyclic garbage the chunk made (bounded: one chunk's worth).  The switch is
process-wide: another thread's cyclic garbage also waits for the end of the chunk.  Worker processes also freeze
what exists after their setup (the encoder, its vocabulary, imported modules): those objects
live as long as the worker, and ``gc.freeze`` keeps every later collection from walking them
again (and, after a fork, from touching their pages).

Only the worker process is frozen: the in-process path (``--workers 1``) only switches the
collector off around a chunk and restores the caller's setting.
``Encoder.render_batch`` leaves the collector alone: a library call does not change a process-wide
setting under its caller's other threads (it costs that call about 4%: ``docs/decisions.md``).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


def after_worker_setup() -> None:
    """In a worker process, once its encoder is built: collect once, then freeze the survivors."""
    gc.collect()
    gc.freeze()


@contextmanager
def rendering() -> Iterator[None]:
    """The cyclic collector off for the block (one chunk); the previous setting after it, and
    then, if it was on, one young-generation pass: what the chunk left alive is a few result
    objects, and any cyclic garbage it made is freed before the next chunk (bounded)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
            gc.collect(0)
