#!/usr/bin/env bash
# The README's test command: install ocml with its test, ray and torch extras into the active Python,
# run pytest.  torch is the CPU build (the `torch` extra): tests/test_hf_generate.py runs a tiny model's
# generate() with it.  trl is installed without its dependencies: the tests only read the chat
# templates its wheel ships (Qwen2.5, gpt-oss) and its padding-free collator.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -e ".[test,ray,torch]"
python -m pip install --quiet --no-deps "trl>=0.20"
python -m pytest tests "$@"
