"""GPT-2's byte-level alphabet (HF ``ByteLevel``): its one home.

Every byte gets a printable character: printable Latin-1 bytes map to themselves, the
others shift up past 255, in byte order.  ``hf_convert`` writes a vocabulary's bytes with
it; ``hf_backend`` reads HF byte-level tokens back to bytes with its inverse.
"""

from __future__ import annotations


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable-unicode-char map (HF ByteLevel uses it)."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("\xa1"), ord("\xac") + 1))
        + list(range(ord("\xae"), ord("\xff") + 1))
    )
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


#: byte -> character, and its inverse
BYTE_ENCODER: dict[int, str] = bytes_to_unicode()
BYTE_DECODER: dict[str, int] = {c: b for b, c in BYTE_ENCODER.items()}

__all__ = ["BYTE_DECODER", "BYTE_ENCODER", "bytes_to_unicode"]
