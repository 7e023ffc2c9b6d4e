"""Bad arguments at public entry points: a typed OcmlError with a code and the field, never
a traceback from deep inside, never a silent guess (a bare string split into characters)."""

from __future__ import annotations

import pytest

from ocml import encoder
from ocml import vocab
from ocml.encoder import stops
from ocml.encoder.errors import OcmlError
from ocml.encoder.interchange import to_interchange
from ocml.encoder.stream.batch import batch_decoder


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


# --- vocab entry points (issue 8): every public Tokenizer / vocab call, both backends -----------
# (code, field, position) expected; a bad id is E-VOCAB-ID at its position, never another token.

import numpy as np  # noqa: E402

def _tiny_hf():
    import tokenizers

    from tokenizers import models, pre_tokenizers

    raw = tokenizers.Tokenizer(models.BPE(vocab={c: i for i, c in enumerate("abcdefgh")}, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return vocab.from_hf(raw, register="openchatml-2.0")


_HF: list = []


def _backend(name):
    if name == "tiktoken":
        return vocab.load("o200k_base")  # ids 199998 and 200000..200017 are holes
    if not _HF:
        _HF.append(_tiny_hf())
    return _HF[0]


VOCAB_CASES = {
    "decode([1.5])": (lambda t: t.decode([1.5]), "E-INPUT-TYPE", "ids", 0),
    "decode('abc')": (lambda t: t.decode("abc"), "E-INPUT-TYPE", "ids", None),
    "decode(None)": (lambda t: t.decode(None), "E-INPUT-TYPE", "ids", None),
    "decode([1, None])": (lambda t: t.decode([1, None]), "E-INPUT-TYPE", "ids", 1),
    "decode float array": (lambda t: t.decode(np.array([1.0])), "E-INPUT-TYPE", "ids", None),
    "decode 2-D array": (lambda t: t.decode(np.zeros((1, 2), dtype=np.int32)), "E-INPUT-TYPE", "ids", None),
    "decode([-1])": (lambda t: t.decode([-1]), "E-VOCAB-ID", "ids", 0),
    "decode([1, -2])": (lambda t: t.decode([1, -2]), "E-VOCAB-ID", "ids", 1),
    "decode([n_vocab])": (lambda t: t.decode([1, 2, t.n_vocab]), "E-VOCAB-ID", "ids", 2),
    "decode([2**70])": (lambda t: t.decode([2 ** 70]), "E-VOCAB-ID", "ids", 0),
    "decode int32 array with -1": (lambda t: t.decode(np.array([1, -1], dtype=np.int32)), "E-VOCAB-ID", "ids", 1),
    "decode_bytes tuple with -5": (lambda t: t.decode_bytes((1, 2, -5)), "E-VOCAB-ID", "ids", 2),
    "token_bytes('a')": (lambda t: t.token_bytes("a"), "E-INPUT-TYPE", "token_id", None),
    "token_bytes(1.0)": (lambda t: t.token_bytes(1.0), "E-INPUT-TYPE", "token_id", None),
    "token_bytes(-1)": (lambda t: t.token_bytes(-1), "E-VOCAB-ID", "token_id", None),
    "token_bytes(n_vocab)": (lambda t: t.token_bytes(t.n_vocab), "E-VOCAB-ID", "token_id", None),
    "encode_text(5)": (lambda t: t.encode_text(5), "E-INPUT-TYPE", "text", None),
    "encode_text(b'x')": (lambda t: t.encode_text(b"x"), "E-INPUT-TYPE", "text", None),
    "encode_text_array(5)": (lambda t: t.encode_text_array(5), "E-INPUT-TYPE", "text", None),
    "encode_continuation(5)": (lambda t: t.encode_continuation(5), "E-INPUT-TYPE", "text", None),
    "encode_batch('ab')": (lambda t: t.encode_batch("ab"), "E-INPUT-TYPE", "texts", None),
    "encode_batch([1])": (lambda t: t.encode_batch(["a", 1]), "E-INPUT-TYPE", "texts", None),
    "control_id(5)": (lambda t: t.control_id(5), "E-INPUT-TYPE", "token", None),
    "to_hf(eos_token=5)": (lambda t: t.to_hf(eos_token=5), "E-INPUT-TYPE", "eos_token", None),
    "to_hf(pad_token unknown)": (lambda t: t.to_hf(pad_token="<|nope|>"), "E-UNKNOWN-NAME", "pad_token", None),
}


@pytest.mark.parametrize("backend", ["tiktoken", "hf"])
@pytest.mark.parametrize("case", list(VOCAB_CASES))
def test_vocab_bad_argument_names_field_and_position(backend, case):
    call, code, field, position = VOCAB_CASES[case]
    tok = _backend(backend)
    with pytest.raises(OcmlError) as info:
        call(tok)
    err = info.value
    assert (err.code, err.field, err.position) == (code, field, position), err


def test_vocab_hole_ids_are_errors_not_tokens():
    tok = vocab.load("o200k_base")
    for hole in (199998, 200000, 200017):
        with pytest.raises(OcmlError) as info:
            tok.decode([9906, hole])
        assert info.value.code == "E-VOCAB-ID" and info.value.position == 1
    assert tok.decode([200018]) == "<|endofprompt|>"  # a real special still decodes


LOAD_CASES = {
    "load(register=5)": (lambda: vocab.load("o200k_base", register=5), "E-INPUT-TYPE", "register"),
    "load(register=[.., 5])": (lambda: vocab.load("o200k_base", register=["chatml", 5]), "E-INPUT-TYPE", "register"),
    "load(register unknown)": (lambda: vocab.load("o200k_base", register="chatml-9"), "E-UNKNOWN-NAME", "register"),
    "from_hf(5)": (lambda: vocab.from_hf(5), "E-INPUT-TYPE", "obj"),
    "from_hf(register=5)": (lambda: vocab.from_hf(_tiny_hf().backend, register=5), "E-INPUT-TYPE", "register"),
    "from_hf(name=5)": (lambda: vocab.from_hf(_tiny_hf().backend, name=5), "E-INPUT-TYPE", "name"),
}


@pytest.mark.parametrize("case", list(LOAD_CASES))
def test_vocab_loaders_name_the_argument(case):
    call, code, field = LOAD_CASES[case]
    with pytest.raises(OcmlError) as info:
        call()
    assert (info.value.code, info.value.field) == (code, field), info.value


# -- one value's pathology (issue 25): depth, huge integers, NaN -> E-INPUT-DEPTH / E-INPUT-NUMBER ------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ocml.encoder.adapters import to_conversation  # noqa: E402
from ocml.encoder.jsonlimits import MAX_DEPTH  # noqa: E402

PATHOLOGY_FORMATS = ["openchatml-2.2", "openchatml-2.0", "harmony", "chatml", "apertus"]
_TOOL = {"type": "function", "function": {"name": "get", "parameters": {"type": "object"}}}


def _nested(depth, leaf=1, kind="list"):
    v = leaf
    for _ in range(depth):
        v = [v] if kind == "list" else {"a": v}
    return v


def _with_args(args, tools=(_TOOL,), content=None):
    conv = {"messages": [{"role": "user", "content": "where?"},
                         {"role": "assistant", "content": content,
                          "tool_calls": [{"type": "function", "function": {"name": "get", "arguments": args}}]}]}
    if tools is not None:
        conv["tools"] = tools if isinstance(tools, str) else list(tools)
    return conv


def _with_schema(params):
    return {"messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "get", "parameters": params}}]}


BIG_TEXT = "9" * 5000
#: name -> (conversation, code); the same in every format and at every entry point
PATHOLOGIES = {
    "arguments dict nested 3,000 deep": (_with_args(_nested(3000, kind="dict")), "E-INPUT-DEPTH"),
    "arguments dict nested MAX_DEPTH + 1": (_with_args(_nested(MAX_DEPTH + 1, kind="dict")), "E-INPUT-DEPTH"),
    "arguments text nested 3,000 deep": (_with_args('{"a": ' + "[" * 3000 + "]" * 3000 + "}"), "E-INPUT-DEPTH"),
    "arguments dict with a 5,000-digit int": (_with_args({"n": 10 ** 4999}), "E-INPUT-NUMBER"),
    "arguments text with a 5,000-digit int": (_with_args('{"n": ' + BIG_TEXT + "}"), "E-INPUT-NUMBER"),
    "arguments dict with NaN": (_with_args({"lat": float("nan")}), "E-INPUT-NUMBER"),
    "arguments dict with -Infinity": (_with_args({"lat": float("-inf")}), "E-INPUT-NUMBER"),
    "arguments text with NaN": (_with_args('{"lat": NaN}'), "E-INPUT-NUMBER"),
    "arguments text with Infinity": (_with_args('{"lat": Infinity}'), "E-INPUT-NUMBER"),
    "schema nested 3,000 deep": (_with_schema({"type": "object", "x": _nested(3000, kind="dict")}), "E-INPUT-DEPTH"),
    "schema with a 5,000-digit int": (_with_schema({"type": "integer", "maximum": 10 ** 4999}), "E-INPUT-NUMBER"),
    "schema with NaN": (_with_schema({"type": "number", "default": float("nan")}), "E-INPUT-NUMBER"),
    "tools text with a 5,000-digit int": (
        {**_with_schema({}), "tools": '[{"type": "function", "function": {"name": "g", "parameters": '
                                      '{"maximum": ' + BIG_TEXT + "}}}]"}, "E-INPUT-NUMBER"),
    "tools text nested 3,000 deep": ({**_with_schema({}), "tools": "[" * 3000 + "]" * 3000}, "E-INPUT-DEPTH"),
    "messages text nested 3,000 deep": ({"messages": "[" * 3000 + "]" * 3000}, "E-INPUT-DEPTH"),
    "messages text with a 5,000-digit int": ({"messages": '[{"role": "user", "content": ' + BIG_TEXT + "}]"},
                                             "E-INPUT-NUMBER"),
    "conversation text nested 3,000 deep": ("[" * 3000 + "]" * 3000, "E-INPUT-DEPTH"),
}
ENTRY_POINTS = {
    "render": lambda e, c: e.render(c),
    "render_batch": lambda e, c: e.render_batch([c]),
    "render_batch collect": lambda e, c: _raise_collected(e.render_batch([{"messages": []}, c], errors="collect")),
    "to_text": lambda e, c: e.to_text(c),
    "to_conversation": lambda e, c: to_conversation(c),
}


def _raise_collected(batch):
    assert [i for i, _ in batch.errors] == [1]
    raise batch.errors[0][1]


@pytest.fixture(scope="module")
def encoders():
    return {f: encoder.Encoder(f) for f in PATHOLOGY_FORMATS}


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize("fmt", PATHOLOGY_FORMATS)
def test_a_pathological_value_is_a_typed_error_in_every_format(encoders, fmt, entry):
    failures = []
    for name, (conv, code) in PATHOLOGIES.items():
        try:
            ENTRY_POINTS[entry](encoders[fmt], conv)
            failures.append(f"{name}: no error")
        except OcmlError as exc:
            if exc.code != code:
                failures.append(f"{name}: {exc.code}")
            elif len(str(exc)) > 600:
                failures.append(f"{name}: a {len(str(exc))}-character message")
        except BaseException as exc:  # noqa: BLE001 - the point: nothing untyped escapes
            failures.append(f"{name}: {type(exc).__name__}")
    assert not failures, failures


@pytest.mark.parametrize("fmt", PATHOLOGY_FORMATS)
def test_values_at_the_depth_limit_render(encoders, fmt):
    enc = encoders[fmt]
    enc.render(_with_args(_nested(MAX_DEPTH, kind="dict")))
    enc.render(_with_schema(_nested(MAX_DEPTH - 1, leaf={"type": "object"}, kind="dict")))


#: (value, its JSON text as a careless writer would give it): huge ints, non-finite floats, plain values
_leaves = st.one_of(st.integers(4301, 6000).map(lambda n: (7 * (10 ** n - 1) // 9, "7" * n)),
                    st.sampled_from([(float("nan"), "NaN"), (float("inf"), "Infinity"), (float("-inf"), "-Infinity")]),
                    st.integers(-5, 5).map(lambda i: (i, str(i))), st.sampled_from([("x", '"x"'), (None, "null")]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fmt=st.sampled_from(PATHOLOGY_FORMATS), depth=st.integers(0, 2500), kind=st.sampled_from(["list", "dict"]),
       leaf=_leaves, where=st.sampled_from(["args", "args-text", "schema", "tools-text", "messages-text"]))
def test_random_nesting_and_numbers_never_escape_untyped(encoders, fmt, depth, kind, leaf, where):
    """Whatever the depth (0-2,500) and the leaf, rendering is a result or an ``OcmlError``; past
    ``MAX_DEPTH`` in what ocml walks (arguments, schemas) it is always ``E-INPUT-DEPTH`` /
    ``E-INPUT-NUMBER``, and a bad number there always fails."""
    value, leaf_text = leaf
    nested = _nested(depth, value, kind)
    text = ("[" * depth + leaf_text + "]" * depth if kind == "list"
            else '{"a": ' * depth + leaf_text + "}" * depth)
    conv = {"args": lambda: _with_args({"v": nested}),
            "args-text": lambda: _with_args('{"v": ' + text + "}"),
            "schema": lambda: _with_schema({"type": "object", "v": nested}),
            "tools-text": lambda: {**_with_schema({}), "tools": '[{"name": "g", "parameters": {"v": ' + text + "}}]"},
            "messages-text": lambda: {"messages": '[{"role": "user", "content": "x", "v": ' + text + "}]"},
            }[where]()
    walked = where != "messages-text"  # arguments and schemas are walked and written as JSON
    bad = depth + 1 > MAX_DEPTH or leaf_text in ("NaN", "Infinity", "-Infinity") or len(leaf_text) > 4300
    try:
        encoders[fmt].render(conv)
    except OcmlError as exc:
        if walked and bad:
            assert exc.code in ("E-INPUT-DEPTH", "E-INPUT-NUMBER"), exc
    except BaseException as exc:  # noqa: BLE001
        pytest.fail(f"{type(exc).__name__} escaped: {str(exc)[:200]}")
    else:
        assert not (walked and bad), "a value past the limits rendered"
