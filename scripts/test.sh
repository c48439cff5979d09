#!/usr/bin/env bash
# Install shop-r1 with its test and train extras (CPU build of torch, never the
# multi-GB CUDA wheels), then run everything CI runs: lint, format, types, the
# profile consistency check and the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

# It installs into $PY's environment: say which, never a system Python unasked.
prefix=$("$PY" -c "import sys; print(sys.prefix)")
if [ -z "${SHOP_R1_TEST_NO_INSTALL:-}" ]; then
  if "$PY" -c "import sys, os; sys.exit(sys.prefix != sys.base_prefix or bool(os.environ.get('CONDA_PREFIX')))" \
     && [ -z "${SHOP_R1_TEST_SYSTEM_INSTALL:-}" ]; then
    echo "scripts/test.sh: $PY ($prefix) is not a virtual environment; make one first" \
      "(python3 -m venv .venv && . .venv/bin/activate), or set SHOP_R1_TEST_SYSTEM_INSTALL=1" \
      "to install there anyway, or SHOP_R1_TEST_NO_INSTALL=1 to only run the checks" >&2
    exit 2
  fi
  echo "scripts/test.sh: installing shop-r1[test,train] (CPU torch if missing) into $prefix" >&2
fi

if [ -z "${SHOP_R1_TEST_NO_INSTALL:-}" ] && ! "$PY" -c "import torch" >/dev/null 2>&1; then
  # The CPU index carries torch and its dependencies; --retries 0 fails fast offline.
  "$PY" -m pip install --retries 0 --timeout 30 \
    --index-url https://download.pytorch.org/whl/cpu "torch==2.13.0" \
  || "$PY" -m pip install "torch==2.13.0+cpu" \
  || "$PY" -m pip install "torch==2.13.0"
fi
[ -n "${SHOP_R1_TEST_NO_INSTALL:-}" ] || "$PY" -m pip install -q -e ".[test,train]"

"$PY" -m ruff check .
"$PY" -m ruff format --check .
"$PY" -m mypy
# the import-linter contracts in pyproject.toml (layers; the doctor never imports the trainer)
# (`lint-imports` through this interpreter: the one on PATH may belong to another env)
"$PY" -c "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
"$PY" -m shop_r1.cli profiles check
"$PY" -m pytest "$@"
