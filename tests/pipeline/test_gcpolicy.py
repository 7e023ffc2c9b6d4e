"""``ocml.encoder.gcpolicy``: the collector is off while a chunk renders and the caller's
setting comes back after it (also after an error, and when it was already off)."""

from __future__ import annotations

import gc

import pytest

from ocml.encoder import gcpolicy
from ocml.encoder.pipeline import workers


def test_rendering_switches_the_collector_off_and_restores_it() -> None:
    assert gc.isenabled()
    with gcpolicy.rendering():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), gcpolicy.rendering():
        raise ValueError
    assert gc.isenabled()


def test_rendering_leaves_a_disabled_collector_disabled() -> None:
    gc.disable()
    try:
        with gcpolicy.rendering():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_in_process_pool_renders_with_the_collector_off(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    monkeypatch.setattr(workers, "render_chunk", lambda enc, chunk, spec: seen.append(gc.isenabled()) or chunk)
    with workers.RenderPool(None, workers.RenderSpec(), 1) as pool:
        assert list(pool.map(iter(["a", "b"]))) == ["a", "b"]  # type: ignore[arg-type]
    assert seen == [False, False] and gc.isenabled()


def test_render_batch_leaves_the_process_wide_collector_alone() -> None:
    """A library call: the caller's other threads keep their collector (``ocml pack``'s own worker
    processes switch it off, above)."""
    from ocml import encoder

    enc = encoder.Encoder("harmony")
    seen: list[bool] = []

    def convs():  # type: ignore[no-untyped-def]
        for text in ("a", "b"):
            seen.append(gc.isenabled())
            yield [{"role": "user", "content": text}]

    assert len(enc.render_batch(convs()).results) == 2
    assert seen == [True, True] and gc.isenabled()
    gc.disable()  # and a caller's disabled collector stays disabled
    try:
        seen.clear()
        enc.render_batch(convs())
        assert seen == [False, False] and not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(encoder.OcmlError):
        enc.render_batch([[{"role": "user"}]])  # no content: raises inside the batch
    assert gc.isenabled()
