#!/usr/bin/env bash
# The performance suite: JMH kernels (optimizer apply, tensor codec), the wire (a real etcd and
# pserver process vs a bare tuned gRPC echo and an NIO raw socket, echo and one-way push, as the
# ceiling; the pserver's allocated bytes per pushed byte), the write-ahead log's cost (push
# throughput with the log off and with each wal.sync setting), training (softmax, a 5M-parameter
# MLP and a click-through model on 1+1, 2+2 and 4+4 processes vs one JVM, steady state and whole
# job, and the seconds from a 1+1 job's launch to its first task) and pserver memory, each against
# baselines of the same run. Training interleaves its runs in 3 rounds per workload (the 1+1 job,
# the single JVM, the 2+2 job; the 4+4 job once, after the last round's 2+2): each training ratio
# is the median of the 3 rounds' ratios, each against the single JVM of its own round (run right
# next to it). Prints every round's figures, a Markdown table and one "ratio <name>=<value>" line
# per ratio (the medians); writes bench/results.md and bench/results.json.
#
# Component capacity (section component, in the default set, about 1 minute): the pserver's push
# path (click-through pushes, encoded beforehand, through the zero-copy marshaller and the streaming
# service into the shard and back to encoded answers, one thread, log off and on) against one JVM's
# table and optimizer on the same ids (pserver_push_row_ns_vs_kernel,
# pserver_sparse_alloc_bytes_per_pushed_byte), and the trainer's training thread (the real task
# trainer, row cache and streamed pushes against a real pserver service over an in-process channel)
# against one JVM's whole step on the same batches (trainer_thread_us_per_batch_vs_single_jvm_step);
# thread CPU time, medians of interleaved rounds.
#
# Start-up alone: --only startup (run only when named) launches the softmax 1 + 1 job for one pass 3
# times (5 without --quick) and reports startup_first_task_1x1_s with a timeline of the milestones the
# services log (JVM up, etcd connected, context refreshed, registered, initialised, first task), in
# about 2 minutes (twice that where a Java 17 is installed beside the newest Java: each run is then
# repeated on Java 17, reported as startup_first_task_1x1_java17_s); each also reports the CPU
# seconds the job's processes used until the first task (startup_first_task_1x1_cpu_s), which a
# busy machine changes far less; the training section tables the same timeline for its 1 + 1 rounds.
#
# Training workloads alone: --workloads softmax,mlp5m,ctr,ctr100m runs only the named workloads in the
# training section (default: softmax,mlp5m,ctr, or the softmax alone with --quick), each on the
# setups above (--quick's with --quick); for example --only train --workloads ctr --quick trains the
# click-through model alone. ctr100m (run only when named, about 6 minutes) is click-through at scale:
# a 16-wide embedding over a 100M-id space, 800,000 records (the pserver's embedding table ends at
# about 3.3M rows), pserver and trainer with a fixed 2 GiB heap, the single JVM 4 GiB; one 1+1 job,
# then one single JVM, reporting samples/s, embedding rows/s (rows read and updated per second:
# samples/s times the distinct ids per batch per record) and AUC against the single JVM
# (train_ctr100m_1x1_vs_single_jvm).
#
# AUC against staleness: --only staleness (run only when named, about 5 minutes; --quick trains 40,000
# records instead of 60,000) runs the click-through 1+1 job once at each trainer row-cache staleness
# bound 0, 1, 4 and 16 (paramserver.trainer.sparse.staleness, batches; 0 re-pulls every row each
# batch) and the single JVM once, before them, and tables each job's samples/s and AUC against the
# single JVM's (ratios staleness_ctr_1x1_s<k>_vs_single_jvm and
# staleness_ctr_1x1_s<k>_auc_minus_single_jvm).
#
# Live scaling: --only scaling (run only when named, about 4 minutes; --quick one round instead of
# two) scales the click-through job (2 pservers, 2 trainers, 30 passes) from 2 to 3 to 2 pservers
# through the leader master's scale endpoint while it trains, and tables every committed move
# (slots, rows, bytes, copy, stall, time); ratios scaling_move_stall_p99_ms (target <= 200) and
# scaling_grow_rows_moved_vs_share (rows a grow moved against the new pserver's share, <= 1.1).
#
# Training rates are by wall time: the records of the tasks finished from the end of an unmeasured
# warm-up pass to the last task over the time between them (the old sum of overlapping pass
# durations stays one release as train_<model>_<p>x<t>_vs_single_jvm_pass_duration_rate). Every job
# and single JVM is sampled from /proc per thread: CPU per sample per role (ratio
# cpu_us_per_sample_<model>_<p>x<t>_vs_single_jvm), cores busy, the training thread's run-queue and
# blocked shares, the JIT's share; a capacity model fed with the 1+1 job's costs predicts N trainers
# and M pservers on 4-core nodes with 10 GbE (capacity_<model>_<N>x<M>_vs_single_jvm) and is checked
# against this machine's 1+1 and 2+2 jobs (capacity_model_error_<model>_1x1).
#
# A network that costs something: --only delay (run only when named, about 4 minutes; 3 with
# --quick) runs the click-through 1+1 job directly and through a user-space delay line (DelayLine)
# of 0.1, 0.5 and 2 ms one way at 10 Gbit/s (and 1 Gbit/s without --quick), tabling the training
# thread's blocked share (ratios delay_ctr_1x1_blocked_share_d<d>ms and _spread).
#
# Serving while training: --only serving (run only when named, about 3 minutes) starts the
# click-through 1+1 job with one serving replica process (run-local --serving 1) and measures lookups
# of 100 ids at 1,000 requests/s, open loop, against the same lookups on a replica followed in the
# bench's JVM (serving_lookup100_p99_ms, serving_lookup100_p99_vs_in_jvm), and the freshness from a
# push's acknowledgement to the version holding it being served (serving_freshness_p99_ms). It
# tables the lookups' p50/p99/p99.9/max and the collector pauses of the replica and of the bench's
# JVM in the measured window, and writes each lookup's planned send time and latency to
# <run dir>/serving/lookups.csv (to line slow calls up with collector logs); BENCH_SERVING_JVM
# replaces the replica process's JVM options (a collector, -Xlog:gc*, a JFR recording). The trainer
# and pserver start at nice 10, as run-local starts them beside serving replicas;
# BENCH_SERVING_TRAINING_NICE=0 starts them at the replica's priority. lookups.csv also holds how
# late the bench's sender thread sent each call (send_lag_ms: the client's own delay).
#
# The pserver's allocation alone: --only wirealloc (run only when named, about a minute) starts the
# wire section's pserver with its 1 MiB parameter and measures pserver_alloc_bytes_per_pushed_byte
# in 3 rounds (the median reported) under a JFR recording whose allocation sites go into the profile.
#
# Usage: scripts/bench.sh [--only kernels,component,wire,wirealloc,wal,train,memory,sparse,startup,staleness,scaling,delay,python,serving]
#        [--workloads softmax,mlp5m,ctr,ctr100m] [--quick] [--profile] [--run-dir DIR]
# Environment: BENCH_SKIP_BUILD=1 reuses what is built; ETCD_BIN points at etcd if not on the PATH;
# PARAMSERVER_JAVA picks the Java (default: the newest installed, 17 or later: Temurin 25 where it
# is, whose AOT caches start the services; the startup section repeats its runs on a Java 17 if one
# is installed too).
# Needs Java 17 (JDK: jcmd, attach) and etcd 3.4+. Takes about 21 minutes on 2 cores (training 14:
# 3 rounds of 1+1 and 2+2 and one 4+4 per workload; the wire 2.5, the write-ahead log 2, sparse
# tables 1.5 in one JVM with a 4 GiB heap), the build on top; --quick about 5 (training 2: the
# softmax 1+1 in 3 rounds and 2+2 once, after the last round's single JVM).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${BENCH_SKIP_BUILD:-0}" != 1 ]]; then
  echo "building the services and the benchmarks (./mvnw -B -q -DskipTests package)..."
  ./mvnw -B -q -DskipTests package \
    -pl benchmarks,master-service,pserver-service,trainer-agent,serving-service -am
fi
if [[ ! -f benchmarks/target/classpath.txt ]]; then
  echo "benchmarks/target/classpath.txt is missing: run without BENCH_SKIP_BUILD=1" >&2
  exit 2
fi
CP="benchmarks/target/classes:$(cat benchmarks/target/classpath.txt)"
# the newest installed Java 17 or later runs the suite and every process it starts (scripts/lib/java.sh);
# PARAMSERVER_JAVA=/usr/lib/jvm/java-17-openjdk-amd64 measures Java 17 instead
. scripts/lib/java.sh
pick_java || { echo "bench: Java 17 or newer is needed (a JDK: jcmd, attach)" >&2; exit 2; }
echo "bench: java $JAVA_VERSION_STRING ($JAVA_BIN)"
# the startup section also starts the job with a Java 17 where one is installed beside a newer one
JAVA17_BIN=$(java_of_feature 17 || true)
exec "$JAVA_BIN" -Xms1g -Xmx2g -XX:+UseParallelGC --enable-native-access=ALL-UNNAMED \
  -Dbench.java17="$JAVA17_BIN" -cp "$CP" \
  dev.paramserver.bench.BenchSuite --repo . --out bench "$@"
