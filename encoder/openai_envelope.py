"""The OpenAI Chat Completions envelopes around ocml's choices: a whole response and a stream chunk.

For whoever writes the endpoint (ocml is no server): ``to_openai`` and the chunker give the
choice; these give the objects the openai client parses, ``ChatCompletion`` and
``ChatCompletionChunk`` (``tests/test_openai_envelope.py`` validates both with the client's own
pydantic types)::

    choice = enc.to_openai(completion_ids, tools=request.get("tools"))
    body = completion(choice, model="my-model", prompt_tokens=len(prompt), completion_tokens=len(completion_ids))

``id``: ``chatcmpl-`` and 24 random hex digits unless given; ``created``: the time now (seconds)
unless given; ``usage``: present when both token counts are given (OpenAI's
``prompt_tokens`` / ``completion_tokens`` / ``total_tokens``).  Several choices (``n > 1``, a
batch) are indexed in order.  ``finish_reason`` is one of OpenAI's values
(``openai_message.FINISH_REASONS``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .errors import InputTypeError

if TYPE_CHECKING:
    from .openai_message import ChatChoice

__all__ = ["chunk", "completion", "new_id", "usage"]


def new_id() -> str:
    """A Chat Completions id: ``chatcmpl-`` and 24 random hex digits."""
    return "chatcmpl-" + uuid.uuid4().hex[:24]


def _envelope(obj: str, id: str | None, created: int | None, model: str) -> dict[str, Any]:
    for name, val in (("id", id), ("model", model)):
        if val is not None and not isinstance(val, str):
            raise InputTypeError(f"{name} must be a string, got {type(val).__name__}", field=name)
    if created is not None and (type(created) is not int or created < 0):
        raise InputTypeError(f"created must be an integer >= 0 (seconds), got {created!r}", field="created")
    return {"id": new_id() if id is None else id, "object": obj,
            "created": int(time.time()) if created is None else created, "model": model}


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    """OpenAI's ``usage`` object."""
    for name, val in (("prompt_tokens", prompt_tokens), ("completion_tokens", completion_tokens)):
        if type(val) is not int or val < 0:
            raise InputTypeError(f"{name} must be an integer >= 0, got {val!r}", field=name)
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def completion(choices: ChatChoice | Sequence[ChatChoice], *, model: str = "", id: str | None = None,
               created: int | None = None, prompt_tokens: int | None = None,
               completion_tokens: int | None = None) -> dict[str, Any]:
    """A ``chat.completion`` response body (``ChatCompletion``) for one choice or several."""
    from .openai_message import ChatChoice

    many = [choices] if isinstance(choices, ChatChoice) else list(choices)
    for k, c in enumerate(many):
        if not isinstance(c, ChatChoice):
            raise InputTypeError(f"choices[{k}] must be a ChatChoice (enc.to_openai / dec.to_openai), got "
                                 f"{type(c).__name__}", field=f"choices[{k}]")
        if c.finish_reason is None:
            raise InputTypeError(f"choices[{k}] is still streaming (finish_reason None)", field=f"choices[{k}]",
                                 hint="call the decoder's finish() first")
    body = _envelope("chat.completion", id, created, model)
    body["choices"] = [{**c.to_dict(k), "logprobs": None} for k, c in enumerate(many)]
    if prompt_tokens is not None or completion_tokens is not None:
        body["usage"] = usage(prompt_tokens, completion_tokens)  # type: ignore[arg-type]
    return body


def chunk(delta: dict[str, Any] | None, *, id: str, created: int, model: str, index: int = 0,
          finish_reason: str | None = None, include_usage: bool = False,
          usage_of: dict[str, int] | None = None) -> dict[str, Any]:
    """A ``chat.completion.chunk`` (``ChatCompletionChunk``): one choice's ``delta`` and
    ``finish_reason``; or, with ``delta=None``, the usage chunk that closes a stream
    (``choices: []``, ``usage_of``).  ``include_usage``: every other chunk has ``"usage": None``."""
    c = {"id": id, "object": "chat.completion.chunk", "created": created, "model": model}
    if delta is None:
        c["choices"] = []
        c["usage"] = usage_of
        return c
    c["choices"] = [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
    if include_usage:
        c["usage"] = None
    return c
