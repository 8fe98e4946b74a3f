package dev.paramserver.bench.train;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StartupTimelineTest {
  @TempDir Path logs;

  @Test
  void read_givesSecondsFromLaunchOfEachLoggedMilestone_andLeavesOutMissingOnes() throws Exception {
    long launched = Instant.parse("2026-12-02T14:10:36.000Z").toEpochMilli();
    Files.writeString(
        logs.resolve("master-0.log"),
        """
        ===== 2026-12-02T14:10:36.843009453Z starting master-0 (http 1, grpc 2): java -jar m.jar
        2026-12-02T14:10:39.352Z  INFO 1 --- [m] [main] d.p.m.MasterApplication : Starting MasterApplication v0.1
        2026-12-02T14:10:45.462Z  INFO 1 --- [m] [ex-1] d.p.c.EtcdCalls : etcd at [x] is reachable
          at some.Frame(Frame.java:1)
        2026-12-02T14:10:49.053Z  INFO 1 --- [m] [main] d.p.m.MasterApplication : Started MasterApplication in 10.9 seconds
        """);
    Files.writeString(
        logs.resolve("trainer-0.log"),
        """
        2026-12-02T14:10:56.627Z  INFO 3 --- [t] [loop] d.p.t.p.PserverDirectory : found 1 pservers: {0=a}
        """);

    Map<String, Double> t = StartupTimeline.read(logs, launched);

    assertThat(t)
        .containsEntry("services launched", 0.843)
        .containsEntry("master JVM up (Spring starting)", 3.352)
        .containsEntry("master etcd connected", 9.462)
        .containsEntry("master context refreshed", 13.053)
        .containsEntry("trainer found pservers", 20.627)
        .doesNotContainKey("pserver registered");
    assertThat(t.keySet())
        .containsSubsequence(
            "services launched", "master etcd connected", "trainer found pservers");
  }
}
