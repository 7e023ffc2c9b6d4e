"""What the Jinja sources need to know about each format: a table, one row per format.

The rows say how a format writes a header and which of ``normalize``'s rules apply; the
rules themselves live once, in the Jinja sources (``messages.jinja``: input shapes;
``channels.jinja`` / ``channels_render.jinja``: Harmony and OpenChatML 2.x; ``cot.jinja``: the CoT
policy; ``chatml.jinja``; ``apertus.jinja``).  Values that a ``Format`` object already knows (header attributes and
``<|constrain|>``, which message is the answer, return token, generation prompt, Harmony's
``recipient_after_channel``, ``chat_style``, the constructor options) are read from it, not
repeated here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import UnknownNameError
from ..formats.base import Format


#: the Jinja sources of a channel format (Harmony, OpenChatML 2.x), concatenated in this order
CHANNEL_SOURCES = ("schema.jinja", "sections.jinja", "messages.jinja", "channels.jinja", "cot.jinja",
                   "channels_render.jinja")


@dataclass(frozen=True, slots=True)
class TemplateProfile:
    #: "harmony" (role | :name | to= | channel | " <|constrain|>"), "openchatml" (attrs, channel,
    #: constrain), "chatml" (``<|im_start|>role[ name=x]\n``) or "apertus" (``<|user_start|>``;
    #: also turns on Apertus mapping content in ``messages.jinja``)
    header: str
    #: the Jinja files of this package that make the template: macros first, then top-level code
    sources: tuple[str, ...] = CHANNEL_SOURCES
    #: Harmony: chat data always gets the model's own system header; only the first message
    #: becomes the instructions and later system messages are developer messages
    chat_system: bool = False
    #: OpenChatML: a tool reply without a name takes the recipient of the call it answers
    tool_name_from_calls: bool = False
    #: a tool reply must end up with a name (Harmony's author, OpenChatML's name=)
    tool_name_required: bool = True


PROFILES: dict[str, TemplateProfile] = {
    "harmony": TemplateProfile(header="harmony", chat_system=True),
    "openchatml-2.2": TemplateProfile(header="openchatml", tool_name_from_calls=True),
    "chatml": TemplateProfile(header="chatml", sources=("messages.jinja", "cot.jinja", "chatml.jinja"), tool_name_required=False),
    "apertus": TemplateProfile(header="apertus", sources=("messages.jinja", "apertus.jinja"), tool_name_required=False),
    "openchatml-2.0": TemplateProfile(header="openchatml", tool_name_from_calls=True),
    "llama3": TemplateProfile(header="llama3", sources=("messages.jinja", "cot.jinja", "../formats/llama3/template.jinja"),
                              tool_name_required=False),
}


def profile_row(fmt: Format) -> TemplateProfile:
    row = PROFILES.get(fmt.name)
    if row is None:
        raise UnknownNameError(
            f"format {fmt.name!r} has no chat template yet",
            code="E-FORMAT-UNAVAILABLE", field="format",
            hint="chat templates exist for: " + ", ".join(PROFILES),
        )
    return row


def profile_for(fmt: Format) -> dict[str, Any]:
    """The ``ocml_profile`` dict a template is generated with."""
    row = profile_row(fmt)
    return {
        "header": row.header,
        "attrs": [list(pair) for pair in fmt.header_attributes],
        "constrain": fmt.has_constrain,
        "chat_system": row.chat_system,
        "answer_channel": fmt.chat_style.answer_channel,
        "content_with_calls": fmt.chat_style.content_with_calls,
        "final_by_channel_word": fmt.final_by_channel_word,
        "tool_name_from_calls": row.tool_name_from_calls,
        "tool_name_required": row.tool_name_required,
        "recipient_after_channel": bool(fmt.init_options().get("recipient_after_channel", False)),
        "return_token": fmt.return_token,
        "generation_prompt": "".join(text for _, text in fmt.generation_prompt()),
        "options": fmt.init_options(),
    }
