package dev.paramserver.bench.kernels;

import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * Runs the JMH kernels (optimizer apply, array copy, tensor codec, memory copy) in one forked JVM
 * each, with short iterations so the suite fits its time budget, and reports bytes per second and
 * the ratios to the copies of the same run.
 */
public final class KernelSuite {
  private final boolean quick;

  public KernelSuite(boolean quick) {
    this.quick = quick;
  }

  public void run(Report report) throws RunnerException {
    Options opts =
        new OptionsBuilder()
            .include(OptimizerBench.class.getName() + "\\.")
            .include(ArrayCopyBench.class.getName() + "\\.")
            .include(CodecBench.class.getName() + "\\.")
            .forks(1)
            .warmupIterations(quick ? 2 : 3)
            .warmupTime(TimeValue.milliseconds(quick ? 300 : 500))
            .measurementIterations(quick ? 3 : 5)
            .measurementTime(TimeValue.milliseconds(quick ? 300 : 500))
            .jvmArgs("-Xms3g", "-Xmx3g", "-XX:+UseParallelGC", "-XX:-UseAdaptiveSizePolicy")
            .verbosity(VerboseMode.SILENT)
            .shouldFailOnError(true)
            .build();
    Collection<RunResult> results = new Runner(opts).run();
    Map<String, Double> usPerOp = new HashMap<>();
    Map<String, Double> errPerOp = new HashMap<>();
    for (RunResult r : results) {
      String bench = r.getParams().getBenchmark();
      String method = bench.substring(bench.lastIndexOf('.') + 1);
      String n = r.getParams().getParam("n");
      String kind = r.getParams().getParam("kind");
      String key = (kind != null ? kind : method) + "/" + n;
      if (bench.contains("CodecBench")) {
        key = "codec." + method + "/" + n;
      }
      usPerOp.put(key, r.getPrimaryResult().getScore());
      errPerOp.put(key, r.getPrimaryResult().getScoreError());
    }

    Report.Table opt =
        report.table(
            "Kernels (JMH)",
            "Optimizer apply vs array copy",
            "kernel",
            "floats",
            "bytes/param",
            "us/op",
            "GB/s touched",
            "vs array copy");
    for (String n : new String[] {"1048576", "16777216"}) {
      long elems = Long.parseLong(n);
      double copyGbs = gbs(elems * 8, usPerOp.get("arrayCopy/" + n));
      opt.row("array copy", label(elems), 8, usPerOp.get("arrayCopy/" + n), copyGbs, 1.0);
      for (String kind : new String[] {"sgd", "momentum", "adam"}) {
        int b = OptimizerBench.bytesPerParam(kind);
        Double us = usPerOp.get(kind + "/" + n);
        double g = gbs(elems * b, us);
        opt.row(kind, label(elems), b, us, g, g / copyGbs);
        String size = elems == 1048576 ? "1M" : "16M";
        report.ratio(kind + "_apply_" + size + "_vs_array_copy", g / copyGbs, null, "array copy");
      }
    }
    // the named ratios: the memory-bound size (16M floats, far beyond the caches), the one the
    // bytes-touched model describes
    for (String kind : new String[] {"sgd", "momentum", "adam"}) {
      long elems = 16777216;
      double copy = gbs(elems * 8, usPerOp.get("arrayCopy/16777216"));
      double g = gbs(elems * OptimizerBench.bytesPerParam(kind), usPerOp.get(kind + "/16777216"));
      report.ratio(
          kind + "_apply_vs_array_copy",
          g / copy,
          kind.equals("momentum") ? null : Target.atLeast(0.5),
          "System.arraycopy of 16M floats, bytes touched per second");
    }

    Report.Table codec =
        report.table(
            "Kernels (JMH)",
            "Tensor codec vs memory copy",
            "operation",
            "tensor bytes",
            "us/op",
            "GB/s of tensor bytes",
            "vs memory copy");
    for (String n : new String[] {"262144", "4194304"}) {
      long bytes = Long.parseLong(n) * 4;
      double copy = gbs(bytes, usPerOp.get("codec.memoryCopy/" + n));
      codec.row(
          "memory copy (byte[] arraycopy)",
          size(bytes),
          usPerOp.get("codec.memoryCopy/" + n),
          copy,
          1.0);
      for (String m : new String[] {"encode", "decode"}) {
        double g = gbs(bytes, usPerOp.get("codec." + m + "/" + n));
        codec.row(
            "TensorCodec." + m + " float32",
            size(bytes),
            usPerOp.get("codec." + m + "/" + n),
            g,
            g / copy);
        report.ratio(
            "codec_" + m + "_" + size(bytes) + "_vs_memory_copy",
            g / copy,
            null,
            "byte[] arraycopy");
      }
    }
  }

  private static double gbs(long bytes, Double usPerOp) {
    return usPerOp == null ? Double.NaN : bytes / (usPerOp * 1e-6) / 1e9;
  }

  static String label(long elems) {
    return elems >= 1 << 20 ? (elems >> 20) + "M" : (elems >> 10) + "K";
  }

  /** 4KiB, 64KiB, 1MiB, 16MiB. */
  public static String size(long bytes) {
    return bytes >= 1 << 20 ? (bytes >> 20) + "MiB" : (bytes >> 10) + "KiB";
  }
}
