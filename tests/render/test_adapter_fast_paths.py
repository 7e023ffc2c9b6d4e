"""The adapters' fast paths give exactly the general path's messages (or its errors)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocml.encoder import adapters as A
from ocml.encoder.adapters import chat as C
from ocml.encoder.adapters import ChatStyle

_FIELDS = ("role", "content", "channel", "recipient", "call_id", "name", "intent", "content_type", "constrain",
           "parts", "structured", "train", "source", "source_field")
_value = st.sampled_from([None, "", "x", "functions.f", "<|constrain|>json", "<|constrain|>", " json", 3])
_content = st.sampled_from(["hi", "", [{"type": "text", "text": "a"}], [{"text": "b"}],
                            [{"type": "input_text", "text": "c"}], [{"type": "text", "text": 3}], [], None,
                            [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], {"type": "text", "text": "d"}])
_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "developer", "", None, 5])},
    optional={"name": _value, "channel": _value, "recipient": _value, "content_type": _value, "content": _content})
_style = st.sampled_from([None, ChatStyle(), ChatStyle(content_with_calls="analysis")])


def _read(raw: dict[str, Any], style: ChatStyle | None) -> Any:
    try:
        return [tuple(getattr(m, f) for f in _FIELDS) for m in A.message(raw, 2, A.Calls(), style)]
    except Exception as exc:  # noqa: BLE001 - the error itself is compared
        return (type(exc), str(exc))


@settings(max_examples=400)
@given(_message, _style)
def test_harmony_json_fast_path_equals_general_path(raw: dict[str, Any], style: ChatStyle | None) -> None:
    fast = _read(raw, style)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(C, "HARMONY_KEYS", frozenset())  # general path only
        mp.setattr(C, "_FAST_KEYS", frozenset())
        assert _read(raw, style) == fast
