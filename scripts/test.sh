#!/usr/bin/env bash
# Install shop-r1 with its test, train and ray extras (CPU build of torch, never the
# multi-GB CUDA wheels), then run everything CI runs: lint, format, types, the
# profile consistency check and the test suite (real Ray heads, a real Docker engine).
#
# torch comes only from the PyTorch CPU index (as torch==X+cpu): when that index cannot
# be reached the script fails instead of falling back to PyPI, whose Linux torch wheel is
# the CUDA build. The installed torch is then pinned while the extras install, so no
# dependency can swap it for a CUDA wheel either.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_VERSION=${SHOP_R1_TORCH_VERSION:-2.13.0}
CPU_INDEX=https://download.pytorch.org/whl/cpu

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
  echo "scripts/test.sh: installing shop-r1[test,train,ray] (CPU torch if missing) into $prefix" >&2
  if ! "$PY" -c "import torch" >/dev/null 2>&1; then
    # --retries 0 fails fast offline; the +cpu local version exists only on the CPU index
    # (and in local wheel mirrors), never on PyPI, whose torch is the CUDA build.
    if ! "$PY" -m pip install --retries 0 --timeout 30 \
      --index-url "$CPU_INDEX" "torch==${TORCH_VERSION}+cpu"; then
      echo "scripts/test.sh: cannot install torch==${TORCH_VERSION}+cpu from $CPU_INDEX;" \
        "not falling back to PyPI (its torch is the CUDA build). Install a CPU torch first." >&2
      exit 1
    fi
  fi
fi
if ! "$PY" -c "import sys, torch; sys.exit(torch.version.cuda is not None)"; then
  echo "scripts/test.sh: the installed torch is a CUDA build; CI and this script use the" \
    "CPU build (pip install torch --index-url $CPU_INDEX)" >&2
  exit 1
fi
if [ -z "${SHOP_R1_TEST_NO_INSTALL:-}" ]; then
  constraints=$(mktemp)
  trap 'rm -f "$constraints"' EXIT
  "$PY" -c "import torch; print('torch==' + torch.__version__)" >"$constraints"
  "$PY" -m pip install -q -c "$constraints" -e ".[test,train,ray]"
  # The Docker tests start their own engine (root, dockerd) and make their base image with
  # mmdebstrap; as root on Debian/Ubuntu, install both when missing (else those tests skip
  # and say why). SHOP_R1_TEST_NO_APT=1 leaves the system alone.
  if [[ $(id -u) == 0 ]] && [ -z "${SHOP_R1_TEST_NO_APT:-}" ] && command -v apt-get >/dev/null \
    && ! { command -v dockerd && command -v mmdebstrap; } >/dev/null; then
    { apt-get update -qq && apt-get install -y -q docker.io mmdebstrap >/dev/null; } \
      || echo "note: apt-get install docker.io mmdebstrap failed; the Docker tests will skip" >&2
  fi
fi

"$PY" -m ruff check .
"$PY" -m ruff format --check .
"$PY" -m mypy
# the import-linter contracts in pyproject.toml (layers; the doctor never imports the trainer)
# (`lint-imports` through this interpreter: the one on PATH may belong to another env)
"$PY" -c "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
"$PY" -m shop_r1.cli profiles check
# every profile's library pins resolve together on the package index (torch, vLLM and
# flash-attn come from the PyTorch index or a source build): ~40 s; exit 3 is the
# script's one-line skip when the index cannot be reached
resolved=0
"$PY" scripts/resolve_profiles.py --libraries || resolved=$?
if [ "$resolved" != 0 ] && [ "$resolved" != 3 ]; then exit "$resolved"; fi
"$PY" -m pytest "$@"
