"""The compiled hot path (issue 18) runs the same render as the source.

``pip install`` compiles the modules of ``compiled_modules.txt`` with Cython from the same ``.py``
files; ``OCML_PURE_PYTHON=1`` makes ``ocml.encoder.compiled`` load the ``.py`` files instead.  The
suite's render differentials (golden fixtures, openai-harmony, the HF template and tokenizer
parities, the OpenAI input mapping) run here on BOTH builds, each in a fresh interpreter that
proves which build it ran (``ocml.encoder.COMPILED`` and the modules loaded from extension files).

An installation without compiled modules (no compiler on that machine: a pure-Python fallback)
skips the compiled half, unless ``OCML_REQUIRE_COMPILED=1`` (CI: scripts/test.sh) makes that a
failure.  The build's own fallback (a compiler that fails -> a warning, never an error) is
tested by building one module with ``CC=false``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ocml.encoder import compiled

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
#: the render differentials (globs: files get renamed); each must match at least one file
DIFFERENTIALS = ("test_golden*.py", "test_harmony_diff.py", "test_*_parity.py",
                 "test_template_parity.py", "test_render.py", "test_openai_input.py", "test_plain_constructors.py")

# Runs pytest, then reports the build it ran on the last line of stdout.
_RUN = """
import json, sys
import pytest
import ocml.encoder
from ocml.encoder import compiled
rc = pytest.main(["-p", "no:cacheprovider", "-x", *sys.argv[1:]])
built = compiled.built()
loaded = sorted(set(built) & set(sys.modules))
print("\\nBUILD " + json.dumps({"rc": int(rc), "COMPILED": ocml.encoder.COMPILED, "compiled": list(compiled.modules()),
                               "loaded": loaded}))
"""


def _differential_files() -> list[str]:
    files: list[str] = []
    for pattern in DIFFERENTIALS:
        hits = sorted(p.name for p in TESTS.glob(pattern))
        assert hits, f"the differential {pattern!r} matches no file in tests/: renamed? update DIFFERENTIALS"
        files += [h for h in hits if h not in files]
    assert files, "no render differential found in tests/"
    return [str(TESTS / f) for f in files]


def _has_compiled_build() -> bool:
    return bool(compiled.built())


@pytest.mark.parametrize("build", ["compiled", "pure"])
def test_render_differentials_pass_on_both_builds(build: str) -> None:
    if build == "compiled" and not _has_compiled_build():
        if os.environ.get("OCML_REQUIRE_COMPILED", "") not in ("", "0"):
            pytest.fail("no compiled modules in this installation (the build fell back to pure Python) "
                        "and OCML_REQUIRE_COMPILED is set: see the WARNING lines of `pip install -v .`")
        pytest.skip("this installation is pure Python (no compiler at install time)")
    env = {k: v for k, v in os.environ.items() if k != compiled.PURE_ENV}
    env["PYTHONSAFEPATH"] = "1"
    if build == "pure":
        env[compiled.PURE_ENV] = "1"
    proc = subprocess.run([sys.executable, "-c", _RUN, *_differential_files()], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert last.startswith("BUILD "), proc.stdout[-3000:] + proc.stderr[-3000:]
    got = json.loads(last[len("BUILD "):])
    assert got["rc"] == 0, proc.stdout[-5000:]
    if build == "compiled":
        assert got["COMPILED"] is True
        # every compiled module the differentials imported ran compiled (none fell back to source)
        assert got["loaded"] and got["compiled"] == got["loaded"], got
    else:
        assert got["COMPILED"] is False and got["compiled"] == [], got


def test_pure_switch_and_stale_sources_load_the_source(tmp_path: Path) -> None:
    """The finder hands out the ``.py`` when asked to, or when the source is not what was compiled."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "hot.py").write_text("WHERE = 'source'\n")
    ext_suffix = compiled.importlib.machinery.EXTENSION_SUFFIXES[0]
    (pkg / f"hot{ext_suffix}").write_bytes(b"not a real extension: loading it would fail")
    digest = compiled.source_digest(str(pkg / "hot.py"))
    path = [str(pkg)]
    fresh = compiled.SourceFinder({"pkg.hot": digest}, pure=False, package="pkg")
    assert fresh.find_spec("pkg.hot", path) is None  # up to date: the extension
    assert fresh.find_spec("pkg.other", path) is None  # not compiled: the usual finders
    stale = compiled.SourceFinder({"pkg.hot": "0" * 64}, pure=False, package="pkg")
    pure = compiled.SourceFinder({"pkg.hot": digest}, pure=True, package="pkg")
    # an extension the build did not record (left by an earlier build, a module that failed to
    # compile this time, a pure reinstall): never run unchecked
    unrecorded = compiled.SourceFinder({}, pure=False, package="pkg")
    for finder in (stale, pure, unrecorded):
        spec = finder.find_spec("pkg.hot", path)
        assert spec is not None and spec.origin == str(pkg / "hot.py")
    (pkg / "cold.py").write_text("")
    assert unrecorded.find_spec("pkg.cold", path) is None  # no extension beside it: the usual finders
    assert unrecorded.find_spec("other.hot", path) is None  # not this package


def test_a_failing_compiler_installs_pure_python_with_a_warning(tmp_path: Path) -> None:
    """setup.py with ``CC=false`` (and a listed module that does not exist): exit 0, warnings, no
    compiled module recorded."""
    import Cython  # noqa: F401  both in the test extra (a build requirement otherwise)
    import setuptools  # noqa: F401
    for rel in ("setup.py", "ocml/__init__.py", "vocab/__init__.py", "encoder/__init__.py", "encoder/runs.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    (tmp_path / "compiled_modules.txt").write_text("# test\nencoder/runs.py\nencoder/gone.py\n")
    env = {**os.environ, "CC": "false", "LDSHARED": "false"}
    env.pop("OCML_BUILD_PURE", None)
    proc = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "lists encoder/gone.py, which does not exist: skipped" in proc.stderr
    assert "could not compile ocml.encoder.runs" in proc.stderr and "stays pure Python" in proc.stderr
    assert json.loads((tmp_path / "encoder" / compiled.MANIFEST).read_text()) == {}
    assert not list((tmp_path / "encoder").glob("runs.*.so"))
