"""``ocml pack``'s options: what they are, their defaults (and why), and their checks.

One home for every default the pipeline applies, so the docs (docs/training/pack.md), ``--help``
and the code say the same thing:

- ``overlong``: resolved per input *shape* (``ocml.encoder.inputs.shapes.OVERLONG_DEFAULT``, the
  one table): conversations are truncated after their last whole assistant message that
  fits, plain text is split.
- ``max_bad_fraction`` 0.05: a run that rejects more than 5% of its records fails (exit 1),
  decided early on a sample (``BAD_SAMPLE`` records) and again at the end.
- ``keep_untrained`` False: a document with no trained token is dead weight in a row.
- ``seq_len`` at most ``MAX_SEQ_LEN`` (16 Mi tokens): longer rows are no context any model
  trains on, and a typo (``--seq-len 4096000000``) must be a usage error, not an out-of-memory kill.
- ``max_line_bytes`` 64 MiB (``readers.MAX_LINE_BYTES``): a longer JSON Lines line is that
  record's ``E-INPUT-LINE-TOO-LONG``, skipped without being held in memory.
- ``window`` 10,000 documents: the packer is flushed (and the open shard saved) every
  ``window`` documents or ``epoch_tokens`` tokens, whichever comes first: a kill loses at
  most that much work, for about 0.01 points of fill (``scripts/bench_pack.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..packing.packed import Overlong
from .readers import MAX_LINE_BYTES

OUTPUTS = ("parquet", "npy", "megatron")
DEFAULT_WINDOW = 10_000
DEFAULT_EPOCH_TOKENS = 1 << 22
DEFAULT_MAX_BAD_FRACTION = 0.05
BAD_SAMPLE = 1_000  # records read before the early --max-bad-fraction check
MAX_SEQ_LEN = 1 << 24  # tokens per row (16,777,216)
MAX_LINE_LIMIT = 1 << 30  # the largest --max-line-bytes (a JSON document is read whole up to this too)


def resolve_overlong(given: str | Overlong | None, shape: str = "auto") -> Overlong:
    """The overlong policy for documents of ``shape``: ``given`` if set, else the shape's default."""
    if given is not None:
        try:
            return Overlong(getattr(given, "value", given))
        except ValueError:
            raise InputError(f"--overlong {given!r}", code="E-USAGE", field="--overlong",
                             hint="one of: " + ", ".join(o.value for o in Overlong)) from None
    from ..inputs.shapes import default_overlong

    return Overlong(default_overlong(shape))


@dataclass(frozen=True)
class PackOptions:
    """Everything ``ocml pack`` takes (see ``ocml.encoder.cli`` for the user-facing help)."""

    inputs: tuple[str, ...]
    out: Path
    format: str | None = None        # None: openchatml-2.2, or detected from --model
    tokenizer: str | None = None
    model: str | None = None         # a local HF model folder: its tokenizer, its format (pack_encoder)
    seq_len: int | None = None
    mask: str = "default"
    cot: str = "default"
    #: ChatML's reasoning policy (``ocml.encoder.reasoning``); None = the format's default, any other format refuses it
    reasoning: str | None = None
    workers: int = 0                 # 0 = all cores
    messages_field: str = "messages"
    tools_field: str = "tools"
    overlong: str | None = None      # None = the shape's default (``ocml.encoder.inputs.shapes.OVERLONG_DEFAULT``)
    strict: bool = False
    shard_size: int = 8192           # rows per shard (at most: a shard also ends with each epoch)
    pack: bool = True
    outputs: tuple[str, ...] = ("parquet",)
    window: int = DEFAULT_WINDOW     # documents per packing epoch
    pad_id: int | None = None
    overwrite: bool = False
    wait_lock: float = 0.0           # seconds to wait for another run's lock on --out (outlock)
    progress: bool | None = None     # None = when stderr is a terminal
    chunk_records: int = 256
    epoch_tokens: int = DEFAULT_EPOCH_TOKENS
    plot: bool = True                # write lengths.png (Pillow: a few ms)
    max_bad_fraction: float = DEFAULT_MAX_BAD_FRACTION
    max_line_bytes: int = MAX_LINE_BYTES  # a longer JSON Lines line is a bad record (readers)
    keep_untrained: bool = False
    pad_to_multiple_of: int | None = None  # pad every packed document segment to a multiple of N
    seq_idx: bool = False            # add the per-token segment index column (packed)
    # Record shapes (encoder.inputs): auto-detected per record, or forced
    shape: str = "auto"
    fields: tuple[str, ...] = ()     # "KEY=COLUMN" renames (--field)
    completion_only_loss: bool = True
    string_prompt: str = "text"
    pair_columns: str = "dpo"
    extra_columns: str = "ignore"    # columns neither data nor options (encoder.inputs.columns)
    ignore_columns: tuple[str, ...] = ()

    def shape_options(self) -> Any:
        from ..inputs.shapes import ShapeOptions

        return ShapeOptions.from_flags(self.fields, self.completion_only_loss, self.string_prompt, self.pair_columns,
                                       self.extra_columns, self.ignore_columns)

    @property
    def overlong_policy(self) -> Overlong:
        return resolve_overlong(self.overlong, self.shape)

    def output_key(self, enc: Any) -> dict[str, Any]:
        """The options the output depends on (part of the fingerprint; workers / progress /
        strict / overwrite / wait_lock / max_bad_fraction are not: they never change a byte of the output)."""
        return {
            "format": enc.format_name, "format_options": enc.format.init_options(),
            "tokenizer": enc.tokenizer.name, "vocab": enc.tokenizer.fingerprint,
            "mask": mask_name(enc.mask), "cot": enc.cot.value, "seq_len": self.seq_len, "pack": self.pack,
            "overlong": self.overlong_policy.value, "window": self.window, "pad_id": self.pad_id,
            "shard_size": self.shard_size, "outputs": list(self.outputs), "messages_field": self.messages_field,
            "tools_field": self.tools_field, "chunk_records": self.chunk_records, "epoch_tokens": self.epoch_tokens,
            "keep_untrained": self.keep_untrained, "ocml": ocml_version(),
            "pad_to_multiple_of": self.pad_to_multiple_of, "seq_idx": self.seq_idx,
            "shape": self.shape, "shape_options": repr(enc.shape_options),
            **({"reasoning": self.reasoning} if self.reasoning else {}),
            **({"max_line_bytes": self.max_line_bytes} if self.max_line_bytes != MAX_LINE_BYTES else {}),
        }


def check(opts: PackOptions) -> None:
    """Usage errors (``E-USAGE``) for options that cannot apply."""
    if opts.pack and opts.seq_len is None:
        raise InputError("--seq-len is required when packing", code="E-USAGE", field="--seq-len",
                         hint="e.g. --seq-len 4096, or --no-pack for one row per conversation")
    for name, given in (("--overlong", opts.overlong), ("--pad-id", opts.pad_id)):
        if not opts.pack and given is not None:
            raise InputError(f"{name} applies to packing only", code="E-USAGE", field=name,
                             hint=f"--no-pack writes every conversation whole, unpadded; drop {name}")
    if opts.workers < 0:
        raise InputError(f"--workers must be >= 0, got {opts.workers}", code="E-USAGE", field="--workers",
                         hint="0 = all cores")
    for name, value in (("--seq-len", opts.seq_len), ("--shard-size", opts.shard_size), ("--window", opts.window),
                        ("--max-line-bytes", opts.max_line_bytes)):
        if value is not None and value < 1:
            raise InputError(f"{name} must be >= 1, got {value}", code="E-USAGE", field=name)
    if not 0.0 <= opts.wait_lock < float("inf"):
        raise InputError(f"--wait-lock must be a number of seconds >= 0, got {opts.wait_lock}", code="E-USAGE",
                         field="--wait-lock", hint="0 (the default) = refuse at once when another run holds --out")
    for name, value, limit, what in (("--seq-len", opts.seq_len, MAX_SEQ_LEN, "tokens per row"),
                                     ("--max-line-bytes", opts.max_line_bytes, MAX_LINE_LIMIT, "bytes")):
        if value is not None and value > limit:
            raise InputError(f"{name} {value:,} is over the limit of {limit:,} {what}", code="E-USAGE", field=name,
                             hint=f"{name} N with N <= {limit:,}")
    if not 0.0 <= opts.max_bad_fraction <= 1.0:
        raise InputError(f"--max-bad-fraction must be in [0, 1], got {opts.max_bad_fraction}", code="E-USAGE",
                         field="--max-bad-fraction", hint="e.g. 0.05 (5%); 1 = never fail on bad records")
    opts.overlong_policy  # noqa: B018 - validates --overlong
    bad = [o for o in opts.outputs if o not in OUTPUTS]
    if bad or not opts.outputs:
        raise InputError(f"unknown output {bad}", code="E-USAGE", field="--output",
                         hint="parquet, npy, both or megatron")
    check_outputs(opts)
    if opts.shape in ("preference", "kto"):
        from ..inputs.rows import check_options

        check_options(opts.shape, opts.pair_columns, opts.pack, opts.outputs, opts.completion_only_loss)


def check_outputs(opts: PackOptions) -> None:
    """Options that only apply to packed rows, and Megatron's two outputs."""
    from ..errors import OcmlError
    from ..packing.padding import check_multiple

    if "megatron" in opts.outputs and opts.pack != (opts.seq_len is not None):
        raise InputError("--output megatron writes unpacked documents (Megatron-LM packs them at train time) or, "
                         "with --seq-len, packed rows (Megatron-Bridge's packed SFT .sft.bin/.sft.idx)",
                         code="E-USAGE", field="--seq-len" if opts.seq_len is not None else "--output",
                         hint="drop --no-pack to pack for Megatron-Bridge, or drop --seq-len for Megatron-LM")
    for name, given in (("--pad-to-multiple-of", opts.pad_to_multiple_of is not None), ("--seq-idx", opts.seq_idx)):
        if given and not opts.pack:
            raise InputError(f"{name} applies to packed rows only", code="E-USAGE", field=name,
                             hint="drop it, or pack (--seq-len N without --no-pack)")
    if opts.pack and opts.seq_len is not None:
        try:
            check_multiple(opts.pad_to_multiple_of, opts.seq_len)
        except OcmlError as exc:
            raise InputError(exc.message.replace("pad_to_multiple_of", "--pad-to-multiple-of"), code="E-USAGE",
                             field="--pad-to-multiple-of", hint=exc.hint) from None


def ocml_version() -> str:
    from ocml import __version__  # one home for the version

    return __version__


def mask_name(mask: Any) -> Any:
    """A mask policy by its ``--mask`` name, else as a dict of its fields."""
    from ..masks import NAMED_MASKS

    for name, pol in sorted(NAMED_MASKS.items(), key=lambda kv: kv[0] != "default"):
        if pol == mask:
            return name
    d = asdict(mask)
    return {k: sorted(v) if isinstance(v, frozenset) else v for k, v in d.items()}
