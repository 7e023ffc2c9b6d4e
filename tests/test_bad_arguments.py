"""Bad arguments at public entry points: a typed OcmlError with a code and the field, never
a traceback from deep inside, never a silent guess (a bare string split into characters)."""

from __future__ import annotations

import pytest

import encoder
import vocab
from encoder import stops
from encoder.errors import OcmlError
from encoder.interchange import to_interchange
from encoder.stream.batch import batch_decoder


@pytest.fixture(scope="module")
def enc():
    return encoder.Encoder("harmony")


CASES = {
    "tool_call not an object": (lambda e: e.render([{"role": "assistant", "content": "", "tool_call": "x"}]), "tool_call"),
    "render_batch(None)": (lambda e: e.render_batch(None), "conversations"),
    "render_batch(one dict)": (lambda e: e.render_batch({"messages": []}), "conversations"),
    "chunk not an int": (lambda e: e.render_batch([], chunk="a"), "chunk"),
    "chunk 0": (lambda e: e.render_batch([], chunk=0), "chunk"),
    "stop_strings a bare string": (lambda e: e.decoder(stop_strings="abc"), "stop_strings"),
    "stop_ids not ints": (lambda e: e.decoder(stop_ids=["a"]), "stop_ids"),
    "stop_channels an int": (lambda e: e.decoder(stop_channels=5), "stop_channels"),
    "batch step(None)": (lambda e: batch_decoder(e, 2, vectorized=False).step(None), "ids"),
    "stop_ids(None)": (lambda e: stops.stop_ids(None), "enc"),
    "stop_tokens mode a list": (lambda e: stops.stop_tokens(e, []), "mode"),
    "to_interchange ends an int": (lambda e: to_interchange([], ends=5), "ends"),
    "vocab.load(None)": (lambda e: vocab.load(None), "name"),
    "Encoder(5)": (lambda e: encoder.Encoder(5), "format"),
    "Encoder(tokenizer=5)": (lambda e: encoder.Encoder("harmony", tokenizer=5), "tokenizer"),
    "parse_text builtin_tools an int": (
        lambda e: encoder.Encoder("openchatml-2.2").parse_text("---\nversion: 2.2\ngeneration_settings:\n  builtin_tools: 5\n---\n"),
        "generation_settings.builtin_tools"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_argument_is_a_typed_error_naming_the_field(enc, case):
    call, field = CASES[case]
    with pytest.raises(OcmlError) as info:
        call(enc)
    assert info.value.code.startswith("E-") and info.value.field == field, info.value


def test_stop_helpers_take_an_encoding_name_as_tokenizer():
    assert stops.stop_strings("openchatml-2.2", tokenizer="o200k_base") == ["<|return|>", "<|call|>"]


def test_empty_recipient_means_none_on_every_adapter_path(enc):
    """The plain-dict fast path and the general path read the same message."""
    fast = enc.render([{"role": "assistant", "content": "x", "recipient": ""}])
    general = enc.render([{"role": "assistant", "content": "x", "recipient": "", "train": None}])
    assert fast.ids.tolist() == general.ids.tolist()
