#!/usr/bin/env bash
# The README's main command: install ocml, render the bundled example conversation, print ids + mask.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -e .
ocml render examples/weather_tool_call.json "$@"
