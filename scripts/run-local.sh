#!/usr/bin/env bash
# scripts/run-local.sh — the main job: a real etcd, masters, pservers and trainers as separate
# processes on 127.0.0.1, training a model; prints progress per pass and finally
#   RESULT accuracy=<a> loss=<l> samples_per_s=<s> elapsed_s=<t>
# then stops everything. Exit code: 0 done, 1 the job failed or timed out, 2 bad usage or a
# missing prerequisite. Works from any directory; the run folder defaults to ./runs/<time>.
#
# What it does:
#   1. etcd: uses $ETCD_BIN, `etcd` on the PATH or /usr/bin/etcd; otherwise installs Debian's
#      etcd-server with apt-get (as root, or through sudo), else stops with the command to run.
#   2. build: if a service exec jar or the psctl exec jar is missing, runs
#      `./mvnw -B -q -DskipTests package` at the repository root (first run only).
#   3. data: without --train (or --demo-data), generates the demo dataset into <run-dir>/data with
#      `psctl demo-data` and trains on <run-dir>/data/train-*.recordio, evaluating on test-*.recordio.
#   4. runs the orchestrator, dev.paramserver.localcluster.RunLocal (the code behind
#      `psctl run-local`), from the psctl exec jar through Spring Boot's PropertiesLauncher
#      (-Dloader.main), so this script does not depend on how psctl's commands are wired. The JVM
#      replaces this shell (exec): Ctrl-C and SIGTERM reach it, and it stops the cluster in order.
#
# Every option is passed through to the orchestrator; see `scripts/run-local.sh --help`:
#   --train GLOB --test GLOB --model softmax --optimizer sgd --lr X --batch-size B --passes N
#   --pservers N --trainers M --masters K --run-dir DIR --job NAME --timeout 15m --jar-dir DIR
#   --set ROLE.KEY=VALUE --hidden 128,64 --sync --format recordio|libsvm --demo-data DIR
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

die() {
  echo "run-local: $*" >&2
  exit 2
}

# ---- options this script looks at (all are passed through unchanged) ----
have_data=false
want_help=false
run_dir=""
format=recordio
train=""
test=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --train | --train=* | --demo-data | --demo-data=*) have_data=true ;;
    --help | --help=*) want_help=true ;;
    --run-dir) run_dir="${args[i + 1]:-}" ;;
    --run-dir=*) run_dir="${args[i]#--run-dir=}" ;;
    --format) format="${args[i + 1]:-}" ;;
    --format=*) format="${args[i]#--format=}" ;;
  esac
  case "${args[i]}" in
    --train) train="${args[i + 1]:-}" ;;
    --train=*) train="${args[i]#--train=}" ;;
    --test) test="${args[i + 1]:-}" ;;
    --test=*) test="${args[i]#--test=}" ;;
  esac
done

# ---- 0. java ----
command -v java >/dev/null 2>&1 ||
  die "java (17 or newer) is required: sudo apt-get install -y openjdk-17-jdk-headless"

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
  (cd "$ROOT" && ./mvnw -B -q -DskipTests package)
fi
PSCTL_JAR="$(exec_jar psctl)"
[[ -n "$PSCTL_JAR" ]] || die "psctl/target/psctl-*-exec.jar missing after the build"

JAVA_OPTS=(-Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1)
LOG_OPTS=(-Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss
  -Dorg.slf4j.simpleLogger.showThreadName=false -Dorg.slf4j.simpleLogger.showShortLogName=true)

# ---- 3. demo data ----
extra=()
if ! $have_data && ! $want_help; then
  if [[ -z "$run_dir" ]]; then
    run_dir="runs/$(date +%Y%m%d-%H%M%S)"
    extra+=(--run-dir "$run_dir")
  fi
  data_dir="$run_dir/data"
  mkdir -p "$data_dir"
  echo "generating demo data into $data_dir..."
  if [[ -x "$ROOT/bin/psctl" ]]; then
    "$ROOT/bin/psctl" demo-data --output "$data_dir"
  else
    java "${JAVA_OPTS[@]}" -jar "$PSCTL_JAR" demo-data --output "$data_dir"
  fi
  compgen -G "$data_dir/train-*.recordio" >/dev/null ||
    die "psctl demo-data wrote no $data_dir/train-*.recordio"
  extra+=(--train "$data_dir/train-*.recordio" --test "$data_dir/test-*.recordio")
fi

# ---- 4. the orchestrator ----
# LibSVM input: convert --train and --test to RecordIO shards in the run folder first (the master
# dispatches RecordIO chunks), then train on those.
if [[ "$format" == libsvm ]] && ! $want_help; then
  [[ -n "$train" ]] || die "--format libsvm needs --train FILE (LibSVM text)"
  if [[ -z "$run_dir" ]]; then
    run_dir="runs/$(date +%Y%m%d-%H%M%S)"
    extra+=(--run-dir "$run_dir")
  fi
  data_dir="$run_dir/data"
  mkdir -p "$data_dir"
  convert() { # $1 = glob of LibSVM files, $2 = output prefix
    local n=0 f
    for f in $1; do
      [[ -f "$f" ]] || die "no LibSVM file matches '$1'"
      java "${JAVA_OPTS[@]}" -jar "$PSCTL_JAR" convert --format libsvm --input "$f" \
        --output "$2-$n" --shards 2 || die "converting $f failed"
      n=$((n + 1))
    done
  }
  echo "converting LibSVM input to RecordIO in $data_dir..."
  convert "$train" "$data_dir/train"
  filtered=()
  skip=false
  for a in "$@"; do
    if $skip; then skip=false; continue; fi
    case "$a" in
      --train | --test | --format) skip=true ;;
      --train=* | --test=* | --format=*) ;;
      *) filtered+=("$a") ;;
    esac
  done
  set -- "${filtered[@]}"
  extra+=(--train "$data_dir/train-*.recordio")
  if [[ -n "$test" ]]; then
    convert "$test" "$data_dir/test"
    extra+=(--test "$data_dir/test-*.recordio")
  fi
fi

export PARAMSERVER_HOME="$ROOT" # where RunLocal finds the service jars
exec java "${JAVA_OPTS[@]}" "${LOG_OPTS[@]}" -cp "$PSCTL_JAR" \
  -Dloader.main=dev.paramserver.localcluster.RunLocal \
  org.springframework.boot.loader.launch.PropertiesLauncher "$@" "${extra[@]}"
