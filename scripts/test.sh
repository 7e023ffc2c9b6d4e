#!/usr/bin/env bash
# The README's test command: install ocml with its test extra into the active Python, run pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -e ".[test]"
python -m pytest tests "$@"
