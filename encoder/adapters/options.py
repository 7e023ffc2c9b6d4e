"""Conversation-level options: ``{"messages": [...], "tools": [...], "reasoning_effort": ...}``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InputError
from ..jsonlimits import check_tools
from ..messages import Options
from .suggest import suggest
from .values import as_str, decoded

#: the options a record may carry next to its messages besides its tool list (``tools``, or the
#: legacy ``functions``): record shapes (``encoder.inputs``) and tabular columns (``pipeline.readers``)
RECORD_OPTIONS = ("reasoning_effort", "date", "conversation_start_date", "knowledge_cutoff", "model_identity",
                  "builtin_tools", "instructions")
#: the string-valued ones (the other two are checked on their own in ``read_options``)
STRING_OPTIONS = tuple(k for k in RECORD_OPTIONS if k not in ("reasoning_effort", "builtin_tools"))
#: every conversation option: the one list (``{"messages": [...], **options}``)
OPTION_KEYS = frozenset({"tools", *RECORD_OPTIONS, "functions"})
#: The fields of a Chat Completions request body (``openai.types.chat.CompletionCreateParams``,
#: openai 3.57, plus ``stream``) that say nothing about the rendered prompt: sampling, transport,
#: output and account fields.  ``render`` takes a request body as the client sends it and ignores
#: them; ``messages``, ``tools`` / ``functions`` and ``reasoning_effort`` are read.  ``tool_choice``
#: is ignored too: no format's prompt writes it (``tests/test_request_body.py`` ties the list to the
#: installed openai package).
REQUEST_FIELDS = ("audio", "frequency_penalty", "function_call", "logit_bias", "logprobs", "max_completion_tokens",
                  "max_tokens", "metadata", "modalities", "model", "moderation", "n", "parallel_tool_calls",
                  "prediction", "presence_penalty", "prompt_cache_key", "prompt_cache_options",
                  "prompt_cache_retention", "response_format", "safety_identifier", "seed", "service_tier", "stop",
                  "store", "stream", "stream_options", "temperature", "tool_choice", "top_logprobs", "top_p", "user",
                  "verbosity", "web_search_options")
# Conversation-level keys that say nothing about rendering: record metadata and the request
# fields above.  Any other unknown key is an error (a typo such as ``reasoning_efort`` must not
# silently render the default; nor a server's own extension such as vLLM's ``top_k``).
IGNORED_OPTIONS = frozenset({"id", "metadata", "source", "dataset", "split", "uuid", "created_at", "timestamp",
                             *REQUEST_FIELDS})


#: every key a conversation dict may carry (the fast check; ``read_options`` names an unknown one)
_KNOWN = OPTION_KEYS | IGNORED_OPTIONS | {"messages"}


def read_options(d: Mapping[str, Any]) -> Options:
    unknown = [] if _KNOWN.issuperset(d) else sorted(
        k for k in d if k != "messages" and k not in OPTION_KEYS and k not in IGNORED_OPTIONS)
    if unknown:
        raise InputError(f"unknown conversation option {unknown[0]!r}", code="E-INPUT-OPTION", field=unknown[0],
                         hint=suggest(unknown[0], [*OPTION_KEYS, "messages"])
                         + "options: " + ", ".join(sorted(OPTION_KEYS)))
    tools = d.get("tools")
    legacy = d.get("functions")  # the pre-tools Chat Completions name: a list of bare function definitions
    if legacy is not None:
        if tools is not None:
            raise InputError("both 'tools' and the legacy 'functions' are given", field="functions",
                             hint="give the tool definitions once, in 'tools'")
        tools = legacy
    field = "functions" if legacy is not None else "tools"
    if tools is not None:
        tools = decoded(tools, field)
        if not isinstance(tools, Sequence) or isinstance(tools, (str, bytes)):
            raise InputError(f"{field!r} must be a list of tool definitions, got {type(tools).__name__}", field=field)
        tools = tuple(tool_def(t, i, field) for i, t in enumerate(tools))
        check_tools(tools, field)  # every format walks or writes the schemas: depth and numbers bounded
    builtin = decoded(d.get("builtin_tools"), "builtin_tools")
    if builtin is not None:
        if isinstance(builtin, str) or not isinstance(builtin, Sequence) or not all(isinstance(b, str) for b in builtin):
            raise InputError("'builtin_tools' must be a list of names", field="builtin_tools",
                             hint='e.g. ["browser", "python"]')
        builtin = tuple(as_str(b) for b in builtin)
    effort = d.get("reasoning_effort")
    if effort is not None:
        if not isinstance(effort, str) or effort.lower() not in ("low", "medium", "high"):
            raise InputError(f"reasoning_effort {effort!r} is not low, medium or high", field="reasoning_effort")
        effort = as_str(effort).lower()
    strings = {}
    for key in STRING_OPTIONS:
        val = d.get(key)
        if val is not None and not isinstance(val, str):
            raise InputError(f"{key} must be a string, got {type(val).__name__}", field=key)
        strings[key] = as_str(val) if val is not None else None
    return Options(
        tools=tools,
        builtin_tools=builtin,
        reasoning_effort=effort,
        date=strings["date"] if strings["date"] is not None else strings["conversation_start_date"],
        knowledge_cutoff=strings["knowledge_cutoff"],
        model_identity=strings["model_identity"],
        instructions=strings["instructions"],
    )


def tool_def(t: Any, i: int, field: str = "tools") -> dict[str, Any]:
    """OpenAI-wrapped ``{"type":"function","function":{...}}`` or bare ``{name, description, parameters}``."""
    if type(t) is not dict:
        t = decoded(t, f"{field}[{i}]") if isinstance(t, (str, bytes)) else t
    mapping = type(t) is dict or isinstance(t, Mapping)  # dicts skip the ABC check
    if mapping and t.get("type") not in (None, "function"):
        raise InputError(f"tool {i} has type {t.get('type')!r}", code="E-INPUT-TOOL", field=f"{field}[{i}].type",
                         hint="function tools only ({'type': 'function', 'function': {...}}); ocml has no "
                              "rendering for custom / built-in tool definitions here (Harmony: builtin_tools)")
    if mapping:
        fn = t.get("function")
        if type(fn) is dict or isinstance(fn, Mapping):
            t = fn
    if not (type(t) is dict or isinstance(t, Mapping)) or not isinstance(t.get("name"), str) or not t["name"]:
        raise InputError(f"tool {i} has no name", field=f"{field}[{i}]",
                         hint="a tool is {'name': ..., 'description': ..., 'parameters': {...JSON Schema}}")
    desc = t.get("description")
    if desc is not None and not isinstance(desc, str):
        raise InputError(f"tool {i}'s description must be a string", field=f"{field}[{i}].description")
    params = decoded(t.get("parameters"), f"{field}[{i}].parameters")
    if params is not None and not isinstance(params, Mapping):
        raise InputError(f"tool {i}'s parameters must be a JSON Schema object", field=f"{field}[{i}].parameters")
    return {"name": as_str(t["name"]), "description": as_str(desc) or "", "parameters": params}
