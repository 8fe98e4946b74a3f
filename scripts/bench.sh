#!/usr/bin/env bash
# The performance suite: JMH kernels (optimizer apply, tensor codec), the wire (a real etcd and
# pserver process vs a bare tuned gRPC echo and a raw socket), the write-ahead log's cost (push
# throughput with the log off and with each wal.sync setting), training (softmax, a 5M-parameter
# MLP and a click-through model on 1+1, 2+2 and 4+4 processes vs one JVM, steady state and whole
# job) and pserver memory, each against baselines of the same run. Prints a Markdown table
# and one "ratio <name>=<value>" line per ratio; writes bench/results.md and bench/results.json.
#
# Usage: scripts/bench.sh [--only kernels,wire,wal,train,memory,sparse] [--quick] [--profile] [--run-dir DIR]
# Environment: BENCH_SKIP_BUILD=1 reuses what is built; ETCD_BIN points at etcd if not on the PATH.
# Needs Java 17 (JDK: jcmd, attach) and etcd 3.4+. Takes about 15 minutes on 2 cores (training 7,
# the wire 2.5, the write-ahead log 2, sparse tables 1.5 in one JVM with a 4 GiB heap); --quick 5.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${BENCH_SKIP_BUILD:-0}" != 1 ]]; then
  echo "building the services and the benchmarks (./mvnw -B -q -DskipTests package)..."
  ./mvnw -B -q -DskipTests package \
    -pl benchmarks,master-service,pserver-service,trainer-agent -am
fi
if [[ ! -f benchmarks/target/classpath.txt ]]; then
  echo "benchmarks/target/classpath.txt is missing: run without BENCH_SKIP_BUILD=1" >&2
  exit 2
fi
CP="benchmarks/target/classes:$(cat benchmarks/target/classpath.txt)"
exec java -Xms1g -Xmx2g -XX:+UseParallelGC -cp "$CP" \
  dev.paramserver.bench.BenchSuite --repo . --out bench "$@"
