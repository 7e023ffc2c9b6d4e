"""The hand-written constructors of the hot frozen dataclasses (``new_message``, ``Message.with_``,
``new_delta``, the scanner's ``_new_text``) give exactly what the dataclass gives: every field (the
``compare=False`` ones too), equality, hash, repr, frozenness, pickling."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocml.encoder.events import Delta, new_delta
from ocml.encoder.messages import Message, new_message
from ocml.encoder.stream.scanner.atoms import Text, _new_text

_opt = st.none() | st.text(max_size=5)
_fields = [f.name for f in dataclasses.fields(Message)]


def _same(got: object, want: object) -> None:
    assert type(got) is type(want)
    names = [f.name for f in dataclasses.fields(want)]  # type: ignore[arg-type]
    assert [getattr(got, n) for n in names] == [getattr(want, n) for n in names]
    assert got == want and hash(got) == hash(want) and repr(got) == repr(want)
    assert pickle.loads(pickle.dumps(got)) == want
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(got, names[0], None)


def test_new_message_has_the_dataclass_signature() -> None:
    """Same parameter names, order and defaults as ``Message.__init__`` (a field added to the
    dataclass must be added to ``new_message`` and ``with_`` too)."""
    want = [(p.name, p.default) for p in list(inspect.signature(Message).parameters.values())]
    got = [(p.name, p.default) for p in inspect.signature(new_message).parameters.values()]
    assert got == want
    assert [p for p in inspect.signature(Message.with_).parameters][1:] == _fields


@given(args=st.tuples(st.text(min_size=1, max_size=5), st.text(max_size=8), _opt, _opt, _opt, _opt, _opt, _opt, _opt,
                      st.none() | st.tuples(st.text(max_size=3)), st.none(), st.none() | st.booleans(),
                      st.none() | st.integers(0, 9), _opt))
def test_new_message_equals_the_dataclass(args: tuple) -> None:
    _same(new_message(*args), Message(*args))
    _same(new_message(args[0]), Message(args[0]))


@given(role=st.text(min_size=1, max_size=5), content=st.text(max_size=8), channel=_opt, recipient=_opt,
       call_id=_opt, source=st.none() | st.integers(0, 9), changes=st.dictionaries(
           st.sampled_from(["role", "channel", "call_id", "intent", "recipient", "source", "source_field", "train"]),
           _opt, max_size=3))
def test_with_equals_dataclasses_replace(role: str, content: str, channel: str | None, recipient: str | None,
                                         call_id: str | None, source: int | None,
                                         changes: dict[str, str | None]) -> None:
    m = Message(role=role, content=content, channel=channel, recipient=recipient, call_id=call_id, source=source)
    _same(m.with_(**changes), dataclasses.replace(m, **changes))


def test_with_refuses_an_unknown_field() -> None:
    with pytest.raises(TypeError):
        Message("user").with_(colour="red")  # type: ignore[call-arg]


@given(text=st.text(max_size=5), channel=_opt, visible=st.booleans(), index=st.integers(0, 99))
def test_delta_and_text_equal_the_dataclass(text: str, channel: str | None, visible: bool, index: int) -> None:
    _same(new_delta(text, channel, visible), Delta(text, channel, visible))
    _same(_new_text(text, index), Text(text, index))
