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
  private final List<Map<String, Object>> raw = new ArrayList<>();
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

  public void run(Report report) throws Exception {
    Path dir = runDir.resolve("wire");
    Path jfr = dir.resolve("pserver.jfr");
    List<String> psOpts = ServiceJars.jvmOptions(Role.PSERVER);
    ClusterSpec spec =
        jars.spec(dir)
            .job("bench-wire")
            .count(Role.MASTER, 0)
            .pservers(1)
            .trainers(0)
            .jvmOptions(Role.PSERVER, psOpts)
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .startTimeout(Duration.ofSeconds(180))
            .build();
    Map<String, Result> results = new LinkedHashMap<>();
    try (LocalCluster cluster = new LocalCluster(spec);
        EchoServerProcess echo =
            EchoServerProcess.start(ServiceJars.jvmOptions(Role.PSERVER), dir)) {
      cluster.start();
      String address = "127.0.0.1:" + cluster.process(Role.PSERVER, 0).grpcPort();
      PserverSetup.awaitServing(address, Duration.ofSeconds(60));
      List<PserverSetup.Param> params = new ArrayList<>();
      OptimizerConfig sgd =
          OptimizerConfig.newBuilder()
              .setKind(OptimizerConfig.Kind.SGD)
              .setLearningRate(1e-6f)
              .build();
      for (int size : SIZES) {
        params.add(new PserverSetup.Param(paramName(size), size / 4, sgd));
      }
      PserverSetup.initialise(address, params);
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
    report(report, results);
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
    return mode + "/" + size + "/" + k;
  }

  record Result(String mode, int size, int threads, LoadRunner.Result r) {}

  /** Best GB/s of a mode over the closed-loop thread counts (both directions counted). */
  private double best(Map<String, Result> results, String mode, int size) {
    double b = Double.NaN;
    for (int k : threads) {
      Result r = results.get(key(mode, size, k));
      if (r != null && !(r.r.gbPerSec() <= b)) {
        b = r.r.gbPerSec();
      }
    }
    return b;
  }

  /** The in-flight sweep's best result of a mode at a size (GB/s per direction), or null. */
  private static Result bestDepth(Map<String, Result> results, String mode, int size) {
    Result b = null;
    for (int d : DEPTHS) {
      Result r = results.get(key("d_" + mode, size, d));
      if (r != null && (b == null || r.r.gbPerSec() > b.r.gbPerSec())) {
        b = r;
      }
    }
    return b;
  }

  private String threadList() {
    StringBuilder b = new StringBuilder();
    for (int k : threads) {
      b.append(b.length() == 0 ? "" : "/").append(k);
    }
    return b.toString();
  }

  private void report(Report report, Map<String, Result> results) {
    Report.Table tput =
        report.table(
            "Wire (1 pserver process, loopback)",
            "Throughput, GB/s (push+pull, echo and raw socket count the bytes of both directions)",
            "size",
            "threads",
            "push",
            "pull",
            "push+pull",
            "gRPC echo",
            "raw socket",
            "push+pull / echo",
            "push+pull / raw");
    Report.Table depthT =
        report.table(
            "Wire (1 pserver process, loopback)",
            "In flight (as ps-lite measures): GB/s per direction, d operations in flight on one"
                + " channel / connection",
            "size",
            "depth",
            "push",
            "pull",
            "push+pull",
            "gRPC echo",
            "raw socket",
            "raw push (one way)",
            "push+pull ops/s",
            "push+pull / echo",
            "push+pull / raw");
    Report.Table depthLat =
        report.table(
            "Wire (1 pserver process, loopback)",
            "In flight: latency p50 / p99 (queueing behind the other in-flight operations"
                + " included), microseconds",
            "size",
            "depth",
            "push",
            "pull",
            "push+pull",
            "gRPC echo",
            "raw socket");
    for (int size : DEPTH_SIZES) {
      for (int d : DEPTHS) {
        if (results.get(key("d_push_pull", size, d)) == null) {
          continue;
        }
        LoadRunner.Result pp = results.get(key("d_push_pull", size, d)).r;
        double echo = results.get(key("d_grpc_echo", size, d)).r.gbPerSec();
        double rawS = results.get(key("d_raw_socket", size, d)).r.gbPerSec();
        depthT.row(
            KernelSuite.size(size),
            d,
            results.get(key("d_push", size, d)).r.gbPerSec(),
            results.get(key("d_pull", size, d)).r.gbPerSec(),
            pp.gbPerSec(),
            echo,
            rawS,
            results.get(key("d_raw_push", size, d)).r.gbPerSec(),
            pp.ops() / pp.seconds(),
            pp.gbPerSec() / echo,
            pp.gbPerSec() / rawS);
        List<Object> row = new ArrayList<>(List.of(KernelSuite.size(size), d));
        for (String m : MODES) {
          LoadRunner.Result r = results.get(key("d_" + m, size, d)).r;
          row.add(Report.fmt(r.p50Us()) + " / " + Report.fmt(r.p99Us()));
        }
        depthLat.row(row.toArray());
      }
    }
    Report.Table psLite =
        report.table(
            "Wire (1 pserver process, loopback)",
            "Against ps-lite (issue 11's figures: C++, 1 server + 1 worker, 40 requests in flight,"
                + " same kind of machine, another sitting; a cross-check only), GB/s per direction,"
                + " ours at the best depth",
            "size",
            "push+pull (depth)",
            "ps-lite push+pull",
            "push (depth)",
            "ps-lite push",
            "raw socket echo (depth)",
            "raw push, one way (depth)");
    for (int size : DEPTH_SIZES) {
      Result pp = bestDepth(results, "push_pull", size);
      Result push = bestDepth(results, "push", size);
      Result rawS = bestDepth(results, "raw_socket", size);
      Result rawP = bestDepth(results, "raw_push", size);
      double[] ref = PS_LITE.get(size);
      psLite.row(
          KernelSuite.size(size),
          Report.fmt(pp.r.gbPerSec()) + " (" + pp.threads + ")",
          ref[0],
          Report.fmt(push.r.gbPerSec()) + " (" + push.threads + ")",
          Double.isNaN(ref[1]) ? "—" : ref[1],
          Report.fmt(rawS.r.gbPerSec()) + " (" + rawS.threads + ")",
          Report.fmt(rawP.r.gbPerSec()) + " (" + rawP.threads + ")");
    }
    Report.Table lat =
        report.table(
            "Wire (1 pserver process, loopback)",
            "Latency p50 / p99, microseconds",
            "size",
            "threads",
            "push",
            "pull",
            "push+pull",
            "gRPC echo",
            "raw socket");
    for (int size : SIZES) {
      for (int k : threads) {
        double pp = results.get(key("push_pull", size, k)).r.gbPerSec();
        double echo = results.get(key("grpc_echo", size, k)).r.gbPerSec();
        double rawS = results.get(key("raw_socket", size, k)).r.gbPerSec();
        tput.row(
            KernelSuite.size(size),
            k,
            results.get(key("push", size, k)).r.gbPerSec(),
            results.get(key("pull", size, k)).r.gbPerSec(),
            pp,
            echo,
            rawS,
            pp / echo,
            pp / rawS);
        List<Object> row = new ArrayList<>(List.of(KernelSuite.size(size), k));
        for (String m : new String[] {"push", "pull", "push_pull", "grpc_echo", "raw_socket"}) {
          LoadRunner.Result r = results.get(key(m, size, k)).r;
          row.add(Report.fmt(r.p50Us()) + " / " + Report.fmt(r.p99Us()));
        }
        lat.row(row.toArray());
      }
    }
    Report.Table small4k =
        report.table(
            "Wire (1 pserver process, loopback)",
            "4 KiB latency, 1 thread, interleaved rounds (median round), microseconds",
            "call",
            "p50",
            "p99");
    String[][] latRows = {
      {"push", "PushGradients (4 KiB gradient)"},
      {"grpc_sink", "bare unary, 4 KiB up, empty answer"},
      {"pull", "PullParameters (4 KiB answer)"},
      {"grpc_source", "bare unary, 4 bytes up, 4 KiB answer"},
      {"push_pull", "push+pull (one push with return_values)"},
      {"grpc_echo", "bare unary echo of 4 KiB"}
    };
    for (String[] lr : latRows) {
      LoadRunner.Result r = results.get(key("lat_" + lr[0], SIZES[0], 1)).r;
      small4k.row(lr[1], r.p50Us(), r.p99Us());
    }
    for (Result r : results.values()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("mode", r.mode);
      m.put("bytes", r.size);
      if (r.mode.startsWith("d_")) {
        m.put("depth", r.threads);
      } else {
        m.put("threads", r.threads);
      }
      m.put("ops", r.r.ops());
      m.put("seconds", r.r.seconds());
      m.put("gbPerSec", r.r.gbPerSec());
      m.put("p50Us", r.r.p50Us());
      m.put("p99Us", r.r.p99Us());
      raw.add(m);
    }
    report.extra("wireRaw", raw);
    for (int size : SIZES) {
      String s = KernelSuite.size(size);
      double pp = best(results, "push_pull", size);
      Target echoT = size >= 1 << 20 ? Target.atLeast(0.8) : null;
      Target rawT = size >= 1 << 20 ? Target.atLeast(0.4) : null;
      report.ratio(
          "push_pull_" + s + "_vs_grpc_echo",
          pp / best(results, "grpc_echo", size),
          echoT,
          "best GB/s over " + threadList() + " closed-loop threads, bare tuned gRPC echo");
      report.ratio(
          "push_pull_" + s + "_vs_raw_socket",
          pp / best(results, "raw_socket", size),
          rawT,
          "best GB/s over " + threadList() + " closed-loop threads, raw TCP echo");
    }
    for (int size : DEPTH_SIZES) {
      Result pp = bestDepth(results, "push_pull", size);
      Result rawS = bestDepth(results, "raw_socket", size);
      report.ratio(
          "push_pull_" + KernelSuite.size(size) + "_per_dir_vs_raw_socket",
          pp.r.gbPerSec() / rawS.r.gbPerSec(),
          Target.atLeast(size >= 1 << 20 ? 0.45 : 0.35),
          "GB/s per direction, best in-flight depth of each (push+pull at depth "
              + pp.threads
              + ": "
              + Report.fmt(pp.r.gbPerSec())
              + ", one round trip with return_values; raw TCP echo pipelined on one connection at"
              + " depth "
              + rawS.threads
              + ": "
              + Report.fmt(rawS.r.gbPerSec())
              + "; ps-lite "
              + PS_LITE.get(size)[0]
              + ")");
    }
    for (int size : new int[] {1 << 20, 16 << 20}) {
      Result push = bestDepth(results, "push", size);
      Result rawP = bestDepth(results, "raw_push", size);
      report.ratio(
          "push_" + KernelSuite.size(size) + "_vs_raw_socket",
          push.r.gbPerSec() / rawP.r.gbPerSec(),
          Target.atLeast(0.6),
          "GB/s one way, best in-flight depth of each (push at depth "
              + push.threads
              + ": "
              + Report.fmt(push.r.gbPerSec())
              + "; raw one-way push, tiny ack, pipelined on one connection at depth "
              + rawP.threads
              + ": "
              + Report.fmt(rawP.r.gbPerSec())
              + ")");
    }
    int small = SIZES[0];
    double sink = results.get(key("lat_grpc_sink", small, 1)).r.p50Us();
    double source = results.get(key("lat_grpc_source", small, 1)).r.p50Us();
    report.ratio(
        "p50_push_4KiB_vs_grpc_unary",
        results.get(key("lat_push", small, 1)).r.p50Us() / sink,
        Target.atMost(1.3),
        "1 thread, median of "
            + LATENCY_ROUNDS
            + " interleaved rounds; bare gRPC unary carrying 4 KiB up, empty answer ("
            + Report.fmt(sink)
            + " us)");
    report.ratio(
        "p50_pull_4KiB_vs_grpc_unary",
        results.get(key("lat_pull", small, 1)).r.p50Us() / source,
        Target.atMost(1.3),
        "1 thread, median of "
            + LATENCY_ROUNDS
            + " interleaved rounds; bare gRPC unary with a 4-byte request answering 4 KiB ("
            + Report.fmt(source)
            + " us)");
    report.ratio(
        "p50_push_pull_4KiB_vs_grpc_echo",
        results.get(key("lat_push_pull", small, 1)).r.p50Us()
            / results.get(key("lat_grpc_echo", small, 1)).r.p50Us(),
        null,
        "1 thread; one push with return_values (4 KiB up, 4 KiB back) against one 4 KiB echo");
  }
}
