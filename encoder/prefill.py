"""Prefilled generation: a last assistant message left open for the model to continue.

``render(conversation, mode="continue")`` is ``mode="train"`` with the last message left
open (no terminator, nothing after it), as transformers' ``continue_final_message=True``
and mistral-common's prefix do; the exported chat templates give the same ids with
``apply_chat_template(..., continue_final_message=True)``.  ``enc.decoder(prefill=...)``
(and ``enc.chunker(prefill=...)``) start inside that open message, so what the model
writes next streams as its content::

    r = enc.render([*history, {"role": "assistant", "content": "The answer is"}], mode="continue")
    dec = enc.decoder(prefill=r)           # or prefill=<the open message dict>
    dec.feed(generated_ids)                # Delta events: the continuation only

The decoder first reads the prompt's ids (``prefill_ids``; in fallback mode a control's
spelling may share a token with the text around it, so no cut inside the prompt is safe),
so it is in exactly the state the model continues from, in every format.  Of that reading
it keeps only the open message: its ``MessageStart`` (it goes out with the first ``feed``)
and its text so far; the prompt's complete messages and their errors are forgotten.  The
decoder's messages (``MessageEnd``, ``to_openai``) hold the whole open message - the
prefilled text and the continuation, so a prefilled tool call's arguments are complete -;
its ``Delta`` events (and the chunker's deltas) carry only what the model wrote.  Token
positions count the prompt's ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import InputError, InputTypeError, article
from .messages import Conversation, Message

if TYPE_CHECKING:
    from .codec import Renders
    from .formats.base import Format


def prefill_role(fmt: Format, role: Any) -> str | None:
    """Check a ``role=`` argument (the prefilled ``<|start|>ROLE``): None or a role of the format.
    (``parse`` and the stream decoder read from there.)"""
    if role is None:
        return None
    if type(role) is not str:
        raise InputTypeError(f"role must be a role name or None, got {type(role).__name__}", field="role",
                             hint='the role of the prefilled "<|start|>ROLE", e.g. role="assistant"')
    fmt.check_role(role, None)
    return role


def check_continuable(conv: Conversation, keep: list[int]) -> None:
    """``mode="continue"`` leaves the last rendered message open: it must be the assistant's."""
    if not keep:
        raise InputError("mode='continue' needs a conversation that ends with an assistant message, got none",
                         code="E-CONTINUE", field="messages", hint="add the assistant message to continue")
    m = conv.messages[keep[-1]]
    if m.role != "assistant":
        raise InputError(f"mode='continue' continues the last assistant message, but the last message is "
                         f"{article(repr(m.role))} message", code="E-CONTINUE", index=m.source, field="role",
                         hint="mode='prompt' starts a new assistant turn; mode='continue' needs the partial "
                              "assistant message last")


def prefill_ids(enc: Renders, prefill: Any) -> list[int]:
    """The ids of a ``render(..., mode="continue")`` result, or of rendering a message dict /
    ``Message`` / conversation that way (its last message is the one continued), or the
    prompt's ids themselves (a list / array of ints ending inside the open message)."""
    import numpy as np

    from .render import RenderResult

    if isinstance(prefill, np.ndarray) or (isinstance(prefill, (list, tuple)) and prefill
                                           and all(type(i) is int for i in prefill)):
        ids: list[int] = np.asarray(prefill).astype(np.int64).tolist()  # the prompt's ids (generate() sends them)
        return ids
    if isinstance(prefill, Message):
        prefill = [prefill.to_dict()]
    if isinstance(prefill, (dict, list, tuple)):
        prefill = enc.render([prefill] if isinstance(prefill, dict) and "messages" not in prefill else prefill,
                             mode="continue")
    if not isinstance(prefill, RenderResult):
        raise InputTypeError(f"prefill must be a render(mode='continue') result, a Message or a message dict, "
                             f"got {type(prefill).__name__}", field="prefill")
    if not prefill.open_last:
        raise InputError("prefill= takes a render(..., mode='continue') result: this one closes its last message",
                         code="E-CONTINUE", field="prefill", hint="render the conversation with mode='continue'")
    continued: list[int] = prefill.ids.tolist()
    return continued
