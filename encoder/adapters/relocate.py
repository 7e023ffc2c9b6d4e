"""Errors raised on the expanded message list, pointed back at the user's own input."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import OcmlError
from ..messages import Message


def relocate(exc: OcmlError, messages: Sequence[Message]) -> OcmlError:
    """Point an error raised at ``messages[exc.index]`` at the user's own input: the input
    message it came from and the input field (``tool_calls[0].function.arguments``, not
    ``content``).  The expanded index stays available as ``exc.expanded_index``."""
    i = exc.index
    if i is None or exc.relocated or not 0 <= i < len(messages):
        return exc
    m = messages[i]
    exc.expanded_index = i
    exc.relocated = True
    exc.index = m.source
    path = m.source_field
    if path is not None and path.startswith(("tool_calls[", "function_call")):
        call = path[:path.index("]") + 1] if path.startswith("tool_calls[") else "function_call"
        fn = f"{call}.function" if call != "function_call" else call
        exc.field = {"content": path, "recipient": f"{fn}.name", "call_id": f"{call}.id",
                     "constrain": f"{call}.content_type"}.get(exc.field or "", exc.field)
    elif path is not None and exc.field == "content":
        exc.field = path
    if m.source is None:
        exc.message += " (in the message ocml built from the conversation options)"
    exc.args = (exc._render(),)
    return exc
