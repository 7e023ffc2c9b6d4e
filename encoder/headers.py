"""Import path kept for the readers (``frames``, format frame machines): the header grammar
lives in ``ocml.encoder.grammar.headers``."""

from .grammar.headers import Header, parse_header, parse_header_cached  # noqa: F401

__all__ = ["Header", "parse_header", "parse_header_cached"]
