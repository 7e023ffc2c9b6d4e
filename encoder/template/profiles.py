"""What the Jinja sources need to know about each format: one row per format, declared in its
folder (``TemplateProfile`` in ``encoder/formats/<pkg>/__init__.py``, found by the discovery).

The rows say how a format writes a header and which of ``normalize``'s rules apply; the
rules themselves live once, in the Jinja sources (``messages.jinja``: input shapes;
``channels.jinja`` / ``channels_render.jinja``: Harmony and OpenChatML 2.x; ``cot.jinja``: the CoT
policy; a format folder's own, such as ``chatml.jinja`` and ``apertus.jinja``).  Values that a ``Format`` object already knows (header attributes and
``<|constrain|>``, which message is the answer, return token, generation prompt, Harmony's
``recipient_after_channel``, ``chat_style``, the constructor options) are read from it, not
repeated here.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnknownNameError
from ..formats import template_profiles
from ..formats.base import Format
from ..formats.declare import TemplateProfile


#: format name -> its template profile (the format folders' declarations)
PROFILES: dict[str, TemplateProfile] = {name: row for name, (_, row) in template_profiles().items()}


def profile_row(fmt: Format) -> TemplateProfile:
    row = PROFILES.get(fmt.name)
    if row is None:
        raise UnknownNameError(
            f"format {fmt.name!r} has no chat template yet",
            code="E-FORMAT-UNAVAILABLE", field="format",
            hint="chat templates exist for: " + ", ".join(PROFILES),
        )
    return row


def source_package(fmt: Format) -> str:
    """The package whose Jinja files come first for ``fmt``'s sources: its format folder."""
    return template_profiles()[fmt.name][0]


def profile_for(fmt: Format) -> dict[str, Any]:
    """The ``ocml_profile`` dict a template is generated with."""
    row = profile_row(fmt)
    return {
        "header": row.header,
        "attrs": [list(pair) for pair in fmt.header_style.attributes],
        "constrain": fmt.header_style.constrain,
        "chat_system": row.chat_system,
        "answer_channel": fmt.chat_style.answer_channel,
        "content_with_calls": fmt.chat_style.content_with_calls,
        "final_by_channel_word": fmt.header_style.answer_by_channel_word,
        "tool_name_from_calls": row.tool_name_from_calls,
        "tool_name_required": row.tool_name_required,
        "recipient_after_channel": bool(fmt.init_options().get("recipient_after_channel", False)),
        "return_token": fmt.return_token,
        "generation_prompt": "".join(text for _, text in fmt.generation_prompt()),
        "options": fmt.init_options(),
    }
