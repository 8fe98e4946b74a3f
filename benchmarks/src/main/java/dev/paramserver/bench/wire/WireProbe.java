package dev.paramserver.bench.wire;

import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.localcluster.Role;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A development aid for tuning the baselines: runs the gRPC echo and the raw socket at the given
 * sizes and thread counts (settings through -Dbench.echo.direct, -Dbench.echo.window,
 * -Dbench.echo.initialWindow, -Dbench.echo.chunk). Usage: WireProbe SIZE_BYTES... [-t THREADS] [-d
 * DEPTH] (with -d: in flight on one channel / connection, echo, raw echo and raw one-way push).
 */
public final class WireProbe {
  private WireProbe() {}

  public static void main(String[] args) throws Exception {
    int threads = 1;
    int depth = 0;
    List<Integer> sizes = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("-d")) {
        depth = Integer.parseInt(args[++i]);
      } else if (args[i].equals("-t")) {
        threads = Integer.parseInt(args[++i]);
      } else {
        sizes.add(Integer.parseInt(args[i]));
      }
    }
    Path dir = Files.createTempDirectory("wire-probe");
    try (EchoServerProcess echo =
        EchoServerProcess.start(ServiceJars.jvmOptions(Role.PSERVER), dir)) {
      for (int size : sizes) {
        if (depth > 0) {
          for (String mode : new String[] {"grpc_echo", "raw_socket", "raw_push"}) {
            int s = size;
            AsyncOp.Factory f =
                switch (mode) {
                  case "grpc_echo" -> () -> new GrpcEchoOps(echo.grpcPort(), EchoProtocol.ECHO, s);
                  case "raw_socket" -> () -> new RawPipelineOps(echo.rawPort(), s, false);
                  default -> () -> new RawPipelineOps(echo.rawPort(), s, true);
                };
            LoadRunner.Result r = DepthRunner.run(f, depth, size, 500, 1500);
            System.out.printf(
                "%-10s %9d depth %d: %7.3f GB/s per direction p50 %9.1f us (%d ops)%n",
                mode, size, depth, r.gbPerSec(), r.p50Us(), r.ops());
          }
          continue;
        }
        for (String mode : new String[] {"grpc_echo", "raw_socket"}) {
          int s = size;
          Op.Factory f =
              mode.equals("grpc_echo")
                  ? () -> new GrpcEchoOps(echo.grpcPort(), EchoProtocol.ECHO, s)
                  : () -> new RawSocketOps(echo.rawPort(), s, false);
          LoadRunner.Result r = LoadRunner.run(f, threads, 2L * size, 500, 1500);
          System.out.printf(
              "%-10s %9d x%d: %7.3f GB/s p50 %9.1f us p99 %9.1f us (%d ops)%n",
              mode, size, threads, r.gbPerSec(), r.p50Us(), r.p99Us(), r.ops());
        }
      }
    }
  }
}
