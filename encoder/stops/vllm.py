"""vLLM's stop arguments: ``SamplingParams(**vllm_sampling_kwargs(enc))``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ids import stop_ids, stop_strings

if TYPE_CHECKING:
    from ocml.vocab import Tokenizer

    from ..codec import Codec

__all__ = ["vllm_sampling_kwargs"]


def vllm_sampling_kwargs(enc: Codec | str, mode: str = "assistant",
                         tokenizer: Tokenizer | None = None) -> dict[str, Any]:
    """``SamplingParams(**kw)`` fields: ``stop_token_ids`` and ``stop`` (strings).

    The stop strings only exist in fallback mode; vLLM trims them from the output
    unless ``include_stop_str_in_output=True``.
    """
    return {"stop_token_ids": stop_ids(enc, mode, tokenizer), "stop": stop_strings(enc, mode, tokenizer)}
