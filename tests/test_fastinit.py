"""``ocml.encoder.fastinit``: the fast constructor and replace give exactly what the dataclass gives."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from ocml.encoder.fastinit import fast_replace
from ocml.encoder.messages import Message, new_message

_opt = st.none() | st.text(max_size=5)
_fields = [f.name for f in dataclasses.fields(Message)]


@given(role=st.text(min_size=1, max_size=5), content=st.text(max_size=8), channel=_opt, recipient=_opt,
       call_id=_opt, source=st.none() | st.integers(0, 9), changes=st.dictionaries(
           st.sampled_from(["role", "channel", "call_id", "intent", "recipient", "source", "source_field"]),
           _opt, max_size=3))
def test_fast_replace_equals_dataclasses_replace(role: str, content: str, channel: str | None,
                                                  recipient: str | None, call_id: str | None, source: int | None,
                                                  changes: dict[str, str | None]) -> None:
    m = Message(role=role, content=content, channel=channel, recipient=recipient, call_id=call_id, source=source)
    rep = fast_replace(Message, new_message)
    got, want = rep(m, **changes), dataclasses.replace(m, **changes)
    assert type(got) is Message
    # every field, including the compare=False ones (source, source_field)
    assert [getattr(got, f) for f in _fields] == [getattr(want, f) for f in _fields]
    assert hash(got) == hash(want)


def test_fast_replace_falls_back_without_a_fast_constructor() -> None:
    assert fast_replace(Message, Message) is dataclasses.replace
