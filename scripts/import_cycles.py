"""Import circles in ocml's packages, counting every import statement (module level,
function-local and under TYPE_CHECKING alike): the strongly connected components of the
module graph.  Issue 21's measure; run from anywhere:

    python scripts/import_cycles.py

``tests/house/test_import_cycles.py`` imports these functions (the one home of the graph code).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("encoder", "vocab")  # installed as ocml.encoder / ocml.vocab


def modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Dotted module name (as in the repository: ``encoder.x``) -> its file, for each package."""
    out = {}
    for top in packages:
        for p in (root / top).rglob("*.py"):
            parts = list(p.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = p
    return out


def edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package modules it imports, from every import statement in its file."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = pkg[: len(pkg) - node.level + 1] if node.level else []
                name = ".".join(base + ([node.module] if node.module else []))
                names = [name] + [f"{name}.{a.name}" for a in node.names]
            for n in names:
                n = n.removeprefix("ocml.")
                while n and n not in mods:
                    n = n.rpartition(".")[0]
                if n and n != mod:
                    graph[mod].add(n)
    return graph


def components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    sys.setrecursionlimit(10_000)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return sorted(out, key=len, reverse=True)


def main() -> int:
    comps = components(edges(modules()))
    for c in comps:
        print(f"{len(c)} modules: {', '.join(c)}")
    print(f"{len(comps)} import circle(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
