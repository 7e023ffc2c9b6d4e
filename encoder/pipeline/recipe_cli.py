"""``ocml pack``'s recipe options: ``--recipe FILE`` and the recipe-only flags, and which
command-line flags were given (they override the recipe).

Every run is a recipe run (the inputs are then its sources, one each, weight 1) except
``--no-shuffle`` without ``--recipe`` / ``--seed`` / ``--validation`` / ``--dedup``, which
streams its inputs in one pass (``pipeline.run``).  Every pack flag maps to a recipe key
(``DEST_TO_KEY``); one that does not is a usage error, never dropped.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import InputError
from .recipe import DEDUP_MODES, TOP_KEYS, Recipe, read_recipe_file, recipe_from_cli, resolve_recipe

RECIPE_FLAGS = ("seed", "validation", "validation_pack", "dedup", "shuffle")
# argparse dest -> recipe key: a dest named as a ``Recipe`` field is that key (the key list lives
# once, ``recipe.TOP_KEYS``); two flags are spelled otherwise (``no_pack`` is inverted).  A dest
# that is no recipe key is a usage error in a recipe run (``recipe_from_args``).
DEST_TO_KEY = {**{k: k for k in TOP_KEYS}, "field": "fields", "ignore_column": "ignore_columns", "no_pack": "pack"}
# Flags that say how to run the command itself, not what the recipe packs.
NOT_RECIPE_KEYS = frozenset({"recipe", "json", "help"})


def add_recipe_arguments(p: argparse.ArgumentParser) -> None:
    """The recipe flags of ``ocml pack``."""
    g = p.add_argument_group("recipes (several sources, weights, seed, validation split, dedup)")
    g.add_argument("--recipe", default=None, metavar="FILE",
                   help="YAML or JSON recipe (sources with weights, seed, validation, dedup, and any option of "
                        "this command); a previous run's DIR/manifest.json or DIR/recipe.yaml reproduces it. "
                        "Flags given here override the recipe")
    g.add_argument("--seed", type=int, default=None, metavar="N",
                   help="one seed for sampling, the split and the shuffle (default 0)")
    g.add_argument("--validation", default=None, metavar="F|N",
                   help="validation split: a fraction (0.01) or a count of conversations (500), drawn by content "
                        "before weighting; written as DIR/data/validation-*.parquet")
    g.add_argument("--validation-pack", action=argparse.BooleanOptionalAction, default=None,
                   help="pack the validation rows like the training rows (default yes)")
    g.add_argument("--dedup", default=None, choices=list(DEDUP_MODES),
                   help="exact = drop conversations whose rendered ids repeat (default off; duplicates are "
                        "counted either way)")
    g.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=None,
                   help="seeded order of documents and rows across all shards (default yes); --no-shuffle "
                        "streams the inputs in one pass, rows in packing order, nothing spooled to disk")


def explicit_dests(parser: argparse.ArgumentParser, argv: list[str]) -> set[str]:
    """The dests of the options written on the command line (``--opt``, ``--opt=v``, or an
    unambiguous prefix, as argparse accepts them)."""
    given: set[str] = set()
    options = [(o, a.dest) for a in parser._actions for o in a.option_strings]
    for tok in argv:
        if tok == "--":
            break
        if not tok.startswith("-"):
            continue
        name = tok.split("=", 1)[0]
        exact = [d for o, d in options if o == name]
        prefix = [d for o, d in options if name.startswith("--") and o.startswith(name)]
        hits = exact or (prefix if len(set(prefix)) == 1 else [])
        given.update(hits)
    return given


def is_recipe_run(args: argparse.Namespace) -> bool:
    """Every run is a recipe run (``recipe_run``: rows in a seeded order across all shards)
    except ``--no-shuffle`` without other recipe flags, which streams its inputs in one pass
    (``run``: rows in packing order, no spool on disk)."""
    recipe_flags = args.recipe is not None or any(getattr(args, k, None) is not None for k in RECIPE_FLAGS
                                                  if k != "shuffle")
    if getattr(args, "shape", None) in ("preference", "kto"):  # one row per pair: the streaming driver writes them
        if recipe_flags or args.shuffle:
            raise InputError(f"--shape {args.shape} rows are written by the streaming driver, without recipes",
                             code="E-USAGE", field="--shape",
                             hint="drop --recipe / --seed / --validation / --dedup / --shuffle for preference rows")
        return False
    if recipe_flags:
        return True
    return args.shuffle is not False


def check_plain_run(args: argparse.Namespace) -> bool:
    """A plain ``ocml pack`` needs inputs and ``--out`` (a recipe may name both): False, or a usage error."""
    if not args.inputs or args.out is None:
        raise InputError("ocml pack needs INPUT... and --out DIR (or --recipe FILE)", code="E-USAGE",
                         field="INPUT" if not args.inputs else "--out", hint="see ocml pack --help")
    return False


def recipe_from_args(args: argparse.Namespace) -> Recipe:
    """The resolved recipe of an ``ocml pack`` command line."""
    given = explicit_dests(args.pack_parser, list(args.argv)) if getattr(args, "pack_parser", None) else set()
    given |= {k for k in RECIPE_FLAGS if getattr(args, k, None) is not None}
    overrides: dict[str, Any] = {}
    for dest in sorted(given):
        if dest in NOT_RECIPE_KEYS:
            continue
        key = DEST_TO_KEY.get(dest)
        if key is None:
            # A pack option the recipe driver does not know would be silently ignored: refuse it.
            raise InputError(f"--{dest.replace('_', '-')} is not supported in a recipe run", code="E-USAGE",
                             field=f"--{dest.replace('_', '-')}",
                             hint="report this: every ocml pack option must apply to recipe runs too "
                                  "(encoder.pipeline.recipe_cli.DEST_TO_KEY)")
        value = getattr(args, dest)
        overrides[key] = (not value) if dest == "no_pack" else value
    if args.recipe is not None:
        if args.inputs:
            raise InputError(f"inputs {args.inputs[:2]} given with --recipe", code="E-USAGE", field="INPUT",
                             hint="list them as sources in the recipe, or drop --recipe")
        data = read_recipe_file(args.recipe)
    else:
        if not args.inputs:
            raise InputError("no input given", code="E-USAGE", field="INPUT",
                             hint="pass input files, or --recipe FILE")
        data = recipe_from_cli(list(args.inputs), {})
    recipe = resolve_recipe(data, overrides, command_line=args.recipe is None)
    if recipe.out is None:
        raise InputError("no output folder", code="E-USAGE", field="--out", hint="pass --out DIR")
    return recipe


def run_from_args(args: argparse.Namespace) -> Any:
    from .recipe_run import run_recipe

    recipe = recipe_from_args(args)
    return run_recipe(recipe, Path(recipe.out or ""))


__all__ = ["RECIPE_FLAGS", "add_recipe_arguments", "check_plain_run", "explicit_dests", "is_recipe_run", "recipe_from_args",
           "run_from_args"]
