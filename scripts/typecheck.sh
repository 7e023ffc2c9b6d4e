#!/usr/bin/env bash
# mypy over the package as users import it (scripts/layout_tree.sh); the configuration is pyproject.toml's
# [tool.mypy] (strict on the public API modules).  0 errors, or the run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/layout_tree.sh
MYPYPATH=.typecheck/tree python -m mypy --config-file pyproject.toml --cache-dir .typecheck/cache -p ocml "$@"
