"""transformers' ``generate(stopping_criteria=[...])``: a ``StoppingCriteria`` on the format's stops.

``hf_class`` is the one rule for taking a transformers class that may be missing (also used by
``ocml.encoder.stream.hf_streamer``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .ids import stop_ids, stop_strings, tokenizer_of

if TYPE_CHECKING:
    from ocml.vocab import Tokenizer

    from ..codec import Codec

__all__ = ["hf_class", "hf_stopping_criteria"]


def _make_criteria_class(base: type) -> type:
    class OcmlStoppingCriteria(base):  # type: ignore[misc]  # a run-time base: transformers' StoppingCriteria, or object
        """Stops a sequence when its last id is a stop id or its text ends with a stop string.

        With torch, ``__call__(input_ids, scores)`` takes the usual ``LongTensor``
        ``[batch, seq]`` and returns a ``BoolTensor`` ``[batch]`` (transformers >= 4.39).
        Without torch it accepts any ``[batch][seq]`` sequence / numpy array and returns
        a numpy bool array.  Stop strings are matched over the decoded bytes of the
        last ``window`` ids, so a string split over several tokens or ending inside a
        token is found (TGI#1039); the window is the longest stop string in bytes plus one
        token, enough since every token has at least one byte.
        """

        def __init__(self, ids: Sequence[int], strings: Sequence[str], decode_bytes: Any) -> None:
            try:
                super().__init__()
            except TypeError:  # pragma: no cover - odd base classes
                pass
            self.stop_ids = frozenset(int(i) for i in ids)
            self.stop_strings = tuple(s.encode() for s in strings)
            self.window = max((len(s) for s in self.stop_strings), default=0) + 1
            self._decode_bytes = decode_bytes

        def _row(self, row: Sequence[int]) -> bool:
            if not len(row):
                return False
            if int(row[-1]) in self.stop_ids:
                return True
            if self.stop_strings:
                tail = [int(i) for i in row[-self.window:]]
                try:
                    data = self._decode_bytes(tail)
                except Exception:  # invalid ids: decode what can be decoded
                    data = self._decode_bytes([i for i in tail if i not in self.stop_ids and i >= 0])
                last = self._decode_bytes([tail[-1]]) if tail[-1] >= 0 else b""
                for s in self.stop_strings:
                    k = data.rfind(s)
                    # only a match completed by the last token counts (earlier ones fired earlier)
                    if k >= 0 and k + len(s) > len(data) - len(last):
                        return True
            return False

        def __call__(self, input_ids: Any, scores: Any = None, **kwargs: Any) -> Any:
            import numpy as np

            rows = input_ids.tolist() if hasattr(input_ids, "tolist") else input_ids
            done = np.array([self._row(r) for r in rows], dtype=bool)
            if type(input_ids).__module__.startswith("torch"):
                import torch

                return torch.from_numpy(done).to(input_ids.device)
            return done

    return OcmlStoppingCriteria


def hf_class(module: str, name: str, needs_torch: bool) -> type | None:
    """transformers' real ``module.name``, or None where it cannot be used.

    "torch imports" is not enough: ``from transformers import StoppingCriteria`` gives a
    dummy class (its ``__init__`` raises) when transformers decided at import time that
    torch is unavailable, and that decision sticks for the process.  So the class is taken
    from its own module (which imports torch itself) and refused if it is a dummy.
    """
    import importlib

    try:
        if needs_torch:
            import torch  # noqa: F401
        cls = getattr(importlib.import_module(module), name)
    except Exception:
        return None
    if not isinstance(cls, type) or type(cls).__name__ == "DummyObject":
        return None
    return cls


def hf_stopping_criteria(enc: Codec | str, mode: str = "assistant", tokenizer: Tokenizer | None = None) -> Any:
    """A ``transformers.StoppingCriteria`` for ``generate(stopping_criteria=[...])``.

    transformers (and torch) are imported lazily; when either is missing the
    returned object has the same interface on a plain base class, which is handy for
    tests and for samplers that call it with lists or numpy arrays.  In a batch each row
    stops on its own (``generate`` keeps going until every row is done).
    """
    base = hf_class("transformers.generation.stopping_criteria", "StoppingCriteria", needs_torch=True) or object
    cls = _make_criteria_class(base)
    tok = tokenizer_of(enc, tokenizer)
    return cls(stop_ids(enc, mode, tok), stop_strings(enc, mode, tok), tok.decode_bytes)
