"""Harmony system/developer message bodies, byte for byte as openai-harmony 0.0.8.

This module builds the *text* that openai-harmony writes between
``<|message|>`` and ``<|end|>`` for a ``SystemContent`` or a
``DeveloperContent`` (openai-harmony encodes that whole text as one piece);
the content itself (dataclasses, ``from_dict`` / ``to_dict``) is ``harmony.content``'s.

Layout rules (see shared/reference/harmony.md sections 6-8):

* system body: sections joined with a blank line, empty ones omitted:
  identity / ``Knowledge cutoff: ...`` / ``Current date: ...`` (one per line),
  ``Reasoning: low|medium|high``, the tools section, then
  ``# Valid channels: a, b.`` (+ `` Channel must be included for every
  message.`` if required, + a line routing function calls to
  ``commentary`` when the conversation has function tools);
* developer body: ``# Instructions``, the instructions, the tools section;
* tools section: ``# Tools`` then one block per namespace in *key* order
  (a ``BTreeMap``), each rendered with ``ToolNamespace.name``.
"""

from __future__ import annotations

from collections.abc import Mapping

from .content import DeveloperContent, SystemContent, ToolNamespace
from .schema import json_schema_to_typescript
from .rust_text import rust_lines

__all__ = [
    "system_text",
    "developer_text",
    "tail_field",
    "tools_section",
    "namespace_block",
]


# ---------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------


def namespace_block(ns: ToolNamespace) -> str:
    """One ``## name`` block of the tools section."""
    lines = [f"## {ns.name}\n"]
    if ns.description is not None:
        prefix = "// " if ns.tools else ""
        lines.extend(prefix + line for line in rust_lines(ns.description))
    if ns.tools:
        lines.append(f"namespace {ns.name} {{\n")
        for tool in ns.tools:
            lines.extend("// " + line for line in rust_lines(tool.description))
            if tool.parameters is not None:
                ts = json_schema_to_typescript(tool.parameters, "")
                lines.append(f"type {tool.name} = (_: {ts}) => any;\n")
            else:
                lines.append(f"type {tool.name} = () => any;\n")
        lines.append(f"}} // namespace {ns.name}")
    return "\n".join(lines)


def tools_section(namespaces: Mapping[str, ToolNamespace]) -> str:
    """``# Tools`` plus every namespace, ordered by key (code-point order)."""
    blocks = ["# Tools"]
    for key in sorted(namespaces):
        blocks.append(namespace_block(namespaces[key]))
    return "\n\n".join(blocks)


def system_text(sc: SystemContent, has_function_tools: bool = False) -> str:
    """The body openai-harmony renders for a system message.

    ``has_function_tools`` is harmony's ``conversation_has_function_tools``:
    true when some developer message of the conversation has a non-empty
    ``functions`` namespace (see :attr:`DeveloperContent.has_function_tools`).
    """
    sections: list[str] = []
    top: list[str] = []
    if sc.model_identity is not None:
        top.append(sc.model_identity)
    if sc.knowledge_cutoff is not None:
        top.append(f"Knowledge cutoff: {sc.knowledge_cutoff}")
    if sc.conversation_start_date is not None:
        top.append(f"Current date: {sc.conversation_start_date}")
    if top:
        sections.append("\n".join(top))
    if sc.reasoning_effort is not None:
        sections.append(f"Reasoning: {sc.reasoning_effort}")
    if sc.tools:
        sections.append(tools_section(sc.tools))
    cc = sc.channel_config
    if cc is not None and cc.valid_channels:
        header = f"# Valid channels: {', '.join(cc.valid_channels)}."
        if cc.channel_required:
            header += " Channel must be included for every message."
        if has_function_tools:
            header += "\nCalls to these tools must go to the commentary channel: 'functions'."
        sections.append(header)
    return "\n\n".join(sections)


def developer_text(dc: DeveloperContent) -> str:
    """The body openai-harmony renders for a developer message."""
    sections: list[str] = []
    if dc.instructions is not None:
        sections.append("# Instructions")
        sections.append(dc.instructions)
    if dc.tools:
        sections.append(tools_section(dc.tools))
    return "\n\n".join(sections)


def tail_field(content: SystemContent | DeveloperContent) -> str:
    """The field whose text ends the section body (``system_text`` / ``developer_text``): the
    one to name when that end cannot be written (``E-UNREPRESENTABLE``, fallback mode)."""
    if isinstance(content, DeveloperContent):
        return "tools" if content.tools else "instructions"
    cc = content.channel_config
    if cc is not None and cc.valid_channels:
        return "channel_config"
    for name in ("tools", "reasoning_effort", "conversation_start_date", "knowledge_cutoff"):
        if getattr(content, name):
            return name
    return "model_identity"
