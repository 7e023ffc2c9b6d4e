"""Loss-mask policies: which parts of which messages are trained.

Default: exactly what the model generates at inference.  For an assistant
message that is everything after the generation prompt (``<|start|>assistant``)
through its terminator; the generation prompt itself is trained only when the
message continues an assistant turn (the model wrote it, no runtime did).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .errors import UnknownNameError
from .messages import Message

#: The label of a token that is not trained (HF / PyTorch ``CrossEntropyLoss`` ``ignore_index``):
#: render's ``labels``, packed rows, shards and preference rows all use this one constant.
IGNORE = -100


@dataclass(frozen=True, slots=True)
class MaskPolicy:
    roles: frozenset[str] = frozenset({"assistant"})
    #: None = every channel; else only assistant messages on these channels
    channels: frozenset[str] | None = None
    #: train only the last assistant turn (messages after the last non-assistant message)
    last_turn_only: bool = False
    #: train the JSON bodies of tool calls (header and terminator follow the message)
    tool_call_bodies: bool = True
    #: the terminator of a trained message is trained even if its body is not
    terminator: bool = True

    @classmethod
    def parse(cls, spec: MaskPolicy | str | dict[str, Any] | None) -> MaskPolicy:
        if spec is None:
            return DEFAULT_MASK
        if isinstance(spec, MaskPolicy):
            return spec
        if isinstance(spec, dict):
            kw = dict(spec)
            if "roles" in kw:
                kw["roles"] = frozenset(kw["roles"])
            if kw.get("channels") is not None:
                kw["channels"] = frozenset(kw["channels"])
            try:
                return cls(**kw)
            except TypeError as exc:
                raise UnknownNameError(str(exc), field="mask",
                                       hint="keys: roles, channels, last_turn_only, tool_call_bodies, terminator") from None
        if spec in NAMED_MASKS:
            return NAMED_MASKS[spec]
        raise UnknownNameError(f"unknown mask policy {spec!r}", field="mask",
                               hint=f"named policies: {', '.join(NAMED_MASKS)}, or a MaskPolicy / dict")


DEFAULT_MASK = MaskPolicy()
#: ``mask=`` by name: ``NAMED_MASKS``'s keys (tests/house/test_public_types.py keeps the two in step)
MaskName = Literal["assistant", "default", "last", "final", "no-analysis", "no-tool-bodies", "none"]
#: what ``mask=`` takes: a policy, its name, or a dict of ``MaskPolicy`` fields
MaskSpec = MaskPolicy | MaskName | dict[str, Any] | None
NAMED_MASKS: dict[str, MaskPolicy] = {
    "assistant": DEFAULT_MASK,
    "default": DEFAULT_MASK,
    "last": MaskPolicy(last_turn_only=True),
    "final": MaskPolicy(channels=frozenset({"final"})),
    "no-analysis": MaskPolicy(channels=frozenset({"final", "commentary"})),
    "no-tool-bodies": MaskPolicy(tool_call_bodies=False),
    "none": MaskPolicy(roles=frozenset()),
}

# Per message: (prompt, header, body, end) trained?
Flags = tuple[bool, bool, bool, bool]
_OFF: Flags = (False, False, False, False)


def message_flags(messages: Sequence[Message], policy: MaskPolicy) -> list[Flags]:
    n = len(messages)
    last_turn_start = 0
    if policy.last_turn_only:
        for i in range(n - 1, -1, -1):
            if messages[i].role != "assistant":
                last_turn_start = i + 1
                break
    out: list[Flags] = []
    prev_assistant = False
    for i, m in enumerate(messages):
        train = m.train
        if train is None:
            train = m.role in policy.roles and i >= last_turn_start
            if train and policy.channels is not None and m.role == "assistant":
                train = m.effective_channel in policy.channels
        if not train:
            out.append(_OFF)
        else:
            body = policy.tool_call_bodies or not m.is_tool_call
            end = body or policy.terminator
            # The generation prompt is the runtime's unless the model wrote it mid-turn.
            out.append((m.role == "assistant" and prev_assistant, True, body, end))
        prev_assistant = m.role == "assistant"
    return out
