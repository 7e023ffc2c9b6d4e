"""The public face's types: the ``Literal`` names a type checker sees match the values the code accepts
(enums and token data are the one home; these tests keep the aliases in step), every exported name
exists, and the package ships ``py.typed``."""

from __future__ import annotations

from importlib import resources
from typing import get_args

import pytest

import ocml
from ocml import encoder, vocab
from ocml.encoder.formats.chatml.fim import FimOrder, FimOrderName
from ocml.encoder.grammar.terminators import StopMode, terminators_of
from ocml.encoder.masks import NAMED_MASKS, MaskName
from ocml.encoder.messages import CotName, CotPolicy, Mode, ModeName
from ocml.encoder.parse import ERROR_MODES, ParseErrors


@pytest.mark.parametrize("alias,values", [
    (ModeName, [m.value for m in Mode]),
    (CotName, [c.value for c in CotPolicy]),
    (MaskName, list(NAMED_MASKS)),
    (FimOrderName, [o.value for o in FimOrder]),
    (ParseErrors, list(ERROR_MODES)),
], ids=["mode", "cot", "mask", "fim-order", "parse-errors"])
def test_literal_names_match_the_values_accepted(alias, values):
    assert sorted(get_args(alias)) == sorted(values)


def test_stop_modes_match_the_token_data():
    named = {mode for name in vocab.FORMAT_NAMES for mode in terminators_of(name).sampler}
    assert named == set(get_args(StopMode))


def test_every_exported_name_exists_and_the_encoder_exports_reach_ocml():
    missing = [n for n in ocml.__all__ if not hasattr(ocml, n)]
    assert missing == []
    assert set(encoder.__all__) <= set(ocml.__all__)


def test_a_misspelt_name_is_an_attribute_error_and_submodules_still_load_on_use():
    with pytest.raises(AttributeError):
        ocml.Encodr  # noqa: B018
    assert ocml.stops.stop_ids(ocml.Encoder("harmony")) == [200002, 200012]
    assert ocml.encoder.stream.__name__ == "ocml.encoder.stream"


def test_the_default_format_is_named_and_used():
    assert ocml.DEFAULT_FORMAT == vocab.DEFAULT_FORMAT in vocab.FORMAT_NAMES
    assert ocml.Encoder().format_name == ocml.DEFAULT_FORMAT


@pytest.mark.parametrize("package", ["ocml", "ocml.encoder", "ocml.vocab"])
def test_the_package_ships_py_typed(package):
    assert resources.files(package).joinpath("py.typed").is_file()
