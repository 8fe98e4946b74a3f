#!/usr/bin/env bash
# The test command: installs etcd where needed, then builds and tests every module.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
exec ./mvnw -B verify "$@"
