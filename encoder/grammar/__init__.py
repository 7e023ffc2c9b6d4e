"""One home for the lexical rules that render, parse and the stream decoder share.

- ``escape``: how text that spells a control is written where controls are text
  (fallback mode, transcripts), and where it cannot be (``E-UNREPRESENTABLE``);
- ``text``: the input-encoding policy (lone surrogates: ``E-INPUT-ENCODING``);
- ``roles``: the role grammar of each format;
- ``headers``: the header grammar (reading a header, and checking at render that what is
  written reads back as the same fields).
- ``terminators``: the stop and terminator tables (which controls end a message, with which
  reason; where a sampler and a stream decoder stop), built from the token data.
"""
