"""The record shapes ocml reads, their field names, options and per-shape defaults (data).

A *record* is one dataset row.  Besides conversations (``chat``: a ``messages`` list,
ShareGPT ``conversations``, a bare message list; read by ``ocml.encoder.pipeline.records`` and
``ocml.encoder.adapters``) ocml reads the shapes TRL, LLaMA-Factory and axolotl train from:

========================  =================================================  ==============================
shape                     record                                             trained
========================  =================================================  ==============================
``prompt-completion``     ``{"prompt", "completion"}``: strings (standard)   the completion (TRL
                          or message lists (conversational)                  ``completion_only_loss``)
``alpaca``                ``{"instruction", "input", "output", "system"?}``  the assistant answer
``text``                  ``{"text"}``                                       every token + end-of-text
``preference``            ``{"prompt"?, "chosen", "rejected"}``              one row per pair (DPO/ORPO)
``kto``                   ``{"prompt", "completion", "label"}``              one row per example (KTO)
========================  =================================================  ==============================
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from enum import Enum
from typing import Any

from ..errors import InputError, UnknownNameError


class RecordShape(str, Enum):
    CHAT = "chat"
    PROMPT_COMPLETION = "prompt-completion"
    ALPACA = "alpaca"
    TEXT = "text"
    PREFERENCE = "preference"
    KTO = "kto"


#: shapes whose records render to one training sequence (the others are pairs / unpaired rows)
SEQUENCE_SHAPES = frozenset({RecordShape.CHAT, RecordShape.PROMPT_COMPLETION, RecordShape.ALPACA, RecordShape.TEXT})
#: shapes whose rows hold a prompt and completion(s) as separate columns (never packed)
PAIR_SHAPES = frozenset({RecordShape.PREFERENCE, RecordShape.KTO})
RECORD_SHAPES: tuple[str, ...] = tuple(s.value for s in RecordShape if s is not RecordShape.CHAT)

# Per-shape defaults, one home.  ``overlong``: what ``ocml pack`` does with a document longer
# than --seq-len when --overlong is not given.  A conversation is cut after its last whole
# assistant message that fits (``truncate``): a piece that starts mid-conversation has no
# system / user context and trains the model on answers to questions it never saw.  Plain
# text is split (continued pretraining: every token is worth keeping and a piece of text
# needs no message boundary).
CONVERSATION_OVERLONG = "truncate"
OVERLONG_DEFAULT: dict[RecordShape, str] = {
    RecordShape.CHAT: CONVERSATION_OVERLONG,
    RecordShape.PROMPT_COMPLETION: CONVERSATION_OVERLONG,
    RecordShape.ALPACA: CONVERSATION_OVERLONG,
    RecordShape.TEXT: "split",
}


def default_overlong(shape: str) -> str:
    """``--overlong`` when not given, for a run read as ``shape`` (``auto`` = conversations')."""
    if shape in ("auto", "native", "conversation"):
        return OVERLONG_DEFAULT[RecordShape.CHAT]
    try:
        return OVERLONG_DEFAULT.get(RecordShape(shape), CONVERSATION_OVERLONG)
    except ValueError:
        from ..errors import InputError

        raise InputError(f"no overlong default for input shape {shape!r}", code="E-USAGE", field="--overlong",
                         hint="pass --overlong truncate|split|drop") from None


@dataclass(frozen=True, slots=True)
class Fields:
    """Record keys / columns of each shape (``--field KEY=COLUMN`` renames one; ``KEY`` may
    also be a conversation option, read from ``COLUMN``: ``options``, option -> column)."""

    prompt: str = "prompt"
    completion: str = "completion"
    chosen: str = "chosen"
    rejected: str = "rejected"
    label: str = "label"
    instruction: str = "instruction"
    input: str = "input"
    output: str = "output"
    system: str = "system"
    history: str = "history"
    text: str = "text"
    options: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, specs: Sequence[str] | dict[str, str] | Fields | None) -> Fields:
        """``["output=response", "instruction=question"]`` or ``{"output": "response"}``."""
        if specs is None:
            return DEFAULT_FIELDS
        if isinstance(specs, Fields):
            return specs
        pairs: dict[str, str] = {}
        if isinstance(specs, dict):
            pairs = dict(specs)
        else:
            for spec in specs:
                key, sep, column = str(spec).partition("=")
                if not sep or not key or not column:
                    raise InputError(f"--field {spec!r} is not KEY=COLUMN", code="E-USAGE", field="--field",
                                     hint="e.g. --field output=response --field instruction=question")
                pairs[key.strip()] = column.strip()
        from ..adapters.options import RECORD_OPTIONS

        known = [f.name for f in fields(cls) if f.name != "options"]
        options = tuple((k, v) for k, v in pairs.items() if k in RECORD_OPTIONS)
        for key in pairs:
            if key not in known and key not in RECORD_OPTIONS:
                from ..adapters import suggest

                everything = known + list(RECORD_OPTIONS)
                raise InputError(f"unknown record field {key!r}", code="E-USAGE", field="--field",
                                 hint=suggest(key, everything) + "fields: " + ", ".join(known)
                                      + "; options: " + ", ".join(RECORD_OPTIONS) + " (tools: --tools-field)")
        return replace(DEFAULT_FIELDS, options=options, **{k: v for k, v in pairs.items() if k in known})

    def columns(self) -> tuple[str, ...]:
        """Every data column a record of any shape may use."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.name != "options")


DEFAULT_FIELDS = Fields()


@dataclass(frozen=True, slots=True)
class ShapeOptions:
    """How the non-chat shapes render (``Encoder(shape_options=...)``, ``ocml pack`` flags).

    ``completion_only_loss``: TRL's option of the same name: True (default) trains only the
    completion, False trains the whole sequence, prompt included.
    ``string_prompt``: what the model sees for a *standard* (string) prompt/completion:
    ``"text"`` (default, as TRL: plain text, the prompt followed by the completion and the
    end-of-text token, no chat template) or ``"chat"`` (the prompt as a user turn, the
    completion as the assistant's answer, rendered in the encoder's format).
    ``pair_columns``: the columns of preference rows: ``"dpo"`` (TRL >= 1.0's
    ``DataCollatorForPreference``: ``prompt_ids`` / ``chosen_ids`` / ``rejected_ids``) or
    ``"orpo"`` (``DPODataCollatorWithPadding``, TRL's ORPO / CPO: ``prompt_input_ids``,
    ``chosen_input_ids`` = prompt + chosen, ``chosen_attention_mask``, ``chosen_labels``, ...).
    ``alpaca_join``: the text between ``instruction`` and a non-empty ``input``.
    ``extra_columns`` / ``ignore_columns``: what a column that is neither data nor an option
    does (``ocml.encoder.inputs.columns``): ``"ignore"`` (default: ignored and counted) or
    ``"error"``; the columns listed in ``ignore_columns`` are always ignored.
    """

    fields: Fields = DEFAULT_FIELDS
    completion_only_loss: bool = True
    string_prompt: str = "text"
    pair_columns: str = "dpo"
    alpaca_join: str = "\n"
    extra_columns: str = "ignore"
    ignore_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.extra_columns not in ("ignore", "error"):
            raise UnknownNameError(f"extra_columns={self.extra_columns!r}", field="extra_columns",
                                   hint="'ignore' (counted in the report) or 'error'")
        if isinstance(self.ignore_columns, str) or not all(isinstance(c, str) for c in self.ignore_columns):
            raise InputError("ignore_columns must be a list of column names", field="ignore_columns")
        object.__setattr__(self, "ignore_columns", tuple(self.ignore_columns))
        if self.string_prompt not in ("text", "chat"):
            raise UnknownNameError(f"string_prompt={self.string_prompt!r}", field="string_prompt",
                                   hint="'text' (TRL: plain text) or 'chat' (a user turn + the assistant's answer)")
        if self.pair_columns not in ("dpo", "orpo"):
            raise UnknownNameError(f"pair_columns={self.pair_columns!r}", field="pair_columns",
                                   hint="'dpo' (prompt_ids, chosen_ids, rejected_ids) or 'orpo' "
                                        "(prompt_input_ids, chosen_input_ids, chosen_labels, ...)")
        if type(self.completion_only_loss) is not bool:
            raise InputError("completion_only_loss must be true or false", field="completion_only_loss")

    @classmethod
    def from_flags(cls, fields: Sequence[str], completion_only_loss: bool = True, string_prompt: str = "text",
                   pair_columns: str = "dpo", extra_columns: str = "ignore",
                   ignore_columns: Sequence[str] = ()) -> ShapeOptions:
        """The options ``--field KEY=COLUMN`` ... ``--ignore-column`` give (``ocml pack`` and ``ocml render``)."""
        return cls(Fields.parse(tuple(fields)), completion_only_loss, string_prompt, pair_columns,
                   extra_columns=extra_columns, ignore_columns=tuple(ignore_columns))

    @classmethod
    def parse(cls, spec: ShapeOptions | dict[str, Any] | None) -> ShapeOptions:
        if spec is None:
            return DEFAULT_OPTIONS
        if isinstance(spec, ShapeOptions):
            return spec
        if not isinstance(spec, dict):
            raise InputError(f"shape_options must be a ShapeOptions or a dict, got {type(spec).__name__}",
                             field="shape_options")
        kw = dict(spec)
        if "fields" in kw:
            kw["fields"] = Fields.parse(kw["fields"])
        try:
            return cls(**kw)
        except TypeError as exc:
            raise UnknownNameError(str(exc), field="shape_options",
                                   hint="keys: fields, completion_only_loss, string_prompt, pair_columns, "
                                        "alpaca_join, extra_columns, ignore_columns") from None


DEFAULT_OPTIONS = ShapeOptions()
