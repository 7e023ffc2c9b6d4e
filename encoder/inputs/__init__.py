"""Dataset records, the input layer in front of the renderer: conversations and the record shapes
besides them, prompt/completion, Alpaca, plain text, preference pairs and KTO examples
(``shapes`` says what each is; one module per shape reads it, ``detect`` picks the shape of a
record, ``render_record`` renders records of the sequence shapes (``render_record`` /
``render_records``: ``Encoder.render`` takes conversations only), ``pairs`` renders preference /
KTO rows, ``columns`` is the one column rule for dataset records, ``hermes`` reads function calls
written inside the text, ``overlong_text`` splits overlong text documents in ``ocml pack``'s
workers)."""

from __future__ import annotations

from .detect import detect_shape, read_record
from .examples import KtoExample, PreferencePair, PromptCompletion, TextExample
from .pairs import PairResult, render_pair, render_pairs
from .render_record import render_record, render_records
from .shapes import (DEFAULT_FIELDS, OVERLONG_DEFAULT, RECORD_SHAPES, Fields, RecordShape, ShapeOptions,
                     default_overlong)

__all__ = ["DEFAULT_FIELDS", "OVERLONG_DEFAULT", "RECORD_SHAPES", "Fields", "KtoExample", "PairResult",
           "PreferencePair", "PromptCompletion", "RecordShape", "ShapeOptions", "TextExample", "default_overlong",
           "detect_shape", "read_record", "render_pair", "render_pairs", "render_record", "render_records"]
