"""``ocml inspect`` and ``ocml render --color``: look at packed rows / rendered tokens as text.

One option set (``cli._pack_options``, the options of ``ocml pack``) is parsed by pack,
render and inspect alike; ``OPTIONS_APPLYING`` says which of them each other command
uses.  Any other pack option given to render / inspect is a usage error (exit 2) naming
the command it belongs to, never silently ignored.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError
from .tokenview import Span, Style, TokenView, When, header, legend

# dests of ocml pack's options that other commands take (everything else is pack-only).
OPTIONS_APPLYING: dict[str, frozenset[str]] = {
    "render": frozenset({"format", "tokenizer", "model", "mask", "cot", "reasoning", "messages_field", "tools_field",
                         "json", "shape", "field", "completion_only_loss", "string_prompt", "extra_columns",
                         "ignore_column"}),
    "inspect": frozenset({"format", "tokenizer"}),
}
# each command's own options (not from pack's set)
OWN_OPTIONS: dict[str, frozenset[str]] = {
    "render": frozenset({"line", "mode", "color"}),
    "inspect": frozenset({"row", "doc", "source", "record", "count", "color"}),
}
_FOREIGN = "_pack_only"  # parser default: the dests (with their option strings) that do not apply


def restrict(p: argparse.ArgumentParser, command: str, explicit: frozenset[str] = frozenset()) -> None:
    """Make ``p`` (which parsed ocml pack's option set) accept pack-only options without
    defaults, so ``check_applies`` sees exactly the ones given; ``explicit``: applying
    options left unset unless given too (inspect reads format / tokenizer from the manifest)."""
    applies = OPTIONS_APPLYING[command]
    foreign: dict[str, str] = {}
    for a in p._actions:
        if not a.option_strings or a.dest == "help":
            continue
        if a.dest not in applies and a.dest not in OWN_OPTIONS[command]:
            foreign[a.dest] = "/".join(a.option_strings)  # --progress/--no-progress
            a.required = False
            a.default = argparse.SUPPRESS
            a.help = argparse.SUPPRESS  # listed in ocml pack --help
        elif a.dest in explicit:
            a.default = argparse.SUPPRESS
            a.help = (a.help or "").split(" (default")[0] + " (default: as DIR/manifest.json says)"
    p.set_defaults(**{_FOREIGN: foreign})


def check_applies(args: argparse.Namespace, command: str) -> None:
    """Usage error for a pack-only option given to ``command``."""
    given = [(dest, opt) for dest, opt in getattr(args, _FOREIGN, {}).items() if hasattr(args, dest)]
    if given:
        dest, opt = given[0]
        takers = ["pack"] + [c for c, applies in OPTIONS_APPLYING.items() if dest in applies]
        raise InputError(f"{opt} applies to {' / '.join(f'`ocml {c}`' for c in takers)}, not `ocml {command}`",
                         code="E-USAGE", field=opt,
                         hint=f"`ocml {command}` takes " + ", ".join(
                             "--" + d.replace("_", "-") for d in sorted(OPTIONS_APPLYING[command])) +
                         " from pack's options")


def _color_arg(p: argparse.ArgumentParser, default: str | None) -> None:
    p.add_argument("--color", nargs="?", const="auto", default=default, choices=[w.value for w in When],
                   metavar="WHEN",
                   help="show tokens as text: trained / untrained / control tokens coloured on a terminal, "
                        "[[trained]]...[[/trained]] and [[<|control|>]] markers otherwise; WHEN = auto (default "
                        "when given), always (ANSI even into a pipe), never (markers)")


def add_render_view(r: argparse.ArgumentParser) -> None:
    """``ocml render``'s own view option; then restricts the shared option set."""
    _color_arg(r, None)
    restrict(r, "render")


def _style(when: str) -> Style:
    return When(when).style(sys.stdout.isatty())


def show_render(enc: Any, r: Any, when: str) -> int:
    style = _style(when)
    view = TokenView(enc.tokenizer)
    # Message boundaries are the document's structure here: one span per message.
    mi = r.message_index
    cuts = (np.flatnonzero(np.diff(mi)) + 1).tolist() if len(mi) else []
    bounds = [0] + cuts + [len(mi)]
    print(header(f"{enc.format_name} · {enc.tokenizer.name} · {len(r)} tokens, {int(r.mask.sum())} trained", style))
    if style is Style.ANSI:
        print(legend(style))
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b > a:
            print(header(f"{_message_name(int(mi[a]))} · tokens {a}-{b}", style))
            print(view.document(r.ids[a:b], r.mask[a:b], style))
    return 0


def _message_name(index: int) -> str:
    from .render import GENERATION_PROMPT, SYNTHESIZED

    if index == SYNTHESIZED:
        return "built from the conversation options"
    return "generation prompt" if index == GENERATION_PROMPT else f"message {index}"


# -- ocml inspect ------------------------------------------------------------------------------

def add_inspect_parser(sub: Any, pack_options: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser(
        "inspect", help="show packed rows (or unpacked documents) of an ocml pack output as text",
        description=textwrap.fill(
            "Show rows of an ocml pack output folder token by token: trained tokens in one colour, untrained in "
            "another, control tokens and document boundaries marked (plain [[...]] markers when stdout is not a "
            "terminal). Reads Parquet, .npy or Megatron shards; the tokenizer comes from DIR/manifest.json.", 79),
        epilog="examples:\n  ocml inspect packed/ --row 12 --doc 1\n  ocml inspect packed/ --source data.jsonl "
               "--record 41\n  ocml inspect packed/ --color=never | less",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", metavar="DIR", help="the --out folder of ocml pack")
    pack_options(p)
    p.add_argument("--row", type=int, default=None, metavar="N", help="row N (0-based, across shards in name order; "
                   "default 0)")
    p.add_argument("--doc", type=int, default=None, metavar="K",
                   help="only document K of the row (its seq_idx: 0 = first document)")
    p.add_argument("--source", default=None, metavar="S",
                   help="documents from input S (a source number, or the input path / file name; needs the "
                        "provenance columns doc_source / doc_record)")
    p.add_argument("--record", type=int, default=None, metavar="R",
                   help="the document(s) of record R (0-based within its source; with --source to pick one)")
    p.add_argument("--count", type=int, default=1, metavar="N",
                   help="how many rows (or matching documents) to show (default %(default)s)")
    _color_arg(p, "auto")
    restrict(p, "inspect", explicit=frozenset({"format", "tokenizer"}))
    p.set_defaults(fn=cmd_inspect)


def _tokenizer(args: argparse.Namespace, manifest: dict[str, Any]) -> Any:
    """The tokenizer the shards were packed with: --format / --tokenizer when given, else the
    manifest's (its ``name+format`` composite name rebuilt, checked against its vocab hash)."""
    from ocml import vocab

    from .encoder import Encoder

    fmt = getattr(args, "format", None)
    tok = getattr(args, "tokenizer", None)
    if fmt is not None or tok is not None:
        return Encoder(fmt or manifest.get("format") or vocab.DEFAULT_FORMAT, tok).tokenizer
    info = manifest.get("tokenizer") or {}
    name = info.get("name")
    if name is None:
        raise InputError("no manifest.json names the tokenizer", code="E-USAGE", field="--tokenizer",
                         hint="pass --format (and --tokenizer) the shards were packed with")
    base, *registered = name.split("+") if not Path(name).exists() else (name,)
    loaded = vocab.load(base, register=registered or None) if not Path(base).is_dir() else \
        Encoder(manifest.get("format") or vocab.DEFAULT_FORMAT, base).tokenizer
    if info.get("vocab_hash") not in (None, loaded.fingerprint):
        raise InputError(f"tokenizer {name} here is not the one the shards were packed with (vocab hash differs)",
                         code="E-USAGE", field="--tokenizer", hint="pass --tokenizer with the packing tokenizer")
    return loaded


def cmd_inspect(args: argparse.Namespace) -> int:
    from .pipeline.readback import PackOutput

    check_applies(args, "inspect")
    if args.count < 1:
        raise InputError(f"--count must be >= 1, got {args.count}", code="E-USAGE", field="--count")
    out = PackOutput(args.dir)
    view = TokenView(_tokenizer(args, out.manifest))
    style = _style(args.color)
    shown: list[str] = [legend(style)] if style is Style.ANSI else []
    if args.source is not None or args.record is not None:
        source = out.source_number(args.source) if args.source is not None else None
        for n, j in out.find(source, args.record):
            if (args.row is not None and n != args.row) or (args.doc is not None and j != args.doc):
                continue
            shown.append(_show(view, out.row(n), style, only=j))
            if len(shown) - (style is Style.ANSI) == args.count:
                break
        if len(shown) == (style is Style.ANSI):
            raise InputError("no document matches " + " ".join(
                f"{k} {v}" for k, v in (("--source", args.source), ("--record", args.record), ("--row", args.row),
                                        ("--doc", args.doc)) if v is not None), code="E-USAGE",
                field="--source" if args.source is not None else "--record",
                hint="see manifest.json 'sources' for the source numbers and record counts")
    else:
        first = args.row if args.row is not None else 0
        for n in range(first, max(first + 1, min(first + args.count, out.rows))):
            row = out.row(n)
            if args.doc is not None and not 0 <= args.doc < len(row.docs):
                raise InputError(f"row {n} has {len(row.docs)} document(s), no document {args.doc}", code="E-USAGE",
                                 field="--doc", hint=f"0..{len(row.docs) - 1}")
            shown.append(_show(view, row, style, only=args.doc))
    print("\n".join(shown))
    return 0


def _show(view: TokenView, row: Any, style: Style, only: int | None) -> str:
    docs = [d for d in row.docs if only is None or d.index == only]
    real = [d for d in row.docs if not d.padding]
    head = header(f"row {row.number} · {row.shard} row {row.in_shard} · {len(row.ids)} tokens · "
                  f"{len(real)} document(s) · {int(np.count_nonzero(row.trained))} trained", style)
    spans = []
    for d in docs:
        where = " · ".join(f"{k} {v}" for k, v in (("source", d.source), ("record", d.record)) if v is not None)
        spans.append(Span(d.start, d.length, where, d.padding, d.index))
    return head + "\n" + view.stream(row.ids, row.trained, spans, style)
