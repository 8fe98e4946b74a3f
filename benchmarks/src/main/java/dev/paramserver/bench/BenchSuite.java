package dev.paramserver.bench;

import dev.paramserver.bench.cluster.CheckpointDirs;
import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.component.ComponentSuite;
import dev.paramserver.bench.kernels.KernelSuite;
import dev.paramserver.bench.memory.MemorySuite;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.serving.ServingSuite;
import dev.paramserver.bench.sparse.SparseSuite;
import dev.paramserver.bench.train.DelaySuite;
import dev.paramserver.bench.train.PythonSuite;
import dev.paramserver.bench.train.ScalingSuite;
import dev.paramserver.bench.train.StalenessSuite;
import dev.paramserver.bench.train.StartupSuite;
import dev.paramserver.bench.train.TrainSuite;
import dev.paramserver.bench.wire.WalSuite;
import dev.paramserver.bench.wire.WireSuite;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The performance suite's entry point (run by {@code scripts/bench.sh}): kernels, wire, training
 * and memory, each against baselines measured in the same run; prints a Markdown table and one
 * {@code ratio <name>=<value>} line per ratio, and writes {@code results.md} and {@code
 * results.json}.
 *
 * <p>Options: {@code --repo DIR} (where the services' exec jars were built, default "."), {@code
 * --out DIR} (default bench), {@code --run-dir DIR} (logs, recordings; default a temp folder),
 * {@code --only
 * kernels,component,wire,wirealloc,wal,train,memory,sparse,startup,staleness,scaling,delay,python,serving}
 * (wirealloc: the wire section's pserver allocation per pushed byte alone, in 3 rounds with a JFR
 * of them, run only when named; component: the pserver's push path and the trainer's training
 * thread in one JVM each, against one JVM's work on the same batches, {@link ComponentSuite};
 * startup, the start-up of a 1 + 1 job on its own, runs only when named: the training section
 * measures it too; staleness, the click-through 1 + 1 job's samples/s and AUC at trainer row-cache
 * staleness 0, 1, 4 and 16 against one JVM ({@link StalenessSuite}), only when named; delay, the
 * click-through 1 + 1 job through a user-space delay line of 0.1, 0.5 and 2 ms one way ({@link
 * DelaySuite}), only when named; python, a Python trainer against PyTorch in one process and the
 * click-through sparse-lr Python trainer against the Java trainer ({@code PythonCtr}), also only
 * when named: it needs torch; --workloads mlp5m or ctr picks one), {@code --workloads
 * softmax,mlp5m,ctr,ctr100m} (the training section's workloads, of {@link TrainSuite#WORKLOADS};
 * default softmax, mlp5m and ctr, or the softmax alone with --quick; ctr100m, click-through over a
 * 100M-id space with a fixed heap, one 1 + 1 job and one single JVM, runs only when named), {@code
 * --quick} (shorter measurements), {@code --profile} (JFR of the softmax 1 + 1 training job's
 * pserver and trainer, summarised in the report; off by default because recording slows the run it
 * measures), serving (a serving replica process beside a training click-through 1 + 1 job: lookups
 * of 100 ids at 1,000 requests/s against a replica in this JVM, and freshness, {@link
 * ServingSuite}; only when named).
 */
public final class BenchSuite {
  private BenchSuite() {}

  public static void main(String[] args) throws Exception {
    Path repo = Path.of(".");
    Path out = Path.of("bench");
    Path runDir = null;
    Set<String> only =
        new LinkedHashSet<>(
            List.of("kernels", "component", "wire", "wal", "train", "memory", "sparse"));
    boolean quick = false;
    boolean profile = false;
    Set<String> workloads = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--repo" -> repo = Path.of(args[++i]);
        case "--out" -> out = Path.of(args[++i]);
        case "--run-dir" -> runDir = Path.of(args[++i]);
        case "--only" -> only = new LinkedHashSet<>(List.of(args[++i].split(",")));
        case "--workloads" -> workloads = new LinkedHashSet<>(List.of(args[++i].split(",")));
        case "--quick" -> quick = true;
        case "--profile" -> profile = true;
        default -> {
          System.err.println(
              "usage: BenchSuite [--repo DIR] [--out DIR] [--run-dir DIR]"
                  + " [--only"
                  + " kernels,component,wire,wirealloc,wal,train,memory,sparse,startup,staleness,scaling,delay,python,serving]"
                  + " [--workloads "
                  + String.join(",", TrainSuite.WORKLOADS)
                  + "] [--quick] [--profile]");
          System.exit(2);
        }
      }
    }
    List<String> trainWorkloads;
    try {
      trainWorkloads = workloads == null ? null : TrainSuite.selected(workloads, quick);
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage());
      System.exit(2);
      return;
    }
    run(
        repo.toAbsolutePath().normalize(),
        out,
        (runDir != null ? runDir : Files.createTempDirectory("paramserver-bench-"))
            .toAbsolutePath()
            .normalize(),
        only,
        trainWorkloads,
        quick,
        profile);
  }

  static void run(
      Path repo,
      Path out,
      Path runDir,
      Set<String> only,
      List<String> workloads,
      boolean quick,
      boolean profile)
      throws Exception {
    long t0 = System.nanoTime();
    Report report = new Report();
    report.machine("date", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
    report.machine("cpus", Runtime.getRuntime().availableProcessors());
    report.machine(
        "java",
        System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
    report.machine(
        "load average at start",
        String.format(
            Locale.ROOT,
            "%.2f",
            ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage()));
    report.machine("sections", String.join(",", only) + (quick ? " (quick)" : ""));
    if (only.contains("train")) {
      report.machine("training workloads", String.join(",", TrainSuite.selected(workloads, quick)));
    }
    System.out.println("run folder (logs, JFR recordings, data): " + runDir);

    ServiceJars jars = null;
    if (only.contains("wire")
        || only.contains("wirealloc")
        || only.contains("wal")
        || only.contains("train")
        || only.contains("startup")
        || only.contains("staleness")
        || only.contains("scaling")
        || only.contains("python")
        || only.contains("delay")
        || only.contains("memory")
        || only.contains("sparse")
        || only.contains("serving")) {
      jars = ServiceJars.copy(repo, runDir);
    }
    if (only.contains("kernels")) {
      section(runDir, "kernels", () -> new KernelSuite(quick).run(report));
    }
    if (only.contains("component")) {
      section(runDir, "component", () -> new ComponentSuite(runDir, quick).run(report));
    }
    if (only.contains("wire")) {
      ServiceJars j = jars;
      section(runDir, "wire", () -> new WireSuite(runDir, j, quick).run(report));
    }
    if (only.contains("wirealloc") && !only.contains("wire")) {
      ServiceJars j = jars;
      section(runDir, "wirealloc", () -> new WireSuite(runDir, j, quick).runAllocation(report));
    }
    if (only.contains("wal")) {
      ServiceJars j = jars;
      section(runDir, "wal", () -> new WalSuite(runDir, j, quick).run(report));
    }
    if (only.contains("train")) {
      ServiceJars j = jars;
      section(
          runDir, "train", () -> new TrainSuite(runDir, j, quick, profile, workloads).run(report));
    }
    if (only.contains("startup")) {
      ServiceJars j = jars;
      section(runDir, "startup", () -> new StartupSuite(runDir, j, quick).run(report));
    }
    if (only.contains("staleness")) {
      ServiceJars j = jars;
      section(runDir, "staleness", () -> new StalenessSuite(runDir, j, quick).run(report));
    }
    if (only.contains("scaling")) {
      ServiceJars j = jars;
      section(runDir, "scaling", () -> new ScalingSuite(runDir, j, quick).run(report));
    }
    if (only.contains("delay")) {
      ServiceJars j = jars;
      section(runDir, "delay", () -> new DelaySuite(runDir, j, quick).run(report));
    }
    if (only.contains("python")) {
      ServiceJars j = jars;
      section(
          runDir, "python", () -> new PythonSuite(repo, runDir, j, quick, workloads).run(report));
    }
    if (only.contains("memory")) {
      ServiceJars j = jars;
      section(runDir, "memory", () -> new MemorySuite(runDir, j).run(report));
    }
    if (only.contains("sparse")) {
      ServiceJars j = jars;
      section(runDir, "sparse", () -> new SparseSuite(runDir, j, quick).run(report));
    }
    if (only.contains("serving")) {
      ServiceJars j = jars;
      section(runDir, "serving", () -> new ServingSuite(runDir, j, quick).run(report));
    }
    report.machine(
        "suite wall time", String.format(Locale.ROOT, "%.0f s", (System.nanoTime() - t0) / 1e9));
    report.write(out);
    System.out.println();
    System.out.println(report.markdown());
    System.out.print(report.ratioLines());
    System.out.println(
        "wrote " + out.resolve("results.md") + " and " + out.resolve("results.json"));
  }

  interface Section {
    void run() throws Exception;
  }

  private static void section(Path runDir, String name, Section s) throws Exception {
    long t = System.nanoTime();
    System.out.println("== " + name);
    try {
      s.run();
    } finally {
      CheckpointDirs.drop(runDir);
    }
    System.out.printf("== %s done in %.0f s%n", name, (System.nanoTime() - t) / 1e9);
  }
}
