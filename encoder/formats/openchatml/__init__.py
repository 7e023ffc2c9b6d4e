"""OpenChatML 2.2 and 2.0 (the default format, ``format.json``'s ``default``): this folder.

``format`` (``OpenChatML22``, ``OpenChatML20``: headers with attributes; the system and developer
sections are Harmony's, ``ocml.encoder.formats.harmony``), ``response`` (its response-template
fields); its data: ``format.json`` and one token table per version.  What the discovery
(``ocml.encoder.formats``) reads is ``FORMATS`` below.
"""

from __future__ import annotations

from ..declare import Candidate, Declaration, TemplateProfile

_TEMPLATE = TemplateProfile(header="openchatml", tool_name_from_calls=True)

FORMATS = (
    Declaration("openchatml-2.2", "format:OpenChatML22", template=_TEMPLATE, response_fields="response:fields",
                candidates=(Candidate("openchatml-2.2"),), detect_order=20),
    Declaration("openchatml-2.0", "format:OpenChatML20", template=_TEMPLATE, response_fields="response:fields",
                candidates=(Candidate("openchatml-2.0"),), detect_order=21),
)
