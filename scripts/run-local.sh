#!/usr/bin/env bash
# scripts/run-local.sh — the main job: a real etcd, masters, pservers and trainers as separate
# processes on 127.0.0.1, training a model; prints progress per pass and finally
#   RESULT accuracy=<a> loss=<l> samples_per_s=<s> elapsed_s=<t> train_s=<t>
# then stops everything. Exit code: 0 done, 1 the job failed or timed out, 2 bad usage or a
# missing prerequisite. Works from any directory; the run folder defaults to ./runs/<time>.
#
# What it does:
#   1. etcd: uses $ETCD_BIN, `etcd` on the PATH or /usr/bin/etcd; otherwise installs Debian's
#      etcd-server with apt-get (as root, or through sudo), else stops with the command to run.
#   2. build: if a service exec jar or the psctl exec jar is missing, builds those four jars and what
#      they need at the repository root (first run only): `./mvnw -B -q -Dmaven.test.skip=true
#      -pl master-service,pserver-service,trainer-agent,psctl -am package` (no test is compiled).
#   3. picks the newest installed Java of version 17 or later (scripts/lib/java.sh: JAVA_HOME, the
#      PATH, /usr/lib/jvm/*; PARAMSERVER_JAVA names one) for psctl and every service, and says which.
#   4. runs `psctl run-local` from the psctl exec jar with every option unchanged. psctl parses the
#      options (the same picocli options as the orchestrator's, dev.paramserver.localcluster
#      .RunOptions), prepares the input (without --train or --demo-data it generates the demo
#      dataset into <run-dir>/data; --format libsvm or csv converts the input to RecordIO there),
#      then runs the orchestrator. The JVM replaces this shell (exec): Ctrl-C and SIGTERM reach it,
#      and it stops the cluster in order.
#
# Options (see `scripts/run-local.sh --help`):
#   --train GLOB --test GLOB --model softmax --optimizer sgd --lr X --batch-size B --passes N
#   --pservers N --trainers M --masters K --run-dir DIR --job NAME --timeout 15m --jar-dir DIR
#   --set ROLE.KEY=VALUE --hidden 128,64 --sync --format recordio|libsvm|csv --standardize
#   --demo-data DIR
#   --mode async|sync|bounded-staleness --staleness K --init-from MODEL --momentum X
#   --weight-decay X --beta1 X --beta2 X --epsilon X --clip-value X --clip-norm X
#   --lr-schedule NAME --lr-step-size N --lr-gamma X --lr-warmup-steps N --lr-total-steps N
#   --lr-min X --sparse-optimizer NAME --sparse-lr X
# A --train/--test glob that matches no file, or a missing --init-from file, stops it at once
# (exit code 2), before anything starts.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

die() {
  echo "run-local: $*" >&2
  exit 2
}

# ---- --help needs no etcd (psctl parses every option) ----
want_help=false
for arg in "$@"; do
  case "$arg" in
    --help | --help=*) want_help=true ;;
  esac
done

# ---- 0. java: the newest installed Java 17 or later (scripts/lib/java.sh; PARAMSERVER_JAVA picks one) ----
. "$ROOT/scripts/lib/java.sh"
pick_java ||
  die "java (17 or newer) is required: sudo apt-get install -y openjdk-17-jdk-headless (or set PARAMSERVER_JAVA)"

# ---- 1. etcd ----
have_etcd() {
  [[ -n "${ETCD_BIN:-}" && -x "${ETCD_BIN}" ]] || command -v etcd >/dev/null 2>&1 || [[ -x /usr/bin/etcd ]]
}
if ! $want_help && ! have_etcd; then
  if ! command -v apt-get >/dev/null 2>&1; then
    die "etcd is required: install etcd 3.4+ and put it on the PATH (or set ETCD_BIN)"
  elif [[ "$(id -u)" == 0 ]]; then
    echo "installing etcd (apt-get install -y etcd-server)..."
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q etcd-server
  elif command -v sudo >/dev/null 2>&1; then
    echo "installing etcd (sudo apt-get install -y etcd-server)..."
    sudo apt-get update -q && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q etcd-server
  else
    die "etcd is required: sudo apt-get install -y etcd-server"
  fi
  have_etcd || die "etcd is still not found after installing etcd-server; set ETCD_BIN"
fi

# ---- 2. build ----
exec_jar() { # newest <module>/target/<module>-*-exec.jar, or nothing
  ls -t "$ROOT/$1/target/$1"-*-exec.jar 2>/dev/null | head -n 1 || true
}
need_build=false
for module in master-service pserver-service trainer-agent psctl; do
  [[ -n "$(exec_jar "$module")" ]] || need_build=true
done
if $need_build; then
  echo "building (first run only)..."
  (cd "$ROOT" && ./mvnw -B -q -Dmaven.test.skip=true \
    -pl master-service,pserver-service,trainer-agent,psctl -am package)
fi
PSCTL_JAR="$(exec_jar psctl)"
[[ -n "$PSCTL_JAR" ]] || die "psctl/target/psctl-*-exec.jar missing after the build"

JAVA_OPTS=(-Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 --enable-native-access=ALL-UNNAMED)
LOG_OPTS=(-Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss
  -Dorg.slf4j.simpleLogger.showThreadName=false -Dorg.slf4j.simpleLogger.showShortLogName=true)

# ---- 3. psctl run-local ----
export PARAMSERVER_HOME="$ROOT" # where the orchestrator finds the service jars
$want_help || echo "java $JAVA_VERSION_STRING ($JAVA_BIN) runs psctl and every service"
exec "$JAVA_BIN" "${JAVA_OPTS[@]}" "${LOG_OPTS[@]}" -jar "$PSCTL_JAR" run-local "$@"
