#!/usr/bin/env bash
# The compose demo, run for real on a local Docker engine (CI runs it after the tests):
#   1. installs what is missing with apt (docker.io, docker-compose, debootstrap) and starts dockerd
#      as root when no engine answers;
#   2. builds the images with scripts/build-images.sh --local-base --prebuilt: base images from
#      Debian packages (no registry needed), the service jars of the host's Maven build (built here
#      with ./mvnw when missing);
#   3. `docker-compose up -d` the demo as project "paramserver-smoke" (no Grafana: its profile is
#      off), on free host ports, and waits until the one-shot "evaluate" service has evaluated the
#      exported model; prints its RESULT line; checks that the serving replica answers POST /v1/pull
#      with the model's dense parameters;
#   4. checks that Prometheus scraped every service (up == 1 at some point for each target), that
#      the Helm chart's alert expressions evaluate there on the metrics they read, and that none of
#      them fires at the end of the successful job, also once masters and pservers are stopped (as the
#      chart's job end scales them to 0);
#   5. runs a second job, stops it through the leading master's POST /admin/job/stop (psctl stop),
#      and checks that its trainers exit 3, are restarted at most 3 times and stay exited;
#   6. `down -v` and, if it started dockerd, stops it: also on failure or Ctrl-C (trap).
# Exits 0 only if all held. Prints the time of each phase. Needs root (or a running engine).
#
# Settings from the environment:
#   SMOKE_TIMEOUT       longest wait for the job, in seconds (default 900)
#   SMOKE_MIN_ACCURACY  the RESULT accuracy must reach this (default 0.9)
#   SMOKE_KEEP_IMAGES   1 (default) keeps the built images for the next run; 0 removes them
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROJECT=paramserver-smoke
TIMEOUT=${SMOKE_TIMEOUT:-900}
MIN_ACCURACY=${SMOKE_MIN_ACCURACY:-0.9}
WORK=$(mktemp -d)
DOCKERD_PID=""
T0=$(date +%s)
PHASE_START=$T0
TIMINGS=""

say() { printf 'compose-smoke: %s\n' "$*"; }
fail() { printf 'compose-smoke: FAILED: %s\n' "$*" >&2; exit 1; }
phase_done() {
  local now
  now=$(date +%s)
  TIMINGS="$TIMINGS $1=$((now - PHASE_START))s"
  PHASE_START=$now
}

compose() { docker-compose -p "$PROJECT" -f "$ROOT/docker-compose.yml" "$@"; }

cleanup() {
  local rc=$?
  set +e
  if [ -n "${COMPOSE_UP:-}" ]; then
    if [ $rc -ne 0 ]; then
      say "logs of the failed run (last 60 lines per service):"
      compose logs --no-color --tail=60 2>&1 | sed 's/^/  /'
    fi
    compose down -v --remove-orphans --timeout 30 >"$WORK/down.log" 2>&1 \
      || { say "down -v failed:"; cat "$WORK/down.log"; }
    [ -n "${UP_PID:-}" ] && kill "$UP_PID" 2>/dev/null
  fi
  if [ "${SMOKE_KEEP_IMAGES:-1}" = 0 ] && [ -n "${DOCKER:-}" ]; then
    "$DOCKER" images --format '{{.Repository}}:{{.Tag}}' | grep -E '^paramserver(-local)?/' \
      | xargs -r "$DOCKER" rmi -f >/dev/null 2>&1
  fi
  if [ -n "$DOCKERD_PID" ]; then
    say "stopping the dockerd it started (pid $DOCKERD_PID)"
    kill "$DOCKERD_PID" 2>/dev/null
    for _ in $(seq 1 60); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$DOCKERD_PID" 2>/dev/null && kill -9 "$DOCKERD_PID"
  fi
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 1. tools and the engine ----
export PATH="$PATH:/usr/sbin:/sbin" # dockerd and debootstrap live there
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || fail "missing ${missing[*]}: run as root, or apt-get install -y --no-install-recommends ${missing[*]}"
  say "installing ${missing[*]} (apt-get, --no-install-recommends)"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$WORK/apt.log" 2>&1; then
    apt-get update -qq >>"$WORK/apt.log" 2>&1 || true
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$WORK/apt.log" 2>&1 \
      || { tail -30 "$WORK/apt.log" >&2; fail "apt-get install ${missing[*]}"; }
  fi
fi
# the CLI of Debian's docker.io (20.10) builds with BuildKit without the buildx plugin
DOCKER=docker
[ -x /usr/bin/docker ] && DOCKER=/usr/bin/docker
export DOCKER
if ! "$DOCKER" info >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || fail "no Docker engine answers and only root can start dockerd"
  say "starting dockerd (log: $WORK/dockerd.log)"
  setsid dockerd >"$WORK/dockerd.log" 2>&1 &
  DOCKERD_PID=$!
  deadline=$(($(date +%s) + 60))
  until "$DOCKER" info >/dev/null 2>&1; do
    kill -0 "$DOCKERD_PID" 2>/dev/null || { tail -20 "$WORK/dockerd.log" >&2; fail "dockerd exited"; }
    [ "$(date +%s)" -lt $deadline ] || { tail -20 "$WORK/dockerd.log" >&2; fail "dockerd did not answer within 60 s"; }
    sleep 0.5
  done
fi
phase_done install

# ---- 2. images ----
jars_missing=false
for s in master-service pserver-service trainer-agent serving-service psctl; do
  compgen -G "$ROOT/$s/target/$s-*-exec.jar" >/dev/null || jars_missing=true
done
if $jars_missing; then
  say "building the service jars (./mvnw -B -q -DskipTests package)"
  (cd "$ROOT" && ./mvnw -B -q -DskipTests -pl master-service,pserver-service,trainer-agent,serving-service,psctl -am package)
fi
phase_done jars
"$ROOT/scripts/build-images.sh" --local-base --prebuilt
phase_done images

# ---- 3. the demo job ----
export PARAMSERVER_ETCD_IMAGE=paramserver-local/etcd:3.4
export PARAMSERVER_PROMETHEUS_IMAGE=paramserver-local/prometheus:2.42
export PARAMSERVER_JOB=smoke
# free host ports: nothing collides with services already listening on this machine
export PARAMSERVER_MASTER_1_PORT="" PARAMSERVER_MASTER_2_PORT="" PARAMSERVER_PSERVER_1_PORT="" \
  PARAMSERVER_PSERVER_2_PORT="" PARAMSERVER_SERVING_PORT="" PARAMSERVER_SERVING_GRPC_PORT="" \
  PARAMSERVER_PROMETHEUS_PORT="" GRAFANA_PORT=""
COMPOSE_UP=1
compose down -v --remove-orphans --timeout 10 >/dev/null 2>&1 || true # a killed earlier run
say "docker-compose up -d (project $PROJECT)"
# up -d returns once it started "evaluate", i.e. after the trainers completed: run it aside and poll
compose up -d --no-build >"$WORK/up.log" 2>&1 &
UP_PID=$!
deadline=$(($(date +%s) + TIMEOUT))
next_report=0
while :; do
  id=$(compose ps -q evaluate 2>/dev/null || true)
  if [ -n "$id" ]; then
    state=$("$DOCKER" inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$id")
    [ "${state%% *}" = exited ] && break
  fi
  if ! kill -0 "$UP_PID" 2>/dev/null && [ -z "$id" ]; then
    wait "$UP_PID" || { cat "$WORK/up.log" >&2; fail "docker-compose up failed"; }
  fi
  now=$(date +%s)
  [ "$now" -lt $deadline ] || fail "the job did not finish within $TIMEOUT s (SMOKE_TIMEOUT)"
  if [ "$now" -ge $next_report ]; then
    say "$((now - PHASE_START)) s: $(compose ps 2>/dev/null | awk 'NR>2 {printf "%s[%s] ", $1, $0 ~ /Exit 0/ ? "done" : ($0 ~ /Exit/ ? "EXITED" : ($0 ~ /healthy/ ? "healthy" : "up"))}' | sed "s/${PROJECT}_//g")"
    next_report=$((now + 30))
  fi
  sleep 2
done
wait "$UP_PID" 2>/dev/null || true
UP_PID=""
compose logs --no-color evaluate >"$WORK/evaluate.log" 2>&1
[ "${state#* }" = 0 ] || { cat "$WORK/evaluate.log" >&2; fail "evaluate exited with ${state#* }"; }
result=$(grep -o 'RESULT .*' "$WORK/evaluate.log" | tail -1)
[ -n "$result" ] || { cat "$WORK/evaluate.log" >&2; fail "evaluate printed no RESULT line"; }
echo "$result"
accuracy=$(sed -n 's/.*accuracy=\([0-9.]*\).*/\1/p' <<<"$result")
awk -v a="$accuracy" -v m="$MIN_ACCURACY" 'BEGIN { exit !(a >= m) }' \
  || fail "accuracy $accuracy is below SMOKE_MIN_ACCURACY=$MIN_ACCURACY"
for t in trainer-1 trainer-2; do
  code=$("$DOCKER" inspect -f '{{.State.ExitCode}}' "$(compose ps -q "$t")")
  [ "$code" = 0 ] || fail "$t exited with $code"
done
# the serving replica followed the job and keeps serving its last version over REST
served=""
for _ in $(seq 60); do
  served=$(compose exec -T serving-1 curl -fsS -X POST -H 'Content-Type: application/json' -d '{}' \
    http://127.0.0.1:8084/v1/pull 2>/dev/null </dev/null) && break
  sleep 2
done
grep -q '"tensors":\[{' <<<"$served" || fail "serving-1 answered no dense parameters on POST /v1/pull: $served"
say "serving-1 serves the trained model ($(grep -o '"number":[0-9]*' <<<"$served" | head -1))"
phase_done job

# ---- 4. Prometheus scraped every service ----
# </dev/null: exec would swallow the standard input of a loop that calls it
query() {
  compose exec -T prometheus wget -q -O - "http://127.0.0.1:9090/api/v1/query?query=$1" 2>/dev/null </dev/null
}
targets="master-1:8080 master-2:8080 pserver-1:8082 pserver-2:8082 trainer-1:8083 trainer-2:8083 serving-1:8084 etcd:2381"
# max_over_time(up[1h]): 1 if a scrape of the target ever succeeded during the run
answer=$(query 'max_over_time(up%5B1h%5D)')
for t in $targets; do
  grep -q "\"instance\":\"$t\"[^}]*}, *\"value\":\[[0-9.]*,\"1\"\]" <<<"$answer" \
    || grep -q "\"instance\":\"$t\",[^]]*\"1\"\]" <<<"$answer" \
    || { echo "$answer" >&2; fail "Prometheus never scraped $t"; }
done
# and the services' own metrics arrived, per role
for role in master pserver trainer; do
  n=$(query "count(max_over_time(jvm_threads_live_threads%7Brole%3D%22$role%22%7D%5B1h%5D))" | sed -n 's/.*"value":\[[0-9.]*,"\([0-9]*\)"\].*/\1/p')
  [ "${n:-0}" -ge 2 ] || fail "Prometheus holds jvm_threads_live_threads of ${n:-0} $role services, expected 2"
done
say "Prometheus scraped every service ($targets)"
# the Helm chart's alert expressions, for this job, evaluate on the real metrics (they parse, and the
# series they read exist: the checkpoint age, for one, is exported from the shard's initialisation on),
# and none of them holds at the end of a successful job: neither as compose leaves it, nor once the
# masters and pservers are stopped as the chart's job end scales them to 0 (no NoMasterLeader page)
if helm=$("$ROOT/scripts/fetch-helm.sh" 2>"$WORK/helm.log"); then
  HELM_CACHE_HOME="$WORK/helm" HELM_CONFIG_HOME="$WORK/helm" HELM_DATA_HOME="$WORK/helm" \
    "$helm" template smoke "$ROOT/helm/paramserver" --namespace compose --set prometheusRule.enabled=true \
    --set jobName="$PARAMSERVER_JOB" --show-only templates/prometheusrule.yaml >"$WORK/rule.yaml"
  mapfile -t exprs < <(sed -n 's/^ *expr: //p' "$WORK/rule.yaml")
  [ "${#exprs[@]}" -ge 5 ] || fail "found ${#exprs[@]} alert expressions in the rendered PrometheusRule, expected 5"
  # every expression evaluates, and (with $1 = quiet) returns no series: no alert would fire
  check_alerts() {
    local expr enc answer
    for expr in "${exprs[@]}"; do
      enc=$(printf '%s' "$expr" | od -An -tx1 | tr -d ' \n' | sed 's/../%&/g')
      answer=$(query "$enc")
      grep -q '"status":"success"' <<<"$answer" || { echo "$answer" >&2; fail "alert expression does not evaluate: $expr"; }
      grep -q '"result":\[\]' <<<"$answer" || { echo "$answer" >&2; fail "alert fires at the end of a successful job ($1): $expr"; }
    done
  }
  for metric in paramserver_pserver_checkpoint_age_seconds paramserver_master_leader \
    paramserver_etcd_connected paramserver_trainer_dropped_pushes_total paramserver_trainer_samples_total; do
    c=$(query "count(max_over_time(${metric}%7Bnamespace%3D%22compose%22,paramserver_job%3D%22$PARAMSERVER_JOB%22%7D%5B1h%5D))" \
      | sed -n 's/.*"value":\[[0-9.]*,"\([0-9]*\)"\].*/\1/p')
    [ "${c:-0}" -ge 1 ] || fail "no $metric series (namespace=compose) for the alerts to read"
  done
  check_alerts "services up"
  compose stop -t 30 master-1 master-2 pserver-1 pserver-2 >"$WORK/stop.log" 2>&1 || { cat "$WORK/stop.log" >&2; fail "stop the masters and pservers"; }
  # Prometheus marks a target's series stale at its first failed scrape (every 10 s)
  deadline=$(($(date +%s) + 60))
  until [ "$(query 'max(up%7Bjob%3D~%22paramserver-(master%7Cpserver)%22%7D)' | sed -n 's/.*"value":\[[0-9.]*,"\([0-9]*\)"\].*/\1/p')" = 0 ]; do
    [ "$(date +%s)" -lt $deadline ] || fail "Prometheus still scrapes the stopped masters or pservers after 60 s"
    sleep 2
  done
  check_alerts "masters and pservers stopped"
  say "the chart's ${#exprs[@]} alert expressions evaluate, the series they read exist, and none fires after the job"
else
  say "SKIPPED the alert expressions: no helm ($(tail -1 "$WORK/helm.log"))"
fi
phase_done prometheus

# ---- 5. a stopped job ends ----
# A second job on the same etcd: stopped through the leading master's admin endpoint (what psctl
# stop calls) once it runs; its trainers exit 3, are restarted at most 3 times (on-failure:3) and
# stay exited. It gets many passes: a pass of the demo data takes about a second, and the stop
# (polled every few seconds) must find the job running, not ended.
export PARAMSERVER_JOB=smoke-stop
export PARAMSERVER_PASSES=500
say "docker-compose up -d trainer-1 trainer-2 (job $PARAMSERVER_JOB), then stop the job"
compose up -d --no-build trainer-1 trainer-2 >"$WORK/up-stop.log" 2>&1 &
UP_PID=$!
token=${PARAMSERVER_ADMIN_TOKEN:-change-me-demo-token}
deadline=$(($(date +%s) + TIMEOUT))
stopped=""
until [ -n "$stopped" ]; do
  for m in master-1 master-2; do
    answer=$(compose exec -T "$m" curl -sS -m 10 -X POST -H "Authorization: Bearer $token" \
      http://127.0.0.1:8080/admin/job/stop 2>/dev/null </dev/null || true)
    grep -q '"stopped":true' <<<"$answer" && { stopped=$m; break; }
    grep -q 'already ended' <<<"$answer" && { echo "$answer" >&2; fail "job $PARAMSERVER_JOB ended before it was stopped"; }
  done
  [ "$(date +%s)" -lt $deadline ] || fail "could not stop job $PARAMSERVER_JOB within $TIMEOUT s"
  [ -n "$stopped" ] || sleep 3
done
say "job $PARAMSERVER_JOB stopped through $stopped"
deadline=$(($(date +%s) + 600))
for t in trainer-1 trainer-2; do
  until [ "$("$DOCKER" inspect -f '{{.State.Status}} {{.RestartCount}} {{.State.ExitCode}}' "$(compose ps -q "$t")")" = "exited 3 3" ]; do
    [ "$(date +%s)" -lt $deadline ] || fail "$t did not end after 3 restarts with exit code 3: $("$DOCKER" inspect -f '{{.State.Status}} restarts={{.RestartCount}} exit={{.State.ExitCode}}' "$(compose ps -q "$t")")"
    sleep 2
  done
done
wait "$UP_PID" 2>/dev/null || true
UP_PID=""
say "the stopped job's trainers exited 3, were restarted 3 times and stay exited"
phase_done stop

compose down -v --remove-orphans --timeout 30 >"$WORK/down.log" 2>&1 || { cat "$WORK/down.log" >&2; fail "down -v"; }
COMPOSE_UP=""
phase_done down
say "OK in $(($(date +%s) - T0)) s:$TIMINGS"
