#!/usr/bin/env bash
# .typecheck/tree/ocml: the package as users import it (`ocml`, with the repository's encoder/ and vocab/
# folders as ocml.encoder and ocml.vocab, setup.py's package_dir), as symlinks.  mypy and mkdocstrings read
# source from paths and cannot follow that mapping (nor the editable install's import hook).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
tree=.typecheck/tree
rm -rf "$tree" && mkdir -p "$tree/ocml"
for f in ocml/*; do ln -s "$root/$f" "$tree/ocml/$(basename "$f")"; done
ln -s "$root/encoder" "$tree/ocml/encoder"
ln -s "$root/vocab" "$tree/ocml/vocab"
