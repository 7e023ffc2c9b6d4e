"""The library's exception hierarchy (defined in ``ocml.vocab.errors``, the lowest layer)."""

from ocml.vocab.errors import (  # noqa: F401
    BodyConstraintError,
    CallSchemaError,
    ChannelMissingError,
    DependencyError,
    HeaderError,
    InputError,
    InputIndexError,
    InputTypeError,
    OcmlError,
    ParseError,
    StreamError,
    UnknownNameError,
    UnrepresentableError,
    VocabError,
    article,
    excerpt,
)

__all__ = [
    "BodyConstraintError", "CallSchemaError", "ChannelMissingError", "DependencyError", "HeaderError",
    "InputError", "InputIndexError", "InputTypeError", "OcmlError", "ParseError", "StreamError", "UnknownNameError", "UnrepresentableError",
    "VocabError", "article", "excerpt",
]
