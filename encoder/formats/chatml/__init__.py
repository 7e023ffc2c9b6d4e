"""ChatML (Qwen 2.5 / TRL templates): this folder.

``format`` (``ChatML``: frames, tools, reasoning), ``turns`` (an assistant frame read as a turn),
``frames`` (reading back), ``fim`` (fill-in-the-middle documents), ``response`` (its
response-template fields), ``chatml.jinja`` (its chat template's own source); its data:
``format.json`` and ``chatml.tokens.json``.  What the discovery (``ocml.encoder.formats``) reads
is ``FORMATS`` below.
"""

from __future__ import annotations

from ..declare import Candidate, Declaration, TemplateProfile

#: Qwen 2.5's default system text (``default_system=QWEN_SYSTEM``: the deployed template's)
QWEN_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

FORMATS = (
    Declaration(
        "chatml", "format:ChatML",
        template=TemplateProfile(header="chatml", sources=("messages.jinja", "cot.jinja", "chatml.jinja"),
                                 tool_name_required=False),
        response_fields="response:fields",
        candidates=(Candidate("chatml"), Candidate("chatml", (("default_system", QWEN_SYSTEM),)),
                    Candidate("chatml", (("bos_eos", True),))),
        detect_order=30,
    ),
)
