"""Llama 3 (Meta; 3.1 / 3.2 / 3.3): this folder.

``format`` (``Llama3``: frames, the 3.1 system header, tools), ``calls`` (tool calls written and
read), ``frames`` (reading back), ``response`` (its response-template fields), ``llama3.jinja``
(its chat template's own source); its data: ``format.json`` and ``llama3.tokens.json`` (the
``llama3`` encoding itself - Meta's ``tokenizer.model`` inside ``llama-models`` - is a base
vocabulary: ``vocab/data/encodings.json``).  What the discovery (``ocml.encoder.formats``) reads is
``FORMATS`` below.
"""

from __future__ import annotations

from ..declare import Candidate, Declaration, TemplateProfile

FORMATS = (
    Declaration(
        "llama3", "format:Llama3",
        template=TemplateProfile(header="llama3", sources=("messages.jinja", "cot.jinja", "llama3.jinja"),
                                 tool_name_required=False),
        response_fields="response:response_fields",
        # 3.1 (its fixed date), 3.2 (today's date, as the template's strftime_now writes it), 3.0
        candidates=(Candidate("llama3"), Candidate("llama3", dated="encoder", date_format="%d %b %Y"),
                    Candidate("llama3", (("system_header", False),))),
        detect_order=50,
    ),
)
