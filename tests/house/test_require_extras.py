"""``require(module, extra)`` tells users to ``pip install 'ocml[extra]'``: that extra must install the
module (the installed distribution's requirements, i.e. pyproject.toml's), and a module ocml depends on
needs no extra at all."""

from __future__ import annotations

import ast
import re
from importlib.metadata import requires

from support.paths import ROOT


def _require_calls() -> list[tuple[str, int, str, str]]:
    out = []
    for folder in ("encoder", "vocab"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "require"
                        and node.args and isinstance(node.args[0], ast.Constant)):
                    extra = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) else ""
                    out.append((str(path.relative_to(ROOT)), node.lineno, node.args[0].value, extra))
    return out


def _requirements() -> tuple[set[str], dict[str, set[str]]]:
    """(ocml's dependencies, extra -> the distributions it adds), by distribution name."""
    core: set[str] = set()
    extras: dict[str, set[str]] = {}
    for req in requires("ocml") or []:
        name = re.split(r"[\[<>=!~; ]", req, maxsplit=1)[0].lower()
        extra = re.search(r"""extra == ["']([^"']+)["']""", req)
        (extras.setdefault(extra.group(1), set()) if extra else core).add(name)
    return core, extras


def test_every_require_names_an_extra_that_installs_the_module() -> None:
    core, extras = _requirements()
    assert "numpy" in core and "datasets" in extras["hf"]  # the requirements were read
    calls = _require_calls()
    assert len(calls) >= 5, calls  # the walker finds the calls
    wrong = []
    for path, line, module, extra in calls:
        dist = module.split(".")[0].lower()
        if dist in core:
            if extra:
                wrong.append(f"{path}:{line} require({module!r}, {extra!r}): {dist} is a dependency, no extra")
        elif extra not in extras or dist not in extras[extra]:
            wrong.append(f"{path}:{line} require({module!r}, {extra!r}): ocml[{extra}] does not install {dist}")
    assert not wrong, "\n".join(wrong)
