"""Which build of the hot modules runs: compiled (Cython, from the same ``.py`` files) or the source.

``pip install`` compiles the modules listed in ``compiled_modules.txt`` (setup.py) and writes
``_compiled.json`` beside this file: module name -> SHA-256 of the source it was compiled from.
Python's own finders prefer an extension module over the ``.py`` beside it; this module's finder
(installed by ``ocml.encoder`` before any of its submodules is imported) hands out the ``.py``
instead when

- ``OCML_PURE_PYTHON=1`` is set (the interpreted build, for comparison and for the test that runs
  the render differentials on both builds), or
- the source changed since it was compiled (an editable install after an edit or a checkout):
  stale compiled code never runs; ``pip install -e .`` compiles again.

Without ``_compiled.json`` (the build fell back to pure Python, or no compiler) the finder does
nothing.  ``modules()`` names the submodules that actually run compiled; ``ocml.encoder.COMPILED``
is whether any does.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from importlib.machinery import ModuleSpec
from typing import Any, Sequence

#: set to 1 to run the ``.py`` source even where a compiled build is installed
PURE_ENV = "OCML_PURE_PYTHON"
#: written by setup.py's build step: ``{"ocml.encoder.render": "<sha256 of render.py>", ...}`` (and
#: ``"__build__"``: the build settings, for setup.py's reuse of unchanged in-place builds)
MANIFEST = "_compiled.json"

_PACKAGE = __name__.rpartition(".")[0]  # ocml.encoder
_HERE = os.path.dirname(os.path.abspath(__file__))
_EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def pure_requested() -> bool:
    return os.environ.get(PURE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def source_digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class SourceFinder:
    """Meta-path finder for the package's modules: the ``.py`` spec where an extension module lies
    beside the source but must not run, else None (then the usual finders load what is there).

    An extension must not run when the pure build is asked for, when the build did not record it
    (left behind by an earlier build: a module since dropped from the list, one that failed to
    compile this time, an ``OCML_BUILD_PURE`` reinstall), or when its source changed since."""

    def __init__(self, built: dict[str, str], pure: bool, package: str = _PACKAGE) -> None:
        self.built, self.pure, self.prefix = built, pure, package + "."

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None) -> ModuleSpec | None:
        if not path or not fullname.startswith(self.prefix):
            return None
        leaf = fullname.rpartition(".")[2]
        for entry in path:
            src = os.path.join(entry, leaf + ".py")
            if os.path.isfile(src):
                if not any(os.path.isfile(os.path.join(entry, leaf + suffix)) for suffix in _EXTENSION_SUFFIXES):
                    return None  # nothing compiled here: the usual finders load the source
                digest = self.built.get(fullname)
                if digest is not None and not self.pure and source_digest(src) == digest:
                    return None  # the extension beside it is this source, compiled
                return importlib.util.spec_from_file_location(fullname, src)
        return None


def built() -> dict[str, str]:
    """Module -> digest of its compiled source, as the build recorded it ({}: a pure installation)."""
    try:
        with open(os.path.join(_HERE, MANIFEST), encoding="utf-8") as f:
            return {str(k): str(v) for k, v in json.load(f).items() if not str(k).startswith("__")}
    except (OSError, ValueError, AttributeError):
        return {}


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once).  Also in a pure installation: an
    extension an earlier build left in the tree must not run unrecorded."""
    if any(isinstance(f, SourceFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, SourceFinder(built(), pure_requested()))


def modules() -> tuple[str, ...]:
    """The loaded ``ocml.encoder`` submodules that run compiled (extension modules), sorted."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return tuple(sorted(name for name, mod in list(sys.modules.items())
                        if name.startswith(_PACKAGE + ".") and str(getattr(mod, "__file__", "")).endswith(suffixes)))
