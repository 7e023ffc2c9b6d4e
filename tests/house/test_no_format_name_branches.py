"""No code decides behaviour by comparing a format's name: a format declares what it does
(``Format`` attributes and strategies such as ``header_style``, ``transcript``;
its token data for stops and terminators), and generic code reads that.

Per-format tables keyed by name (the format registry, template profiles) are fine: they are
data, not branches.  This walks every module of the package and fails on a comparison of a
name-like expression with a format name (``fmt.name == "harmony"``, ``enc.format_name in
("openchatml-2.2", ...)``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from ocml.vocab.tables import ALIASES, FORMAT_NAMES

from support.paths import ROOT

NAMES = set(FORMAT_NAMES) | set(ALIASES)


def _format_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in NAMES else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [n for e in node.elts for n in _format_names(e)]
    return []


def _name_like(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in ("name", "format_name", "format")
    return isinstance(node, ast.Name) and node.id in ("name", "format_name", "fmt_name")


def branches(path: Path) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"), str(path))
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if any(_name_like(s) for s in sides) and any(_format_names(s) for s in sides):
            out.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_the_scan_finds_a_name_branch(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('def f(enc):\n    return enc.format_name == "harmony" or fmt.name in ("chatml", "x")\n')
    assert len(branches(probe)) == 2


def test_no_module_branches_on_a_format_name():
    files = [p for folder in ("encoder", "vocab") for p in sorted((ROOT / folder).rglob("*.py"))]
    assert len(files) > 50
    assert [b for p in files for b in branches(p)] == []
