"""Chain-of-thought retention: which ``analysis`` messages a render keeps.

- ``default`` (OpenChatML 2.2 §7, HIP-1 rule 7): drop the analysis of turns that
  already ended in ``final``; keep analysis leading to an unresolved tool call and
  the whole current (last) turn, so a training target never silently loses its
  own reasoning.  A turn ends at the next ``user`` message.
- ``harmony``: openai-harmony 0.0.8's exact auto-drop rule (byte-exact interop):
  if the last assistant message is on ``final``, drop every analysis message
  before the first ``final`` message of the conversation.
- ``keep-all`` / ``drop-all``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ocml.vocab.errors import as_enum

from .messages import CotPolicy, Message


def parse_cot(value: CotPolicy | str | None) -> CotPolicy:
    if value is None:
        return CotPolicy.DEFAULT
    return as_enum(value, CotPolicy, "cot", "cot policy")


def dropped(messages: Sequence[Message], policy: CotPolicy) -> set[int]:
    analysis = [i for i, m in enumerate(messages) if m.channel == "analysis"]
    if not analysis or policy is CotPolicy.KEEP_ALL:
        return set()
    if policy is CotPolicy.DROP_ALL:
        return set(analysis)
    if policy is CotPolicy.HARMONY:
        last_assistant = next((m for m in reversed(messages) if m.role == "assistant"), None)
        if last_assistant is None or last_assistant.channel != "final":
            return set()
        first_final = next((i for i, m in enumerate(messages) if m.channel == "final"), len(messages))
        return {i for i in analysis if i < first_final}
    # default: analysis i is stale iff a final answer j > i exists before the last user message.
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    out: set[int] = set()
    final_seen = False
    for i in range(last_user - 1, -1, -1):
        m = messages[i]
        if m.role == "assistant" and m.effective_channel == "final" and not m.is_tool_call:
            final_seen = True
        elif final_seen and m.channel == "analysis":
            out.add(i)
    return out
