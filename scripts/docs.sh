#!/usr/bin/env bash
# The docs site (mkdocs.yml, docs/): built with --strict, so a broken link or API reference fails.
# `bash scripts/docs.sh serve` previews it.  mkdocstrings reads the package from .typecheck/tree.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/layout_tree.sh
export NO_MKDOCS_2_WARNING=1
if [ "${1:-build}" = serve ]; then exec python -m mkdocs serve; fi
python -m mkdocs build --strict "$@"
