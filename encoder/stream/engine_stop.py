"""How an engine's stripped stop ends a stream: ``engine_stop`` (``StreamDecoder.finish``'s reading
of vLLM's ``stop_reason`` / ``eos``).  Re-exported by ``ocml.encoder.stops``; here, below both the
decoder and the HF streamer (``hf_streamer``) that builds decoders, so neither imports the other back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError, InputTypeError

if TYPE_CHECKING:
    from ..codec import Codec

__all__ = ["EngineStop", "engine_stop"]


@dataclass(frozen=True, slots=True)
class EngineStop:
    """Why an engine ended a stream whose stop it stripped (``engine_stop``), one of:

    ``ids``: the stripped control, as the ids the model generated (its id, or its spelling
    in fallback mode): the decoder reads them as if they had been streamed; ``stop_id``:
    an id that is no control of the format (``<|endoftext|>``, a user stop id): the stream
    ends there (a message still open is truncated, ``finish_reason`` ``stop``);
    ``string``: a user stop string: the open message is cut there on purpose.
    """

    ids: tuple[int, ...] = ()
    stop_id: int | None = None
    string: str | None = None


def engine_stop(enc: Codec, stop_reason: int | str | None = None, *, eos: bool = False,
                stop_controls: Mapping[str, str] | None = None, in_call: bool = False) -> EngineStop:
    """What ``finish(stop_reason=..., eos=...)`` means for ``enc`` (see ``EngineStop``).

    ``stop_reason``: the engine's matched stop - vLLM's ``CompletionOutput.stop_reason``
    (an id of ``stop_token_ids`` or a string of ``stop``), a stop id, or a control's
    spelling.  ``eos=True`` (the engine stopped on the tokenizer's end of sequence and
    stripped it; vLLM: ``finish_reason == "stop"`` with ``stop_reason`` None): the format's
    turn end - its tool-call stop (``<|call|>``, Apertus ``<|tools_suffix|>``) when
    ``in_call`` (the stream is inside a tool call), else its first stop control
    (``<|return|>``, ``<|im_end|>``, ``<|assistant_end|>``).  ``stop_controls``: the
    decoder's control -> stop reason map (default: the format's for an assistant turn).
    """
    stops = enc.format.stop_reasons("assistant") if stop_controls is None else stop_controls
    if eos is not True and eos is not False:
        raise InputTypeError(f"eos must be True or False, got {eos!r}", field="eos")
    if eos:
        if stop_reason is not None:
            raise InputError("give stop_reason or eos=True, not both", field="eos",
                             hint="eos=True means the engine stopped on the end-of-sequence token and stripped it")
        call = [c for c, r in stops.items() if r == "call"]
        stop_reason = call[0] if in_call and call else next(iter(stops))
    tok = enc.tokenizer
    table = enc.format.table
    controls = set(table.controls) | set(table.markers)
    if isinstance(stop_reason, str) and stop_reason:
        if stop_reason in controls:
            i = tok.control_id(stop_reason)
            return EngineStop(ids=(i,) if i is not None else tuple(tok.encode_text(stop_reason)))
        return EngineStop(string=stop_reason)
    if isinstance(stop_reason, Integral) and not isinstance(stop_reason, (bool, np.bool_)):
        i = int(stop_reason)
        if not 0 <= i < tok.n_vocab:
            raise InputError(f"stop_reason {i} is not an id of {tok.name}", code="E-VOCAB-ID", field="stop_reason")
        name = tok.special_ids.get(i)
        if name is not None and name in controls and name not in enc.format.text_controls:
            return EngineStop(ids=(i,))
        return EngineStop(stop_id=i)
    raise InputTypeError(f"stop_reason must be a stop id, a stop string or None, got {stop_reason!r}",
                         field="stop_reason", hint="e.g. finish(stop_reason=output.stop_reason) with vLLM, "
                         "or finish(eos=True) when the engine stopped on its end-of-sequence token")
