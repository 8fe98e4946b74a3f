package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessInfo;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.ClientTls;
import dev.paramserver.testsupport.SelfSignedCertificates;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Mutual TLS on every gRPC connection: certificates generated in the test (keytool), the master and
 * the pserver serve TLS and require client certificates, the trainer connects with its own; the job
 * trains to the end, and a plaintext client or a client without a certificate is refused.
 */
class TlsTest {
  @TempDir Path dir;

  private void certificate(String name) throws Exception {
    SelfSignedCertificates.make(dir, name);
  }

  @Test
  void mutualTls_trainsToTheEnd_andRefusesPlaintextAndAnonymousClients() throws Exception {
    certificate("server");
    certificate("trainer");
    DemoData.Result demo =
        DemoData.generate(
            dir.resolve("data"), DemoData.Options.builder().train(6000).test(1000).build());
    var spec = Jobs.spec(dir.resolve("run")).job("tls").masters(1).pservers(1).trainers(1);
    TestCertificates.serversRequireClientCertificates(spec, dir, dir.resolve("trainer.crt"));
    TestCertificates.clientPresents(spec, Role.TRAINER, dir, "trainer");
    spec.property(Role.MASTER, "paramserver.master.passes", "1")
        .property(
            Role.TRAINER,
            "paramserver.trainer.train-data",
            dir.resolve("data") + "/train-*.recordio")
        .property(Role.TRAINER, "paramserver.trainer.test-data", demo.testFile().toString());
    try (LocalCluster cluster = new LocalCluster(spec.build())) {
      cluster.start();
      JobStatusView end =
          cluster.awaitJob(
              s ->
                  s.isFailed()
                      || s.isFinished()
                          && !s.passes().isEmpty()
                          && s.passes().get(0).evalReports() >= 1,
              Duration.ofMinutes(4));
      assertThat(end.state()).as(end.failureReason()).isEqualTo("FINISHED");
      assertThat(end.passes().get(0).evalAccuracy()).isGreaterThan(0.9);

      ProcessInfo ps = cluster.process(Role.PSERVER, 0);
      String addr = "127.0.0.1:" + ps.grpcPort();
      assertThat(refused(ChannelFactory.plaintext(), addr)).as("plaintext client").isTrue();
      assertThat(
              refused(
                  ChannelFactory.plaintext()
                      .withTls(new ClientTls(dir.resolve("server.crt"), null, null, null)),
                  addr))
          .as("TLS client without a certificate")
          .isTrue();
      ChannelFactory mutual =
          ChannelFactory.plaintext()
              .withTls(
                  new ClientTls(
                      dir.resolve("server.crt"),
                      dir.resolve("trainer.crt"),
                      dir.resolve("trainer.key"),
                      null));
      ManagedChannel ch = mutual.forAddress(addr);
      try {
        ShardStatus st =
            ParameterServerGrpc.newBlockingStub(ch)
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .getShardStatus(GetShardStatusRequest.getDefaultInstance());
        assertThat(st.getInitialised()).isTrue();
      } finally {
        Channels.close(ch);
      }
    }
  }

  private static boolean refused(ChannelFactory channels, String addr) {
    ManagedChannel ch = channels.forAddress(addr);
    try {
      assertThatThrownBy(
              () ->
                  ParameterServerGrpc.newBlockingStub(ch)
                      .withDeadlineAfter(10, TimeUnit.SECONDS)
                      .getShardStatus(GetShardStatusRequest.getDefaultInstance()))
          .isInstanceOf(StatusRuntimeException.class);
      return true;
    } finally {
      Channels.close(ch);
    }
  }
}
