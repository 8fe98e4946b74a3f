#!/usr/bin/env bash
# Installs what the tests and the local run need beyond Java 17: an etcd server (Debian's
# etcd-server package). Does nothing when etcd is already on the PATH or at /usr/bin/etcd.
set -euo pipefail

if command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || [ -n "${ETCD_BIN:-}" ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "etcd is required and apt-get is not available: install etcd 3.4+ and put it on the PATH (or set ETCD_BIN)" >&2
  exit 2
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "etcd is required: run 'sudo apt-get install -y etcd-server' (as root), then try again" >&2
    exit 2
  fi
fi
echo "installing etcd (Debian package etcd-server)..."
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends etcd-server
