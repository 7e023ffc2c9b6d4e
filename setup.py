"""Package layout: the repository keeps the design card's top-level folders (``encoder/``,
``vocab/``) and installs them under the one import name ``ocml`` (``ocml.encoder``,
``ocml.vocab``).  The package list is derived from the folders, so a new subpackage needs no
edit here.  Everything else is in pyproject.toml.

Compiled hot path (issue 18): the modules listed in ``compiled_modules.txt`` are compiled with
Cython from the same ``.py`` files (both are installed; ``ocml.encoder.compiled`` picks at import
time).  Optional by design: a build that fails (no compiler, no Cython, a module Cython rejects)
warns and installs that module as pure Python, never an error.  ``OCML_BUILD_PURE=1`` skips the
compilation.  Editable installs (``pip install -e``) compile in place; the ``.c`` files go to
``build/cython``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_ext import build_ext

SUBPACKAGES = ("encoder", "vocab")
packages = ["ocml"] + [f"ocml.{name}" for name in find_packages(include=[f"{p}*" for p in SUBPACKAGES])]
package_dir = {"ocml": "ocml", **{f"ocml.{p}": p for p in SUBPACKAGES}}

HERE = Path(__file__).resolve().parent
COMPILE_LIST = "compiled_modules.txt"
MANIFEST = "_compiled.json"  # beside encoder/compiled.py: module -> sha256 of its compiled source
PURE_ENV = "OCML_BUILD_PURE"
# -O2 (not Python's default -O3) and no debug info: about as fast here, and a shorter CI build.
CFLAGS = ["-O2", "-g0"]
# annotation_typing off: a `str` hint must not become a runtime type check (pure Python accepts
# any value; the compiled build must behave the same, tests/test_plain_constructors.py).
CYTHON_DIRECTIVES = {"language_level": 3, "binding": True, "annotation_typing": False}


def warn(msg: str) -> None:
    print(f"WARNING (ocml build): {msg}", file=sys.stderr)


def why(exc: BaseException) -> str:
    """The exception in one short line (a failed compiler command is long)."""
    text = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def build_key() -> str:
    """What shapes the compiled code besides the source: Cython's version, directives, C flags."""
    try:
        import Cython
    except ImportError:
        return ""
    setting = repr((sorted(CYTHON_DIRECTIVES.items()), CFLAGS, Cython.__version__, sys.version))
    return hashlib.sha256(setting.encode()).hexdigest()[:10]


@functools.lru_cache(maxsize=None)  # read (and warned about) once per build, not once per extension
def listed_modules() -> tuple[tuple[str, str], ...]:
    """(module name, source path) for every existing file in ``compiled_modules.txt``."""
    try:
        lines = (HERE / COMPILE_LIST).read_text(encoding="utf-8").splitlines()
    except OSError:
        warn(f"{COMPILE_LIST} not found: nothing compiled")
        return ()
    out = []
    for line in lines:
        path = line.split("#", 1)[0].strip()
        if not path:
            continue
        if path.endswith("__init__.py") or not path.endswith(".py"):
            warn(f"{COMPILE_LIST} lists {path}: only plain modules are compiled (a package's __init__ is not): skipped")
            continue
        if not (HERE / path).is_file():
            warn(f"{COMPILE_LIST} lists {path}, which does not exist: skipped")
            continue
        out.append(("ocml." + path[:-len(".py")].replace("/", "."), path))
    return tuple(out)


class OptionalBuildExt(build_ext):
    """Cython + C compile of each listed module; any failure leaves that module pure Python."""

    def finalize_options(self) -> None:
        # Cythonize here, before setuptools' own finalize_options tags the extension objects.
        self.started = time.perf_counter()
        self.built: dict[str, str] = {}
        if self.distribution.ext_modules:
            self.distribution.ext_modules = self._cythonize(self.distribution.ext_modules)
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    @staticmethod
    def _cythonize(exts: list) -> list:
        try:
            from Cython.Build import cythonize
        except ImportError:
            warn("Cython is not installed: installing pure Python (slower render)")
            return []
        kw = {"build_dir": f"build/cython/{build_key()}", "quiet": True, "compiler_directives": CYTHON_DIRECTIVES}
        try:
            return cythonize(exts, nthreads=os.cpu_count() or 1, **kw)
        except Exception:  # noqa: BLE001 - one module Cython rejects: find it, keep the others
            pass
        out = []
        for ext in exts:
            try:
                out += cythonize([ext], **kw)
            except Exception as exc:  # noqa: BLE001 - optional: the module stays pure Python
                warn(f"Cython could not compile {ext.name} ({why(exc)}): it stays pure Python")
        return out

    def run(self) -> None:
        # An in-place rebuild (pip install -e again) reuses the extension of a module whose source
        # and build settings are unchanged: compiling all of them again takes minutes.
        self.previous: dict[str, str] = {}
        self.reused = 0
        if self.inplace or getattr(self, "editable_mode", False):
            try:
                self.previous = json.loads(self._inplace_path("ocml.encoder._compiled", MANIFEST).read_text())
            except (OSError, ValueError):
                pass
        super().run()
        self.extensions = [e for e in self.extensions if e.name in self.built]  # outputs: what was built
        self._write_manifest()
        print(f"ocml build: {len(self.built)} of {len(listed_modules())} hot modules compiled ({self.reused} "
              f"unchanged, reused) in {time.perf_counter() - self.started:.0f} s", file=sys.stderr)

    def _inplace_path(self, name: str, filename: str | None = None) -> Path:
        """Where module ``name`` (or ``filename`` in its package) lives in the source tree."""
        pkg = name.rpartition(".")[0]
        where = Path(self.get_finalized_command("build_py").get_package_dir(pkg))
        return where / (filename or os.path.basename(self.get_ext_filename(name)))

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
        digest = hashlib.sha256((HERE / dict(listed_modules())[ext.name]).read_bytes()).hexdigest()
        old = self._inplace_path(ext.name)
        if (self.previous.get("__build__") == build_key() and self.previous.get(ext.name) == digest
                and old.is_file()):
            target = Path(self.get_ext_fullpath(ext.name))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(old, target)
            self.built[ext.name] = digest
            self.reused += 1
            return
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001 - no compiler, headers missing...: pure Python
            warn(f"could not compile {ext.name} ({why(exc)}): it stays pure Python")
            return
        self.built[ext.name] = digest

    def copy_extensions_to_source(self) -> None:  # in place (editable installs): the built ones only
        self.extensions = [e for e in self.extensions if e.name in self.built]
        super().copy_extensions_to_source()

    def _write_manifest(self) -> None:
        """``_compiled.json`` where the package lands (in place for editable installs)."""
        pkg = "ocml.encoder"
        where = (Path(self.get_finalized_command("build_py").get_package_dir(pkg)) if self.inplace
                 else Path(self.build_lib, *pkg.split(".")))
        where.mkdir(parents=True, exist_ok=True)
        manifest = {**self.built, "__build__": build_key()} if self.built else {}
        (where / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def extensions() -> list:
    if os.environ.get(PURE_ENV, "").strip() not in ("", "0"):
        warn(f"{PURE_ENV} is set: installing pure Python")
        (HERE / "encoder" / MANIFEST).unlink(missing_ok=True)  # an earlier in-place build's
        return []
    from setuptools import Extension

    return [Extension(name, [path], extra_compile_args=CFLAGS) for name, path in listed_modules()]


setup(packages=packages, package_dir=package_dir, ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
