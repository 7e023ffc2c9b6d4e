"""The tests' own layout: every test module in its ``tests/<area>/`` folder as ``tests/AREAS`` says,
unique basenames, and no test module importing another (helpers live in ``tests/support/``)."""

from __future__ import annotations

import importlib.util

from support.paths import ROOT, TESTS

#: what tests/ holds besides the area folders
ROOT_ENTRIES = {"AREAS", "SLOW", "conftest.py", "support", "fixtures", "typecheck_public_api.py", "__pycache__"}


def by_area():
    """scripts/tests_by_area.py, the one home of the mapping's rules."""
    spec = importlib.util.spec_from_file_location("ocml_tests_by_area", ROOT / "scripts" / "tests_by_area.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_test_module_is_in_its_area_folder():
    mod = by_area()
    moves, problems = mod.plan(TESTS, mod.areas(mod.AREAS.read_text("utf-8")))
    assert [f"{s.relative_to(TESTS)} -> {d.relative_to(TESTS)}" for s, d in moves] == [], \
        "run `python scripts/tests_by_area.py`"
    assert problems == []


def test_tests_holds_only_area_folders_and_the_shared_pieces():
    areas = set(by_area().areas((TESTS / "AREAS").read_text("utf-8")).values())
    stray = sorted(p.name for p in TESTS.iterdir() if p.name not in ROOT_ENTRIES and not p.name.startswith("."))
    assert [s for s in stray if s not in areas] == []


def test_no_test_module_leans_on_the_flat_layout():
    """No test module imports another, imports the old top-level helpers, or finds the repository from
    its own path (it would break when the module moves, or under a non-editable install)."""
    mod = by_area()
    assert mod.flat_layout(mod.test_modules(TESTS), TESTS) == []


def test_no_file_names_a_test_module_by_its_flat_path():
    """Docs and docstrings name test modules where they are (``python scripts/tests_by_area.py --references``)."""
    mod = by_area()
    stale = mod.references(ROOT, mod.areas(mod.AREAS.read_text("utf-8")))
    assert sorted(p.relative_to(ROOT).as_posix() for p in stale) == []


def test_every_slow_line_names_a_test_that_exists():
    """tests/SLOW stays true: each line names a test function of a test module (a renamed or removed
    test would silently lose its mark)."""
    import ast

    from support.slow import slow_tests

    modules = {p.name: p for p in by_area().test_modules(TESTS)}
    gone = []
    for entry in sorted(slow_tests()):
        module, _, test = entry.partition("::")
        function = test.split("[", 1)[0]
        path = modules.get(module)
        names = {n.name for n in ast.walk(ast.parse(path.read_text("utf-8")))
                 if isinstance(n, ast.FunctionDef)} if path else set()
        if function not in names:
            gone.append(entry)
    assert gone == []


def test_the_layout_check_catches_misplaced_unknown_and_flat_modules(tmp_path):
    mod = by_area()
    (tmp_path / "decode").mkdir()
    (tmp_path / "decode" / "test_a.py").write_text("from test_b import helper\n")
    up = "parents[1]"  # (spelled apart: this file must not match the check itself)
    (tmp_path / "test_b.py").write_text(f"import golden\nROOT = Path(__file__).resolve().{up}\n")
    (tmp_path / "test_new.py").write_text("")
    (tmp_path / "vocab").mkdir()
    (tmp_path / "vocab" / "test_new.py").write_text("")
    moves, problems = mod.plan(tmp_path, mod.areas("decode/test_b.py\ndecode/test_a.py\nvocab/test_gone.py\n"))
    assert [(s.relative_to(tmp_path).as_posix(), d.relative_to(tmp_path).as_posix()) for s, d in moves] == \
        [("test_b.py", "decode/test_b.py")]
    assert problems == [
        "test_new.py: no area in tests/AREAS (add a line `<area>/test_new.py`)",
        "vocab/test_new.py: a second test module named test_new.py (also test_new.py): rename one",
        "tests/AREAS: vocab/test_gone.py names no test module",
    ]
    flat = mod.flat_layout(mod.test_modules(tmp_path), tmp_path)
    assert [f.split(":")[0] for f in flat] == ["decode/test_a.py", "test_b.py", "test_b.py"]
