package dev.paramserver.localcluster;

import java.nio.file.Path;
import java.util.List;

/**
 * A JVM that starts a small cluster of sleepers and waits forever, so {@link OrchestratorDeathTest}
 * can kill it with SIGKILL and check that its children go too.
 */
public final class OrphanProbe {
  private OrphanProbe() {}

  public static void main(String[] args) throws InterruptedException {
    ClusterSpec spec =
        ClusterSpec.builder(Path.of(args[0]))
            .masters(1)
            .pservers(1)
            .trainers(1)
            .command(ctx -> List.of("sleep", "600"), false)
            .build();
    LocalCluster cluster = new LocalCluster(spec);
    cluster.start();
    Thread.sleep(Long.MAX_VALUE);
  }
}
