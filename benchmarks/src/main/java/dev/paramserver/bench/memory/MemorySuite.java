package dev.paramserver.bench.memory;

import com.sun.tools.attach.VirtualMachine;
import dev.paramserver.bench.cluster.PserverSetup;
import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import dev.paramserver.bench.wire.PserverOps;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ShardStatus;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.management.MBeanServerConnection;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Heap of a real pserver process holding a 10-million-parameter Adam shard (values plus the m and v
 * state): live heap after a full GC, read through the process's own MemoryMXBean (attach API), once
 * before the parameters are defined and once after they were initialised and updated once.
 */
public final class MemorySuite {
  static final int PARAMS = 10_000_000;
  static final long RAW = (long) PARAMS * 4 * 3;

  private final Path runDir;
  private final ServiceJars jars;

  public MemorySuite(Path runDir, ServiceJars jars) {
    this.runDir = runDir;
    this.jars = jars;
  }

  // BanJNDI: the JMX address is the local management agent of a pserver this suite started
  @SuppressWarnings("BanJNDI")
  public void run(Report report) throws Exception {
    Path dir = runDir.resolve("memory");
    ClusterSpec spec =
        jars.spec(dir)
            .job("bench-memory")
            .masters(0)
            .pservers(1)
            .trainers(0)
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .startTimeout(Duration.ofSeconds(180))
            .build();
    long before;
    long after;
    ShardStatus status;
    try (LocalCluster cluster = new LocalCluster(spec)) {
      cluster.start();
      String address = "127.0.0.1:" + cluster.process(Role.PSERVER, 0).grpcPort();
      PserverSetup.awaitServing(address, Duration.ofSeconds(60));
      long pid = cluster.process(Role.PSERVER, 0).pid();
      VirtualMachine vm = VirtualMachine.attach(Long.toString(pid));
      try (JMXConnector jmx =
          JMXConnectorFactory.connect(new JMXServiceURL(vm.startLocalManagementAgent()))) {
        MBeanServerConnection conn = jmx.getMBeanServerConnection();
        MemoryMXBean mem =
            ManagementFactory.newPlatformMXBeanProxy(
                conn, ManagementFactory.MEMORY_MXBEAN_NAME, MemoryMXBean.class);
        before = liveHeap(mem);
        OptimizerConfig adam =
            OptimizerConfig.newBuilder()
                .setKind(OptimizerConfig.Kind.ADAM)
                .setLearningRate(1e-3f)
                .build();
        PserverSetup.initialise(
            address, List.of(new PserverSetup.Param("embedding", PARAMS, adam)));
        // one update of every block, so any state created lazily exists
        try (PserverOps push =
            new PserverOps(
                PserverOps.Kind.PUSH, address, "embedding", PARAMS, PserverSetup.BLOCK)) {
          push.run();
        }
        after = liveHeap(mem);
        status = PserverSetup.awaitServing(address, Duration.ofSeconds(10));
      } finally {
        vm.detach();
      }
    }
    long delta = after - before;
    double perParam = delta / (double) PARAMS;
    Report.Table t =
        report.table(
            "Memory",
            "Pserver heap for 10M float32 parameters with Adam (live heap after full GC)",
            "quantity",
            "MB",
            "bytes/param",
            "vs raw bytes");
    t.row("raw: values + m + v (10M x 4 B x 3)", RAW / 1e6, 12.0, 1.0);
    t.row("heap before InitParameters", before / 1e6, Double.NaN, Double.NaN);
    t.row("heap after init + one push", after / 1e6, after / (double) PARAMS, after / (double) RAW);
    t.row("heap attributable to the shard", delta / 1e6, perParam, delta / (double) RAW);
    report.ratio(
        "pserver_heap_vs_raw_bytes",
        delta / (double) RAW,
        Target.atMost(1.2),
        "live heap growth of the pserver process for 10M Adam parameters vs 120 MB raw");
    report.ratio(
        "pserver_total_heap_vs_raw_bytes",
        after / (double) RAW,
        null,
        "whole live heap of the pserver process (Spring Boot included) vs 120 MB raw");
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("params", PARAMS);
    m.put("rawBytes", RAW);
    m.put("heapBefore", before);
    m.put("heapAfter", after);
    m.put("shardParameterBytes", status.getParameterBytes());
    report.extra("memory", m);
    System.out.printf(
        Locale.ROOT,
        "memory: heap %.1f MB before, %.1f MB after: %.2f bytes/param%n",
        before / 1e6,
        after / 1e6,
        perParam);
  }

  /** Used heap after full collections, settled (two in a row agree within 1%). */
  public static long liveHeap(MemoryMXBean mem) throws InterruptedException {
    long last = Long.MAX_VALUE;
    for (int i = 0; i < 5; i++) {
      mem.gc();
      long used = mem.getHeapMemoryUsage().getUsed();
      if (Math.abs(used - last) < used / 100) {
        return Math.min(used, last);
      }
      last = used;
      Thread.sleep(200);
    }
    return last;
  }
}
