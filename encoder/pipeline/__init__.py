"""The data pipeline behind ``ocml pack``: records in, packed token shards out.

``records`` finds the conversation in a dataset record; ``readers`` streams records from
files; ``workers`` renders them in processes; ``shards`` writes output atomically;
``report`` summarises; ``run`` ties them together.  Around the run: ``options`` (the
options, their defaults and checks), ``outdir`` (what ocml may write and delete in
``--out``), ``outlock`` (one run per ``--out``), ``resume`` (fingerprint, checkpoints), ``errorfile`` (``errors.jsonl``,
``--strict``), ``gates`` (``--max-bad-fraction``), ``untrained`` (documents with nothing to
train), ``provenance`` (the source and record of every document), ``faults`` (a test hook:
kill, pause or a full disk at a named point).
Recipes (several sources, weights, seed, validation split, dedup, shuffle): ``recipe`` (the
file), ``recipe_run`` (the run), with ``recipe_spools`` (what it keeps on disk between
phases), ``recipe_plan`` (split, dedup, weights, order) and ``recipe_report`` (its report lines).
"""

from __future__ import annotations

from .records import conversation_from_record
from .recipe import Recipe, read_recipe_file, resolve_recipe
from .recipe_run import run_recipe
from .run import PackOptions, RunResult, run

__all__ = ["PackOptions", "Recipe", "RunResult", "conversation_from_record", "read_recipe_file", "resolve_recipe",
           "run", "run_recipe"]
