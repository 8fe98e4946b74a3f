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

  /** One benchmark method with fixed parameters, in its own fork; returns us/op. */
  private double measure(String benchRegex, String... params) throws RunnerException {
    OptionsBuilder ob = new OptionsBuilder();
    ob.include(benchRegex)
        .forks(1)
        // --quick: one warm-up iteration, which leaves the time of the training section's
        // interleaved rounds; the full run keeps three
        .warmupIterations(quick ? 1 : 3)
        .warmupTime(TimeValue.milliseconds(quick ? 300 : 400))
        .measurementIterations(quick ? 2 : 3)
        .measurementTime(TimeValue.milliseconds(quick ? 300 : 400))
        .jvmArgs("-Xms3g", "-Xmx3g", "-XX:+UseParallelGC", "-XX:-UseAdaptiveSizePolicy")
        .verbosity(VerboseMode.SILENT)
        .shouldFailOnError(true);
    for (int i = 0; i < params.length; i += 2) {
      ob.param(params[i], params[i + 1]);
    }
    Options opts = ob.build();
    Collection<RunResult> results = new Runner(opts).run();
    if (results.size() != 1) {
      throw new IllegalStateException(benchRegex + " ran " + results.size() + " benchmarks");
    }
    return results.iterator().next().getPrimaryResult().getScore();
  }

  /**
   * Each kernel is measured between two runs of its baseline (the machine is shared: load drifts
   * between forks), and compared with the mean of the two.
   */
  public void run(Report report) throws RunnerException {
    Map<String, Double> usPerOp = new HashMap<>();
    String copyBench = ArrayCopyBench.class.getName() + ".arrayCopy$";
    String apply = OptimizerBench.class.getName() + ".apply$";
    String codecBench = CodecBench.class.getName() + ".";
    for (String n : new String[] {"1048576", "16777216"}) {
      double before = measure(copyBench, "n", n);
      for (String kind : new String[] {"sgd", "momentum", "adam"}) {
        usPerOp.put(kind + "/" + n, measure(apply, "n", n, "kind", kind));
        if (kind.equals("adam")) {
          usPerOp.put(
              "adamHoisted/" + n, measure(AdamVariantsBench.class.getName() + ".hoisted$", "n", n));
        }
        double after = measure(copyBench, "n", n);
        usPerOp.put("copyFor." + kind + "/" + n, (before + after) / 2);
        before = after;
      }
      usPerOp.put("arrayCopy/" + n, usPerOp.get("copyFor.sgd/" + n));
      System.out.printf("kernels: optimizers over %s floats measured%n", n);
    }
    for (String n : new String[] {"262144", "4194304"}) {
      double before = measure(codecBench + "memoryCopy$", "n", n);
      for (String m : new String[] {"encode", "decode", "memoryClone"}) {
        usPerOp.put("codec." + m + "/" + n, measure(codecBench + m + "$", "n", n));
      }
      double after = measure(codecBench + "memoryCopy$", "n", n);
      usPerOp.put("codec.memoryCopy/" + n, (before + after) / 2);
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
        double base = gbs(elems * 8, usPerOp.get("copyFor." + kind + "/" + n));
        opt.row(kind, label(elems), b, us, g, g / base);
        if (kind.equals("adam")) {
          double h = gbs(elems * b, usPerOp.get("adamHoisted/" + n));
          opt.row(
              "adam, hoisted candidate (AdamVariantsBench)",
              label(elems),
              b,
              usPerOp.get("adamHoisted/" + n),
              h,
              h / base);
          report.ratio(
              "adam_hoisted_candidate_apply_"
                  + (elems == 1048576 ? "1M" : "16M")
                  + "_vs_array_copy",
              h / base,
              null,
              "array copy");
        }
        String size = elems == 1048576 ? "1M" : "16M";
        report.ratio(kind + "_apply_" + size + "_vs_array_copy", g / base, null, "array copy");
      }
    }
    // the named ratios: the memory-bound size (16M floats, far beyond the caches), the one the
    // bytes-touched model describes
    for (String kind : new String[] {"sgd", "momentum", "adam"}) {
      long elems = 16777216;
      double copy = gbs(elems * 8, usPerOp.get("copyFor." + kind + "/16777216"));
      double g = gbs(elems * OptimizerBench.bytesPerParam(kind), usPerOp.get(kind + "/16777216"));
      report.ratio(
          kind + "_apply_vs_array_copy",
          g / copy,
          kind.equals("momentum") ? null : Target.atLeast(0.5),
          "System.arraycopy of 16M floats (mean of the runs just before and after), bytes touched per second");
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
      double clone = gbs(bytes, usPerOp.get("codec.memoryClone/" + n));
      codec.row(
          "memory copy into a new array (byte[].clone)",
          size(bytes),
          usPerOp.get("codec.memoryClone/" + n),
          clone,
          clone / copy);
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
