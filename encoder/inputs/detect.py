"""Which shape a record is (by its keys, per record), and reading it as that shape.

``refuse_record`` is ``Encoder.render``'s one look at its input: a dataset record of another
shape is the input layer's to read (``render_record``), never a conversation read wrongly.

Detection order: a conversation (``messages`` / ShareGPT ``conversations`` / a bare list)
first, then ``chosen`` / ``rejected`` (preference), ``prompt`` / ``completion`` with a
``label`` (KTO) or without (prompt/completion), ``instruction`` / ``output`` (Alpaca),
``text``.  A key of a shape is enough to pick it, so a record missing the rest (a prompt
without its completion, an instruction without its output) gets that shape's typed error
rather than "no messages".  Null values count as absent (Arrow rows carry every column).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InputError, OcmlError, article
from .alpaca import read_alpaca
from .common import present
from .examples import Example, KtoExample, PreferencePair, PromptCompletion, TextExample
from .preference import read_kto, read_preference
from .prompt_completion import read_prompt_completion
from .shapes import DEFAULT_OPTIONS, RecordShape, ShapeOptions
from .text import read_text

CHAT_KEYS = ("messages", "conversations")


def detect_shape(record: Any, opts: ShapeOptions = DEFAULT_OPTIONS, messages_field: str = "messages") -> RecordShape:
    """The shape of one record (raises ``E-SHAPE-UNKNOWN`` when it is none of them)."""
    if not isinstance(record, Mapping):
        return RecordShape.CHAT  # a bare message list (or something adapters will reject)
    if present(record, messages_field) or any(present(record, k) for k in CHAT_KEYS) or "role" in record:
        return RecordShape.CHAT
    f = opts.fields
    if present(record, f.chosen) or present(record, f.rejected):
        return RecordShape.PREFERENCE
    if present(record, f.prompt) or present(record, f.completion):
        return RecordShape.KTO if f.label in record else RecordShape.PROMPT_COMPLETION
    if present(record, f.instruction) or present(record, f.output):
        return RecordShape.ALPACA
    if present(record, f.text):
        return RecordShape.TEXT
    raise unknown_shape(record, opts, messages_field)


#: columns of published datasets ocml does not read, and what to do instead
UNREAD_COLUMNS: dict[str, str] = {
    "chat": "glaive-function-calling-v2's 'chat' text ('USER: ... ASSISTANT: <functioncall> ...') is not parsed: "
            "use its ShareGPT conversion (LLaMA-Factory's glaive_toolcall: function_call / observation turns)",
}


def unknown_shape(record: Mapping[str, Any], opts: ShapeOptions, messages_field: str) -> InputError:
    """``E-SHAPE-UNKNOWN``, or ``E-SHAPE-MISSING`` when a shape's column is there but null."""
    f = opts.fields
    shape_keys = (messages_field, *CHAT_KEYS, f.chosen, f.rejected, f.prompt, f.completion, f.instruction,
                  f.output, f.text)
    nulls = [k for k in dict.fromkeys(shape_keys) if k in record and record[k] is None]
    if nulls:
        return InputError(f"record's {' and '.join(repr(k) for k in nulls)} {'is' if len(nulls) == 1 else 'are'} null",
                          code="E-SHAPE-MISSING", field=nulls[0],
                          hint="give the value (a null column holds no data), or drop the record")
    keys = sorted(map(str, record))[:8]
    unread = next((hint for k, hint in UNREAD_COLUMNS.items() if k in record), None)
    return InputError(f"record is none of the shapes ocml reads (keys: {keys})", code="E-SHAPE-UNKNOWN",
                      field=messages_field,
                      hint=unread or f"conversations ({messages_field!r}), prompt/completion, alpaca "
                                     "(instruction/output), text, preference (chosen/rejected); rename columns "
                                     "with --field KEY=COLUMN or --messages-field")


def read_record(record: Mapping[str, Any], shape: RecordShape, opts: ShapeOptions = DEFAULT_OPTIONS
                ) -> Example | dict[str, Any]:
    """A non-chat record as its example (Alpaca: as a conversation dict the adapters read)."""
    if not isinstance(record, Mapping):
        raise InputError(f"{article(shape.value)} record must be a JSON object, got {type(record).__name__}",
                         code="E-SHAPE-TYPE", field="record")
    f = opts.fields
    if shape is RecordShape.PROMPT_COMPLETION:
        return read_prompt_completion(record, f)
    if shape is RecordShape.ALPACA:
        return read_alpaca(record, opts)
    if shape is RecordShape.TEXT:
        return read_text(record, f)
    if shape is RecordShape.PREFERENCE:
        return read_preference(record, f)
    if shape is RecordShape.KTO:
        return read_kto(record, f)
    raise InputError(f"{shape.value} records are read by encoder.pipeline.records", code="E-INTERNAL")


def record_shape(record: Any, shape: str, opts: ShapeOptions, messages_field: str = "messages") -> RecordShape:
    """The shape to read ``record`` as: forced by ``shape`` unless ``auto`` / ``chat`` / ``native``."""
    if shape in ("auto",):
        return detect_shape(record, opts, messages_field)
    if shape in ("chat", "native"):
        return RecordShape.CHAT
    return RecordShape(shape)


#: the shape of each example type (``read_record``'s results)
EXAMPLE_SHAPES: dict[type, RecordShape] = {TextExample: RecordShape.TEXT, PromptCompletion: RecordShape.PROMPT_COMPLETION,
                                           PreferencePair: RecordShape.PREFERENCE, KtoExample: RecordShape.KTO}


def refuse_record(obj: Any, opts: ShapeOptions = DEFAULT_OPTIONS) -> None:
    """``E-INPUT-RECORD`` when ``obj``, given where a conversation is expected (``Encoder.render``),
    is a dataset record of another shape (or its example), naming the call that reads it.

    Cheap for conversations (a dict with ``messages`` / ``role`` / ShareGPT ``conversations``,
    anything not a dict); a dict of none of the shapes is left to the adapters, which say
    what a conversation lacks."""
    shape = EXAMPLE_SHAPES.get(type(obj))
    field = None
    if shape is None:
        if not isinstance(obj, dict) or "messages" in obj or "role" in obj or "conversations" in obj:
            return
        try:
            shape = detect_shape(obj, opts)
        except OcmlError:
            return
        if shape is RecordShape.CHAT:
            return
        f = opts.fields
        field = next((k for k in (f.chosen, f.rejected, f.prompt, f.completion, f.instruction, f.output, f.text)
                      if present(obj, k)), None)
    if shape in (RecordShape.PREFERENCE, RecordShape.KTO):
        call = "render_pair(enc, record) renders a preference / KTO record as one row"
    else:
        call = "render_record(enc, record) reads and renders a record of any sequence shape (many: render_records)"
    raise InputError(f"render takes a conversation; this is a dataset record ({shape.value})", code="E-INPUT-RECORD",
                     field=field, hint=f"ocml.encoder.inputs.{call}; ocml pack reads records from files")
