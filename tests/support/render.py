"""One table of encoders for the render tests (cached per name and shape) and ``plain``: a rendered
conversation as plain dicts."""

from __future__ import annotations

from ocml import encoder


ENCODERS = {
    "harmony": lambda: encoder.Encoder("harmony"),
    "harmony-fallback": lambda: encoder.Encoder("harmony", tokenizer="o200k_base"),
    "ocm22": lambda: encoder.Encoder("openchatml-2.2"),
    "ocm22-fallback": lambda: encoder.Encoder("openchatml-2.2", tokenizer="o200k_base"),
    "ocm22-cl100k": lambda: encoder.Encoder("openchatml-2.2", tokenizer=__import__("ocml").vocab.load("cl100k_base", register="openchatml-2.2")),
    "ocm20": lambda: encoder.Encoder("openchatml-2.0"),
    "ocm20-fallback": lambda: encoder.Encoder("openchatml-2.0", tokenizer="cl100k_base"),
}


_cache: dict[str, encoder.Encoder] = {}


def enc_(name: str, shape: str = "auto") -> encoder.Encoder:
    """``shape="native"``: the generator writes conversations in the formats' own terms, and a
    prefix of one (``[system, user]``) carries no sign of that, so prefix renders say so."""
    key = f"{name}/{shape}"
    if key not in _cache:
        enc = ENCODERS[name]()
        _cache[key] = enc if shape == "auto" else encoder.Encoder(enc.format_name, enc.tokenizer, shape=shape)
    return _cache[key]


def plain(raw: dict) -> list[dict]:
    """The generator's harmony-shaped conversation as plain text messages (no structured content)."""
    out = []
    for m in raw["messages"]:
        items = m["content"]
        if any(i.get("type") != "text" for i in items):
            continue
        d = {"role": m["role"], "content": "".join(i["text"] for i in items)}
        for k in ("channel", "recipient", "name"):
            if m.get(k):
                d[k] = m[k]
        if m.get("content_type") == "<|constrain|>json":
            d["constrain"] = "json"
        elif m.get("content_type"):
            d["content_type"] = m["content_type"]
        if m["role"] == "user":
            d.pop("name", None)
        out.append(d)
    return out
