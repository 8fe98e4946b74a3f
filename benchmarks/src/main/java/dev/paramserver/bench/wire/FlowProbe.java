package dev.paramserver.bench.wire;

import dev.paramserver.bench.cluster.PserverSetup;
import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.kernels.KernelSuite;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.OptimizerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A development aid for the transport's flow control: one pserver process (from the built jars in
 * the current folder) and push+pull of whole parameters kept in flight on one client, as the wire
 * section's in-flight rows do, for each size given, in alternating rounds (the first warms up), so
 * that a change of the client's or the pserver's gRPC settings can be compared at 1 MiB and 16 MiB
 * in a minute rather than a whole wire section. Usage: FlowProbe DEPTH MEASURE_MS ROUNDS
 * SIZE_BYTES... ({@code -Dflow.pserverOptions="-Xlog:gc:gc.log ..."} adds JVM options to the
 * pserver's, separated by spaces: a GC log or a JFR recording of the serving).
 */
public final class FlowProbe {
  private FlowProbe() {}

  public static void main(String[] args) throws Exception {
    int depth = Integer.parseInt(args[0]);
    long measure = Long.parseLong(args[1]);
    int rounds = Integer.parseInt(args[2]);
    List<Integer> sizes = new ArrayList<>();
    for (int i = 3; i < args.length; i++) {
      sizes.add(Integer.parseInt(args[i]));
    }
    Path dir = Files.createTempDirectory("flow-probe");
    ServiceJars jars = ServiceJars.copy(Path.of("."), dir);
    ClusterSpec spec =
        jars.spec(dir)
            .job("flow-probe")
            .count(Role.MASTER, 0)
            .pservers(1)
            .trainers(0)
            .jvmOptions(
                Role.PSERVER,
                ServiceJars.jvmOptions(
                    Role.PSERVER,
                    System.getProperty("flow.pserverOptions", "").isBlank()
                        ? new String[0]
                        : System.getProperty("flow.pserverOptions").trim().split("\\s+")))
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .startTimeout(Duration.ofSeconds(240))
            .build();
    try (LocalCluster cluster = new LocalCluster(spec)) {
      cluster.start();
      String address = "127.0.0.1:" + cluster.process(Role.PSERVER, 0).grpcPort();
      PserverSetup.awaitServing(address, Duration.ofSeconds(60));
      OptimizerConfig sgd =
          OptimizerConfig.newBuilder()
              .setKind(OptimizerConfig.Kind.SGD)
              .setLearningRate(1e-6f)
              .build();
      List<PserverSetup.Param> params = new ArrayList<>();
      for (int size : sizes) {
        params.add(new PserverSetup.Param("p" + KernelSuite.size(size), size / 4, sgd));
      }
      PserverSetup.initialise(address, params);
      for (int round = 0; round < rounds; round++) {
        for (int size : sizes) {
          String name = "p" + KernelSuite.size(size);
          LoadRunner.Result r =
              DepthRunner.run(
                  () ->
                      new PserverOps(
                          PserverOps.Kind.PUSH_PULL, address, name, size / 4, PserverSetup.BLOCK),
                  depth,
                  size,
                  round == 0 ? 1000 : 300,
                  measure);
          System.out.printf(
              "round %d push_pull %6s depth %d: %7.3f GB/s per direction  p50 %9.1f us (%d ops)%n",
              round, KernelSuite.size(size), depth, r.gbPerSec(), r.p50Us(), r.ops());
        }
      }
    }
  }
}
