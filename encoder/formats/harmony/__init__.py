"""Harmony (gpt-oss), byte-exact with openai-harmony 0.0.8: the whole format in this folder.

``format`` (``HarmonyFormat``: the headers, the system / developer synthesis), ``content`` (the
system and developer content model), ``sections`` (their text), ``schema`` (tool JSON Schema ->
TypeScript), ``rust_text`` (text as openai-harmony's Rust writes it), ``response`` (its
response-template fields); its data: ``format.json`` and ``harmony.tokens.json``.  What the
discovery (``ocml.encoder.formats``) reads is ``FORMATS`` below.
"""

from __future__ import annotations

from ..declare import Candidate, Declaration, TemplateProfile

FORMATS = (
    Declaration(
        "harmony", "format:HarmonyFormat",
        template=TemplateProfile(header="harmony", chat_system=True),
        response_fields="response:fields",
        candidates=(Candidate("harmony", dated="conversation"),),
        detect_order=10,
    ),
)
