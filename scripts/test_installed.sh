#!/usr/bin/env bash
# The suite against an installed (non-editable) build: `pip install .` of this checkout into a fresh
# virtualenv, then pytest from the checkout's tests/ with that venv's Python.  Tests that check the
# source tree (README, docs, layout map, module sizes) read it from the checkout (tests/support/paths.py);
# tests of the package import the installed ocml, never the checkout's folders (PYTHONSAFEPATH=1, and
# the run stops first if `ocml` would import from the checkout).
#
#   bash scripts/test_installed.sh [pytest args]                       # installs ocml with its extras (as CI)
#   OCML_DEPS_FROM=/path/to/venv bash scripts/test_installed.sh house  # third-party packages from that venv
#
# pytest runs in tests/ (paths in the arguments are relative to it; none: every area): from the
# checkout's root, processes that put their working folder on sys.path (Ray's workers do) would import
# the checkout's ocml/ folder instead of the installed package.
#
# OCML_DEPS_FROM saves downloading torch & co. again: the fresh venv sees that venv's site-packages
# through a .pth line (its editable-install hook is not run: a .pth inside a .pth-added folder is not
# read) and gets ocml itself with `pip install --no-deps .`, non-editable.  OCML_INSTALLED_VENV puts the
# fresh venv elsewhere (default .venv-installed, recreated on each run).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${OCML_INSTALLED_VENV:-.venv-installed}"
python3 -m venv --clear "$venv"
py="$venv/bin/python"
if [ -n "${OCML_DEPS_FROM:-}" ]; then
  deps="$("$OCML_DEPS_FROM/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  "$py" -c 'import sys, sysconfig, pathlib; (pathlib.Path(sysconfig.get_paths()["purelib"]) / "ocml-deps.pth").write_text(sys.argv[1] + "\n")' "$deps"
  "$py" -m pip install --quiet --no-deps .
else
  "$py" -m pip install --quiet --upgrade pip
  "$py" -m pip install --quiet ".[test,ray,torch,megatron]"
  "$py" -m pip install --quiet --no-deps "trl>=0.20"
fi
# the installed copy, not the checkout (an editable install or a stray path would point here)
PYTHONSAFEPATH=1 "$py" - <<'EOF'
import pathlib, sysconfig, ocml, ocml.encoder
site = pathlib.Path(sysconfig.get_paths()["purelib"]).resolve()
for mod in (ocml, ocml.encoder):
    where = pathlib.Path(mod.__file__).resolve()
    assert site in where.parents, f"{mod.__name__} imports from {where}, not from the installed build in {site}"
print("ocml from", pathlib.Path(ocml.__file__).parent)
EOF
py="$(cd "$(dirname "$py")" && pwd)/python"
cd tests
if [ "$#" -eq 0 ]; then set -- .; fi
PYTHONSAFEPATH=1 "$py" -m pytest "$@"
