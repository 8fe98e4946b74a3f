package dev.paramserver.bench.wire;

import dev.paramserver.bench.cluster.PserverSetup;
import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.kernels.KernelSuite;
import dev.paramserver.bench.report.JfrSummary;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.OptimizerConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import jdk.jfr.Configuration;
import jdk.jfr.Recording;

/**
 * The wire benchmark: a real etcd and a real pserver process (JFR recording on), initialised with
 * one parameter per tensor size; push, pull and push+pull (one round trip: a push with {@code
 * return_values}) from 1, 2 and 4 closed-loop client threads, and as ps-lite measures it: 8, 32 and
 * 64 operations in flight on one client channel. In the same run the same byte volumes go through a
 * bare, tuned gRPC echo server and a raw TCP echo in a separate process, driven the same way.
 */
public final class WireSuite {
  static final int[] SIZES = {4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20};
  static final int[] THREADS_FULL = {1, 2, 4};
  static final int[] THREADS_QUICK = {1};
  static final String[] MODES = {"push", "pull", "push_pull", "grpc_echo", "raw_socket"};

  /** The in-flight sweep's modes: those above and the one-way raw baseline (push-only). */
  static final String[] DEPTH_MODES = {
    "push", "pull", "push_pull", "grpc_echo", "raw_socket", "raw_push"
  };

  static final int LATENCY_ROUNDS = 3;

  /** The in-flight sweep: sizes and depths (operations in flight on one client). */
  static final int[] DEPTH_SIZES = {4 << 10, 1 << 20, 16 << 20};

  static final int[] DEPTHS = {8, 32, 64};

  /**
   * At most this many payload bytes in flight per direction (the pserver has a 1 GiB heap): 16 MiB
   * operations run at depth 8 only.
   */
  static final long MAX_IN_FLIGHT_BYTES = 128L << 20;

  /**
   * ps-lite (C++, 1 server + 1 worker, 40 requests in flight, loopback) on this kind of machine, as
   * measured for issue 11: GB/s per direction. A cross-check only: not measured in this run.
   */
  static final Map<Integer, double[]> PS_LITE =
      Map.of(
          4 << 10,
          new double[] {0.196, 0.37},
          1 << 20,
          new double[] {1.48, 3.1},
          16 << 20,
          new double[] {1.81, Double.NaN});

  private final Path runDir;
  private final ServiceJars jars;
  private final boolean quick;
  private final int[] threads;

  public WireSuite(Path runDir, ServiceJars jars, boolean quick) {
    this.runDir = runDir;
    this.jars = jars;
    this.quick = quick;
    this.threads = quick ? THREADS_QUICK : THREADS_FULL;
  }

  static boolean depthFits(int size, int depth) {
    return (long) size * depth <= MAX_IN_FLIGHT_BYTES;
  }

  private static String paramName(int size) {
    return "p" + KernelSuite.size(size);
  }

  /** The wire section's pserver: one process (no master, no trainer), no checkpoints. */
  private ClusterSpec pserverSpec(Path dir) {
    return jars.spec(dir)
        .job("bench-wire")
        .count(Role.MASTER, 0)
        .pservers(1)
        .trainers(0)
        .jvmOptions(Role.PSERVER, ServiceJars.jvmOptions(Role.PSERVER))
        .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
        .startTimeout(Duration.ofSeconds(180))
        .build();
  }

  /** Starts the cluster's pserver and initialises one parameter per size; its address. */
  private static String startPserver(LocalCluster cluster, int... sizes) throws Exception {
    cluster.start();
    String address = "127.0.0.1:" + cluster.process(Role.PSERVER, 0).grpcPort();
    PserverSetup.awaitServing(address, Duration.ofSeconds(60));
    List<PserverSetup.Param> params = new ArrayList<>();
    OptimizerConfig sgd =
        OptimizerConfig.newBuilder()
            .setKind(OptimizerConfig.Kind.SGD)
            .setLearningRate(1e-6f)
            .build();
    for (int size : sizes) {
      params.add(new PserverSetup.Param(paramName(size), size / 4, sgd));
    }
    PserverSetup.initialise(address, params);
    return address;
  }

  /**
   * The allocation measurement alone ({@code --only wirealloc}): a pserver with the 1 MiB
   * parameter, 1 MiB pushes at depth 8 to warm its JIT, then {@value #ALLOC_ROUNDS} rounds of
   * {@link #allocation} (the median reported) under a JFR recording of the pserver whose allocation
   * sites go into the report's profile.
   */
  public void runAllocation(Report report) throws Exception {
    Path dir = runDir.resolve("wirealloc");
    Path jfr = dir.resolve("pserver-alloc.jfr");
    int size = 1 << 20;
    try (LocalCluster cluster = new LocalCluster(pserverSpec(dir))) {
      String address = startPserver(cluster, size);
      long pid = cluster.process(Role.PSERVER, 0).pid();
      DepthRunner.run(asyncFactory("push", size, address, null), 8, size, quick ? 3000 : 6000, 1);
      jcmd(pid, "JFR.start", "name=alloc", "settings=profile");
      List<Double> rounds = new ArrayList<>();
      try (AllocProbe probe = AllocProbe.attach(pid)) {
        for (int r = 0; r < ALLOC_ROUNDS; r++) {
          double v =
              probe.bytesPerPayloadByte(asyncFactory("push", size, address, null), 8, size, 1500);
          System.out.printf("wire pserver allocation round %d: %.3f bytes per pushed byte%n", r, v);
          rounds.add(v);
        }
      }
      jcmd(pid, "JFR.dump", "name=alloc", "filename=" + jfr);
      rounds.sort(Double::compare);
      reportAllocation(report, rounds.get(rounds.size() / 2));
    }
    for (String l :
        JfrSummary.read(jfr).markdown("pserver process during the allocation rounds (JFR)")) {
      report.note("Profile", l);
    }
  }

  static final int ALLOC_ROUNDS = 3;

  public void run(Report report) throws Exception {
    Path dir = runDir.resolve("wire");
    Path jfr = dir.resolve("pserver.jfr");
    Map<String, Result> results = new LinkedHashMap<>();
    try (LocalCluster cluster = new LocalCluster(pserverSpec(dir));
        EchoServerProcess echo =
            EchoServerProcess.start(ServiceJars.jvmOptions(Role.PSERVER), dir)) {
      String address = startPserver(cluster, SIZES);
      long pid = cluster.process(Role.PSERVER, 0).pid();
      // record the serving only, not the start-up
      jcmd(pid, "JFR.start", "name=bench", "settings=profile");
      long warm = 200;
      long measure = quick ? 500 : 600;
      // warm every JVM's JIT (servers and this client) before anything is measured: on a busy
      // 2-core machine the first seconds of C2 compilation would otherwise land in the first cells
      for (int size : new int[] {4 << 10, 1 << 20}) {
        for (String mode : MODES) {
          LoadRunner.run(factory(mode, size, address, echo), 2, size, quick ? 800 : 1500, 1);
        }
      }
      for (String mode : MODES) {
        DepthRunner.run(asyncFactory(mode, 4 << 10, address, echo), 32, 1, quick ? 300 : 600, 1);
      }
      for (int size : SIZES) {
        for (int k : threads) {
          for (String mode : MODES) {
            Op.Factory f = factory(mode, size, address, echo);
            long bytes = mode.equals("push") || mode.equals("pull") ? size : 2L * size;
            LoadRunner.Result r = LoadRunner.run(f, k, bytes, warm, measure);
            results.put(key(mode, size, k), new Result(mode, size, k, r));
            System.out.printf(
                "wire %-10s %6s x%d: %7.3f GB/s  p50 %8.1f us  p99 %8.1f us  (%d ops)%n",
                mode, KernelSuite.size(size), k, r.gbPerSec(), r.p50Us(), r.p99Us(), r.ops());
          }
        }
      }
      for (int size : DEPTH_SIZES) {
        for (int d : DEPTHS) {
          if (!depthFits(size, d)) {
            continue;
          }
          for (String mode : DEPTH_MODES) {
            // every row counts the payload bytes of one direction
            LoadRunner.Result r =
                DepthRunner.run(asyncFactory(mode, size, address, echo), d, size, warm, measure);
            results.put(key("d_" + mode, size, d), new Result("d_" + mode, size, d, r));
            System.out.printf(
                "wire %-10s %6s depth %2d: %7.3f GB/s per direction  %8.0f ops/s  p50 %9.1f us"
                    + "  p99 %9.1f us%n",
                mode,
                KernelSuite.size(size),
                d,
                r.gbPerSec(),
                r.ops() / r.seconds(),
                r.p50Us(),
                r.p99Us());
          }
        }
      }
      latencyRounds(results, address, echo, warm, measure);
      allocation(report, pid, address);
      clientProfile(report, address);
      jcmd(pid, "JFR.dump", "name=bench", "filename=" + jfr);
    }
    new WireReport(threads).report(report, results);
    try {
      report.note("Profile", "");
      for (String l :
          JfrSummary.read(jfr).markdown("pserver process during the wire benchmark (JFR)")) {
        report.note("Profile", l);
      }
      report.extra("pserverProfile", JfrSummary.read(jfr).json());
    } catch (Exception e) {
      report.note("Profile", "pserver JFR recording unreadable: " + e);
    }
  }

  /**
   * Small-message latency against the bare unary calls, interleaved (push, sink, pull, source) in
   * several rounds so that a change of machine load hits both sides alike; the median round's p50
   * is kept.
   */
  private void latencyRounds(
      Map<String, Result> results, String address, EchoServerProcess echo, long warm, long measure)
      throws Exception {
    int small = SIZES[0];
    String[] modes = {"push", "grpc_sink", "pull", "grpc_source", "push_pull", "grpc_echo"};
    Map<String, List<LoadRunner.Result>> rounds = new LinkedHashMap<>();
    for (int round = 0; round < LATENCY_ROUNDS; round++) {
      for (String mode : modes) {
        long bytes = mode.equals("push_pull") || mode.equals("grpc_echo") ? 2L * small : small;
        LoadRunner.Result r =
            LoadRunner.run(factory(mode, small, address, echo), 1, bytes, warm, measure / 2);
        rounds.computeIfAbsent(mode, k -> new ArrayList<>()).add(r);
      }
    }
    for (String mode : modes) {
      List<LoadRunner.Result> l = new ArrayList<>(rounds.get(mode));
      l.sort((a, b) -> Double.compare(a.p50Us(), b.p50Us()));
      LoadRunner.Result median = l.get(l.size() / 2);
      results.put(key("lat_" + mode, small, 1), new Result("lat_" + mode, small, 1, median));
      System.out.printf(
          "latency %-11s 4KiB x1: p50 %8.1f us  p99 %8.1f us (median of %d rounds)%n",
          mode, median.p50Us(), median.p99Us(), l.size());
    }
  }

  /**
   * A client-side recording of push+pull kept in flight as in the sweep (this JVM is the trainer's
   * stand-in): 4 KiB at depth 32, then 1 MiB at depth 8.
   */
  private void clientProfile(Report report, String address) throws Exception {
    Path file = runDir.resolve("wire").resolve("client.jfr");
    try (Recording rec = new Recording(Configuration.getConfiguration("profile"))) {
      rec.start();
      DepthRunner.run(
          asyncFactory("push_pull", 4 << 10, address, null), 32, 1, 0, quick ? 1000 : 2000);
      DepthRunner.run(
          asyncFactory("push_pull", 1 << 20, address, null), 8, 1, 0, quick ? 1000 : 2000);
      rec.stop();
      rec.dump(file);
    }
    JfrSummary s = JfrSummary.read(file);
    for (String l :
        s.markdown(
            "benchmark client (trainer side), push+pull of 4 KiB at depth 32 then 1 MiB at depth 8"
                + " (JFR)")) {
      report.note("Profile", l);
    }
    report.extra("clientProfile", s.json());
  }

  /**
   * The pserver JVM's allocation per pushed gradient byte: 1 MiB pushes kept 8 in flight, its
   * threads' allocated-byte counters (JMX through the attach API) read before and after.
   */
  private void allocation(Report report, long pid, String address) throws Exception {
    int size = 1 << 20;
    double v;
    try (AllocProbe probe = AllocProbe.attach(pid)) {
      v = probe.bytesPerPayloadByte(asyncFactory("push", size, address, null), 8, size, 1500);
    }
    reportAllocation(report, v);
  }

  private static void reportAllocation(Report report, double v) {
    System.out.printf(
        "wire pserver allocation: %.3f bytes per pushed gradient byte (1 MiB pushes, depth 8)%n",
        v);
    report.ratio(
        "pserver_alloc_bytes_per_pushed_byte",
        v,
        Target.atMost(0.25),
        "bytes allocated by the pserver JVM (all threads, ThreadMXBean over JMX) per gradient byte"
            + " pushed, 1 MiB pushes at depth 8 for 1.5 s");
  }

  /** Runs {@code jcmd <pid> <command...>} and returns its output. */
  public static String jcmd(long pid, String... command) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "jcmd").toString());
    cmd.add(Long.toString(pid));
    cmd.addAll(List.of(command));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    if (p.waitFor() != 0 || out.contains("Exception")) {
      throw new IllegalStateException("jcmd " + String.join(" ", command) + " failed: " + out);
    }
    return out;
  }

  private Op.Factory factory(String mode, int size, String address, EchoServerProcess echo) {
    String name = paramName(size);
    return switch (mode) {
      case "push" ->
          () -> new PserverOps(PserverOps.Kind.PUSH, address, name, size / 4, PserverSetup.BLOCK);
      case "pull" ->
          () -> new PserverOps(PserverOps.Kind.PULL, address, name, size / 4, PserverSetup.BLOCK);
      case "push_pull" ->
          () ->
              new PserverOps(
                  PserverOps.Kind.PUSH_PULL, address, name, size / 4, PserverSetup.BLOCK);
      case "grpc_echo" -> () -> new GrpcEchoOps(echo.grpcPort(), EchoProtocol.ECHO, size);
      case "grpc_sink" -> () -> new GrpcEchoOps(echo.grpcPort(), EchoProtocol.SINK, size);
      case "grpc_source" -> () -> new GrpcEchoOps(echo.grpcPort(), EchoProtocol.SOURCE, size);
      case "raw_socket" -> () -> new RawSocketOps(echo.rawPort(), size, false);
      default -> throw new IllegalArgumentException(mode);
    };
  }

  private AsyncOp.Factory asyncFactory(
      String mode, int size, String address, EchoServerProcess echo) {
    String name = paramName(size);
    return switch (mode) {
      case "push" ->
          () -> new PserverOps(PserverOps.Kind.PUSH, address, name, size / 4, PserverSetup.BLOCK);
      case "pull" ->
          () -> new PserverOps(PserverOps.Kind.PULL, address, name, size / 4, PserverSetup.BLOCK);
      case "push_pull" ->
          () ->
              new PserverOps(
                  PserverOps.Kind.PUSH_PULL, address, name, size / 4, PserverSetup.BLOCK);
      case "grpc_echo" -> () -> new GrpcEchoOps(echo.grpcPort(), EchoProtocol.ECHO, size);
      case "raw_socket" -> () -> new RawPipelineOps(echo.rawPort(), size, false);
      case "raw_push" -> () -> new RawPipelineOps(echo.rawPort(), size, true);
      default -> throw new IllegalArgumentException(mode);
    };
  }

  private static String key(String mode, int size, int k) {
    return WireReport.key(mode, size, k);
  }

  record Result(String mode, int size, int threads, LoadRunner.Result r) {}
}
