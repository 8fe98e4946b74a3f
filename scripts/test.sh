#!/usr/bin/env bash
# The test command: installs etcd where needed, then builds (with the static checker, profile
# errorprone) and tests every module.
set -euo pipefail
cd "$(dirname "$0")/.."
# the Python venv (PyPI's torch: minutes of downloads) is made in the background while Maven builds
# and tests the other modules; integration-tests' Python tests wait for it (scripts/python-venv.sh)
INSTALL_PYTHON_VENV=0 scripts/install-deps.sh
venv_pid=""
if [ "${INSTALL_PYTHON:-1}" != "0" ] && [ "${INSTALL_PYTHON_VENV:-1}" != "0" ]; then
  mkdir -p target
  scripts/python-venv.sh > target/python-venv.log 2>&1 &
  venv_pid=$!
fi
# SOAK_DURATION (e.g. PT10M) sets FaultSoakTest's length, 2 minutes by default (docs/how-to/test.md)
ci=()
if [ -n "${SOAK_DURATION:-}" ]; then
  ci+=("-Dsoak.duration=${SOAK_DURATION}")
fi
status=0
./mvnw -B verify -Perrorprone ${ci[@]+"${ci[@]}"} "$@" || status=$?
if [ -n "$venv_pid" ] && ! wait "$venv_pid"; then
  echo "scripts/python-venv.sh failed (target/python-venv.log):" >&2
  tail -20 target/python-venv.log >&2
  status=1
fi
exit $status
