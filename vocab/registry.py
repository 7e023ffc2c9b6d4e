"""Where control tokens land when a format is registered on a vocabulary.

Rules (the same for both backends, so a tokenizer and its ``to_hf()`` agree):
1. a token the vocabulary already has as a special keeps its id;
2. a format with fixed ids (Harmony) puts each token exactly there, plus its
   reserved filler tokens; a clash with a different existing special is an error;
3. anything else is appended after the largest existing id, in table order.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import VocabError
from .tables import control_table


def plan_specials(base_specials: dict[str, int], n_base: int, formats: Iterable[str]) -> dict[str, int]:
    specials = dict(base_specials)
    by_id = {i: s for s, i in specials.items()}
    for fmt in formats:
        table = control_table(fmt)
        fixed = dict(table.fixed_ids)
        fixed.update(table.reserved_tokens())
        for tok, tid in sorted(fixed.items(), key=lambda kv: kv[1]):
            if tok in specials and specials[tok] != tid:
                raise VocabError(
                    f"{tok} is already registered at id {specials[tok]}, but {fmt} needs it at {tid}",
                    code="E-VOCAB-CLASH",
                    field=tok,
                    hint=f"load the format's own encoding ({table.default_encoding}) instead",
                )
            other = by_id.get(tid)
            if other is not None and other != tok:
                # A base placeholder (e.g. a reserved name) may be renamed; a real special may not.
                if not other.startswith("<|reserved"):
                    raise VocabError(
                        f"id {tid} is taken by {other}; {fmt} needs {tok} there",
                        code="E-VOCAB-CLASH",
                        field=tok,
                    )
                del specials[other]
            if tid < n_base:
                raise VocabError(
                    f"{fmt} fixes {tok} at id {tid}, inside the base vocabulary (size {n_base})",
                    code="E-VOCAB-CLASH",
                    field=tok,
                    hint=f"use the {table.default_encoding} encoding",
                )
            specials[tok] = tid
            by_id[tid] = tok
        next_id = max([n_base - 1, *specials.values()]) + 1
        for tok in table.all_tokens:
            if tok not in specials:
                specials[tok] = next_id
                by_id[next_id] = tok
                next_id += 1
    return specials
