"""Stops for every format (data-driven), by format name or Encoder, and the HF / vLLM helpers."""

from __future__ import annotations

import numpy as np
import pytest

from ocml import encoder
from ocml import vocab
from ocml.encoder.errors import UnknownNameError
from ocml.encoder.stops import hf_stopping_criteria, stop_ids, stop_strings, stop_tokens, vllm_sampling_kwargs

EXPECTED = {
    "harmony": ("<|return|>", "<|call|>"),
    "openchatml-2.2": ("<|return|>", "<|call|>"),
    "openchatml-2.0": ("<|return|>", "<|call|>"),
    "chatml": ("<|im_end|>", "</s>"),
    "apertus": ("<|assistant_end|>", "<|tools_suffix|>", "</s>"),
    "llama3": ("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"),
}


@pytest.mark.parametrize("fmt", vocab.FORMAT_NAMES)
def test_every_format_has_stops_registered_by_default_and_as_text_in_fallback(fmt):
    assert stop_tokens(fmt) == EXPECTED[fmt]
    assert set(stop_tokens(fmt)) <= set(stop_tokens(fmt, "all"))
    tok = encoder.codec.default_tokenizer(fmt)
    assert stop_ids(fmt) == [tok.control_id(t) for t in EXPECTED[fmt]]
    assert stop_strings(fmt) == []
    base = vocab.load("cl100k_base")  # nothing registered: every stop is text
    missing = [t for t in EXPECTED[fmt] if base.control_id(t) is None]
    assert stop_strings(fmt, tokenizer=base) == missing
    assert vllm_sampling_kwargs(fmt, tokenizer=base) == {
        "stop_token_ids": [base.control_id(t) for t in EXPECTED[fmt] if base.control_id(t) is not None],
        "stop": missing}


def test_harmony_all_mode_adds_end_and_encoder_methods_agree():
    h = encoder.Encoder("harmony")
    assert h.stop_ids("all") == stop_ids("harmony", "all") == [200002, 200012, 200007]
    f = encoder.Encoder("openchatml-2.2", tokenizer="o200k_base")
    assert f.stop_strings("all") == ["<|return|>", "<|call|>", "<|end|>"]


def test_unknown_stop_mode_is_a_typed_error():
    with pytest.raises(UnknownNameError) as info:
        stop_ids("apertus", "everything")
    assert info.value.field == "mode" and "assistant" in info.value.hint


def test_apertus_criteria_by_format_name():
    crit = hf_stopping_criteria("apertus")
    end = stop_ids("apertus")[0]
    assert crit([[5, 6, end], [5, 6, 7]]).tolist() == [True, False]


@pytest.mark.needs_torch
def test_hf_stopping_criteria_with_torch_tensors():
    torch = pytest.importorskip("torch")
    from transformers import StoppingCriteria

    h = encoder.Encoder("harmony")
    crit = hf_stopping_criteria(h)
    assert isinstance(crit, StoppingCriteria)
    ids = torch.tensor([[1, 2, 200002], [1, 2, 3], [4, 5, 200012]], dtype=torch.long)
    out = crit(ids, torch.zeros(3, 10))
    assert out.dtype == torch.bool and out.tolist() == [True, False, True]
    f = encoder.Encoder("openchatml-2.2", tokenizer="o200k_base")
    crit = hf_stopping_criteria(f)
    text = f.tokenizer.encode_text("answer<|return|>")
    rows = torch.tensor([text, f.tokenizer.encode_text("answer<|ret") + [0] * (len(text) - len(f.tokenizer.encode_text("answer<|ret")))])
    assert crit(rows, None).tolist() == [True, False]
    assert np.asarray(crit([text], None)).tolist() == [True]
