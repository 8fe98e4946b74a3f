#!/usr/bin/env bash
# Makes the Python virtual environment the tests run the Python client in beside Debian's python3:
# PyPI's newest PyTorch 2.x, grpcio, protobuf and NumPy (with pytest, googleapis-common-protos, and
# the build and check tools: setuptools, grpcio-tools, build, mypy and the grpc/protobuf type stubs).
# Idempotent: a venv made from the same package list is reused as it is (the stamp file names the
# list); PARAMSERVER_PY_VENV_REFRESH=1 upgrades it to PyPI's newest.
#
#   scripts/python-venv.sh          # prints the venv's python
#
# Where: $PARAMSERVER_PY_VENV, default ~/.cache/paramserver/py-venv (integration-tests' Python tests
# look there too, and wait for a venv being made: $VENV.building names the pid making it; see
# docs/how-to/python.md). scripts/test.sh makes it in the background while Maven builds. Cost, measured on a fresh machine: about 4 minutes and
# 5.5 GB, nearly all of it PyTorch's CUDA wheels (PyPI's Linux torch depends on them; it cannot be
# imported without them).
set -euo pipefail

VENV="${PARAMSERVER_PY_VENV:-$HOME/.cache/paramserver/py-venv}"
PACKAGES=("torch>=2,<3" grpcio protobuf numpy pytest googleapis-common-protos "setuptools>=77" grpcio-tools
  build mypy types-protobuf types-grpcio)
STAMP="$VENV/.paramserver-packages"
WANT="${PACKAGES[*]}"

if [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT" ] \
  && [ "${PARAMSERVER_PY_VENV_REFRESH:-0}" != "1" ]; then
  echo "$VENV/bin/python"
  exit 0
fi
PYTHON="${PYTHON:-/usr/bin/python3}"
if ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  echo "python-venv.sh: $PYTHON cannot make virtual environments (apt-get install python3-venv)" >&2
  exit 2
fi
start=$(date +%s)
echo "python-venv.sh: making $VENV with PyPI's newest ${PACKAGES[*]}..." >&2
rm -f "$STAMP"
# while it is made, $VENV.building holds this script's pid (the Java tests wait for it to end)
mkdir -p "$(dirname "$VENV")"
echo $$ > "$VENV.building"
trap 'rm -f "$VENV.building"' EXIT
"$PYTHON" -m venv "$VENV"
PIP_PROGRESS_BAR=off "$VENV/bin/python" -m pip install -q --upgrade pip >&2
PIP_PROGRESS_BAR=off "$VENV/bin/python" -m pip install -q --upgrade "${PACKAGES[@]}" >&2
echo "$WANT" > "$STAMP"
"$VENV/bin/python" - >&2 <<'PY'
import google.protobuf, grpc, numpy, torch
print("python-venv.sh: torch %s, grpcio %s, protobuf %s, numpy %s"
      % (torch.__version__, grpc.__version__, google.protobuf.__version__, numpy.__version__))
PY
echo "python-venv.sh: made in $(( $(date +%s) - start )) s, $(du -sh "$VENV" | cut -f1)" >&2
echo "$VENV/bin/python"
