#!/usr/bin/env bash
# The README's main command: install ocml, pack the bundled sample (examples/sample/: a few hundred
# conversations, five of them malformed on purpose) into training shards, and print the report.
# Extra arguments go to `ocml pack` (e.g. --format harmony, --output both, --workers 1).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -e .
out="${OCML_DEMO_OUT:-/tmp/ocml-demo}"
ocml pack examples/sample --seq-len 2048 --out "$out" --overwrite "$@"
echo
echo "shards: $out/data/*.parquet (load: datasets.load_dataset(\"parquet\", data_files=\"$out/data/*.parquet\"))"
echo "also:   $out/manifest.json  $out/report.json  $out/errors.jsonl  $out/overlong.jsonl  $out/untrained.jsonl  $out/lengths.png"
