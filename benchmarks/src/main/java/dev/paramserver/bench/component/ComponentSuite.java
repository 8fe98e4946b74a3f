package dev.paramserver.bench.component;

import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.IntToDoubleFunction;

/**
 * Component capacity, apart from the network and from contention (section {@code component}): the
 * pserver's push path ({@link PserverPushBench}) and the trainer's training thread ({@link
 * TrainerThreadBench}) on the click-through workload, each in a JVM of its own, one thread, against
 * the work one JVM does for the same batches; the variants interleaved over rounds, each ratio the
 * median of its rounds' ratios. Figures are thread CPU time, so a loaded machine slows them less
 * than wall time (it still costs cache and frequency).
 */
public final class ComponentSuite {
  private final Path runDir;
  private final boolean quick;

  public ComponentSuite(Path runDir, boolean quick) {
    this.runDir = runDir;
    this.quick = quick;
  }

  public void run(Report report) throws Exception {
    int rounds = quick ? 3 : 5;
    Figures p =
        child(
            PserverPushBench.class,
            List.of(
                Integer.toString(rounds),
                "240",
                Files.createDirectories(runDir.resolve("component-pserver")).toString()));
    Figures t =
        child(
            TrainerThreadBench.class, List.of(Integer.toString(rounds), quick ? "16384" : "32768"));
    Report.Table table =
        report.table(
            "Component capacity",
            "Click-through (sparse-lr, embedding 8, 16 Zipf fields, batch 256), one thread, CPU"
                + " time; median (min - max) of "
                + rounds
                + " interleaved rounds",
            "component",
            "figure",
            "median",
            "min",
            "max");
    p.row(table, "pserver push path, log off", "service_ns_per_row", "ns per pushed row");
    p.row(table, "pserver push path, log on", "service_logged_ns_per_row", "ns per pushed row");
    p.row(table, "one JVM's kernel, same ids", "kernel_ns_per_row", "ns per row");
    p.row(
        table, "pserver push path, log off", "service_alloc_bytes_per_row", "B allocated per row");
    p.row(
        table,
        "pserver push path, log off",
        "service_alloc_bytes_per_pushed_byte",
        "B allocated per pushed B");
    t.row(table, "trainer training thread", "trainer_us_per_batch", "CPU us per batch");
    t.row(
        table,
        "trainer training thread",
        "trainer_off_cpu_share",
        "share of wall time off CPU (blocked or waiting for a core)");
    t.row(
        table,
        "trainer training thread",
        "trainer_alloc_bytes_per_batch",
        "B allocated per batch (training thread)");
    t.row(table, "one JVM's whole step", "single_us_per_batch", "CPU us per batch");
    report.ratio(
        "pserver_push_row_ns_vs_kernel",
        p.medianOf(r -> p.get("service_ns_per_row", r) / p.get("kernel_ns_per_row", r)),
        Target.atMost(1.5),
        "thread CPU ns per pushed row: encoded pushes through the zero-copy marshaller and the"
            + " streaming service into the shard and back to encoded answers (log off) vs one"
            + " JVM's table and optimizer on the same ids");
    report.ratio(
        "pserver_push_row_logged_ns_vs_kernel",
        p.medianOf(r -> p.get("service_logged_ns_per_row", r) / p.get("kernel_ns_per_row", r)),
        null,
        "as pserver_push_row_ns_vs_kernel with the write-ahead log on (wal.sync=batch)");
    report.ratio(
        "pserver_sparse_alloc_bytes_per_pushed_byte",
        p.medianOf(r -> p.get("service_alloc_bytes_per_pushed_byte", r)),
        Target.atMost(0.25),
        "bytes the push path allocates per byte of click-through push received (log off)");
    report.ratio(
        "trainer_thread_us_per_batch_vs_single_jvm_step",
        t.medianOf(r -> t.get("trainer_us_per_batch", r) / t.get("single_us_per_batch", r)),
        Target.atMost(1.6),
        "training thread CPU per batch (real TaskTrainer, row cache, pushes to a real pserver"
            + " service over an in-process channel) vs one JVM's whole step on the same batches");
    Map<String, Object> extra = new LinkedHashMap<>();
    extra.put("pserver", p.values);
    extra.put("trainer", t.values);
    report.extra("component", extra);
  }

  /** Figures by name, then round. */
  static final class Figures {
    final Map<String, Map<Integer, Double>> values = new TreeMap<>();
    int rounds;

    double get(String name, int round) {
      Map<Integer, Double> m = values.get(name);
      Double v = m == null ? null : m.get(round);
      return v == null ? Double.NaN : v;
    }

    double medianOf(IntToDoubleFunction f) {
      double[] v = new double[rounds];
      for (int r = 0; r < rounds; r++) {
        v[r] = f.applyAsDouble(r);
      }
      return median(v);
    }

    void row(Report.Table table, String component, String name, String unit) {
      double[] v =
          values.getOrDefault(name, Map.of()).values().stream().mapToDouble(d -> d).toArray();
      if (v.length == 0) {
        return;
      }
      table.row(
          component,
          unit,
          median(v),
          Arrays.stream(v).min().getAsDouble(),
          Arrays.stream(v).max().getAsDouble());
    }
  }

  static double median(double... values) {
    double[] v = Arrays.stream(values).filter(d -> !Double.isNaN(d)).sorted().toArray();
    if (v.length == 0) {
      return Double.NaN;
    }
    int mid = v.length / 2;
    return v.length % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  }

  /** Runs {@code main} in a JVM of its own and reads its {@code name.round=value} lines. */
  private static Figures child(Class<?> main, List<String> args) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(List.of("-Xms1g", "-Xmx2g", "-XX:+UseParallelGC", "-cp"));
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(main.getName());
    cmd.addAll(args);
    Process proc = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    Figures out = new Figures();
    List<String> other = new ArrayList<>();
    String tag = main.getSimpleName();
    try (BufferedReader r =
        new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line = r.readLine(); line != null; line = r.readLine()) {
        if (line.matches("[a-z0-9_]+\\.[0-9]+=[-0-9.E]+|[a-z0-9_]+\\.[0-9]+=NaN")) {
          int dot = line.indexOf('.');
          int eq = line.indexOf('=');
          int round = Integer.parseInt(line.substring(dot + 1, eq));
          out.values
              .computeIfAbsent(line.substring(0, dot), k -> new TreeMap<>())
              .put(round, Double.parseDouble(line.substring(eq + 1)));
          out.rounds = Math.max(out.rounds, round + 1);
          System.out.println(tag + ": " + line);
        } else {
          other.add(line);
        }
      }
    }
    if (!proc.waitFor(10, TimeUnit.MINUTES) || proc.exitValue() != 0) {
      proc.destroyForcibly();
      throw new IllegalStateException(
          tag
              + " failed: "
              + String.join("\n", other.subList(Math.max(0, other.size() - 40), other.size())));
    }
    return out;
  }
}
