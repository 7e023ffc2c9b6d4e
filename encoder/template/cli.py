"""``ocml template``: print a format's chat template, or write a loadable folder (``--out``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..cli_args import add_mask, add_reasoning
from ocml.vocab import DEFAULT_FORMAT



def _cmd_template(args: argparse.Namespace) -> int:
    from ..cli_args import format_options
    from ..facade import Encoder

    # every option that changes the layout reaches the templates (Format.init_options, mask, cot)
    enc = Encoder(args.format, args.tokenizer, cot=args.cot, mask=args.mask, **format_options(args))
    if args.out is None:
        sys.stdout.write(enc.chat_template(training=args.training))
        return 0
    out = Path(enc.save_pretrained(args.out))
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        print(path)
    return 0


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``template`` to an ``argparse`` subparsers object (``ocml.encoder.cli`` wires it)."""
    p = subparsers.add_parser(
        "template",
        help="print the HF chat template of a format, or write a folder AutoTokenizer loads (--out)",
        description="Without --out: print the inference template (--training: the one with "
        "{% generation %} blocks). With --out DIR: write the tokenizer, the templates (in "
        "tokenizer_config.json: 'default' and 'training' with the generation blocks, 'inference' without) "
        "and generation_config.json.",
    )
    p.add_argument("--format", default=DEFAULT_FORMAT)
    p.add_argument("--tokenizer", default=None, help="o200k_harmony, o200k_base, cl100k_base or a .tiktoken path "
                   "(default: the format's own, controls registered)")
    p.add_argument("--training", action="store_true", help="print the training template")
    p.add_argument("--cot", default=None,
                   help="the templates' default CoT policy (default, harmony, keep-all, drop-all)")
    p.add_argument("--out", default=None, metavar="DIR", help="write a save_pretrained folder to DIR")
    add_mask(p)
    add_reasoning(p)
    p.set_defaults(fn=_cmd_template)
    return p
