package dev.paramserver.bench.wire;

import static dev.paramserver.bench.wire.WireSuite.DEPTHS;
import static dev.paramserver.bench.wire.WireSuite.DEPTH_SIZES;
import static dev.paramserver.bench.wire.WireSuite.LATENCY_ROUNDS;
import static dev.paramserver.bench.wire.WireSuite.MODES;
import static dev.paramserver.bench.wire.WireSuite.PS_LITE;
import static dev.paramserver.bench.wire.WireSuite.SIZES;

import dev.paramserver.bench.kernels.KernelSuite;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import dev.paramserver.bench.wire.WireSuite.Result;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The wire benchmark's tables and ratios, from the results {@link WireSuite} measured. */
final class WireReport {
  private final int[] threads;
  private final List<Map<String, Object>> raw = new ArrayList<>();

  WireReport(int[] threads) {
    this.threads = threads;
  }

  static String key(String mode, int size, int k) {
    return mode + "/" + size + "/" + k;
  }

  /** Best GB/s of a mode over the closed-loop thread counts (both directions counted). */
  private double best(Map<String, Result> results, String mode, int size) {
    double b = Double.NaN;
    for (int k : threads) {
      Result r = results.get(key(mode, size, k));
      if (r != null && !(r.r().gbPerSec() <= b)) {
        b = r.r().gbPerSec();
      }
    }
    return b;
  }

  /** The in-flight sweep's best result of a mode at a size (GB/s per direction), or null. */
  private static Result bestDepth(Map<String, Result> results, String mode, int size) {
    Result b = null;
    for (int d : DEPTHS) {
      Result r = results.get(key("d_" + mode, size, d));
      if (r != null && (b == null || r.r().gbPerSec() > b.r().gbPerSec())) {
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

  void report(Report report, Map<String, Result> results) {
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
        LoadRunner.Result pp = results.get(key("d_push_pull", size, d)).r();
        double echo = results.get(key("d_grpc_echo", size, d)).r().gbPerSec();
        double rawS = results.get(key("d_raw_socket", size, d)).r().gbPerSec();
        depthT.row(
            KernelSuite.size(size),
            d,
            results.get(key("d_push", size, d)).r().gbPerSec(),
            results.get(key("d_pull", size, d)).r().gbPerSec(),
            pp.gbPerSec(),
            echo,
            rawS,
            results.get(key("d_raw_push", size, d)).r().gbPerSec(),
            pp.ops() / pp.seconds(),
            pp.gbPerSec() / echo,
            pp.gbPerSec() / rawS);
        List<Object> row = new ArrayList<>(List.of(KernelSuite.size(size), d));
        for (String m : MODES) {
          LoadRunner.Result r = results.get(key("d_" + m, size, d)).r();
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
          Report.fmt(pp.r().gbPerSec()) + " (" + pp.threads() + ")",
          ref[0],
          Report.fmt(push.r().gbPerSec()) + " (" + push.threads() + ")",
          Double.isNaN(ref[1]) ? "—" : ref[1],
          Report.fmt(rawS.r().gbPerSec()) + " (" + rawS.threads() + ")",
          Report.fmt(rawP.r().gbPerSec()) + " (" + rawP.threads() + ")");
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
        double pp = results.get(key("push_pull", size, k)).r().gbPerSec();
        double echo = results.get(key("grpc_echo", size, k)).r().gbPerSec();
        double rawS = results.get(key("raw_socket", size, k)).r().gbPerSec();
        tput.row(
            KernelSuite.size(size),
            k,
            results.get(key("push", size, k)).r().gbPerSec(),
            results.get(key("pull", size, k)).r().gbPerSec(),
            pp,
            echo,
            rawS,
            pp / echo,
            pp / rawS);
        List<Object> row = new ArrayList<>(List.of(KernelSuite.size(size), k));
        for (String m : new String[] {"push", "pull", "push_pull", "grpc_echo", "raw_socket"}) {
          LoadRunner.Result r = results.get(key(m, size, k)).r();
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
      LoadRunner.Result r = results.get(key("lat_" + lr[0], SIZES[0], 1)).r();
      small4k.row(lr[1], r.p50Us(), r.p99Us());
    }
    for (Result r : results.values()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("mode", r.mode());
      m.put("bytes", r.size());
      if (r.mode().startsWith("d_")) {
        m.put("depth", r.threads());
      } else {
        m.put("threads", r.threads());
      }
      m.put("ops", r.r().ops());
      m.put("seconds", r.r().seconds());
      m.put("gbPerSec", r.r().gbPerSec());
      m.put("p50Us", r.r().p50Us());
      m.put("p99Us", r.r().p99Us());
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
          pp.r().gbPerSec() / rawS.r().gbPerSec(),
          Target.atLeast(size >= 1 << 20 ? 0.45 : 0.35),
          "GB/s per direction, best in-flight depth of each (push+pull at depth "
              + pp.threads()
              + ": "
              + Report.fmt(pp.r().gbPerSec())
              + ", one round trip with return_values; raw TCP echo pipelined on one connection at"
              + " depth "
              + rawS.threads()
              + ": "
              + Report.fmt(rawS.r().gbPerSec())
              + "; ps-lite "
              + PS_LITE.get(size)[0]
              + ")");
    }
    for (int size : new int[] {1 << 20, 16 << 20}) {
      Result push = bestDepth(results, "push", size);
      Result rawP = bestDepth(results, "raw_push", size);
      report.ratio(
          "push_" + KernelSuite.size(size) + "_vs_raw_socket",
          push.r().gbPerSec() / rawP.r().gbPerSec(),
          Target.atLeast(0.6),
          "GB/s one way, best in-flight depth of each (push at depth "
              + push.threads()
              + ": "
              + Report.fmt(push.r().gbPerSec())
              + "; raw one-way push, tiny ack, pipelined on one connection at depth "
              + rawP.threads()
              + ": "
              + Report.fmt(rawP.r().gbPerSec())
              + ")");
    }
    int small = SIZES[0];
    double sink = results.get(key("lat_grpc_sink", small, 1)).r().p50Us();
    double source = results.get(key("lat_grpc_source", small, 1)).r().p50Us();
    report.ratio(
        "p50_push_4KiB_vs_grpc_unary",
        results.get(key("lat_push", small, 1)).r().p50Us() / sink,
        Target.atMost(1.3),
        "1 thread, median of "
            + LATENCY_ROUNDS
            + " interleaved rounds; bare gRPC unary carrying 4 KiB up, empty answer ("
            + Report.fmt(sink)
            + " us)");
    report.ratio(
        "p50_pull_4KiB_vs_grpc_unary",
        results.get(key("lat_pull", small, 1)).r().p50Us() / source,
        Target.atMost(1.3),
        "1 thread, median of "
            + LATENCY_ROUNDS
            + " interleaved rounds; bare gRPC unary with a 4-byte request answering 4 KiB ("
            + Report.fmt(source)
            + " us)");
    report.ratio(
        "p50_push_pull_4KiB_vs_grpc_echo",
        results.get(key("lat_push_pull", small, 1)).r().p50Us()
            / results.get(key("lat_grpc_echo", small, 1)).r().p50Us(),
        null,
        "1 thread; one push with return_values (4 KiB up, 4 KiB back) against one 4 KiB echo");
  }
}
