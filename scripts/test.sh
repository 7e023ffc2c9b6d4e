#!/usr/bin/env bash
# The README's test command: install ocml with its test and ray extras into the active Python, run pytest.
# trl is installed without its dependencies (no torch): the tests only read the chat templates its
# wheel ships (Qwen2.5, gpt-oss), never import it.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -e ".[test,ray]"
python -m pip install --quiet --no-deps "trl>=0.20"
python -m pytest tests "$@"
