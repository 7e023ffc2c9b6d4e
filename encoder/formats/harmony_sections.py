"""Harmony system/developer message bodies, byte for byte as openai-harmony 0.0.8.

This module builds the *text* that openai-harmony writes between
``<|message|>`` and ``<|end|>`` for a ``SystemContent`` or a
``DeveloperContent`` (openai-harmony encodes that whole text as one piece).

Data model: frozen dataclasses mirroring openai-harmony's pydantic models,
with ``from_dict`` reading the shape of openai-harmony's ``to_json()`` content
items and ``to_dict`` writing it back.  One deliberate difference in that
shape: openai-harmony's ``to_dict`` drops ``None`` fields, so a
``model_identity=None`` system content does not survive its own
``to_dict``/``from_dict`` round trip (a missing key means "pydantic default").
Our ``to_dict`` writes an explicit ``null`` for fields whose default is not
``None`` (``model_identity``, ``reasoning_effort``, ``knowledge_cutoff``,
``channel_config``), which openai-harmony reads back correctly too, and omits
the rest when ``None``.

Layout rules (see shared/reference/harmony.md sections 6-8):

* system body: sections joined with a blank line, empty ones omitted:
  identity / ``Knowledge cutoff: ...`` / ``Current date: ...`` (one per line),
  ``Reasoning: low|medium|high``, the tools section, then
  ``# Valid channels: a, b.`` (+ `` Channel must be included for every
  message.`` if required, + a line routing function calls to
  ``commentary`` when the conversation has function tools);
* developer body: ``# Instructions``, the instructions, the tools section;
* tools section: ``# Tools`` then one block per namespace in *key* order
  (a ``BTreeMap``), each rendered with ``ToolNamespace.name``.

The built-in ``browser``/``python`` namespace texts are not part of ocml:
:func:`builtin_namespace` asks openai-harmony for them at run time.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ocml.encoder.formats.harmony_schema import json_schema_to_typescript, rust_lines
from ocml.encoder.sections import SECTIONS, content_key
from ocml.vocab.errors import DependencyError, InputError, UnknownNameError

__all__ = [
    "DEFAULT_MODEL_IDENTITY",
    "DEFAULT_KNOWLEDGE_CUTOFF",
    "DEFAULT_CHANNELS",
    "ReasoningEffort",
    "ToolDescription",
    "ToolNamespace",
    "ChannelConfig",
    "SystemContent",
    "DeveloperContent",
    "parse_reasoning_effort",
    "system_text",
    "developer_text",
    "tail_field",
    "tools_section",
    "namespace_block",
    "builtin_namespace",
]

ReasoningEffort = Literal["low", "medium", "high"]

DEFAULT_MODEL_IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."
DEFAULT_KNOWLEDGE_CUTOFF = "2024-06"
DEFAULT_CHANNELS: tuple[str, ...] = ("analysis", "commentary", "final")

_EFFORTS: dict[str, str] = {"low": "low", "medium": "medium", "high": "high"}
# openai-harmony's enum values ("Low", "Medium", "High")
_EFFORT_WIRE: dict[str, str] = {"low": "Low", "medium": "Medium", "high": "High"}

_MISSING: Any = object()


# ---------------------------------------------------------------------------
# input helpers
# ---------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return type(value).__name__


def _need_str(value: Any, field_name: str, *, optional: bool) -> str | None:
    if value is None and optional:
        return None
    if isinstance(value, str):
        return value
    raise InputError(
        f"expected {'a string or null' if optional else 'a string'}, got {_type_name(value)}",
        field=field_name,
        hint="pass text as a JSON string" + (" (or null to omit it)" if optional else ""),
    )


def _need_mapping(value: Any, field_name: str, what: str) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    raise InputError(
        f"{what} must be a mapping, got {_type_name(value)}",
        field=field_name,
        hint=f"pass {what} as a JSON object",
    )


def parse_reasoning_effort(value: Any, field_name: str = "reasoning_effort") -> str | None:
    """Normalize a reasoning effort to ``'low' | 'medium' | 'high' | None``.

    Accepts any capitalisation (``"Low"``, ``"low"``, ``"LOW"``) and
    openai-harmony's ``ReasoningEffort`` enum members.
    """
    if value is None:
        return None
    raw = getattr(value, "value", value)  # Enum members (str or not)
    if isinstance(raw, str):
        effort = _EFFORTS.get(raw.strip().lower())
        if effort is not None:
            return effort
    raise InputError(
        f"unknown reasoning effort {value!r}",
        field=field_name,
        hint="use 'low', 'medium' or 'high' (any case), or null to omit the line",
    )


_ATOMS = (str, int, float, bool, type(None))


def _copy_json(value: Any) -> Any:
    """``copy.deepcopy`` for JSON data (dicts, lists, atoms) at a fraction of its cost (no memo);
    anything else is handed to ``copy.deepcopy``."""
    t = type(value)
    if t is dict:
        return {k: v if type(v) in _ATOMS else _copy_json(v) for k, v in value.items()}
    if t is list:
        return [v if type(v) in _ATOMS else _copy_json(v) for v in value]
    if t in _ATOMS:
        return value
    return copy.deepcopy(value)


# ---------------------------------------------------------------------------
# data model
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolDescription:
    """One tool of a namespace: ``type {name} = (_: {TS}) => any;``.

    ``parameters`` is a JSON Schema dict (or ``None`` for ``() => any``).  It
    is not deep-frozen; do not mutate it after construction.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        _need_str(self.name, "name", optional=False)
        _need_str(self.description, "description", optional=False)
        if self.parameters is not None and not isinstance(self.parameters, dict):
            raise InputError(
                f"tool parameters must be a JSON Schema object, got {_type_name(self.parameters)}",
                field="parameters",
                hint="pass a dict such as {'type': 'object', 'properties': {...}} or None",
            )

    @classmethod
    def from_dict(cls, d: Any, *, field_prefix: str = "") -> ToolDescription:
        where = field_prefix or "tool"
        d = _need_mapping(d, where, "a tool description")
        name = d.get("name")
        if name is None:
            raise InputError(
                "tool description has no name",
                field=f"{where}.name" if field_prefix else "name",
                hint="every tool needs a 'name' (the identifier in 'type NAME = ...')",
            )
        name = _need_str(name, f"{where}.name", optional=False)
        desc = d.get("description", "")
        desc = _need_str(desc, f"{where}.description", optional=True) or ""
        params = d.get("parameters")
        if params is not None and not isinstance(params, Mapping):
            raise InputError(
                f"tool parameters must be a JSON Schema object, got {_type_name(params)}",
                field=f"{where}.parameters",
                hint="pass a JSON object such as {'type': 'object', 'properties': {...}} or null",
            )
        return cls(
            name=name,  # type: ignore[arg-type]
            description=desc,
            parameters=None if params is None else _copy_json(dict(params)),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.parameters is not None:
            out["parameters"] = _copy_json(self.parameters)
        return out


@dataclass(frozen=True, slots=True)
class ToolNamespace:
    """A tool namespace (``## name`` block); harmony's ``ToolNamespaceConfig``."""

    name: str
    description: str | None = None
    tools: tuple[ToolDescription, ...] = ()

    def __post_init__(self) -> None:
        _need_str(self.name, "name", optional=False)
        _need_str(self.description, "description", optional=True)
        if not isinstance(self.tools, tuple):
            object.__setattr__(self, "tools", tuple(self.tools))
        for i, tool in enumerate(self.tools):
            if not isinstance(tool, ToolDescription):
                raise InputError(
                    f"tool {i} is a {_type_name(tool)}, not a ToolDescription",
                    field=f"tools[{i}]",
                    hint="use ToolNamespace.from_dict for plain dicts",
                )

    @classmethod
    def from_dict(
        cls, d: Any, *, key: str | None = None, field_prefix: str = ""
    ) -> ToolNamespace:
        """Read ``{"name", "description"?, "tools": [...]}``.

        ``key`` (the map key in ``tools``) is used as the name when ``name``
        is missing.
        """
        where = field_prefix or "namespace"
        d = _need_mapping(d, where, "a tool namespace")
        name = d.get("name", key)
        if name is None:
            raise InputError(
                "tool namespace has no name",
                field=f"{where}.name" if field_prefix else "name",
                hint="give the namespace a 'name' (e.g. 'functions')",
            )
        name = _need_str(name, f"{where}.name", optional=False)
        desc = _need_str(d.get("description"), f"{where}.description", optional=True)
        raw_tools = d.get("tools", ())
        if raw_tools is None:
            raw_tools = ()
        if isinstance(raw_tools, (str, bytes)) or not isinstance(raw_tools, Sequence):
            raise InputError(
                f"namespace tools must be a list, got {_type_name(raw_tools)}",
                field=f"{where}.tools",
                hint="pass a JSON array of {'name', 'description', 'parameters'} objects",
            )
        tools = tuple(
            t
            if isinstance(t, ToolDescription)
            else ToolDescription.from_dict(t, field_prefix=f"{where}.tools[{i}]")
            for i, t in enumerate(raw_tools)
        )
        return cls(name=name, description=desc, tools=tools)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = self.description
        out["tools"] = [t.to_dict() for t in self.tools]
        return out


@dataclass(frozen=True, slots=True)
class ChannelConfig:
    """Valid channels listed in the system message."""

    valid_channels: tuple[str, ...]
    channel_required: bool

    def __post_init__(self) -> None:
        if not isinstance(self.valid_channels, tuple):
            object.__setattr__(self, "valid_channels", tuple(self.valid_channels))
        for i, ch in enumerate(self.valid_channels):
            _need_str(ch, f"valid_channels[{i}]", optional=False)
        if not isinstance(self.channel_required, bool):
            raise InputError(
                f"channel_required must be a boolean, got {_type_name(self.channel_required)}",
                field="channel_required",
                hint="use true or false",
            )

    @classmethod
    def require_channels(cls, channels: Sequence[str]) -> ChannelConfig:
        return cls(valid_channels=tuple(channels), channel_required=True)

    @classmethod
    def from_dict(cls, d: Any, *, field_prefix: str = "channel_config") -> ChannelConfig:
        d = _need_mapping(d, field_prefix, "channel_config")
        channels = d.get("valid_channels", _MISSING)
        if channels is _MISSING or isinstance(channels, (str, bytes)) or not isinstance(
            channels, Sequence
        ):
            raise InputError(
                "channel_config.valid_channels must be a list of channel names",
                field=f"{field_prefix}.valid_channels",
                hint='e.g. {"valid_channels": ["analysis", "commentary", "final"], '
                '"channel_required": true}',
            )
        required = d.get("channel_required", _MISSING)
        if not isinstance(required, bool):
            raise InputError(
                "channel_config.channel_required must be true or false",
                field=f"{field_prefix}.channel_required",
                hint="openai-harmony requires this key; use true to demand a channel",
            )
        for i, ch in enumerate(channels):
            _need_str(ch, f"{field_prefix}.valid_channels[{i}]", optional=False)
        return cls(valid_channels=tuple(channels), channel_required=required)

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid_channels": list(self.valid_channels),
            "channel_required": self.channel_required,
        }


def _default_channel_config() -> ChannelConfig:
    return _DEFAULT_CHANNEL_CONFIG  # frozen, all fields immutable: one instance serves every SystemContent


_DEFAULT_CHANNEL_CONFIG = ChannelConfig(valid_channels=DEFAULT_CHANNELS, channel_required=True)


def _parse_tools(value: Any, field_name: str = "tools") -> dict[str, ToolNamespace] | None:
    """``tools``: a mapping key -> namespace, or a list of namespaces."""
    if value is None:
        return None
    out: dict[str, ToolNamespace] = {}
    if isinstance(value, Mapping):
        for key, ns in value.items():
            if not isinstance(key, str):
                raise InputError(
                    f"tool namespace keys must be strings, got {_type_name(key)}",
                    field=field_name,
                    hint="key each namespace by its name, e.g. {'functions': {...}}",
                )
            out[key] = (
                ns
                if isinstance(ns, ToolNamespace)
                else ToolNamespace.from_dict(ns, key=key, field_prefix=f"{field_name}.{key}")
            )
        return out
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        for i, ns in enumerate(value):
            parsed = (
                ns
                if isinstance(ns, ToolNamespace)
                else ToolNamespace.from_dict(ns, field_prefix=f"{field_name}[{i}]")
            )
            out[parsed.name] = parsed
        return out
    raise InputError(
        f"tools must be a mapping of namespaces or a list of namespaces, got {_type_name(value)}",
        field=field_name,
        hint='e.g. {"functions": {"name": "functions", "tools": [...]}}',
    )


def _check_tools_field(obj: Any) -> None:
    tools = obj.tools
    if tools is None:
        return
    if not isinstance(tools, Mapping) or not all(
        isinstance(k, str) and isinstance(v, ToolNamespace) for k, v in tools.items()
    ):
        object.__setattr__(obj, "tools", _parse_tools(tools))
    elif not isinstance(tools, dict):
        object.__setattr__(obj, "tools", dict(tools))


def _tools_to_dict(tools: Mapping[str, ToolNamespace]) -> dict[str, Any]:
    return {key: ns.to_dict() for key, ns in tools.items()}


def _check_content_type(d: Mapping[str, Any], expected: str) -> None:
    kind = d.get("type", expected)
    if kind != expected:
        raise InputError(
            f"content item of type {kind!r} is not {expected!r}",
            field="type",
            hint=f"pass the {expected!r} item of the message content",
        )


@dataclass(frozen=True, slots=True)
class SystemContent:
    """Harmony system message content; defaults match openai-harmony's model."""

    model_identity: str | None = DEFAULT_MODEL_IDENTITY
    reasoning_effort: ReasoningEffort | None = "medium"
    conversation_start_date: str | None = None
    knowledge_cutoff: str | None = DEFAULT_KNOWLEDGE_CUTOFF
    channel_config: ChannelConfig | None = field(default_factory=_default_channel_config)
    tools: dict[str, ToolNamespace] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "reasoning_effort", parse_reasoning_effort(self.reasoning_effort))
        for name in ("model_identity", "conversation_start_date", "knowledge_cutoff"):
            _need_str(getattr(self, name), name, optional=True)
        cc = self.channel_config
        if cc is not None and not isinstance(cc, ChannelConfig):
            object.__setattr__(self, "channel_config", ChannelConfig.from_dict(cc))
        _check_tools_field(self)

    @classmethod
    def from_dict(cls, d: Any) -> SystemContent:
        """Read an openai-harmony ``system_content`` item.

        Missing keys take the defaults; explicit ``null`` means "omit".
        """
        d = _need_mapping(d, "content", "system content")
        _check_content_type(d, "system_content")
        kwargs: dict[str, Any] = {}
        for name in ("model_identity", "conversation_start_date", "knowledge_cutoff"):
            if name in d:
                kwargs[name] = _need_str(d[name], name, optional=True)
        if "reasoning_effort" in d:
            kwargs["reasoning_effort"] = parse_reasoning_effort(d["reasoning_effort"])
        if "channel_config" in d:
            cc = d["channel_config"]
            kwargs["channel_config"] = (
                None
                if cc is None
                else cc
                if isinstance(cc, ChannelConfig)
                else ChannelConfig.from_dict(cc)
            )
        if "tools" in d:
            kwargs["tools"] = _parse_tools(d["tools"])
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model_identity": self.model_identity,
            "reasoning_effort": None
            if self.reasoning_effort is None
            else _EFFORT_WIRE[self.reasoning_effort],
        }
        if self.conversation_start_date is not None:
            out["conversation_start_date"] = self.conversation_start_date
        out["knowledge_cutoff"] = self.knowledge_cutoff
        out["channel_config"] = (
            None if self.channel_config is None else self.channel_config.to_dict()
        )
        if self.tools is not None:
            out["tools"] = _tools_to_dict(self.tools)
        out["type"] = "system_content"
        return out


@dataclass(frozen=True, slots=True)
class DeveloperContent:
    """Harmony developer message content (instructions and tools)."""

    instructions: str | None = None
    tools: dict[str, ToolNamespace] | None = None

    def __post_init__(self) -> None:
        _need_str(self.instructions, "instructions", optional=True)
        _check_tools_field(self)

    @property
    def has_function_tools(self) -> bool:
        """True when the ``functions`` namespace has tools (harmony's test for the
        system message's "Calls to these tools must go to..." line)."""
        ns = (self.tools or {}).get("functions")
        return ns is not None and bool(ns.tools)

    @classmethod
    def from_dict(cls, d: Any) -> DeveloperContent:
        d = _need_mapping(d, "content", "developer content")
        _check_content_type(d, "developer_content")
        return cls(
            instructions=_need_str(d.get("instructions"), "instructions", optional=True),
            tools=_parse_tools(d.get("tools")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.instructions is not None:
            out["instructions"] = self.instructions
        if self.tools is not None:
            out["tools"] = _tools_to_dict(self.tools)
        out["type"] = "developer_content"
        return out


def interned_content(kind: Literal["system_content", "developer_content"],
                     item: Mapping[str, Any]) -> SystemContent | DeveloperContent:
    """An openai-harmony ``system_content`` / ``developer_content`` item, read once per content:
    equal items give the same (interned) object, whose ids the renderer then caches
    (``ocml.encoder.sections``).  The key (``content_key``) costs a fraction of reading the item
    (deep copies) and encoding its text again."""
    body = {k: v for k, v in item.items() if k != "type"}
    cls = SystemContent if kind == "system_content" else DeveloperContent
    key = content_key(body)
    return SECTIONS.intern((kind, key), len(key), lambda: cls.from_dict(body))  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------


def namespace_block(ns: ToolNamespace) -> str:
    """One ``## name`` block of the tools section."""
    lines = [f"## {ns.name}\n"]
    if ns.description is not None:
        prefix = "// " if ns.tools else ""
        lines.extend(prefix + line for line in rust_lines(ns.description))
    if ns.tools:
        lines.append(f"namespace {ns.name} {{\n")
        for tool in ns.tools:
            lines.extend("// " + line for line in rust_lines(tool.description))
            if tool.parameters is not None:
                ts = json_schema_to_typescript(tool.parameters, "")
                lines.append(f"type {tool.name} = (_: {ts}) => any;\n")
            else:
                lines.append(f"type {tool.name} = () => any;\n")
        lines.append(f"}} // namespace {ns.name}")
    return "\n".join(lines)


def tools_section(namespaces: Mapping[str, ToolNamespace]) -> str:
    """``# Tools`` plus every namespace, ordered by key (code-point order)."""
    blocks = ["# Tools"]
    for key in sorted(namespaces):
        blocks.append(namespace_block(namespaces[key]))
    return "\n\n".join(blocks)


def system_text(sc: SystemContent, has_function_tools: bool = False) -> str:
    """The body openai-harmony renders for a system message.

    ``has_function_tools`` is harmony's ``conversation_has_function_tools``:
    true when some developer message of the conversation has a non-empty
    ``functions`` namespace (see :attr:`DeveloperContent.has_function_tools`).
    """
    sections: list[str] = []
    top: list[str] = []
    if sc.model_identity is not None:
        top.append(sc.model_identity)
    if sc.knowledge_cutoff is not None:
        top.append(f"Knowledge cutoff: {sc.knowledge_cutoff}")
    if sc.conversation_start_date is not None:
        top.append(f"Current date: {sc.conversation_start_date}")
    if top:
        sections.append("\n".join(top))
    if sc.reasoning_effort is not None:
        sections.append(f"Reasoning: {sc.reasoning_effort}")
    if sc.tools:
        sections.append(tools_section(sc.tools))
    cc = sc.channel_config
    if cc is not None and cc.valid_channels:
        header = f"# Valid channels: {', '.join(cc.valid_channels)}."
        if cc.channel_required:
            header += " Channel must be included for every message."
        if has_function_tools:
            header += "\nCalls to these tools must go to the commentary channel: 'functions'."
        sections.append(header)
    return "\n\n".join(sections)


def developer_text(dc: DeveloperContent) -> str:
    """The body openai-harmony renders for a developer message."""
    sections: list[str] = []
    if dc.instructions is not None:
        sections.append("# Instructions")
        sections.append(dc.instructions)
    if dc.tools:
        sections.append(tools_section(dc.tools))
    return "\n\n".join(sections)


def tail_field(content: SystemContent | DeveloperContent) -> str:
    """The field whose text ends the section body (``system_text`` / ``developer_text``): the
    one to name when that end cannot be written (``E-UNREPRESENTABLE``, fallback mode)."""
    if isinstance(content, DeveloperContent):
        return "tools" if content.tools else "instructions"
    cc = content.channel_config
    if cc is not None and cc.valid_channels:
        return "channel_config"
    for name in ("tools", "reasoning_effort", "conversation_start_date", "knowledge_cutoff"):
        if getattr(content, name):
            return name
    return "model_identity"


# ---------------------------------------------------------------------------
# built-in namespaces (texts live in openai-harmony, not here)
# ---------------------------------------------------------------------------

_BUILTINS = ("browser", "python")


def builtin_namespace(name: Literal["browser", "python"]) -> ToolNamespace:
    """openai-harmony's built-in ``browser`` or ``python`` namespace.

    The descriptions are read at run time from the installed openai-harmony;
    without it, pass the namespace explicitly (``ToolNamespace(name=...,
    description=..., tools=...)``).
    """
    if name not in _BUILTINS:
        raise UnknownNameError(
            f"unknown built-in tool namespace {name!r}",
            field="name",
            hint="built-in namespaces are 'browser' and 'python'",
        )
    try:
        from openai_harmony.openai_harmony import get_tool_namespace_config
    except ImportError as exc:
        raise DependencyError(
            f"the built-in {name!r} tool namespace text comes from openai-harmony, "
            "which is not installed",
            hint="pip install openai-harmony, or pass the namespace config explicitly: "
            "ToolNamespace(name=..., description=..., tools=(ToolDescription(...), ...))",
        ) from exc
    cfg = get_tool_namespace_config(name)
    return ToolNamespace.from_dict(cfg, key=name, field_prefix=f"tools.{name}")
