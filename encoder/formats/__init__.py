"""The format registry, built by discovering the format folders: nothing here lists a format.

Each ``encoder/formats/<pkg>/`` is one unit: ``format.json`` (its names, aliases, order, token
table: ``ocml.vocab.discovery`` reads it) and ``__init__.py`` with ``FORMATS``, one
``declare.Declaration`` per format the folder declares (its class, chat-template profile,
response-template fields, ``--model`` candidates).  The folders are found the way tiktoken finds
its ``tiktoken_ext`` plugins: the folders ``ocml.vocab.discovery`` found, each imported as a
package (``importlib``); a folder's code is named lazily (``"module:attribute"``), so finding the
formats imports none of their code.  ``format_class(name)`` gives a format's class.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from importlib import import_module
from typing import Any

from ocml.vocab import canonical_format
from ocml.vocab.discovery import catalog

from ..errors import UnknownNameError, VocabError
from .base import Format
from .declare import Candidate, Declaration, TemplateProfile


def _load(package: str, ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(import_module(f"{__name__}.{package}.{module}"), attr)


@lru_cache(maxsize=1)
def declarations() -> dict[str, tuple[str, Declaration]]:
    """Format name -> (its folder's package, its declaration), in ``FORMAT_NAMES`` order."""
    found: dict[str, tuple[str, Declaration]] = {}
    cat = catalog()
    for package in dict.fromkeys(d.package for d in cat.formats):
        mine = {d.name for d in cat.formats if d.package == package}
        try:
            folder = import_module(f"{__name__}.{package}")
        except ModuleNotFoundError as exc:  # data only: a format.json without a package
            if exc.name != f"{__name__}.{package}":
                raise
            continue
        for decl in getattr(folder, "FORMATS", ()):
            if decl.name not in mine:
                raise VocabError(f"encoder/formats/{package}/__init__.py declares {decl.name!r}, which its "
                                 f"format.json does not", code="E-FORMAT-DECLARATION", field=decl.name,
                                 hint=f"declare it in format.json too, or fix the name ({', '.join(sorted(mine))})")
            found[decl.name] = (package, decl)
    return {n: found[n] for n in cat.names if n in found}


#: the formats with a renderer (every other declared name has control-token tables only)
RENDERABLE: tuple[str, ...] = tuple(declarations())


def declaration(name: str) -> Declaration:
    """The declaration of a renderable format (``E-FORMAT-UNAVAILABLE`` for tables-only formats)."""
    key = canonical_format(name)
    entry = declarations().get(key)
    if entry is None:
        raise UnknownNameError(
            f"format {key!r} has control-token tables but no renderer yet",
            code="E-FORMAT-UNAVAILABLE",
            field="format",
            hint="renderable formats: " + ", ".join(RENDERABLE),
        )
    return entry[1]


def format_class(name: str) -> type[Format]:
    decl = declaration(name)
    cls: type[Format] = _load(declarations()[decl.name][0], decl.format_class)
    return cls


def template_profiles() -> dict[str, tuple[str, TemplateProfile]]:
    """Format name -> (its folder's package, its chat-template profile), for the formats that have one."""
    return {n: (pkg, d.template) for n, (pkg, d) in declarations().items() if d.template is not None}


def response_fields(name: str) -> Callable[[Format], dict[str, Any]] | None:
    """The format's response-template fields builder (None: it has no response template)."""
    entry = declarations().get(name)
    if entry is None or entry[1].response_fields is None:
        return None
    fn: Callable[[Format], dict[str, Any]] = _load(entry[0], entry[1].response_fields)
    return fn


def detect_candidates() -> tuple[Candidate, ...]:
    """Every format's ``--model`` detection candidates, in detection order."""
    decls = sorted((d for _, d in declarations().values()), key=lambda d: d.detect_order)
    return tuple(c for d in decls for c in d.candidates)
