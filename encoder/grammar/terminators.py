"""Stop and terminator tables: every one built here from the token data, nowhere else.

The facts are data (``encoder/formats/<pkg>/<format>.tokens.json``, read by ``ocml.vocab.control_table``):

- ``end_reasons``: each control that ends a message or turn, and the reason it gives
  (``MessageEnd.reason``; ``Stop.reason`` when a stream stops there): ``<|return|>`` ->
  ``return``, ``<|call|>`` -> ``call``, ``<|end|>`` -> ``end``, ChatML ``</s>`` -> ``eos``...;
- ``stops``: what a sampler stops on, per stop mode (``assistant``, ``all``, ChatML ``fim``);
- ``stream_stops``: where a stream decoder read as a role stops, for a role whose stops are
  not ``stops["assistant"]`` (ChatML ``fim``: a middle may also end at ``<|im_end|>``).

The tables (``Terminators``): the sampler's stop controls per mode (``ocml.encoder.stops``),
the stream decoder's stop controls per role with their reasons (``Format.stop_reasons``:
stream decoder, ``to_openai``, ``engine_stop``, the ChatML frame machine), the frame
machine's terminators (``FrameMachine``: every ``end_reasons`` control), and the control a
renderer writes for a reason (``Format.end_token``: ``<|call|>``, ``<|return|>``, ``<|end|>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Literal

from ocml.vocab import FORMAT_NAMES, UnknownNameError, canonical_format, control_table

#: ``mode=`` of ``stop_ids`` / ``stop_strings``: the stop modes the token tables name (``fim``: ChatML
#: only; tests/house/test_public_types.py keeps this in step with the data)
StopMode = Literal["assistant", "all", "fim"]

#: the mode whose stops a stream decoder uses for a role the data does not name
DEFAULT_STOP_MODE = "assistant"


@dataclass(frozen=True)
class Terminators:
    """One format's stop and terminator tables (read-only mappings, built once per format)."""

    format: str
    #: control -> reason, for every control that ends a message or turn (the frame machine's terminators)
    reasons: Mapping[str, str]
    #: stop mode (``StopMode``) -> the controls a sampler stops on
    sampler: Mapping[str, tuple[str, ...]]
    #: role -> control -> reason: where a stream read as that role stops (roles the data names)
    roles: Mapping[str, Mapping[str, str]]
    #: control -> reason: where a stream read as any other role stops (``stops["assistant"]``)
    default: Mapping[str, str]
    _by_reason: Mapping[str, str] = field(repr=False)

    def __reduce__(self) -> tuple[object, tuple[str]]:
        # read-only views do not pickle; the tables are the data's, so a copy is the shared instance
        return terminators_of, (self.format,)

    def sampler_stops(self, mode: str) -> tuple[str, ...]:
        """The controls a sampler stops on in ``mode`` (an unknown mode is a usage error)."""
        if not isinstance(mode, str) or mode not in self.sampler:
            raise UnknownNameError(f"unknown stop mode {mode!r}", field="mode",
                                   hint="one of: " + ", ".join(self.sampler))
        return self.sampler[mode]

    def stream_stops(self, role: str | None) -> Mapping[str, str]:
        """The controls after which a stream read as ``role`` stops -> ``Stop.reason``; the first
        is the turn's end (what an engine's stripped end of sequence stands for)."""
        got = self.roles.get(role) if role is not None else None
        return self.default if got is None else got

    def control_for(self, reason: str) -> str | None:
        """The one control that ends a message with ``reason`` (None: the format has none)."""
        return self._by_reason.get(reason)


def _with_reasons(name: str, reasons: Mapping[str, str], controls: tuple[str, ...], where: str) -> Mapping[str, str]:
    missing = [c for c in controls if c not in reasons]
    if missing:  # a stop without a reason would give Stop(reason=None): a data error, said early
        raise ValueError(f"{name}.json: {where} {missing} have no end_reasons entry")
    return MappingProxyType({c: reasons[c] for c in controls})


@lru_cache(maxsize=None)
def terminators_of(format_name: str) -> Terminators:
    """The tables of ``format_name`` (any spelling ``canonical_format`` accepts)."""
    name = canonical_format(format_name)
    t = control_table(name)
    reasons = MappingProxyType(dict(t.end_reasons))
    counts: dict[str, int] = {}
    for r in reasons.values():
        counts[r] = counts.get(r, 0) + 1
    # a reason given by one control only names it (what the renderer writes for that reason)
    by_reason = MappingProxyType({r: c for c, r in reasons.items() if counts[r] == 1})
    roles = MappingProxyType({role: _with_reasons(name, reasons, cs, f"stream_stops[{role!r}]")
                              for role, cs in t.stream_stops.items()})
    default = _with_reasons(name, reasons, t.stops.get(DEFAULT_STOP_MODE, ()), f"stops[{DEFAULT_STOP_MODE!r}]")
    return Terminators(name, reasons, MappingProxyType(dict(t.stops)), roles, default, by_reason)


@lru_cache(maxsize=None)
def start_frame_terminators() -> Mapping[str, str]:
    """The terminators of the formats whose frames open with ``<|start|>`` (Harmony, OpenChatML
    2.x): the generic ``FrameMachine``'s default.  Their data must agree."""
    tables = {n: terminators_of(n).reasons for n in FORMAT_NAMES if "<|start|>" in control_table(n).controls}
    first = next(iter(tables.values()))
    for n, reasons in tables.items():
        if dict(reasons) != dict(first):
            raise ValueError(f"{n}.json: end_reasons {dict(reasons)} differ from the other <|start|> formats'")
    return first


__all__ = ["DEFAULT_STOP_MODE", "Terminators", "start_frame_terminators", "terminators_of"]
