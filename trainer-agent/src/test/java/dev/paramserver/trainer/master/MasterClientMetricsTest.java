package dev.paramserver.trainer.master;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Retry;
import dev.paramserver.service.ClientCallMetrics;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.trainer.coordination.EtcdMasterLocator;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Calls through MasterClient are measured by the interceptors it is given or the defaults. */
class MasterClientMetricsTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private Server server;
  private EtcdCoordinator coordinator;
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

  @BeforeEach
  void start() throws Exception {
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(
                new MasterGrpc.MasterImplBase() {
                  @Override
                  public void getStatus(GetStatusRequest request, StreamObserver<JobStatus> out) {
                    out.onNext(JobStatus.getDefaultInstance());
                    out.onCompleted();
                  }
                })
            .build()
            .start();
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    coordinator
        .kv()
        .put(coordinator.keys().masterAddr(), ("127.0.0.1:" + server.getPort()).getBytes(UTF_8));
  }

  @AfterEach
  void stop() throws InterruptedException {
    coordinator.close();
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  private void getStatus(MasterClient client) {
    try (client) {
      JobStatus status =
          client.call("status", s -> s.getStatus(GetStatusRequest.getDefaultInstance()));
      assertThat(status).isEqualTo(JobStatus.getDefaultInstance());
    }
  }

  private long calls() {
    Timer t =
        registry
            .find(ClientCallMetrics.CALL_DURATION)
            .tag("grpc.method", "paramserver.v1.Master/GetStatus")
            .tag("grpc.status", "OK")
            .tag("grpc.target", "127.0.0.1:" + server.getPort())
            .timer();
    return t == null ? 0 : t.count();
  }

  @Test
  void givenInterceptors_measureEveryCall() {
    getStatus(
        new MasterClient(
            new EtcdMasterLocator(coordinator),
            Duration.ofSeconds(5),
            Retry.upTo(Duration.ofMillis(200), () -> false),
            ChannelFactory.plaintext().withInterceptors(List.of(new ClientCallMetrics(registry)))));
    assertThat(calls()).isEqualTo(1);
  }

  @Test
  void aFactoryWithoutInterceptors_measuresNothing() {
    getStatus(
        new MasterClient(
            new EtcdMasterLocator(coordinator),
            Duration.ofSeconds(5),
            Retry.upTo(Duration.ofMillis(200), () -> false),
            ChannelFactory.plaintext()));
    assertThat(calls()).isZero();
  }
}
