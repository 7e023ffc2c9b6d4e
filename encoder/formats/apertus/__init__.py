"""Apertus (swiss-ai): this folder.

``format`` (``Apertus``: turns of blocks), ``blocks`` (a turn's blocks and call lists), ``frames``
(reading back), ``tools`` (the developer block's tool text), ``response`` (its response-template
fields), ``apertus.jinja`` (its chat template's own source); its data: ``format.json`` and
``apertus.tokens.json``.  What the discovery (``ocml.encoder.formats``) reads is ``FORMATS`` below.
"""

from __future__ import annotations

from ..declare import Candidate, Declaration, TemplateProfile

FORMATS = (
    Declaration(
        "apertus", "format:Apertus",
        template=TemplateProfile(header="apertus", sources=("messages.jinja", "apertus.jinja"),
                                 tool_name_required=False),
        response_fields="response:fields",
        candidates=(Candidate("apertus", dated="encoder"),),
        detect_order=40,
    ),
)
