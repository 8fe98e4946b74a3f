package dev.paramserver.bench.sparse;

import dev.paramserver.bench.cluster.PserverSetup;
import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.rpc.Channels;
import io.grpc.ManagedChannel;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Embedding tables: pull and push rates of Zipf-distributed ids at widths 8 and 64 in one JVM
 * ({@link SparseInJvmBench}, in a JVM of its own with a 4 GiB heap) and over the wire (a real
 * pserver process), eviction throughput under a cap at half the distinct ids, memory per row of a
 * 10M-row width-8 Adam table against its raw bytes, and checkpoint write and load seconds for it.
 */
public final class SparseSuite {
  static final int DISTINCT = 1_000_000;

  private final Path runDir;
  private final ServiceJars jars;
  private final boolean quick;

  public SparseSuite(Path runDir, ServiceJars jars, boolean quick) {
    this.runDir = runDir;
    this.jars = jars;
    this.quick = quick;
  }

  public void run(Report report) throws Exception {
    long rows = 10_000_000;
    double seconds = quick ? 1.5 : 3;
    Map<String, Double> jvm = inJvm(rows, seconds);
    Map<String, Double> wire = overTheWire(seconds);

    Report.Table rates =
        report.table(
            "Sparse tables",
            "Rows/s of Zipf ids (1M distinct, s=1.1), batches of 1024 rows, Adam, one thread",
            "operation",
            "width",
            "in one JVM",
            "over the wire",
            "wire vs JVM");
    for (int w : new int[] {SparseInJvmBench.WIDTH_SMALL, SparseInJvmBench.WIDTH_LARGE}) {
      for (String op : new String[] {"pull", "push"}) {
        double a = jvm.get(op + "_rows_per_s_w" + w);
        double b = wire.get(op + "_rows_per_s_w" + w);
        rates.row(op, w, a, b, b / a);
      }
    }
    Report.Table evict =
        report.table(
            "Sparse tables",
            "Pushes under a cap of half the distinct ids (width 8, in one JVM)",
            "policy",
            "rows pushed/s",
            "evictions/s",
            "rows held");
    for (String p : new String[] {"lfu", "ttl"}) {
      evict.row(
          p,
          jvm.get("evict_push_rows_per_s_" + p),
          jvm.get("evictions_per_s_" + p),
          jvm.get("evict_rows_held_" + p));
    }
    double growth = jvm.get("memory_heap_growth_bytes");
    double raw = jvm.get("memory_raw_bytes");
    double n = jvm.get("memory_rows");
    Report.Table mem =
        report.table(
            "Sparse tables",
            "10M rows of width 8 with Adam (live heap after full GC, one JVM)",
            "quantity",
            "value");
    mem.row("raw bytes per row (id 8 + values 32 + Adam m, v 64)", raw / n);
    mem.row("heap growth per row (bytes)", growth / n);
    mem.row("table's own count of bytes per row", jvm.get("memory_table_bytes") / n);
    mem.row("rows/s filling the table (pushes of 4096 new ids)", jvm.get("fill_rows_per_s"));
    mem.row("checkpoint write (s)", jvm.get("checkpoint_write_s"));
    mem.row("checkpoint file (MB)", jvm.get("checkpoint_file_bytes") / 1e6);
    mem.row("checkpoint load: streamed restore, CRC checked (s)", jvm.get("checkpoint_load_s"));
    mem.row(
        "live heap growth of the load vs the table (x)",
        jvm.get("checkpoint_load_heap_growth_bytes") / growth);
    report.ratio(
        "sparse_table_bytes_vs_raw",
        growth / raw,
        Target.atMost(1.3),
        "live heap growth for 10M width-8 Adam rows vs their raw bytes (104 B per row)");
    report.ratio(
        "sparse_pull_rows_vs_in_jvm",
        wire.get("pull_rows_per_s_w8") / jvm.get("pull_rows_per_s_w8"),
        Target.atLeast(0.5),
        "rows/s pulled from a pserver process over gRPC vs from the shard in one JVM (width 8)");
    Map<String, Object> extra = new LinkedHashMap<>();
    jvm.forEach((k, v) -> extra.put("jvm." + k, v));
    wire.forEach((k, v) -> extra.put("wire." + k, v));
    report.extra("sparse", extra);
  }

  private Map<String, Double> inJvm(long rows, double seconds) throws Exception {
    Path dir = Files.createDirectories(runDir.resolve("sparse"));
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(List.of("-Xms3g", "-Xmx4g", "-XX:+UseParallelGC", "-cp"));
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(SparseInJvmBench.class.getName());
    cmd.addAll(
        List.of(
            Long.toString(rows),
            Integer.toString(DISTINCT),
            Double.toString(seconds),
            dir.toString()));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    Map<String, Double> out = new LinkedHashMap<>();
    List<String> other = new ArrayList<>();
    try (BufferedReader r =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line = r.readLine(); line != null; line = r.readLine()) {
        int eq = line.indexOf('=');
        if (eq > 0 && line.matches("[a-z0-9_]+=[-0-9.E]+")) {
          out.put(line.substring(0, eq), Double.parseDouble(line.substring(eq + 1)));
          System.out.println("sparse: " + line);
        } else {
          other.add(line);
        }
      }
    }
    if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IllegalStateException(
          "the in-JVM sparse benchmark failed: " + String.join("\n", other));
    }
    return out;
  }

  private Map<String, Double> overTheWire(double seconds) throws Exception {
    ClusterSpec spec =
        jars.spec(runDir.resolve("sparse-wire"))
            .job("bench-sparse")
            .masters(0)
            .pservers(1)
            .trainers(0)
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .startTimeout(Duration.ofSeconds(180))
            .build();
    Map<String, Double> out = new LinkedHashMap<>();
    try (LocalCluster cluster = new LocalCluster(spec)) {
      cluster.start();
      String address = "127.0.0.1:" + cluster.process(Role.PSERVER, 0).grpcPort();
      PserverSetup.awaitServing(address, Duration.ofSeconds(60));
      ManagedChannel ch = Channels.forAddress(address);
      try {
        var stub = ParameterServerGrpc.newBlockingStub(ch);
        int[] widths = {SparseInJvmBench.WIDTH_SMALL, SparseInJvmBench.WIDTH_LARGE};
        stub.withDeadlineAfter(30, TimeUnit.SECONDS)
            .initParameters(SparseWorkload.init("bench", widths));
        stub.withDeadlineAfter(30, TimeUnit.SECONDS).finishInit(SparseWorkload.finish("bench"));
        List<long[]> batches =
            SparseWorkload.batches(new SparseWorkload(DISTINCT, 1), 512, SparseInJvmBench.BATCH);
        for (int w : widths) {
          List<PushGradientsRequest> pushes =
              batches.stream().map(b -> SparseWorkload.push(w, b)).toList();
          List<PullParametersRequest> pulls =
              batches.stream().map(b -> SparseWorkload.pull(w, b)).toList();
          // A fresh pserver takes 10-20 s of calls before its push and pull paths are compiled
          // (measured: 22 ms a pull in the first 3 s, 6 ms after 15 s on a loaded machine):
          // warm both before measuring, as the in-JVM figures are measured warm.
          for (int round = 0; round < (quick ? 3 : 6); round++) {
            rate(1, i -> stub.withDeadlineAfter(30, TimeUnit.SECONDS).pushGradients(pushes.get(i)));
            rate(1, i -> stub.withDeadlineAfter(30, TimeUnit.SECONDS).pullParameters(pulls.get(i)));
          }
          out.put(
              "push_rows_per_s_w" + w,
              rate(
                  seconds,
                  i -> stub.withDeadlineAfter(30, TimeUnit.SECONDS).pushGradients(pushes.get(i))));
          out.put(
              "pull_rows_per_s_w" + w,
              rate(
                  seconds,
                  i -> stub.withDeadlineAfter(30, TimeUnit.SECONDS).pullParameters(pulls.get(i))));
        }
      } finally {
        Channels.close(ch);
      }
    }
    out.forEach(
        (k, v) -> System.out.println(String.format(Locale.ROOT, "sparse wire: %s=%.0f", k, v)));
    return out;
  }

  interface Call {
    void run(int batch);
  }

  private static double rate(double seconds, Call call) {
    long deadline = System.nanoTime() + (long) (seconds * 1e9);
    long t0 = System.nanoTime();
    long n = 0;
    int i = 0;
    while (System.nanoTime() < deadline) {
      call.run(i);
      n += SparseInJvmBench.BATCH;
      i = (i + 1) % 512;
    }
    return n / ((System.nanoTime() - t0) / 1e9);
  }
}
