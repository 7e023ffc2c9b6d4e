"""The house: one import name (``ocml``), every folder installed, tests that find shared data
through ``../shared`` (never an absolute path)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_only_ocml_is_importable_outside_the_repository(tmp_path):
    code = ("import importlib.util as u, ocml; "
            "print(u.find_spec('encoder'), u.find_spec('vocab'), ocml.encoder.__name__, ocml.vocab.__name__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["None", "None", "ocml.encoder", "ocml.vocab"]


def test_every_package_folder_is_installed_under_ocml():
    for top in ("encoder", "vocab"):
        for init in sorted((ROOT / top).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT)
            name = "ocml." + ".".join(rel.parts)
            spec = importlib.util.find_spec(name)
            assert spec is not None and spec.origin is not None, name
            assert Path(spec.origin).resolve() == init.resolve(), name


def test_tests_reach_shared_data_relative_to_the_repository():
    absolute = re.compile(r"""["']/work/""")
    offenders = [p.name for p in (ROOT / "tests").glob("*.py") if absolute.search(p.read_text("utf-8"))]
    assert offenders == [], f"tests that read shared data by an absolute path: {offenders}"


def test_the_suite_imports_no_top_level_encoder_or_vocab():
    import sys

    assert "encoder" not in sys.modules and "vocab" not in sys.modules
