"""Put every test module in its ``tests/<area>/`` folder, as ``tests/AREAS`` says (``git mv``).

    python scripts/tests_by_area.py            # move what is not where tests/AREAS says; report the rest
    python scripts/tests_by_area.py --check    # move nothing: list the moves it would make
    python scripts/tests_by_area.py --references   # then: rewrite mentions of tests/test_x.py (docs, docstrings)

Idempotent: a module already in its folder is left alone, so it can run again on a tree where new
test modules were added at ``tests/`` (or anywhere under it).  It moves files only (the moves stay one
pure ``git mv`` commit) and then names what it cannot settle, exit status 1 if any:

- a test module with no line in ``tests/AREAS`` (add its line, run again);
- a line of ``tests/AREAS`` whose module exists nowhere;
- a test module that still leans on the old flat layout: imports another test module (move the helper
  to ``tests/support/``), imports the old top-level helpers (``gen``, ``golden``, ``agreement``,
  ``shared_data``: now ``support.gen``, ``support.golden``, ``support.agreement``, ``support.paths``), or
  finds the repository from its own path (``Path(__file__)...parents[1]``: use ``support.paths.ROOT``,
  ``FIXTURES``).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
AREAS = TESTS / "AREAS"
NOT_TESTS = {"support", "fixtures"}  # folders under tests/ that hold no test modules

#: what a module written for the flat layout does: (pattern, what to do instead)
FLAT = [
    (re.compile(r"^\s*(from|import) test_\w+", re.M), "imports another test module: move the helper to tests/support/"),
    (re.compile(r"^\s*(from|import) (gen|golden|agreement|shared_data)\b", re.M),
     "imports an old top-level helper: support.gen / support.golden / support.agreement / support.paths"),
    (re.compile(r"Path\(__file__\)[^\n]*(parents?\b)"),
     "finds the repository from its own path: support.paths (ROOT, TESTS, FIXTURES)"),
]


def areas(text: str) -> dict[str, str]:
    """``tests/AREAS``: test module basename -> area folder."""
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        area, _, name = line.partition("/")
        if not (area and re.fullmatch(r"[a-z_]+", area) and re.fullmatch(r"test_\w+\.py", name)):
            raise SystemExit(f"tests/AREAS:{n}: {line!r} is not `area/test_name.py`")
        if name in out:
            raise SystemExit(f"tests/AREAS:{n}: {name} has two areas ({out[name]}, {area})")
        out[name] = area
    return out


def test_modules(tests: Path) -> list[Path]:
    return sorted(p for p in tests.rglob("test_*.py") if not NOT_TESTS & set(p.relative_to(tests).parts[:-1]))


def plan(tests: Path, mapping: dict[str, str]) -> tuple[list[tuple[Path, Path]], list[str]]:
    """(moves to make, problems): a module found twice or without an area is a problem, not a move."""
    moves, problems, seen = [], [], {}
    for path in test_modules(tests):
        rel = path.relative_to(tests).as_posix()
        if path.name in seen:
            problems.append(f"{rel}: a second test module named {path.name} (also {seen[path.name]}): rename one")
            continue
        seen[path.name] = rel
        area = mapping.get(path.name)
        if area is None:
            problems.append(f"{rel}: no area in tests/AREAS (add a line `<area>/{path.name}`)")
        elif path.parent != tests / area:
            moves.append((path, tests / area / path.name))
    problems += [f"tests/AREAS: {area}/{name} names no test module" for name, area in sorted(mapping.items())
                 if name not in seen]
    return moves, problems


#: the flat layout's helper modules -> their home in tests/support/
TEXT = {".py", ".md", ".toml", ".sh", ".yml", ".yaml", ".txt", ".cfg", ""}  # suffixes --references reads
HELPERS = {"gen.py": "support/gen.py", "golden.py": "support/golden.py", "agreement.py": "support/agreement.py",
           "shared_data.py": "support/paths.py"}


def references(root: Path, mapping: dict[str, str]) -> dict[Path, str]:
    """Tracked text files that name a test module (or an old helper) by its flat-layout path,
    ``tests/test_x.py`` / ``tests/gen.py``: file -> its text with the path of today.  A mention of a
    module that no area names is left as it is."""
    names = "|".join(re.escape(n) for n in sorted([*mapping, *HELPERS], key=len, reverse=True))
    pattern = re.compile(rf"\btests/({names})(?![\w.])")

    def new(m: re.Match[str]) -> str:
        name = m.group(1)
        return f"tests/{HELPERS[name]}" if name in HELPERS else f"tests/{mapping[name]}/{name}"

    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout.decode()
    out = {}
    for rel in listed.split("\0"):
        path = root / rel
        if rel in ("", "tests/AREAS", "scripts/tests_by_area.py") or path.suffix not in TEXT or not path.is_file():
            continue
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError:
            continue
        if pattern.search(text):
            out[path] = pattern.sub(new, text)
    return out


def flat_layout(paths: list[Path], tests: Path) -> list[str]:
    out = []
    for path in paths:
        text = path.read_text("utf-8")
        out += [f"{path.relative_to(tests).as_posix()}: {why}" for pattern, why in FLAT if pattern.search(text)]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="move nothing; list the moves and problems")
    ap.add_argument("--references", action="store_true",
                    help="rewrite tests/test_x.py mentions in tracked files to tests/<area>/test_x.py (no moves)")
    args = ap.parse_args(argv)
    mapping = areas(AREAS.read_text("utf-8"))
    if args.references:
        for path, text in references(ROOT, mapping).items():
            path.write_text(text, "utf-8")
            print(f"rewrote {path.relative_to(ROOT)}")
        return 0
    moves, problems = plan(TESTS, mapping)
    for src, dst in moves:
        print(f"{'would move' if args.check else 'git mv'} {src.relative_to(ROOT)} -> {dst.relative_to(ROOT)}")
        if not args.check:
            dst.parent.mkdir(exist_ok=True)
            subprocess.run(["git", "mv", str(src), str(dst)], cwd=ROOT, check=True)
    problems += flat_layout(test_modules(TESTS), TESTS)
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    print(f"{len(moves)} {'to move' if args.check else 'moved'}, {len(problems)} problem(s)")
    return 1 if problems or (args.check and moves) else 0


if __name__ == "__main__":
    sys.exit(main())
