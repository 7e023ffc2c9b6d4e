"""No module in ``encoder/`` or ``vocab/`` over 500 lines unless it says why (issue 21).

The rule: a module longer than ``LIMIT`` lines (as ``wc -l`` counts them) carries, in its module
docstring, a paragraph that starts with ``Size:`` and gives the reason in at least
``MIN_REASON`` characters, e.g.::

    Size: one state machine whose transitions read each other's locals; split, every state
    would take the whole state as arguments (measured: 12% slower per token).

Anything else (the marker in a comment, mid-paragraph, or with no reason after it) does not count.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from support.paths import ROOT

TOPS = ("encoder", "vocab")
LIMIT = 500
MARKER = "Size:"
MIN_REASON = 40  # a sentence, not a label


def size_reason(source: str) -> str | None:
    """The reason a module gives for its size: the text of its docstring paragraph that starts
    with ``Size:``, or None (no docstring, no such paragraph, or too short a reason)."""
    try:
        doc = ast.get_docstring(ast.parse(source), clean=True)
    except SyntaxError:
        return None
    for paragraph in re.split(r"\n\s*\n", doc or ""):
        if paragraph.startswith(MARKER):
            reason = " ".join(paragraph[len(MARKER):].split())
            return reason if len(reason) >= MIN_REASON else None
    return None


def oversized(root: Path, limit: int = LIMIT) -> list[str]:
    """Modules under ``root``'s ``encoder/`` and ``vocab/`` longer than ``limit`` lines that give
    no reason, as ``path: N lines``."""
    found = []
    for top in TOPS:
        for path in sorted((root / top).rglob("*.py")):
            text = path.read_text("utf-8")
            n = len(text.splitlines())
            if n > limit and size_reason(text) is None:
                found.append(f"{path.relative_to(root).as_posix()}: {n} lines")
    return found


def test_no_module_over_the_limit_without_a_reason():
    assert oversized(ROOT) == [], (
        f"modules over {LIMIT} lines: split them along their seams (one job per module), or say why "
        f"in the module docstring, in a paragraph starting with {MARKER!r}")


# -- the checker itself ---------------------------------------------------------------------------

REASON = "Size: one state machine whose states read each other's locals; split, it would be slower."


def _module(root: Path, rel: str, lines: int, docstring: str | None = None, comment: str = "") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    head = [f'"""{docstring}"""'] if docstring is not None else []
    head += [comment] if comment else []
    body = [f"x{i} = {i}" for i in range(lines - sum(h.count("\n") + 1 for h in head))]
    path.write_text("\n".join(head + body) + "\n", encoding="utf-8")
    assert len(path.read_text("utf-8").splitlines()) == lines
    return path


def test_checker_flags_an_oversized_module(tmp_path):
    _module(tmp_path, "encoder/small.py", LIMIT, "At the limit.")
    _module(tmp_path, "encoder/deep/er/big.py", LIMIT + 1, "One line too many.")
    _module(tmp_path, "vocab/big.py", 2 * LIMIT)
    assert oversized(tmp_path) == [f"encoder/deep/er/big.py: {LIMIT + 1} lines", f"vocab/big.py: {2 * LIMIT} lines"]


def test_checker_accepts_a_reason_in_the_docstring(tmp_path):
    _module(tmp_path, "encoder/big.py", LIMIT + 1, f"A module.\n\n{REASON}\n")
    _module(tmp_path, "vocab/big.py", LIMIT + 50, REASON)
    assert oversized(tmp_path) == []


def test_checker_refuses_a_reason_elsewhere_or_empty(tmp_path):
    cases = {
        "encoder/comment.py": dict(docstring="A module.", comment=f"# {REASON}"),       # not the docstring
        "encoder/inline.py": dict(docstring=f"A module. {REASON}"),                      # not a paragraph start
        "encoder/empty.py": dict(docstring="A module.\n\nSize:\n\nMore text."),          # no reason
        "encoder/label.py": dict(docstring="A module.\n\nSize: big."),                   # a label, not a reason
        "encoder/broken.py": dict(docstring=f"{REASON}", comment="def ("),               # not Python
    }
    for rel, kw in cases.items():
        _module(tmp_path, rel, LIMIT + 1, **kw)
    assert [line.split(":")[0] for line in oversized(tmp_path)] == sorted(cases)
