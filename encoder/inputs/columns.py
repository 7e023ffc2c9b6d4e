"""The record-level column rule: one for every input kind (JSON Lines, JSON, Parquet, Arrow,
``datasets``, Ray), applied per record before its shape is read, so the same record gives the
same verdict whichever file it came from.

A record's keys are, for the shape it is read as (``SHAPE_DATA``):

- **data**: the columns of that shape (conversations: the messages column, ShareGPT's
  ``conversations``, the tools column and LLaMA-Factory's ``system`` column; the other shapes:
  their ``Fields``);
- **options**: conversation options (``RECORD_OPTIONS``, ``tools``), by their own name or
  mapped from a column (``--field reasoning_effort=effort``: ``Fields.options``);
- anything else is **extra**: ignored and counted (``ocml pack``'s report, ``columns``),
  except a column that looks like a misspelled option (``reasoning_efort``), which is
  ``E-INPUT-OPTION`` with the suggestion, and except under ``extra_columns="error"``
  (``--extra-columns error``), where every extra column not listed in ``ignore_columns``
  (``--ignore-column``) is ``E-INPUT-COLUMN``.  Listing a column also silences the misspelling
  check for it (a real column that happens to look like an option).

Null values count as absent (Arrow rows carry every column of the schema, null where a
record has none).
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..adapters.options import RECORD_OPTIONS
from ..adapters.suggest import SUGGEST_CUTOFF
from ..errors import InputError, article
from .shapes import RecordShape

if TYPE_CHECKING:
    from .shapes import ShapeOptions

#: option names a record may carry (the tool list, then the others)
OPTION_NAMES: tuple[str, ...] = ("tools", "functions", *RECORD_OPTIONS)
#: the ``Fields`` attributes each shape reads (conversations: besides their messages / tools columns)
SHAPE_DATA: dict[RecordShape, tuple[str, ...]] = {
    RecordShape.CHAT: ("system",),
    RecordShape.PROMPT_COMPLETION: ("prompt", "completion"),
    RecordShape.ALPACA: ("instruction", "input", "output", "system", "history"),
    RecordShape.TEXT: ("text",),
    RecordShape.PREFERENCE: ("prompt", "chosen", "rejected"),
    RecordShape.KTO: ("prompt", "completion", "label"),
}
#: shorter extra columns are never taken for misspelled options (``data`` is not ``date``)
MISSPELLING_MIN = 6
SHAREGPT = "conversations"


def data_keys(shape: RecordShape, opts: ShapeOptions, messages_field: str, tools_field: str) -> frozenset[str]:
    """The columns a record of ``shape`` reads as data."""
    f = opts.fields
    keys = {getattr(f, name) for name in SHAPE_DATA[shape]}
    if shape is RecordShape.CHAT:
        keys |= {messages_field, SHAREGPT, tools_field}
    return frozenset(keys)


def misspelled_option(key: str, opts: ShapeOptions) -> str | None:
    """The option ``key`` looks like a misspelling of (``reasoning_efort``), else None (a data
    column of any shape, such as Alpaca's ``instruction``, never is one)."""
    if len(key) < MISSPELLING_MIN or key in opts.fields.columns():
        return None
    lowered = key.lower()
    if lowered in OPTION_NAMES:
        return lowered
    close = difflib.get_close_matches(lowered, OPTION_NAMES, n=1, cutoff=SUGGEST_CUTOFF)
    return close[0] if close else None


def apply_rule(record: Mapping[str, Any], shape: RecordShape, opts: ShapeOptions, *,
               messages_field: str = "messages", tools_field: str = "tools",
               ignored: Counter[str] | None = None) -> dict[str, Any]:
    """``record``'s data and options (mapped options under their option names), non-null
    only; extra columns are counted in ``ignored`` (column -> records); typed errors for a
    misspelled option and, under ``extra_columns="error"``, for an unlisted extra column."""
    data = data_keys(shape, opts, messages_field, tools_field)
    mapped = dict(opts.fields.options)  # option -> column
    from_column = {col: opt for opt, col in mapped.items()}
    out: dict[str, Any] = {}
    extra: list[str] = []
    for key, value in record.items():
        if value is None:
            continue
        if key in data:
            out[key] = value
        elif key in from_column:
            out[from_column[key]] = value
        elif key in OPTION_NAMES and key not in mapped:
            out[key] = value
        else:
            extra.append(key)
    refused: list[InputError] = []
    for key in extra:
        name = str(key)
        if name in opts.ignore_columns:
            continue
        option = misspelled_option(name, opts)
        if option is not None:
            refused.append(InputError(
                f"column {name!r} looks like a misspelled conversation option", code="E-INPUT-OPTION", field=name,
                hint=f"did you mean {option!r}? rename the column, read it with --field {option}={name}, or pass "
                     f"--ignore-column {name} if it is not one"))
        elif opts.extra_columns == "error":
            refused.append(InputError(f"column {name!r} is neither data nor an option of {article(shape.value)} record",
                                      code="E-INPUT-COLUMN", field=name,
                                      hint=f"list it with --ignore-column {name}, or pass --extra-columns ignore"))
    if ignored is not None:  # counted whatever the record's verdict (the refused columns are not ignored)
        ignored.update(str(k) for k in extra if not any(e.field == str(k) for e in refused))
    if refused:
        raise refused[0]
    return out
