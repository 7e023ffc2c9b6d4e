#!/usr/bin/env bash
# The README's test command: install ocml with its test, docs, ray, torch and megatron extras into the active
# Python, check types (scripts/typecheck.sh), build the docs strictly (scripts/docs.sh), run pytest.  torch is the CPU build (the `torch` extra): tests/serving/test_hf_generate.py runs a tiny model's
# generate() with it.  trl is installed without its dependencies: the tests only read the chat
# templates its wheel ships (Qwen2.5, gpt-oss) and its padding-free collator.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -e ".[test,docs,ray,torch,megatron]"
python -m pip install --quiet --no-deps "trl>=0.20"
# save_pretrained folders must load in transformers 4.x too (tests/template/test_save_portable.py): a scratch
# venv with 4.57, made once and kept (OCML_TRANSFORMERS4_VENV to put it elsewhere)
tf4="${OCML_TRANSFORMERS4_VENV:-.venv-transformers4}"
if [ ! -x "$tf4/bin/python" ] || ! "$tf4/bin/python" -c "import transformers" 2>/dev/null; then
  python -m venv "$tf4"
  "$tf4/bin/python" -m pip install --quiet "transformers==4.57.*" "jinja2>=3.1"
fi
export OCML_TRANSFORMERS4_PYTHON="$(cd "$tf4" && pwd)/bin/python"
# types (mypy, strict on the public API) and the docs site (mkdocs --strict) before the tests
bash scripts/typecheck.sh
bash scripts/docs.sh
# PYTHONSAFEPATH: the checkout's folders are not on sys.path, so the tests import the installed
# ocml.encoder / ocml.vocab only (a stray top-level `encoder` / `vocab` import fails loudly).
# One pytest-xdist worker per core, a file per worker (a file's fixtures and servers stay in one
# process): 12 min instead of 21 on 2 cores.  OCML_TEST_WORKERS=0 runs in one process.
PYTHONSAFEPATH=1 python -m pytest tests -n "${OCML_TEST_WORKERS:-auto}" --dist loadfile "$@"
