#!/usr/bin/env bash
# Install shop-r1 with its test, train and ray extras (CPU build of torch, never the
# multi-GB CUDA wheels), then run everything CI runs: lint, format, types, the
# profile consistency check and the test suite (real Ray heads, a real Docker engine).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  # The CPU index carries torch and its dependencies; --retries 0 fails fast offline.
  "$PY" -m pip install --retries 0 --timeout 30 \
    --index-url https://download.pytorch.org/whl/cpu "torch==2.13.0" \
  || "$PY" -m pip install "torch==2.13.0+cpu" \
  || "$PY" -m pip install "torch==2.13.0"
fi
"$PY" -m pip install -q -e ".[test,train,ray]"
# The Docker tests start their own engine (root, dockerd) and make their base image with
# mmdebstrap; as root on Debian/Ubuntu, install both when missing (else those tests skip
# and say why).
if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null \
  && ! { command -v dockerd && command -v mmdebstrap; } >/dev/null; then
  apt-get install -y -q docker.io mmdebstrap >/dev/null \
    || echo "note: apt-get install docker.io mmdebstrap failed; the Docker tests will skip"
fi

"$PY" -m ruff check .
"$PY" -m ruff format --check .
"$PY" -m mypy
"$PY" -m shop_r1_doctor.cli.main profiles check
"$PY" -m pytest "$@"
