#!/usr/bin/env bash
# mypy over the package as users import it: `ocml`, with the repository's encoder/ and vocab/ folders as
# ocml.encoder and ocml.vocab (setup.py's package_dir).  mypy cannot follow that mapping (nor the editable
# install's import hook), so a tree of symlinks in .typecheck/ gives it the installed layout; the
# configuration is pyproject.toml's [tool.mypy] (strict on the public API modules).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
tree=.typecheck/tree
rm -rf "$tree" && mkdir -p "$tree/ocml"
for f in ocml/*; do ln -s "$root/$f" "$tree/ocml/$(basename "$f")"; done
ln -s "$root/encoder" "$tree/ocml/encoder"
ln -s "$root/vocab" "$tree/ocml/vocab"
MYPYPATH="$tree" python -m mypy --config-file pyproject.toml --cache-dir .typecheck/cache -p ocml "$@"
