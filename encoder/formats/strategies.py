"""The strategies a format picks, besides its header (``ocml.encoder.grammar.headers.HeaderStyle``):
a few small objects instead of flags on ``Format``, each read by the generic code it steers.

- ``TextLayout``: how a message's pieces become ids (the renderer, ``ocml.encoder.render``);
- ``TurnShape``: what an assistant turn is (one message per channel, or one message of blocks)
  and where its reasoning is written (the OpenAI views, ``Encoder.prepare``);
- ``TranscriptStyle``: how ``to_text`` joins frames and which version its header names.

A format class sets each as a class attribute (``Format.text_layout``, ``Format.turns``,
``Format.transcript``); the defaults are the Harmony family's (per-piece ids, one message per
channel, a newline between transcript frames, no version).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..pieces import Piece


@dataclass(frozen=True)
class TextLayout:
    """How a message's pieces become ids."""

    #: encode each run of text between two registered controls in one call, as the deployed
    #: template's text was tokenized (``ocml.encoder.runs``: segments, the straddling-token
    #: rule); else each text piece is encoded on its own (Harmony's rule)
    whole_runs: bool = False
    #: pieces after every message's terminator, never trained (ChatML's ``\n``)
    after_message: tuple[Piece, ...] = ()


@dataclass(frozen=True)
class TurnShape:
    """What an assistant turn is."""

    #: an assistant turn is one message of blocks (``structured.openai_parts()``: Apertus; ChatML
    #: in the OpenAI view, ``turn_of``), whose stream deltas are per block (``Delta.channel``);
    #: the OpenAI chunker reads them by block.  Else a turn is one message per channel
    blocks: bool = False
    #: reasoning is written inside its answer's frame (ChatML ``reasoning="think"``): the CoT
    #: policy then applies before ``normalize`` builds the frames (``Encoder.prepare``)
    inline_reasoning: bool = False


@dataclass(frozen=True)
class TranscriptStyle:
    """``to_text`` / ``parse_text`` (``ocml.encoder.transcript``)."""

    #: what goes between two messages (the transcript is otherwise the render's text)
    joiner: str = "\n"
    #: the ``version`` a transcript's YAML document header names (None: transcripts have no header)
    version: str | None = None


#: the defaults: each text piece encoded on its own, nothing after a message
PIECES = TextLayout()
#: an assistant turn is one message per channel, its reasoning a message of its own
MESSAGES = TurnShape()
#: frames joined by a newline, no header
PLAIN_TRANSCRIPT = TranscriptStyle()
