#!/usr/bin/env bash
# mypy over the package as users import it (scripts/layout_tree.sh); the configuration is pyproject.toml's
# [tool.mypy] (strict on the public API modules).  tests/typecheck_public_api.py is what a user's checker
# sees: the public return types, and the mistakes it must catch.  0 errors, or the run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/layout_tree.sh
ln -s "$PWD/tests/typecheck_public_api.py" .typecheck/tree/typecheck_public_api.py
MYPYPATH=.typecheck/tree python -m mypy --config-file pyproject.toml --cache-dir .typecheck/cache -p ocml \
  -m typecheck_public_api "$@"
