"""``ocml`` command line: pack datasets for training, render or transcribe one conversation.

Every failure a user can cause (a missing file, a folder, bytes that are not UTF-8, JSON
where JSON Lines was expected or the reverse, a bad option, a closed pipe) ends with one
``ocml: ...`` line on stderr and a documented exit code, never a Python traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

from .cli_args import add_mask, add_reasoning, format_options
from ocml.vocab import DEFAULT_FORMAT

from .errors import InputError, OcmlError
from .jsonlimits import loads_record

EXIT_OK = 0
EXIT_FAILED = 1        # --strict met a bad record; too many bad records; nothing rendered; a run failed
EXIT_USAGE = 2         # bad option, unreadable / unusable input, --out holding something else
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141        # stdout closed early (ocml ... | head): like tools killed by SIGPIPE

EPILOG = """exit codes:
  0    success (ocml pack: bad records were skipped, listed in DIR/errors.jsonl and the report)
  1    ocml pack --strict stopped at a bad record, more than --max-bad-fraction of the
       records were bad, no record rendered (E-NOTHING-RENDERED, whatever the limit), or
       a run failed after it started (a worker died, the disk is full); rerun the same
       command to resume
  2    usage or input error: bad option, missing / unreadable / non-UTF-8 / non-JSON input,
       a truncated or corrupt input file, an --out folder that holds something else
  130  interrupted (Ctrl-C); ocml pack resumes when rerun
  141  standard output was closed early (e.g. ocml render ... | head)
"""


# -- loading one conversation (render, text) -----------------------------------------------------

def _read_bytes(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{path} is a directory, not a conversation file", code="E-INPUT-FILE", field="FILE",
                         hint="give a .json file (ocml pack reads folders of shards)")
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", code="E-INPUT-FILE", field="FILE") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})", code="E-INPUT-FILE", field="FILE") from None


def _decompress(data: bytes) -> bytes:
    if data[:2] == b"\x1f\x8b":
        import gzip

        return gzip.decompress(data)
    if data[:4] == b"\x28\xb5\x2f\xfd":
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    return data


def _utf8(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}, line {line})",
                         code="E-INPUT-UTF8", field="FILE", hint="re-encode it as UTF-8") from None


def load_conversation(path: str, line: int | None = None, *, messages_field: str = "messages",
                      tools_field: str = "tools", shape: str = "auto", shape_options: Any = None) -> Any:
    """One conversation from a JSON file (or line ``line`` of a JSON Lines file); a record
    (not a bare message) is read as ``ocml pack`` reads it (``pipeline.records``)."""
    from .pipeline.records import conversation_from_record

    text = _utf8(_decompress(_read_bytes(path)), path)
    if line is not None:
        lines = text.splitlines()
        if not 1 <= line <= len(lines):
            raise InputError(f"{path} has {len(lines)} line(s), no line {line}", code="E-INPUT-FILE", field="--line")
        text = lines[line - 1]
    if not text.strip():
        raise InputError(f"{path} is empty", code="E-INPUT-JSON", field="FILE")
    try:
        obj = loads_record(text, path, field="FILE")  # too deep / too long a number: typed (jsonlimits)
    except json.JSONDecodeError as exc:
        records = [ln for ln in text.splitlines() if ln.strip()]
        if exc.msg == "Extra data" and len(records) > 1 and _all_json(records[:3]):
            raise InputError(f"{path} is JSON Lines ({len(records)} records); this command takes one conversation",
                             code="E-INPUT-JSONL", field="FILE",
                             hint="pick one with --line N, or pack the whole file with `ocml pack`") from None
        raise InputError(f"{path}: not valid JSON ({exc.msg.removesuffix(' at')} at line {exc.lineno}, column {exc.colno})",
                         code="E-INPUT-JSON", field="FILE") from None
    if isinstance(obj, dict) and "role" not in obj:
        return conversation_from_record(obj, messages_field=messages_field, tools_field=tools_field, shape=shape,
                                        shape_options=shape_options)
    return obj


def _all_json(lines: list[str]) -> bool:
    try:
        for ln in lines:
            loads_record(ln)
    except ValueError:  # typed pathologies included
        return False
    return True


# -- commands -----------------------------------------------------------------------------------

def _cmd_render(args: argparse.Namespace) -> int:
    from .cli_view import check_applies, show_render
    from .pipeline.pack_encoder import encoder_factory

    check_applies(args, "render")
    make, _ = encoder_factory(args.format, args.tokenizer, args.model, sys.stderr)
    shape_options = _shape_options(args)
    enc = make(mask=args.mask, cot=args.cot, shape=args.shape, shape_options=shape_options, **format_options(args))
    conv = load_conversation(args.file, args.line, messages_field=args.messages_field, tools_field=args.tools_field,
                             shape=args.shape, shape_options=shape_options)
    r = enc.render(conv, mode=args.mode)
    if args.color is not None:
        return show_render(enc, r, args.color)
    if args.json:
        json.dump({"ids": r.ids.tolist(), "mask": r.mask.astype(int).tolist(),
                   "message_index": r.message_index.tolist()}, sys.stdout)
        print()
        return EXIT_OK
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
    return EXIT_OK


def _cmd_text(args: argparse.Namespace) -> int:
    from .encoder import Encoder

    enc = Encoder(args.format, args.tokenizer, **format_options(args))
    sys.stdout.write(enc.to_text(load_conversation(args.file, args.line)))
    print()
    return EXIT_OK


def _shape_options(args: argparse.Namespace) -> Any:
    """``--field`` / ``--completion-only-loss`` / ``--string-prompt`` for one record (render shows one
    sequence: a preference pair's two sides are ``ocml pack --shape preference --no-pack`` rows)."""
    from .inputs.shapes import ShapeOptions

    return ShapeOptions.from_flags(args.field, args.completion_only_loss, args.string_prompt,
                                   extra_columns=args.extra_columns, ignore_columns=args.ignore_column)


def _cmd_formats(args: argparse.Namespace) -> int:
    from ocml import vocab

    from .formats import RENDERABLE

    for name in vocab.FORMAT_NAMES:
        t = vocab.control_table(name)
        state = "render+parse" if name in RENDERABLE else "control tokens only"
        print(f"{name:16} {state:20} default encoding {t.default_encoding:14} {' '.join(t.controls)}")
    return EXIT_OK


def _cmd_pack(args: argparse.Namespace) -> int:
    from .pipeline.recipe_cli import check_plain_run, is_recipe_run, run_from_args
    from .pipeline.run import PackOptions, StrictStop, TooManyBadRecords, run

    recipe = is_recipe_run(args) or check_plain_run(args)  # all but --no-shuffle: pipeline.recipe_run
    outputs = ("parquet", "npy") if args.output == "both" else (args.output,)
    unpacked = args.no_pack or (args.output == "megatron" and args.seq_len is None)  # Megatron packs at train time
    opts = None if recipe else PackOptions(
        inputs=tuple(args.inputs), out=Path(args.out), format=args.format, tokenizer=args.tokenizer,
        model=args.model, seq_len=args.seq_len, mask=args.mask, cot=args.cot, reasoning=args.reasoning,
        workers=args.workers,
        messages_field=args.messages_field, tools_field=args.tools_field, overlong=args.overlong,
        strict=args.strict, shard_size=args.shard_size, pack=not unpacked, outputs=outputs,
        window=args.window, pad_id=args.pad_id, overwrite=args.overwrite, wait_lock=args.wait_lock,
        progress=args.progress,
        pad_to_multiple_of=args.pad_to_multiple_of, seq_idx=args.seq_idx,
        max_bad_fraction=args.max_bad_fraction, keep_untrained=args.keep_untrained,
        max_line_bytes=args.max_line_bytes,
        shape=args.shape, fields=tuple(args.field), completion_only_loss=args.completion_only_loss,
        string_prompt=args.string_prompt, pair_columns=args.pair_columns, extra_columns=args.extra_columns,
        ignore_columns=tuple(args.ignore_column))
    try:
        result = run_from_args(args) if recipe else run(opts)
    except (StrictStop, TooManyBadRecords) as exc:
        print(f"ocml: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OcmlError as exc:
        if exc.code == "E-WORKER":
            print(f"ocml: {exc}", file=sys.stderr)
            return EXIT_FAILED
        raise
    except KeyboardInterrupt:
        print(f"\nocml: interrupted; rerun the same command to resume from the last complete shard in {args.out}",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:  # writing the output: disk full, permissions
        print(f"ocml: [E-OUT-WRITE] cannot write {args.out}: {exc}. Hint: fix it (free space, permissions) and "
              "rerun the same command to resume", file=sys.stderr)
        return EXIT_FAILED
    if result.already_done:
        print(f"ocml: {args.out} is already complete for this input and options (--overwrite to redo it)",
              file=sys.stderr)
    print(json.dumps(result.report, indent=2) if args.json else result.text)
    return EXIT_OK


# -- the parser ---------------------------------------------------------------------------------------

def _formats() -> list[str]:
    from .formats import RENDERABLE

    return list(RENDERABLE)


def _add_one_conversation_args(p: argparse.ArgumentParser, shared: bool = False) -> None:
    p.add_argument("file", metavar="FILE",
                   help="conversation JSON (a list of messages, or {'messages': [...], 'tools': [...], ...}; "
                        ".gz / .zst too); - reads stdin")
    p.add_argument("--line", type=int, default=None, metavar="N",
                   help="take line N (1-based) of a JSON Lines file")
    if shared:  # --format / --tokenizer come from the option set shared with ocml pack
        return
    p.add_argument("--format", default=DEFAULT_FORMAT, choices=_formats(), help="chat format (default %(default)s)")
    p.add_argument("--tokenizer", default=None, metavar="NAME",
                   help="o200k_harmony, o200k_base, cl100k_base, a .tiktoken path, or an HF tokenizer folder / "
                        "tokenizer.json (default: the format's own, control tokens registered)")
    add_reasoning(p)


def _add_pack(sub: Any) -> None:
    p = sub.add_parser(
        "pack", help="render + pack datasets into training shards (Parquet for TRL, .npy)",
        description=textwrap.fill(
            "Render every conversation of the inputs with exact loss masks, pack them into rows of --seq-len "
            "tokens and write Parquet shards (TRL columns: input_ids, labels, position_ids, seq_lengths) and/or "
            "memmap-able .npy shards, plus DIR/manifest.json, DIR/report.json, DIR/lengths.png, DIR/errors.jsonl "
            "(bad records by file and line), DIR/overlong.jsonl and DIR/untrained.jsonl. Every row says which input "
            "and record each document came from (doc_source, doc_record). Rerunning the same command after an "
            "interruption resumes from the last complete shard.", 79),
        epilog=EPILOG + "\nexample:\n  ocml pack examples/sample --seq-len 4096 --out packed/\n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="JSON Lines files (.jsonl, .gz, .zst), JSON files (an array of records), Parquet files, "
                        "folders of such shards, or a datasets.save_to_disk folder (a DatasetDict: its train split)")
    _pack_options(p)
    from .pipeline.recipe_cli import add_recipe_arguments

    add_recipe_arguments(p)
    p.set_defaults(fn=_cmd_pack, pack_parser=p)  # pack_parser: which flags were given (they override a recipe)


def _pack_options(p: argparse.ArgumentParser) -> None:
    """The one option set of ``ocml pack``; ``ocml render`` / ``inspect`` parse it too and reject what
    does not apply to them (``ocml.encoder.cli_view.OPTIONS_APPLYING``)."""
    from ocml import vocab

    from .messages import CotPolicy

    from .pipeline.options import DEFAULT_MAX_BAD_FRACTION, DEFAULT_WINDOW
    from .pipeline.readers import MAX_LINE_BYTES
    from .pipeline.workers import default_workers

    cpus = default_workers()
    p.add_argument("--out", default=None, metavar="DIR", help="output folder (created; must be empty or a previous "
                   "run of the same command, which is resumed; a recipe may name it as out:)")
    p.add_argument("--seq-len", type=int, default=None, metavar="N", help="row length in tokens (required unless "
                   "--no-pack)")
    p.add_argument("--format", default=None, choices=_formats(),
                   help=f"chat format (default {DEFAULT_FORMAT}, or detected from --model; with --model, the given "
                        "format is compared with the model's template and a mismatch is a warning)")
    p.add_argument("--tokenizer", default=None, metavar="NAME",
                   help=f"{', '.join(vocab.encoding_names())}, a .tiktoken path, or an HF tokenizer folder / "
                        "tokenizer.json (default: the format's own, control tokens registered)")
    p.add_argument("--model", default=None, metavar="DIR",
                   help="a local HF model folder: its tokenizer (special tokens at its ids), and its format, "
                        "detected by rendering probe conversations with its chat template and with each ocml "
                        "format and comparing ids (exit 2 naming the closest format when none matches)")
    add_mask(p)
    p.add_argument("--cot", default="default", choices=[c.value for c in CotPolicy],
                   help="chain-of-thought retention: default drops the analysis of turns that ended in final; "
                        "harmony = openai-harmony's exact rule; keep-all; drop-all")
    add_reasoning(p)
    p.add_argument("--workers", type=int, default=cpus, metavar="N",
                   help=f"render processes (default: all cores, here {cpus}); the output is identical for any N")
    p.add_argument("--messages-field", default="messages", metavar="NAME",
                   help="column / key holding the messages (default %(default)s; ShareGPT 'conversations' is "
                        "read when there is no such column)")
    p.add_argument("--tools-field", default="tools", metavar="NAME",
                   help="column / key holding the tool definitions (default %(default)s; JSON strings accepted)")
    p.add_argument("--overlong", default=None, choices=["truncate", "split", "drop"],
                   help="documents longer than --seq-len: truncate after the last whole assistant message that "
                        "fits (the default for conversations: a piece cut mid-conversation has no system / user "
                        "context), split into --seq-len pieces (each its own segment; meant for plain text), or "
                        "drop; all are listed in DIR/overlong.jsonl and the report says how many trained tokens "
                        "each policy removed")
    p.add_argument("--max-bad-fraction", type=float, default=DEFAULT_MAX_BAD_FRACTION, metavar="F",
                   help="fail (exit 1, with the top error codes) when more than this fraction of the records is "
                        "bad; checked after the first 1,000 records and at the end (default %(default)s)")
    p.add_argument("--max-line-bytes", type=int, default=MAX_LINE_BYTES, metavar="N",
                   help="a JSON Lines line longer than this is a bad record (E-INPUT-LINE-TOO-LONG, skipped without "
                        "reading it into memory; default %(default)s = 64 MiB)")
    p.add_argument("--keep-untrained", action="store_true",
                   help="keep documents with nothing to train (no messages, no assistant message, or all masked "
                        "by --mask); by default they are skipped, counted in the report and listed in "
                        "DIR/untrained.jsonl")
    _add_shape_args(p)
    p.add_argument("--strict", action="store_true",
                   help="stop at the first bad record (exit 1) instead of skipping and reporting it")
    p.add_argument("--shard-size", type=int, default=8192, metavar="ROWS",
                   help="rows per shard at most (default %(default)s; a shard also ends with each --window epoch)")
    p.add_argument("--output", default="parquet", choices=["parquet", "npy", "both", "megatron"],
                   help="shard format: parquet (DIR/data/, loads with datasets / TRL), npy (DIR/npy/, memmap-able "
                        "arrays for NeMo-style loaders), both, or megatron (DIR/megatron/: Megatron-LM .bin/.idx "
                        "indexed datasets of unpacked documents, ids + loss mask; no --seq-len: Megatron packs at "
                        "train time) (default %(default)s)")
    p.add_argument("--no-pack", action="store_true",
                   help="one row per conversation (input_ids, labels, assistant_masks), for packing at load time")
    p.add_argument("--window", type=int, default=DEFAULT_WINDOW, metavar="DOCS",
                   help="documents per packing epoch (default %(default)s): the packer is flushed and the open "
                        "shard saved every DOCS documents or 4 Mi tokens, whichever comes first, so a kill loses at "
                        "most one epoch; memory stays near 240 MB in the main process")
    p.add_argument("--pad-id", type=int, default=None, metavar="ID",
                   help="padding id in .npy rows (default: the tokenizer's pad / <|endoftext|>, else the format's "
                        "end token)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the files a previous ocml run wrote in DIR (listed in DIR/.ocml/owned.json); "
                        "files ocml did not write are never deleted nor replaced")
    p.add_argument("--wait-lock", type=float, default=0.0, metavar="SECONDS",
                   help="one run writes DIR at a time (a lock in DIR/.ocml/): wait up to SECONDS for another run "
                        "to finish with it (default 0: refuse at once, E-OUT-LOCKED naming the other run)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr with records/s and tokens/s (default: when stderr is a terminal)")
    p.add_argument("--pad-to-multiple-of", type=int, default=None, metavar="N",
                   help="pad every document segment of a packed row to a multiple of N tokens (pad id, label "
                        "-100, positions continuing; seq_lengths include it), for context parallelism (as "
                        "Megatron-Bridge's pad_seq_to_mult, N = 2 x CP size) or tensor cores; --seq-len must be a "
                        "multiple of N")
    p.add_argument("--seq-idx", action="store_true",
                   help="add a seq_idx column: per token, its document's index in the row (transformers' "
                        "DataCollatorWithFlattening name), for trainers that build block-diagonal masks")
    p.add_argument("--json", action="store_true",
                   help="print as JSON (pack: the report; render: ids / mask / message_index)")


def _add_shape_args(p: argparse.ArgumentParser) -> None:
    from .inputs.shapes import RECORD_SHAPES

    p.add_argument("--shape", default="auto", choices=["auto", "chat", "native", *RECORD_SHAPES],
                   help="record shape: auto (default: per record, by its keys), chat / native (conversations), "
                        "prompt-completion, alpaca, text, or preference / kto (one unpacked row per pair / example, "
                        "needs --no-pack)")
    p.add_argument("--field", action="append", default=[], metavar="KEY=COLUMN",
                   help="read a shape's KEY from COLUMN, e.g. --field output=response (keys: prompt, completion, "
                        "chosen, rejected, label, instruction, input, output, system, history, text) or a "
                        "conversation option from COLUMN, e.g. --field reasoning_effort=effort; repeatable")
    p.add_argument("--extra-columns", default="ignore", choices=["ignore", "error"],
                   help="columns that are neither data nor options: ignore them (default; counted in the report) "
                        "or refuse the record (E-INPUT-COLUMN); a column that looks like a misspelled option "
                        "is always an error")
    p.add_argument("--ignore-column", action="append", default=[], metavar="COLUMN",
                   help="a column to ignore even under --extra-columns error (and never taken for a misspelled "
                        "option); repeatable")
    p.add_argument("--completion-only-loss", action=argparse.BooleanOptionalAction, default=True,
                   help="prompt/completion records: train only the completion (default), or everything (TRL's "
                        "completion_only_loss)")
    p.add_argument("--string-prompt", default="text", choices=["text", "chat"],
                   help="string prompt/completion: plain text + end-of-text as TRL (default), or chat = a user "
                        "turn and the assistant's answer in --format")
    p.add_argument("--pair-columns", default="dpo", choices=["dpo", "orpo"],
                   help="--shape preference columns: dpo = prompt_ids/chosen_ids/rejected_ids (TRL's "
                        "DataCollatorForPreference), orpo = prompt_input_ids/chosen_input_ids/chosen_labels... "
                        "(DPODataCollatorWithPadding)")


def build_parser() -> argparse.ArgumentParser:
    from .cli_view import add_inspect_parser, add_render_view
    from .pipeline.options import ocml_version

    p = argparse.ArgumentParser(prog="ocml", description=__doc__.split("\n\n")[0], epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"ocml {ocml_version()}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    _add_pack(sub)
    r = sub.add_parser("render", help="render one conversation and show its ids and loss mask",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_one_conversation_args(r, shared=True)
    _pack_options(r)
    r.add_argument("--mode", default="train", choices=["train", "prompt", "history", "continue"],
                   help="train (supervised target), prompt (history + generation prompt), history (default %(default)s)")
    add_render_view(r)
    r.set_defaults(fn=_cmd_render)
    t = sub.add_parser("text", help="print the plain-text transcript of one conversation",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_one_conversation_args(t)
    t.set_defaults(fn=_cmd_text)
    f = sub.add_parser("formats", help="list formats and their control tokens")
    f.set_defaults(fn=_cmd_formats)
    from .template.cli import add_parser as add_template_parser

    add_template_parser(sub)
    add_inspect_parser(sub, _pack_options)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        args.argv = list(sys.argv[1:] if argv is None else argv)  # ocml pack --recipe: flags given override it
        try:
            code = int(args.fn(args))
            sys.stdout.flush()  # a closed pipe shows up here, not in an exit-time flush
            return code
        except OcmlError as exc:
            print(f"ocml: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            print("\nocml: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (| head): say nothing, and keep Python's exit-time flush quiet.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return EXIT_PIPE


if __name__ == "__main__":
    sys.exit(main())
