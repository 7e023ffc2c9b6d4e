"""The scanner's run-prefix rule on synthetic vocabularies (``ScannerTables(run_prefix=...)``).

Real tokenizers have a one-byte prefix (``b" "``: tests/vocab/test_metaspace.py checks the decoders
against ``Encoder.parse`` there); a multi-byte one exercises what one byte cannot: the prefix
split over tokens, a token that is part of it, a boundary before it is complete.  The rule:
each run of ordinary ids (between non-text ids, or from the start) loses ``run_prefix`` if its
bytes start with it; text controls are inside runs.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ocml.encoder.stream.scanner import Control, InvalidId, Scanner, ScannerTables, Special, Text, coalesce

RP = "\u2581".encode()  # 3 bytes
TOKENS: list[bytes] = [
    RP, RP[:1], RP[1:], RP[:2], RP[2:], RP + b"a", RP[1:] + b"b", RP[2:] + b"c", b"a", b"bc", b" ",
    RP + RP, b"<|", b"end|>", RP + b"<|end|>", b"\xc3", b"\xa9", RP[:1] + b"x",
]
CONTROL, SPECIAL, INVALID = len(TOKENS), len(TOKENS) + 1, 10 ** 6
IDS = st.lists(st.sampled_from([*range(len(TOKENS)), CONTROL, SPECIAL, INVALID]), max_size=30)


def tables(run_prefix: bytes, text_controls: tuple[str, ...] = ()) -> ScannerTables:
    return ScannerTables(TOKENS, len(TOKENS) + 2, control_ids={CONTROL: "<|start|>"}, other_special_ids=[SPECIAL],
                         text_controls=text_controls, run_prefix=run_prefix)


def expected(ids: list[int], run_prefix: bytes, text_controls: bool) -> list[tuple]:
    """The rule, written plainly: per run of ordinary ids, drop the prefix, split at ``<|end|>``."""
    out: list[tuple] = []
    run: list[bytes] = []

    def flush() -> None:
        data = b"".join(run)
        if data.startswith(run_prefix):
            data = data[len(run_prefix):]
        pieces = data.split(b"<|end|>") if text_controls else [data]
        for k, piece in enumerate(pieces):
            if k:
                out.append(("control", "<|end|>"))
            if piece:
                out.append(("text", piece.decode("utf-8", "replace")))
        run.clear()

    for i in ids:
        if i < len(TOKENS):
            run.append(TOKENS[i])
            continue
        flush()
        out.append(("control", "<|start|>") if i == CONTROL else ("special", i) if i == SPECIAL else ("invalid", i))
    flush()
    return out


def scan(t: ScannerTables, ids: list[int], size: int | None) -> list:
    sc = Scanner(t)
    atoms: list = []
    for k in range(0, len(ids), size or max(len(ids), 1)):
        atoms += sc.feed(ids[k:k + (size or len(ids))])
    return coalesce(atoms + sc.finish())


def shape(atoms: list) -> list[tuple]:
    out: list[tuple] = []
    for a in atoms:
        if type(a) is Text:
            if out and out[-1][0] == "text":  # (coalesce keeps text on both sides of nothing apart)
                out[-1] = ("text", out[-1][1] + a.text)
            else:
                out.append(("text", a.text))
        elif type(a) is Control:
            out.append(("control", a.name))
        elif type(a) is Special:
            out.append(("special", a.token_id))
        elif type(a) is InvalidId:
            out.append(("invalid", a.token_id))
    return out


@settings(max_examples=300, deadline=None)
@given(ids=IDS, text_controls=st.booleans())
def test_multibyte_prefix_is_dropped_at_run_starts_only(ids: list[int], text_controls: bool) -> None:
    t = tables(RP, ("<|end|>",) if text_controls else ())
    ref = scan(t, ids, None)
    assert shape(ref) == expected(ids, RP, text_controls)
    for size in (1, 2, 5):
        assert scan(t, ids, size) == ref, size
    # a run is reported at its first token (where the prefix started, as Encoder.parse says)
    if not text_controls:
        starts = [k for k in range(len(ids)) if ids[k] < len(TOKENS) and (k == 0 or ids[k - 1] >= len(TOKENS))]
        assert [a.token_index for a in ref if type(a) is Text] == \
               [k for k in starts if any(x[0] == "text" for x in expected(_run_at(ids, k), RP, False))]


def _run_at(ids: list[int], k: int) -> list[int]:
    end = k
    while end < len(ids) and ids[end] < len(TOKENS):
        end += 1
    return ids[k:end]


@settings(max_examples=100, deadline=None)
@given(ids=IDS)
def test_no_prefix_is_the_old_scanner(ids: list[int]) -> None:
    t = tables(b"")
    assert shape(scan(t, ids, 1)) == expected(ids, b"", False)
    sc = Scanner(t)
    for i in ids:
        sc.feed([i])
        assert sc._state >= 0  # the run-start state exists only with a prefix


def test_held_prefix_bytes_are_pending_and_text_at_the_end() -> None:
    t = tables(RP)
    sc = Scanner(t)
    assert sc.feed([1]) == [] and sc.pending == RP[:1] and sc.fast_text is None
    # RP[:1] + RP[2:] is not the prefix: text now, held only as an incomplete character
    assert sc.feed([4]) == [] and sc.pending == RP[:1] + RP[2:] and sc._state == 0
    sc = Scanner(t)
    sc.feed([3])  # two bytes of the prefix, held
    assert sc.pending == RP[:2]
    assert coalesce(sc.finish()) == [Text(RP[:2].decode("utf-8", "replace"), 0)]
    sc = Scanner(t)
    assert sc.feed([3, 4, 8]) == [Text("a", 0)]  # the prefix over two tokens, then content


def test_manual_literal_switch_keeps_the_run_start() -> None:
    t = ScannerTables(TOKENS, len(TOKENS) + 2, control_ids={CONTROL: "<|literal|>", SPECIAL: "<|endliteral|>"},
                      auto_literal=False, run_prefix=RP)
    sc = Scanner(t)
    assert sc.feed([CONTROL]) == [Control("<|literal|>", 0, True)]
    sc.set_literal(True)
    assert coalesce(sc.feed([5, 8]) + sc.finish()) == [Text("aa", 1)]
