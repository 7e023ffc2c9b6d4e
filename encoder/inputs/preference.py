"""Preference records: TRL's explicit (``prompt`` + ``chosen`` / ``rejected``) and implicit
(whole ``chosen`` / ``rejected`` conversations sharing a prefix) forms, and KTO's unpaired
``prompt`` + ``completion`` + ``label``.

The implicit prompt is extracted as TRL's ``data_utils.maybe_extract_prompt`` /
``extract_prompt`` do: the longest common prefix (of messages, or of characters for
strings, where a space just before the divergence goes to the completions); a ``prompt``
column whose kind (string / messages) differs from ``chosen`` is ignored in favour of the
extracted one, as there.  Unlike TRL, a pair with no shared prompt, or whose sides are
identical, is an error (TRL would train on an empty prompt / a pair with no signal).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from .common import missing, options, present, same_kind, side
from .examples import KtoExample, PreferencePair
from .prompt_completion import check_completion
from .shapes import Fields

SHAPE = "preference"


def read_preference(record: Mapping[str, Any], fields: Fields) -> PreferencePair:
    c, r, p = fields.chosen, fields.rejected, fields.prompt
    for key in (c, r):
        if not present(record, key):
            raise missing(SHAPE, key, f"a preference pair needs both {c!r} and {r!r}")
    chosen, rejected = side(record, c, SHAPE), side(record, r, SHAPE)
    same_kind(SHAPE, **{c: chosen, r: rejected})
    prompt = side(record, p, SHAPE) if present(record, p) else None
    implicit = prompt is None or isinstance(prompt, str) != isinstance(chosen, str)  # maybe_extract_prompt's rule
    if chosen == rejected:  # before extracting a prompt: identical sides are not a "prefix" problem
        raise InputError("chosen and rejected are identical", code="E-SHAPE-PAIR-SAME", field=c,
                         hint="a preference pair needs two different completions")
    if prompt is None or implicit:  # implicit covers a missing prompt; spelled out for the type checker
        prompt, chosen, rejected = extract_prompt(chosen, rejected, c, r)
    for key, value in ((c, chosen), (r, rejected)):  # both strings or both lists (same_kind)
        if not isinstance(value, str):
            check_completion(value, key)
    return PreferencePair(prompt, chosen, rejected, options(record), implicit)


def extract_prompt(chosen: Any, rejected: Any, c: str = "chosen", r: str = "rejected") -> tuple[Any, Any, Any]:
    """(prompt, chosen, rejected): the shared prefix split off, as TRL's ``extract_prompt``."""
    n = min(len(chosen), len(rejected))
    idx = n
    for i in range(n):
        if chosen[i] != rejected[i]:
            idx = i
            if isinstance(chosen, str) and i > 0 and chosen[i - 1] == " ":
                idx -= 1  # TRL: the space before the divergence stays with the completions
            break
    if idx == 0:
        raise InputError(f"{c!r} and {r!r} share no prompt", code="E-SHAPE-PAIR-PROMPT", field=r,
                         hint=f"an implicit pair is two whole conversations that start alike; give the prompt "
                              f"explicitly in {'prompt'!r} otherwise")
    if idx == n:
        # One side is a prefix of the other: the shorter has no completion of its own.
        raise InputError(f"one of {c!r} / {r!r} is a prefix of the other: no completion left after the "
                         "shared prompt", code="E-SHAPE-PAIR-PROMPT", field=c if len(chosen) == n else r,
                         hint="both sides must end with their own answer")
    return chosen[:idx], chosen[idx:], rejected[idx:]


def read_kto(record: Mapping[str, Any], fields: Fields) -> KtoExample:
    p, c, lab = fields.prompt, fields.completion, fields.label
    for key in (p, c):
        if not present(record, key):
            raise missing("kto", key, f"a KTO record needs {p!r}, {c!r} and {lab!r}")
    label = record.get(lab)
    if type(label) is not bool:
        if label is None:
            raise missing("kto", lab, f"{lab!r} says whether the completion is desirable (true / false)")
        raise InputError(f"kto {lab!r} must be true or false, got {label!r}", code="E-SHAPE-TYPE", field=lab)
    prompt, completion = side(record, p, "kto"), side(record, c, "kto")
    same_kind("kto", **{p: prompt, c: completion})
    if not isinstance(completion, str):
        check_completion(completion, c)
    return KtoExample(prompt, completion, label, options(record))
