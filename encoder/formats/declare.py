"""What a format folder declares in Python (its ``__init__.py``'s ``FORMATS``): the types.

A format folder ``encoder/formats/<pkg>/`` is the whole format.  Its data half is
``format.json`` (names, aliases, order, token table, named encodings; read by
``ocml.vocab.discovery``, so ``ocml.vocab`` needs no encoder code); its Python half is one
``Declaration`` per format in ``FORMATS``, which ``ocml.encoder.formats`` discovers and every
registry is built from: the ``Format`` class, its chat-template profile (``TemplateProfile``: the
Jinja sources, generic ones from ``encoder/template/`` and the folder's own), its response-template
fields and its ``--model`` detection candidates.  Code is named lazily (``"module:attribute"`` in
the folder), so finding the formats imports no format's code.

This module is a leaf: the folders import it, it imports no format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the Jinja sources of a channel format (Harmony, OpenChatML 2.x), concatenated in this order
CHANNEL_SOURCES = ("schema.jinja", "sections.jinja", "messages.jinja", "channels.jinja", "cot.jinja",
                   "channels_render.jinja")


@dataclass(frozen=True, slots=True)
class TemplateProfile:
    """What the Jinja sources need to know about a format (``ocml.encoder.template.profiles``)."""

    #: how the Jinja sources write a header: "harmony" (role | :name | to= | channel |
    #: " <|constrain|>"), "openchatml" (attrs, channel, constrain), "chatml"
    #: (``<|im_start|>role[ name=x]\n``) or "apertus" (``<|user_start|>``; also turns on Apertus
    #: mapping content in ``messages.jinja``): a header style, not a format name
    header: str
    #: the Jinja files that make the template, macros first, then top-level code: each is the
    #: format folder's own file when it has one, else ``encoder/template/``'s
    sources: tuple[str, ...] = CHANNEL_SOURCES
    #: Harmony: chat data always gets the model's own system header; only the first message
    #: becomes the instructions and later system messages are developer messages
    chat_system: bool = False
    #: OpenChatML: a tool reply without a name takes the recipient of the call it answers
    tool_name_from_calls: bool = False
    #: a tool reply must end up with a name (Harmony's author, OpenChatML's name=)
    tool_name_required: bool = True


@dataclass(frozen=True)
class Candidate:
    """One way ocml can render: a format, its ``Encoder`` options, and per-conversation options
    (``--model`` detection, ``ocml.encoder.model.detect``)."""

    format: str
    options: tuple[tuple[str, Any], ...] = ()
    dated: str | None = None   # None, "encoder" (Encoder(date=)) or "conversation" ({"date": ...})
    #: how the format writes the date (``strftime``; Llama 3.2's template: ``%d %b %Y``)
    date_format: str = "%Y-%m-%d"

    @property
    def label(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options)
        return f"{self.format}({opts})" if opts else self.format

    def encoder_options(self, today: str | None) -> dict[str, Any]:
        opts = dict(self.options)
        if self.dated == "encoder" and today is not None:
            opts["date"] = self.date_text(today)
        return opts

    def date_text(self, today: str) -> str:
        """``today`` (ISO) as this format writes it."""
        from datetime import date

        return date.fromisoformat(today).strftime(self.date_format)


@dataclass(frozen=True)
class Declaration:
    """One format, as its folder declares it (``FORMATS`` in the folder's ``__init__.py``)."""

    #: the format's canonical name: one its ``format.json`` declares
    name: str
    #: ``"module:Class"``: its ``Format`` subclass, in the folder
    format_class: str
    #: its chat-template profile (None: no chat template)
    template: TemplateProfile | None = None
    #: ``"module:function"`` in the folder: ``Format -> response_template fields`` (None: none)
    response_fields: str | None = None
    #: the ways ``--model`` detection tries it, in order (none: never detected, only given)
    candidates: tuple[Candidate, ...] = ()
    #: where its candidates stand among every format's (ties between equally good matches go to
    #: the lower number)
    detect_order: int = 100
