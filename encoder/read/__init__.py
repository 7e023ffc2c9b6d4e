"""The read side's shared grammar: what ``parse`` (ids -> messages, ``parse_text``) and the
stream decoder (``ocml.encoder.stream``) both take, so the two readers cannot disagree:
``lexicon`` (what each id and spelling is), ``route`` (what each lexical atom means) and
``frames`` (the frame machine: atoms -> messages and events)."""
