"""Harmony system/developer message content: the data model (openai-harmony 0.0.8's).

Frozen dataclasses mirroring openai-harmony's pydantic models, with ``from_dict`` reading the
shape of openai-harmony's ``to_json()`` content items and ``to_dict`` writing it back.  One
deliberate difference in that shape: openai-harmony's ``to_dict`` drops ``None`` fields, so a
``model_identity=None`` system content does not survive its own ``to_dict``/``from_dict``
round trip (a missing key means "pydantic default").  Our ``to_dict`` writes an explicit
``null`` for fields whose default is not ``None`` (``model_identity``, ``reasoning_effort``,
``knowledge_cutoff``, ``channel_config``), which openai-harmony reads back correctly too, and
omits the rest when ``None``.

The text openai-harmony writes for this content is ``harmony.sections``'.  The built-in
``browser``/``python`` namespace texts are not part of ocml: :func:`builtin_namespace` asks
openai-harmony for them at run time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..json_fields import copy_json, need_mapping, need_str, type_name
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
    "interned_content",
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
        need_str(self.name, "name", optional=False)
        need_str(self.description, "description", optional=False)
        if self.parameters is not None and not isinstance(self.parameters, dict):
            raise InputError(
                f"tool parameters must be a JSON Schema object, got {type_name(self.parameters)}",
                field="parameters",
                hint="pass a dict such as {'type': 'object', 'properties': {...}} or None",
            )

    @classmethod
    def from_dict(cls, d: Any, *, field_prefix: str = "") -> ToolDescription:
        where = field_prefix or "tool"
        d = need_mapping(d, where, "a tool description")
        name = d.get("name")
        if name is None:
            raise InputError(
                "tool description has no name",
                field=f"{where}.name" if field_prefix else "name",
                hint="every tool needs a 'name' (the identifier in 'type NAME = ...')",
            )
        name = need_str(name, f"{where}.name", optional=False)
        desc = d.get("description", "")
        desc = need_str(desc, f"{where}.description", optional=True) or ""
        params = d.get("parameters")
        if params is not None and not isinstance(params, Mapping):
            raise InputError(
                f"tool parameters must be a JSON Schema object, got {type_name(params)}",
                field=f"{where}.parameters",
                hint="pass a JSON object such as {'type': 'object', 'properties': {...}} or null",
            )
        return cls(
            name=name,  # type: ignore[arg-type]
            description=desc,
            parameters=None if params is None else copy_json(dict(params)),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.parameters is not None:
            out["parameters"] = copy_json(self.parameters)
        return out


@dataclass(frozen=True, slots=True)
class ToolNamespace:
    """A tool namespace (``## name`` block); harmony's ``ToolNamespaceConfig``."""

    name: str
    description: str | None = None
    tools: tuple[ToolDescription, ...] = ()

    def __post_init__(self) -> None:
        need_str(self.name, "name", optional=False)
        need_str(self.description, "description", optional=True)
        if not isinstance(self.tools, tuple):
            object.__setattr__(self, "tools", tuple(self.tools))
        for i, tool in enumerate(self.tools):
            if not isinstance(tool, ToolDescription):
                raise InputError(
                    f"tool {i} is a {type_name(tool)}, not a ToolDescription",
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
        d = need_mapping(d, where, "a tool namespace")
        name = d.get("name", key)
        if name is None:
            raise InputError(
                "tool namespace has no name",
                field=f"{where}.name" if field_prefix else "name",
                hint="give the namespace a 'name' (e.g. 'functions')",
            )
        name = need_str(name, f"{where}.name", optional=False)
        desc = need_str(d.get("description"), f"{where}.description", optional=True)
        raw_tools = d.get("tools", ())
        if raw_tools is None:
            raw_tools = ()
        if isinstance(raw_tools, (str, bytes)) or not isinstance(raw_tools, Sequence):
            raise InputError(
                f"namespace tools must be a list, got {type_name(raw_tools)}",
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
            need_str(ch, f"valid_channels[{i}]", optional=False)
        if not isinstance(self.channel_required, bool):
            raise InputError(
                f"channel_required must be a boolean, got {type_name(self.channel_required)}",
                field="channel_required",
                hint="use true or false",
            )

    @classmethod
    def require_channels(cls, channels: Sequence[str]) -> ChannelConfig:
        return cls(valid_channels=tuple(channels), channel_required=True)

    @classmethod
    def from_dict(cls, d: Any, *, field_prefix: str = "channel_config") -> ChannelConfig:
        d = need_mapping(d, field_prefix, "channel_config")
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
            need_str(ch, f"{field_prefix}.valid_channels[{i}]", optional=False)
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
                    f"tool namespace keys must be strings, got {type_name(key)}",
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
        f"tools must be a mapping of namespaces or a list of namespaces, got {type_name(value)}",
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
            need_str(getattr(self, name), name, optional=True)
        cc = self.channel_config
        if cc is not None and not isinstance(cc, ChannelConfig):
            object.__setattr__(self, "channel_config", ChannelConfig.from_dict(cc))
        _check_tools_field(self)

    @classmethod
    def from_dict(cls, d: Any) -> SystemContent:
        """Read an openai-harmony ``system_content`` item.

        Missing keys take the defaults; explicit ``null`` means "omit".
        """
        d = need_mapping(d, "content", "system content")
        _check_content_type(d, "system_content")
        kwargs: dict[str, Any] = {}
        for name in ("model_identity", "conversation_start_date", "knowledge_cutoff"):
            if name in d:
                kwargs[name] = need_str(d[name], name, optional=True)
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
        need_str(self.instructions, "instructions", optional=True)
        _check_tools_field(self)

    @property
    def has_function_tools(self) -> bool:
        """True when the ``functions`` namespace has tools (harmony's test for the
        system message's "Calls to these tools must go to..." line)."""
        ns = (self.tools or {}).get("functions")
        return ns is not None and bool(ns.tools)

    @classmethod
    def from_dict(cls, d: Any) -> DeveloperContent:
        d = need_mapping(d, "content", "developer content")
        _check_content_type(d, "developer_content")
        return cls(
            instructions=need_str(d.get("instructions"), "instructions", optional=True),
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
    return SECTIONS.intern((kind, key), len(key), lambda: cls.from_dict(body))


# ---------------------------------------------------------------------------
# built-in namespaces (texts live in openai-harmony, not here)
# ---------------------------------------------------------------------------

_BUILTINS = ("browser", "python")


def builtin_namespace(name: str) -> ToolNamespace:
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
