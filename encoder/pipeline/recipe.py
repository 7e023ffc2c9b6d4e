"""Training recipes: parse, validate and resolve what ``ocml pack --recipe FILE`` runs.

A recipe is YAML or JSON (or the ``manifest.json`` / ``recipe.yaml`` a recipe run wrote: its
``recipe`` is the resolved recipe, so feeding it back reproduces the run)::

    seed: 1234
    format: harmony
    seq_len: 4096
    validation: 0.01          # fraction (0 < f < 1) or a count of conversations (int >= 1)
    dedup: exact              # or off (default)
    sources:
      - path: data/chat.jsonl
        weight: 2
      - path: data/tools/      # file, folder, glob or save_to_disk folder
        name: tools
        weight: 0.5
        max_samples: 10000
        mask: last

Every ``ocml pack`` option is a top-level key (dashes or underscores).  ``mask``, ``cot``,
``reasoning``, ``messages_field`` and ``tools_field`` are defaults that a source may override.
Command-line flags override the recipe (and the per-source values of its key).

Resolution fills every default, so the resolved recipe (``Recipe.to_dict``) names every
setting the output depends on; relative source paths are read against the recipe file's
folder and recorded absolute.
"""

from __future__ import annotations

import difflib
import glob
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from ..errors import InputError, excerpt
from ..jsonlimits import loads_record, reraise, tree_excess
from ..packing.packed import Overlong
from .options import DEFAULT_MAX_BAD_FRACTION, DEFAULT_WINDOW, PackOptions, check, resolve_overlong
from .readers import MAX_LINE_BYTES

DEDUP_MODES = ("off", "exact")
# Bounds on a recipe, checked before anything reads it (a 500-byte YAML alias bomb is billions of values).
MAX_RECIPE_BYTES, MAX_RECIPE_NODES, MAX_RECIPE_DEPTH, MAX_RECIPE_STRING = 16 << 20, 100_000, 32, 4096
OUTPUT_CHOICES = ("parquet", "npy", "both", "megatron")
OVERLONG_CHOICES = ("split", "truncate", "drop")
_GLOB_CHARS = set("*?[")


class RecipeError(InputError):
    """A recipe that cannot be run: unknown key, wrong type, bad value, missing source."""

    code = "E-RECIPE"


@dataclass(frozen=True)
class Validation:
    """The held-out split: a ``fraction`` of the conversations, or a ``count`` of them."""

    fraction: float | None = None
    count: int | None = None

    @classmethod
    def parse(cls, value: Any, where: str = "validation") -> Validation | None:
        if value is None or value is False or value == 0:
            return None
        if isinstance(value, bool):
            raise RecipeError(f"{where}: true is not a size", field=where,
                              hint="a fraction like 0.01 or a count of conversations like 500")
        if isinstance(value, str):
            text = value.strip()
            try:
                value = int(text) if text.isdigit() else float(text)
            except ValueError:
                raise RecipeError(f"{where}: {excerpt(value)} is not a number", field=where,
                                  hint="a fraction like 0.01 or a count of conversations like 500") from None
        if isinstance(value, int):
            if value < 0:
                raise RecipeError(f"{where} must be >= 0, got {value}", field=where)
            return cls(count=value)
        if isinstance(value, float) and math.isfinite(value):
            if not 0 < value < 1:
                raise RecipeError(f"{where}: a fraction must be between 0 and 1, got {value}", field=where,
                                  hint="a count of conversations is an integer (500, not 500.0)")
            return cls(fraction=value)
        raise RecipeError(f"{where}: {excerpt(value)} is not a fraction or a count", field=where)

    def to_value(self) -> float | int:
        return self.fraction if self.fraction is not None else int(self.count or 0)


@dataclass(frozen=True)
class SourceSpec:
    """One entry of ``sources:``, every setting resolved."""

    path: str
    name: str
    messages_field: str = "messages"
    tools_field: str = "tools"
    mask: str = "default"
    cot: str = "default"
    reasoning: str | None = None
    weight: float = 1.0
    max_samples: int | None = None

    def encoder_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``Encoder`` (``reasoning`` only when set)."""
        kw: dict[str, Any] = {"mask": self.mask, "cot": self.cot}
        if self.reasoning is not None:
            kw["reasoning"] = self.reasoning
        return kw


@dataclass(frozen=True)
class Recipe:
    """A resolved recipe: what ``ocml pack`` runs (``PackOptions`` + sources + mixing)."""

    sources: tuple[SourceSpec, ...]
    format: str | None = None        # None: openchatml-2.2, or detected from ``model``
    tokenizer: str | None = None
    model: str | None = None         # a local HF model folder (pack_encoder)
    seq_len: int | None = None
    pack: bool = True
    overlong: str | None = None      # None: the input shape's default (``options.OVERLONG_DEFAULTS``)
    window: int = DEFAULT_WINDOW
    pad_id: int | None = None
    pad_to_multiple_of: int | None = None
    seq_idx: bool = False
    keep_untrained: bool = False
    # Record shapes (encoder.inputs; preference / KTO rows run in the streaming driver: run.py)
    shape: str = "auto"
    fields: tuple[str, ...] = ()     # "KEY=COLUMN" renames
    completion_only_loss: bool = True
    string_prompt: str = "text"
    pair_columns: str = "dpo"
    extra_columns: str = "ignore"    # columns neither data nor options (encoder.inputs.columns)
    ignore_columns: tuple[str, ...] = ()
    shard_size: int = 8192
    output: str = "parquet"
    seed: int = 0
    validation: Validation | None = None
    validation_pack: bool = True
    dedup: str = "off"
    shuffle: bool = True
    # Defaults of the per-source settings (kept for the record; sources hold the resolved values).
    mask: str = "default"
    cot: str = "default"
    reasoning: str | None = None
    messages_field: str = "messages"
    tools_field: str = "tools"
    # How, not what: these never change a byte of the output.
    workers: int = 0
    strict: bool = False
    max_bad_fraction: float = DEFAULT_MAX_BAD_FRACTION
    progress: bool | None = None
    max_line_bytes: int = MAX_LINE_BYTES  # a longer JSON Lines line is a bad record (readers)
    overwrite: bool = False
    wait_lock: float = 0.0
    out: str | None = None
    # Tuning (part of the output's identity: they decide where the packer is flushed).
    chunk_records: int = 256
    epoch_tokens: int = 1 << 22
    plot: bool = True

    @property
    def outputs(self) -> tuple[str, ...]:
        return ("parquet", "npy") if self.output == "both" else (self.output,)

    @property
    def overlong_policy(self) -> Overlong:
        """The overlong policy the packer applies (``options.resolve_overlong``: one home)."""
        return resolve_overlong(self.overlong, self.shape)

    def pack_options(self, out: Path | str | None = None) -> PackOptions:
        """The recipe's run-wide settings as ``PackOptions`` (sources as inputs): what
        ``options.check`` validates for a plain run, checked the same way for a recipe."""
        return PackOptions(
            inputs=tuple(s.path for s in self.sources), out=Path(out if out is not None else self.out or "."),
            format=self.format, tokenizer=self.tokenizer, model=self.model, seq_len=self.seq_len,
            workers=self.workers, overlong=self.overlong, strict=self.strict, shard_size=self.shard_size,
            pack=self.pack, outputs=self.outputs, window=self.window, pad_id=self.pad_id,
            overwrite=self.overwrite, wait_lock=self.wait_lock, progress=self.progress, chunk_records=self.chunk_records,
            epoch_tokens=self.epoch_tokens, plot=self.plot, max_bad_fraction=self.max_bad_fraction,
            keep_untrained=self.keep_untrained, pad_to_multiple_of=self.pad_to_multiple_of, seq_idx=self.seq_idx,
            shape=self.shape, fields=self.fields, completion_only_loss=self.completion_only_loss,
            string_prompt=self.string_prompt, pair_columns=self.pair_columns, extra_columns=self.extra_columns,
            ignore_columns=self.ignore_columns, max_line_bytes=self.max_line_bytes)

    def shape_options(self) -> Any:
        return self.pack_options().shape_options()

    def to_dict(self) -> dict[str, Any]:
        """The resolved recipe as plain data (``load_recipe`` reads it back to an equal Recipe);
        ``out`` and the how-to-run keys are left out: a copy of the run goes elsewhere."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_RECORDED}
        d["sources"] = [asdict(s) for s in self.sources]
        d["validation"] = self.validation.to_value() if self.validation else None
        d["fields"] = list(self.fields)
        d["ignore_columns"] = list(self.ignore_columns)
        return d

    def output_key(self) -> dict[str, Any]:
        """What the output depends on (the run's fingerprint), source paths by name only."""
        d = self.to_dict()
        d.pop("plot", None)
        d["sources"] = [{**s, "path": Path(s["path"]).name} for s in d["sources"]]
        return d


_NOT_RECORDED = ("workers", "strict", "progress", "overwrite", "wait_lock", "out", "max_bad_fraction")
PER_SOURCE_DEFAULTS = ("mask", "cot", "reasoning", "messages_field", "tools_field")
SOURCE_KEYS = tuple(f.name for f in fields(SourceSpec))
TOP_KEYS = tuple(f.name for f in fields(Recipe))
# Types per key: (python types accepted, description for errors).
_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "path": ((str,), "a path"), "name": ((str,), "a name"),
    "messages_field": ((str,), "a column name"), "tools_field": ((str,), "a column name"),
    "mask": ((str,), "a mask policy name"), "cot": ((str,), "a chain-of-thought policy name"),
    "reasoning": ((str, type(None)), "a reasoning policy name"),
    "weight": ((int, float), "a number >= 0"), "max_samples": ((int, type(None)), "an integer >= 1"),
    "format": ((str, type(None)), "a format name"), "tokenizer": ((str, type(None)), "a tokenizer name or path"),
    "model": ((str, type(None)), "a model folder"),
    "seq_len": ((int, type(None)), "an integer >= 1"), "pack": ((bool,), "true or false"),
    "overlong": ((str, type(None)), "split, truncate or drop"), "window": ((int,), "an integer >= 1"),
    "pad_id": ((int, type(None)), "a token id"), "shard_size": ((int,), "an integer >= 1"),
    "pad_to_multiple_of": ((int, type(None)), "an integer >= 1"), "seq_idx": ((bool,), "true or false"),
    "keep_untrained": ((bool,), "true or false"), "max_bad_fraction": ((int, float), "a fraction in [0, 1]"),
    "max_line_bytes": ((int,), "an integer >= 1 (bytes)"),
    "output": ((str, list), "parquet, npy, both or megatron"), "seed": ((int,), "an integer"),
    "validation_pack": ((bool,), "true or false"), "dedup": ((str, bool, type(None)), "exact or off"),
    "shuffle": ((bool,), "true or false"), "workers": ((int,), "an integer >= 0 (0 = all cores)"),
    "strict": ((bool,), "true or false"), "progress": ((bool, type(None)), "true or false"),
    "overwrite": ((bool,), "true or false"), "wait_lock": ((int, float), "seconds >= 0"), "out": ((str, type(None)), "a folder"),
    "chunk_records": ((int,), "an integer >= 1"), "epoch_tokens": ((int,), "an integer >= 1"),
    "plot": ((bool,), "true or false"),
    "shape": ((str,), "a record shape"), "fields": ((list, tuple), "a list of KEY=COLUMN"),
    "completion_only_loss": ((bool,), "true or false"), "string_prompt": ((str,), "text or chat"),
    "pair_columns": ((str,), "dpo or orpo"),
    "extra_columns": ((str,), "ignore or error"), "ignore_columns": ((list, tuple), "a list of column names"),
}


# -- reading ---------------------------------------------------------------------------------------

def read_recipe_file(path: str | Path) -> dict[str, Any]:
    """The recipe in a YAML / JSON file, or the ``recipe`` recorded in a run's ``manifest.json``."""
    p = Path(path)
    if p.is_dir():
        for name in ("recipe.yaml", "manifest.json"):
            if (p / name).is_file():
                p = p / name
                break
        else:
            raise RecipeError(f"{path} is a folder without recipe.yaml or manifest.json", field="--recipe")
    try:
        size = p.stat().st_size
        if size > MAX_RECIPE_BYTES:
            raise RecipeError(f"{path}: {size:,} bytes, over the {MAX_RECIPE_BYTES:,}-byte limit for a recipe",
                              field="--recipe", hint="a recipe names its sources; it does not hold data")
        text = p.read_text("utf-8")
    except FileNotFoundError:
        raise RecipeError(f"{path}: no such recipe file", field="--recipe") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecipeError(f"{path}: cannot read ({exc})", field="--recipe") from None
    data: Any
    if p.suffix.lower() == ".json":
        try:
            data = loads_record(text, f"recipe {path}", field="--recipe")
        except json.JSONDecodeError as exc:
            raise RecipeError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
                              field="--recipe") from None
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise RecipeError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})", field="--recipe",
                              hint="check the indentation; JSON is accepted too") from None
        except (RecursionError, ValueError) as exc:  # nested past Python's stack, an int past its digit limit
            reraise(exc, f"recipe {path}", field="--recipe")
    if isinstance(data, Mapping) and isinstance(data.get("recipe"), Mapping):
        # A manifest.json (or any wrapper) holding the resolved recipe ("recipe" is no recipe key;
        # a manifest's own "sources" is its provenance table, not the recipe's sources).
        data = data["recipe"]
    _check_bounds(data, str(path))
    if not isinstance(data, Mapping):
        raise RecipeError(f"{path}: a recipe is a mapping of keys (sources:, seed:, ...), got "
                          f"{type(data).__name__}", field="--recipe")
    return _relative_to(dict(data), p.resolve().parent)


def _check_bounds(data: Any, path: str) -> None:
    """The recipe bounds above, walked before anything else reads ``data``."""
    excess = tree_excess(data, max_nodes=MAX_RECIPE_NODES, max_depth=MAX_RECIPE_DEPTH, max_string=MAX_RECIPE_STRING)
    if excess:
        raise RecipeError(f"{path}: {excess}", field="--recipe", hint="a recipe is a few keys and a list of "
                          "sources (YAML aliases count where they are used: is it an alias bomb?)")


def _relative_to(data: dict[str, Any], base: Path) -> dict[str, Any]:
    srcs = data.get("sources")
    if isinstance(srcs, list):
        out = []
        for s in srcs:
            if isinstance(s, str):
                s = {"path": s}
            if isinstance(s, Mapping) and isinstance(s.get("path"), str) and not Path(s["path"]).is_absolute():
                # Named as written (the report's name); read against the recipe's folder.
                s = {"name": s["path"], **s, "path": str(base / s["path"])}
            out.append(s)
        data["sources"] = out
    return data


# -- validating and resolving -------------------------------------------------------------------------

def _norm_key(k: Any) -> str:
    return str(k).replace("-", "_")


def _unknown(key: str, known: tuple[str, ...], where: str, other: tuple[str, ...], other_where: str) -> RecipeError:
    near = difflib.get_close_matches(key, known, n=1, cutoff=0.6) if len(key) <= 64 else []
    if key in other:
        hint = f"{key!r} belongs {other_where}"
    elif near:
        hint = f"did you mean {near[0]!r}?"
    else:
        hint = "known keys: " + ", ".join(sorted(known))
    return RecipeError(f"unknown key {excerpt(key)} {where}", field=key[:64], hint=hint)


def _check_type(key: str, value: Any, where: str) -> None:
    types, what = _TYPES[key]
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if not ok:
        raise RecipeError(f"{where}{key}: expected {what}, got {excerpt(value)}", field=key)


def _choice(key: str, value: str, choices: tuple[str, ...] | list[str], where: str) -> str:
    if value not in choices:
        near = difflib.get_close_matches(value, list(choices), n=1) if len(value) <= 64 else []
        raise RecipeError(f"{where}{key}: unknown value {excerpt(value)}", field=key,
                          hint=(f"did you mean {near[0]!r}? " if near else "") + "one of: " + ", ".join(choices))
    return value


def _positive(key: str, value: int | None, where: str, minimum: int = 1) -> None:
    if value is not None and value < minimum:
        raise RecipeError(f"{where}{key} must be >= {minimum}, got {value}", field=key)


def resolve_recipe(data: Mapping[str, Any], overrides: Mapping[str, Any] | None = None, *,
                   command_line: bool = False) -> Recipe:
    """Validate a recipe mapping (plus command-line ``overrides``, which win, for sources too)
    and fill every default.  Raises ``RecipeError`` naming the key, with a suggestion
    (``command_line``: the run is ``ocml pack INPUT...`` without a recipe file, so the option
    checks shared with a plain run raise their ``E-USAGE`` errors naming the flags)."""
    from ..formats import RENDERABLE
    from ..masks import NAMED_MASKS
    from ..messages import CotPolicy

    _check_bounds(data, "recipe")  # a mapping from the API is bounded like a file
    top: dict[str, Any] = {}
    for k, v in data.items():
        key = _norm_key(k)
        if key not in TOP_KEYS:
            raise _unknown(key, TOP_KEYS, "in the recipe", SOURCE_KEYS, "under a source (sources: - path: ...)")
        top[key] = v
    over = {_norm_key(k): v for k, v in (overrides or {}).items()}
    for k in over:
        if k not in TOP_KEYS:
            raise _unknown(k, TOP_KEYS, "in the overrides", SOURCE_KEYS, "under a source")
    top.update(over)
    for key, value in top.items():
        if key not in ("sources", "validation"):
            _check_type(key, value, "")
    raw_sources = top.pop("sources", None)
    if not raw_sources:
        raise RecipeError("the recipe has no sources", field="sources",
                          hint="sources:\n  - path: data/train.jsonl  (or pass input files on the command line)")
    if not isinstance(raw_sources, list):
        raise RecipeError(f"sources: expected a list, got {type(raw_sources).__name__}", field="sources")
    if isinstance(top.get("output"), list):
        outs = sorted(set(top["output"]))
        top["output"] = "both" if outs == ["npy", "parquet"] else (outs[0] if len(outs) == 1 else "?")
    dedup = top.get("dedup", "off")
    top["dedup"] = "off" if dedup in (None, False) else ("exact" if dedup is True else dedup)
    top["validation"] = Validation.parse(top.get("validation"))
    for key in ("fields", "ignore_columns"):
        if key in top:
            top[key] = tuple(top[key])
    base = Recipe(sources=(), **{k: v for k, v in top.items() if k in TOP_KEYS})
    from ..inputs.shapes import PAIR_SHAPES, RECORD_SHAPES

    _choice("shape", base.shape, ["auto", "chat", "native", *RECORD_SHAPES], "")
    _choice("string_prompt", base.string_prompt, ["text", "chat"], "")
    _choice("pair_columns", base.pair_columns, ["dpo", "orpo"], "")
    _choice("extra_columns", base.extra_columns, ["ignore", "error"], "")
    if base.shape in {s.value for s in PAIR_SHAPES}:
        raise RecipeError(f"shape {base.shape!r} is written one row per pair by the streaming driver, not by a "
                          "recipe run", field="shape",
                          hint=f"ocml pack INPUT --shape {base.shape} --no-pack --no-shuffle (no weights, split or "
                               "seed for preference rows yet)")
    if base.format is not None:
        _choice("format", base.format, list(RENDERABLE), "")
    if base.overlong is not None:
        _choice("overlong", base.overlong, OVERLONG_CHOICES, "")
    _choice("output", base.output, OUTPUT_CHOICES, "")
    _choice("dedup", base.dedup, DEDUP_MODES, "")
    _choice("mask", base.mask, list(NAMED_MASKS), "")
    _choice("cot", base.cot, [c.value for c in CotPolicy], "")
    for key in ("seq_len", "window", "shard_size", "chunk_records", "epoch_tokens"):
        _positive(key, getattr(base, key), "")
    _positive("workers", base.workers, "", 0)
    if base.output == "megatron" and base.seq_len is None and "pack" not in top:
        base = replace(base, pack=False)  # Megatron packs at train time (as ``ocml pack --output megatron``)
    # The checks of a plain run (one home, ``options.check``): --seq-len when packing, --pad-to-multiple-of,
    # --seq-idx, megatron's unpacked documents, --max-bad-fraction's range, ...
    try:
        check(replace(base, sources=tuple(SourceSpec(path=str(p), name=str(p)) for p in range(len(raw_sources))))
              .pack_options())
    except InputError as exc:
        if command_line:
            raise
        raise RecipeError(_as_keys(exc.message), field=_as_keys(exc.field or ""),
                          hint=_as_keys(exc.hint or "") or None) from None
    sources = []
    for i, raw in enumerate(raw_sources):
        where = f"sources[{i}]."
        if isinstance(raw, str):
            raw = {"path": raw}
        if not isinstance(raw, Mapping):
            raise RecipeError(f"sources[{i}]: expected a mapping with a path, got {excerpt(raw)}", field="sources")
        s: dict[str, Any] = {}
        for k, v in raw.items():
            key = _norm_key(k)
            if key not in SOURCE_KEYS:
                raise _unknown(key, SOURCE_KEYS, f"in sources[{i}]", TOP_KEYS, "at the top level of the recipe")
            _check_type(key, v, where)
            s[key] = v
        if "path" not in s:
            raise RecipeError(f"sources[{i}] has no path", field="path", hint="- path: data/train.jsonl")
        for key in PER_SOURCE_DEFAULTS:
            if key in over or key not in s:
                s[key] = getattr(base, key)
        s.setdefault("name", s["path"])
        s["weight"] = float(s.get("weight", 1.0))
        if not (math.isfinite(s["weight"]) and s["weight"] >= 0):
            raise RecipeError(f"{where}weight must be a number >= 0, got {s['weight']}", field="weight",
                              hint="2 = every conversation twice, 0.5 = a seeded half, 0 = none")
        _positive("max_samples", s.get("max_samples"), where)
        _choice("mask", s["mask"], list(NAMED_MASKS), where)
        _choice("cot", s["cot"], [c.value for c in CotPolicy], where)
        sources.append(SourceSpec(**s))
    names = [s.name for s in sources]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise RecipeError(f"two sources are named {excerpt(dup[0])}", field="name",
                          hint="give each source its own name: (name: ...)")
    return replace(base, sources=tuple(sources), max_bad_fraction=float(base.max_bad_fraction))


def _as_keys(text: str) -> str:
    """A flag-worded message in recipe keys: ``--no-pack`` -> ``pack: false``, ``--seq-len`` -> ``seq_len``."""
    import re

    text = text.replace("--no-pack", "pack: false")
    return re.sub(r"--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_"), text)


def recipe_from_cli(inputs: list[str], options: Mapping[str, Any]) -> dict[str, Any]:
    """A recipe mapping for ``ocml pack INPUT... [options]`` (each input one source)."""
    return {"sources": [{"path": p} for p in inputs], **options}


def expand_path(path: str) -> list[str]:
    """A source path as the pipeline's readers take it: a glob expands to its matches."""
    if Path(path).exists() or not (_GLOB_CHARS & set(path)):
        return [path]
    found = sorted(glob.glob(path, recursive=True))
    if not found:
        raise RecipeError(f"{path}: the glob matches no file", field="path")
    return found


def dump_recipe(recipe: Recipe) -> str:
    """The resolved recipe as YAML (``DIR/recipe.yaml``)."""
    import yaml

    body: str = yaml.safe_dump(recipe.to_dict(), sort_keys=False, allow_unicode=True)  # yaml has no type information
    return "# written by ocml pack: the resolved recipe of this run (ocml pack --recipe THIS --out NEW)\n" + body


__all__ = ["DEDUP_MODES", "Recipe", "RecipeError", "SourceSpec", "Validation", "dump_recipe", "expand_path",
           "read_recipe_file", "recipe_from_cli", "resolve_recipe"]
