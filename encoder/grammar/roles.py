"""The role grammar of each format: one table, read by render, parse, parse_text and the
stream decoder alike (so what one accepts the other does).

A header's first word names its author.  Each format declares its grammar on its class
(``Format.header_style.roles``, in its folder ``encoder/formats/<pkg>/``): which roles a message may
have, which words name a tool (OpenChatML 2.x's legacy ``functions.NAME``; Harmony's
``NAMESPACE.NAME`` and bare built-ins) and whether ``ROLE:NAME`` names an author.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import HeaderError

# One spelling of a tool name: word characters, '-' and '.' (namespaced: functions.get_weather).
TOOL_NAME = r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]*"
BASE_ROLES: tuple[str, ...] = ("system", "developer", "user", "assistant", "tool")


@dataclass(frozen=True)
class RoleGrammar:
    """What a format's header role word may be, and what it reads as."""

    #: the roles a message may have
    roles: tuple[str, ...]
    #: a header word that names a tool (a tool's reply): the legacy ``functions.NAME`` role of
    #: 2.x, any ``NAMESPACE.NAME`` in Harmony; None: no such word
    tool_word: re.Pattern[str] | None = None
    #: Harmony: bare tool names that are role words too (a built-in tool's reply: ``python``)
    builtin_tools: frozenset[str] = frozenset()
    #: the tool word reads back as role ``tool`` with the word as its name (Harmony); else the
    #: word itself is the role (2.x ``functions.NAME``)
    tool_word_is_name: bool = False
    #: ``ROLE:NAME`` names the author (Harmony)
    author_names: bool = False

    def is_tool_word(self, word: str) -> bool:
        """Can ``word`` stand as a header's role word naming a tool?"""
        return word in self.builtin_tools or (self.tool_word is not None and self.tool_word.fullmatch(word) is not None)

    def is_role(self, role: str) -> bool:
        """May a message have this role (render, ``decoder(role=...)``)?"""
        return role in self.roles or self.is_tool_word(role)

    def check(self, role: str, index: int | None, fmt: str) -> None:
        """``E-ROLE-UNKNOWN`` unless ``is_role(role)``."""
        if self.is_role(role):
            return
        from ..adapters import suggest

        extra = ""
        if self.tool_word is not None:
            extra = " or a tool's name (" + ("functions.NAME" if not self.tool_word_is_name else "NAMESPACE.NAME") + ")"
        raise HeaderError(f"unknown role {role!r} for {fmt}", code="E-ROLE-UNKNOWN", index=index, field="role",
                          hint=suggest(role, self.roles) + "roles: " + ", ".join(self.roles) + extra)

    def read(self, word: str) -> tuple[str, str | None] | None:
        """A header's role word -> (role, name), or None when it is not a role of the format."""
        if word in self.roles:
            return word, None
        if self.author_names and ":" in word:
            role, name = word.split(":", 1)
            if role in self.roles and role != "tool" and name:
                return role, name
            return None
        if self.is_tool_word(word):
            return ("tool", word) if self.tool_word_is_name else (word, None)
        return None
