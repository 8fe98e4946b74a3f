package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.psctl.Psctl;
import dev.paramserver.testsupport.SelfSignedCertificates;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * A job grown from 1 to 2 pservers while it trains with mutual TLS on every gRPC connection,
 * internal ones included: the master's calls to the pservers (status, MoveOut) and the old owner's
 * slot-move stream to the new one go through the TLS channel factory with the services' client
 * certificate, so the move completes and the job ends with every task done.
 */
class TlsScalingTest {
  private static final int PASSES = 30;

  @TempDir Path dir;

  @Test
  void aJobWithMutualTls_growsFromOneToTwoPservers_andTrainsToTheEnd() throws Exception {
    SelfSignedCertificates.make(dir, "server");
    SelfSignedCertificates.make(dir, "trainer");
    // the servers take clients holding either certificate: trainers, and the services themselves
    Path clients = dir.resolve("clients.crt");
    Files.writeString(
        clients,
        Files.readString(dir.resolve("server.crt")) + Files.readString(dir.resolve("trainer.crt")));
    DemoData.Result demo =
        DemoData.generate(
            dir.resolve("data"), DemoData.Options.builder().train(20000).test(2000).build());
    var spec = Jobs.spec(dir.resolve("run")).job("tls-scale").masters(1).pservers(1).trainers(1);
    TestCertificates.serversRequireClientCertificates(spec, dir, clients);
    TestCertificates.clientPresents(spec, Role.MASTER, dir, "server");
    TestCertificates.clientPresents(spec, Role.PSERVER, dir, "server");
    TestCertificates.clientPresents(spec, Role.TRAINER, dir, "trainer");
    spec.property(Role.MASTER, "paramserver.master.passes", Integer.toString(PASSES))
        .property(Role.MASTER, "paramserver.master.scaling.slots-per-move", "2048")
        .property(Role.MASTER, "paramserver.master.scaling.drain-time", "2s")
        .property(Role.PSERVER, "paramserver.pserver.register-timeout", "1s")
        .property(
            Role.TRAINER,
            "paramserver.trainer.train-data",
            dir.resolve("data") + "/train-*.recordio")
        .property(Role.TRAINER, "paramserver.trainer.test-data", demo.testFile().toString());
    try (LocalCluster cluster = new LocalCluster(spec.build())) {
      cluster.start();
      cluster.addProcess(Role.PSERVER);
      cluster.awaitJob(
          s -> s.isFailed() || !s.passes().isEmpty() && s.passes().get(0).tasks().done() > 0,
          Duration.ofMinutes(3));
      StringWriter out = new StringWriter();
      CommandLine psctl =
          Psctl.commandLine(
              Map.of(
                  "PSCTL_MASTER",
                  "http://127.0.0.1:" + cluster.process(Role.MASTER, 0).httpPort(),
                  "PSCTL_TOKEN",
                  cluster.adminToken()));
      psctl.setOut(new PrintWriter(out, true));
      psctl.setErr(new PrintWriter(out, true));
      int code = psctl.execute("scale", "--pservers", "2", "--wait-minutes", "3");
      assertThat(code).as("psctl scale 2: %s", out).isZero();
      assertThat(out.toString()).containsPattern("(?m)^move \\S+: pserver");

      JobStatusView end =
          cluster.awaitJob(
              s ->
                  s.isFailed()
                      || s.isFinished()
                          && s.passes().size() == PASSES
                          && s.passes().get(PASSES - 1).evalReports() >= 1,
              Duration.ofMinutes(8));
      assertThat(end.state()).as(end.failureReason()).isEqualTo("FINISHED");
      Jobs.assertEveryTaskDoneInEveryPass(end, PASSES);
      assertThat(end.passes().get(PASSES - 1).evalAccuracy()).isGreaterThan(0.9);
    }
  }
}
