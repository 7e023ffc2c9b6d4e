"""``ocml`` command line: render a conversation readably, or a JSONL file to arrays."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .errors import OcmlError


def _load(path: str) -> Any:
    text = sys.stdin.read() if path == "-" else Path(path).read_text("utf-8")
    return json.loads(text)


def _cmd_render(args: argparse.Namespace) -> int:
    from .encoder import Encoder

    enc = Encoder(args.format, args.tokenizer)
    r = enc.render(_load(args.file), mode=args.mode, cot=args.cot)
    if args.json:
        json.dump({"ids": r.ids.tolist(), "mask": r.mask.astype(int).tolist(),
                   "message_index": r.message_index.tolist()}, sys.stdout)
        print()
        return 0
    tok = enc.tokenizer
    print(f"format={enc.format_name} tokenizer={tok.name} mode={args.mode} tokens={len(r)} "
          f"trained={int(r.mask.sum())} dropped={list(r.dropped)}")
    if enc.fallback_controls:
        print(f"fallback (spelled as text): {' '.join(enc.fallback_controls)}")
    print(f"{'pos':>5} {'id':>7} {'msg':>4} {'train':>5}  token")
    for k, (i, m, mi) in enumerate(zip(r.ids.tolist(), r.mask.tolist(), r.message_index.tolist())):
        text = tok.token_bytes(i).decode("utf-8", "replace")
        print(f"{k:>5} {i:>7} {mi:>4} {'  x  ' if m else '     '}  {text!r}")
    print("\ntrained text:")
    for a, b in r.spans():
        print("  " + repr(tok.decode(r.ids[a:b].tolist())))
    return 0


def _cmd_text(args: argparse.Namespace) -> int:
    from .encoder import Encoder

    enc = Encoder(args.format, args.tokenizer)
    sys.stdout.write(enc.to_text(_load(args.file)))
    print()
    return 0


def _cmd_formats(args: argparse.Namespace) -> int:
    import vocab
    from .formats import RENDERABLE

    for name in vocab.FORMAT_NAMES:
        t = vocab.control_table(name)
        state = "render+parse" if name in RENDERABLE else "control tokens only"
        print(f"{name:16} {state:20} default encoding {t.default_encoding:14} {' '.join(t.controls)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ocml", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("render", help="render a conversation JSON file and show ids + mask")
    r.add_argument("file", help="conversation JSON (list of messages or {'messages': [...]}); - for stdin")
    r.add_argument("--format", default="openchatml-2.2")
    r.add_argument("--tokenizer", default=None, help="o200k_harmony, o200k_base, cl100k_base or a .tiktoken path")
    r.add_argument("--mode", default="train", choices=["train", "prompt", "history"])
    r.add_argument("--cot", default=None)
    r.add_argument("--json", action="store_true", help="print ids/mask/message_index as JSON")
    r.set_defaults(fn=_cmd_render)
    t = sub.add_parser("text", help="print the plain-text transcript of a conversation")
    t.add_argument("file")
    t.add_argument("--format", default="openchatml-2.2")
    t.add_argument("--tokenizer", default=None)
    t.set_defaults(fn=_cmd_text)
    f = sub.add_parser("formats", help="list formats and their control tokens")
    f.set_defaults(fn=_cmd_formats)
    args = p.parse_args(argv)
    try:
        return int(args.fn(args))
    except OcmlError as exc:
        print(f"ocml: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
