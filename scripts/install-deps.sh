#!/usr/bin/env bash
# Installs what the tests and the local run need beyond Java 17: an etcd server (Debian's
# etcd-server package) and, for the console's browser tests, a headless Chromium with its driver
# (Debian's chromium and chromium-driver packages) and, for the Python client (clients/python) and
# its tests, Python's stock gRPC and protobuf with protoc, its gRPC plugin and the well-known
# types, PyTorch, NumPy and pytest (Debian's python3-grpcio, python3-protobuf, protobuf-compiler,
# protobuf-compiler-grpc, libprotobuf-dev, python3-torch, python3-numpy and python3-pytest).
# Installs only what is missing. Then scripts/python-venv.sh makes (or reuses) the virtual
# environment with PyPI's newest PyTorch, grpcio and protobuf that the Python client is tested in too.
# INSTALL_BROWSER=0 skips the browser, INSTALL_PYTHON=0 the Python packages and the venv,
# INSTALL_PYTHON_VENV=0 only the venv (the local run needs none of them).
set -euo pipefail

python_venv() {
  if [ "${INSTALL_PYTHON:-1}" != "0" ] && [ "${INSTALL_PYTHON_VENV:-1}" != "0" ]; then
    "$(dirname "$0")/python-venv.sh" >/dev/null
  fi
}

packages=()
if ! { command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || [ -n "${ETCD_BIN:-}" ]; }; then
  packages+=(etcd-server)
fi
if [ "${INSTALL_BROWSER:-1}" != "0" ]; then
  if ! { command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; }; then
    packages+=(chromium)
  fi
  if ! { command -v chromedriver >/dev/null 2>&1 || [ -x /usr/bin/chromedriver ]; }; then
    packages+=(chromium-driver)
  fi
fi
if [ "${INSTALL_PYTHON:-1}" != "0" ]; then
  if ! command -v protoc >/dev/null 2>&1; then
    packages+=(protobuf-compiler)
  fi
  if ! [ -x /usr/bin/grpc_python_plugin ]; then
    packages+=(protobuf-compiler-grpc)
  fi
  if ! [ -f /usr/include/google/protobuf/struct.proto ]; then
    packages+=(libprotobuf-dev)
  fi
  if ! /usr/bin/python3 -c 'import grpc, google.protobuf' >/dev/null 2>&1; then
    packages+=(python3-grpcio python3-protobuf)
  fi
  if ! /usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    packages+=(python3-venv)
  fi
  for module in torch numpy pytest; do
    if ! /usr/bin/python3 -c "import $module" >/dev/null 2>&1; then
      packages+=("python3-$module")
    fi
  done
fi
if [ ${#packages[@]} -eq 0 ]; then
  python_venv
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "missing: ${packages[*]} and apt-get is not available: install etcd 3.4+ (or set ETCD_BIN)" \
    "and Chromium with chromedriver, and put them on the PATH" >&2
  exit 2
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "missing: run 'sudo apt-get install -y ${packages[*]}' (as root), then try again" >&2
    exit 2
  fi
fi
echo "installing ${packages[*]} (Debian packages)..."
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${packages[@]}"
python_venv
