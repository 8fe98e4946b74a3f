package dev.paramserver.pserver;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.pull;
import static dev.paramserver.pserver.shard.Requests.push;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.Lease;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.pserver.admin.LogHealthIndicator;
import dev.paramserver.pserver.persistence.CheckpointService;
import dev.paramserver.pserver.registration.RegistrationState;
import dev.paramserver.pserver.registration.ShardRegistration;
import dev.paramserver.pserver.wal.WalDisk;
import dev.paramserver.rpc.Channels;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.TempDirs;
import io.etcd.jetcd.Client;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/** The whole pserver app against a real etcd, on free loopback ports. */
class PserverApplicationTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private Path checkpoints;
  private EtcdCoordinator coordinator;
  private String job;

  @BeforeEach
  void setUp() {
    checkpoints = TempDirs.create("pserver-ckpt");
    job = etcd.uniqueJob();
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job));
  }

  @AfterEach
  void tearDown() {
    coordinator.close();
    TempDirs.deleteRecursively(checkpoints);
  }

  private ConfigurableApplicationContext start(String... extra) {
    List<String> args =
        new java.util.ArrayList<>(
            List.of(
                "--server.port=0",
                "--server.address=127.0.0.1",
                "--spring.grpc.server.port=0",
                "--spring.grpc.server.address=127.0.0.1",
                "--paramserver.etcd.endpoints=" + etcd.endpoint(),
                "--paramserver.job=" + job,
                "--paramserver.admin.token=tok",
                "--paramserver.pserver.checkpoint-dir=" + checkpoints,
                "--paramserver.pserver.checkpoint-interval=0s"));
    args.addAll(List.of(extra));
    return new SpringApplicationBuilder(PserverApplication.class).run(args.toArray(String[]::new));
  }

  private static HttpResponse<String> http(
      ConfigurableApplicationContext ctx, String method, String path) throws Exception {
    int port = ((WebServerApplicationContext) ctx).getWebServer().getPort();
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(10))
            .header("Authorization", "Bearer tok")
            .method(method, HttpRequest.BodyPublishers.noBody())
            .build();
    return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
  }

  private static HttpResponse<String> unauthenticatedPost(
      ConfigurableApplicationContext ctx, String path) throws Exception {
    int port = ((WebServerApplicationContext) ctx).getWebServer().getPort();
    return HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(10))
            .POST(HttpRequest.BodyPublishers.noBody())
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static int readiness(ConfigurableApplicationContext ctx) {
    try {
      return http(ctx, "GET", "/actuator/health/readiness").statusCode();
    } catch (Exception e) {
      return -1;
    }
  }

  private Optional<String> registered(int index) {
    return coordinator.kv().get(coordinator.keys().ps(index)).map(kv -> kv.valueAsString());
  }

  @Test
  void registers_serves_becomesReady_checkpoints_andRecoversAfterRestart() throws Exception {
    float[] after;
    try (ConfigurableApplicationContext ctx = start()) {
      ShardRegistration registration = ctx.getBean(ShardRegistration.class);
      Poll.until(Duration.ofSeconds(20), () -> registered(0).isPresent(), "ps/0 in etcd");
      String address = registered(0).orElseThrow();
      assertThat(address).isEqualTo(registration.address()).startsWith("127.0.0.1:");
      assertThat(coordinator.kv().get(coordinator.keys().psDesired()).orElseThrow().valueAsString())
          .isEqualTo("1");
      assertThat(readiness(ctx)).isEqualTo(503);
      JsonNode status = JSON.readTree(http(ctx, "GET", "/admin/status").body());
      assertThat(status.get("role").asString()).isEqualTo("pserver");
      assertThat(status.get("state").asString()).isEqualTo("UNINITIALISED");
      assertThat(status.get("identity").asString()).isEqualTo(address);

      ManagedChannel channel = Channels.forAddress(address);
      try {
        var stub = ParameterServerGrpc.newBlockingStub(channel);
        // A 10 MB block: above gRPC's default 4 MiB cap, within the configured 64 MB.
        int big = 2_500_000;
        stub.withDeadlineAfter(10, TimeUnit.SECONDS)
            .initParameters(
                init(
                    "i1",
                    List.of(dense("w", 3, 4, sgd(0.5f)), dense("big", big, big, sgd(1))),
                    List.of(block("w", 0, 4, 1, 2, 3), block("big", 0, big, new float[big]))));
        stub.withDeadlineAfter(10, TimeUnit.SECONDS).finishInit(finish("i1", 2));
        stub.withDeadlineAfter(10, TimeUnit.SECONDS).pushGradients(push(gradient("w", 0, 2, 2, 2)));
        PullParametersResponse r =
            stub.withDeadlineAfter(10, TimeUnit.SECONDS).pullParameters(pull("w", 0));
        after = TensorCodec.decode(r.getBlocks(0).getData());
        assertThat(after).containsExactly(0f, 1f, 2f);
      } finally {
        Channels.close(channel);
      }
      Poll.until(
          Duration.ofSeconds(10), () -> readiness(ctx) == 200, "readiness UP after FinishInit");
      assertThat(http(ctx, "GET", "/actuator/health/liveness").statusCode()).isEqualTo(200);
      status = JSON.readTree(http(ctx, "GET", "/admin/status").body());
      assertThat(status.get("state").asString()).isEqualTo("SERVING");
      assertThat(status.get("step").asLong()).isEqualTo(1);
      // the optimizer each parameter was initialised with, as the trainer sent it
      assertThat(status.at("/optimizers/w/kind").asString()).isEqualTo("SGD");
      assertThat(status.at("/optimizers/w/learningRate").asDouble()).isEqualTo(0.5);
      assertThat(status.get("staleness").asInt()).isZero();

      String tags = "application=\"pserver\",paramserver_job=\"" + job + "\",role=\"pserver\"";
      assertThat(http(ctx, "GET", "/actuator/prometheus").body())
          .contains("paramserver_pserver_step{" + tags + "} 1.0")
          .contains("paramserver_pserver_index{" + tags + "} 0.0")
          .contains("paramserver_pserver_pushed_bytes_total{" + tags + "}")
          .contains("paramserver_pserver_push_apply_seconds_bucket{" + tags + ",le=\"0.001\"}")
          .contains("paramserver_pserver_push_apply_seconds_count{" + tags + "} 1")
          .contains("paramserver_etcd_call_seconds_bucket{")
          .containsPattern(
              "grpc_server_call_duration_seconds_bucket\\{application=\"pserver\","
                  + "grpc_method=\"paramserver.v1.ParameterServer/PushGradients\","
                  + "grpc_status=\"OK\",.*le=\"0.001\"}");
      assertThat(unauthenticatedPost(ctx, "/admin/checkpoint").statusCode()).isEqualTo(401);
      HttpResponse<String> cp = http(ctx, "POST", "/admin/checkpoint");
      assertThat(cp.statusCode()).isEqualTo(200);
      JsonNode meta = JSON.readTree(cp.body());
      assertThat(meta.get("step").asLong()).isEqualTo(1);
      assertThat(Files.exists(Path.of(meta.get("path").asString()))).isTrue();
      // two writes: the freshly initialised shard (the write-ahead log's base), then this one
      assertThat(http(ctx, "GET", "/actuator/prometheus").body())
          .contains("paramserver_pserver_checkpoint_write_seconds_count{" + tags + "} 2")
          .contains("paramserver_pserver_checkpoint_write_seconds_bucket{" + tags + ",le=\"1.0\"}");
    }
    // Graceful shutdown revoked the lease and wrote a final checkpoint.
    assertThat(registered(0)).isEmpty();
    CheckpointMeta meta =
        CheckpointMeta.parseFrom(
            coordinator.kv().get(coordinator.keys().checkpoint(0)).orElseThrow().value());
    assertThat(meta.getPreviousPath()).isNotEmpty();

    try (ConfigurableApplicationContext ctx = start()) {
      Poll.until(Duration.ofSeconds(20), () -> readiness(ctx) == 200, "ready from the checkpoint");
      ManagedChannel channel = Channels.forAddress(registered(0).orElseThrow());
      try {
        PullParametersResponse r =
            ParameterServerGrpc.newBlockingStub(channel)
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .pullParameters(pull("w", 0));
        assertThat(r.getStep()).isEqualTo(1);
        assertThat(TensorCodec.decode(r.getBlocks(0).getData())).containsExactly(after);
      } finally {
        Channels.close(channel);
      }
    }
  }

  @Test
  void failedLog_turnsLivenessDown_soTheOrchestratorRestartsIt() throws Exception {
    try (ConfigurableApplicationContext ctx = start()) {
      Poll.until(Duration.ofSeconds(20), () -> registered(0).isPresent(), "ps/0 in etcd");
      ManagedChannel channel = Channels.forAddress(registered(0).orElseThrow());
      try {
        var stub = ParameterServerGrpc.newBlockingStub(channel);
        stub.withDeadlineAfter(10, TimeUnit.SECONDS)
            .initParameters(
                init(
                    "i1",
                    List.of(dense("w", 3, 4, sgd(0.5f))),
                    List.of(block("w", 0, 4, 1, 2, 3))));
        stub.withDeadlineAfter(10, TimeUnit.SECONDS).finishInit(finish("i1", 1));
        stub.withDeadlineAfter(10, TimeUnit.SECONDS).pushGradients(push(gradient("w", 0, 2, 2, 2)));
        assertThat(http(ctx, "GET", "/actuator/health/liveness").statusCode()).isEqualTo(200);

        // the disk is full: the next log write fails, and the push with it
        ctx.getBean(CheckpointService.class)
            .wal()
            .disk(
                new WalDisk() {
                  @Override
                  public void write(FileChannel ch, ByteBuffer buf) throws IOException {
                    throw new IOException("No space left on device (injected)");
                  }
                });
        assertThat(
                catchThrowable(
                    () ->
                        stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                            .pushGradients(push(gradient("w", 0, 2, 2, 2)))))
            .as("the push the full disk refused")
            .isNotNull();
      } finally {
        Channels.close(channel);
      }
      HttpResponse<String> live = http(ctx, "GET", "/actuator/health/liveness");
      assertThat(live.statusCode()).as(live.body()).isEqualTo(503);
      assertThat(JSON.readTree(live.body()).path("status").asString()).isEqualTo("DOWN");
      assertThat(ctx.getBean(LogHealthIndicator.class).health().getDetails().get("failure"))
          .asString()
          .contains("No space left on device (injected)");
    }
  }

  @Test
  void lostLease_isNoticed_andTheIndexIsClaimedAgain() throws Exception {
    try (ConfigurableApplicationContext ctx = start()) {
      ShardRegistration registration = ctx.getBean(ShardRegistration.class);
      Poll.until(Duration.ofSeconds(20), () -> registered(0).isPresent(), "ps/0 in etcd");
      long leaseId = coordinator.kv().get(coordinator.keys().ps(0)).orElseThrow().leaseId();
      // Another client revokes the pserver's lease, as etcd does when keep-alives stop.
      try (Client client = Client.builder().endpoints(etcd.endpoint()).build()) {
        client.getLeaseClient().revoke(leaseId).get(10, TimeUnit.SECONDS);
      }
      Poll.until(
          Duration.ofSeconds(30),
          () ->
              coordinator
                  .kv()
                  .get(coordinator.keys().ps(0))
                  .map(kv -> kv.leaseId() != leaseId)
                  .orElse(false),
          "ps/0 claimed again under a new lease");
      assertThat(registered(0)).contains(registration.address());
      Poll.until(
          Duration.ofSeconds(10),
          () -> registration.state() == RegistrationState.REGISTERED,
          "registration back to REGISTERED");
      assertThat(registration.index()).isZero();
    }
  }

  @Test
  void configuredIndex_isClaimedEvenThoughALowerOneIsFree() throws Exception {
    try (ConfigurableApplicationContext ctx =
        start("--paramserver.pserver.desired=2", "--paramserver.pserver.index=1")) {
      ShardRegistration registration = ctx.getBean(ShardRegistration.class);
      // the index is taken once the claimed index's checkpoint was looked for, after the claim
      Poll.until(Duration.ofSeconds(20), () -> registration.index() == 1, "index 1 claimed");
      assertThat(registered(1)).contains(registration.address());
      assertThat(registered(0)).isEmpty();
      assertThat(http(ctx, "GET", "/actuator/prometheus").body())
          .containsPattern("(?m)^paramserver_pserver_index\\{[^}]*} 1\\.0$");
    }
  }

  @Test
  void afterALostLease_theIndexHeldBefore_isClaimedFirst() throws Exception {
    Lease other = coordinator.grantLease(Duration.ofSeconds(10));
    assertThat(coordinator.kv().putIfAbsent(coordinator.keys().ps(0), new byte[0], other)).isTrue();
    try (ConfigurableApplicationContext ctx = start("--paramserver.pserver.desired=2")) {
      ShardRegistration registration = ctx.getBean(ShardRegistration.class);
      Poll.until(Duration.ofSeconds(20), () -> registration.index() == 1, "index 1 claimed");
      long leaseId = coordinator.kv().get(coordinator.keys().ps(1)).orElseThrow().leaseId();
      other.revoke(); // ps/0 is free now
      try (Client client = Client.builder().endpoints(etcd.endpoint()).build()) {
        client.getLeaseClient().revoke(leaseId).get(10, TimeUnit.SECONDS);
      }
      Poll.until(
          Duration.ofSeconds(30),
          () ->
              coordinator
                  .kv()
                  .get(coordinator.keys().ps(1))
                  .map(kv -> kv.leaseId() != leaseId)
                  .orElse(false),
          "ps/1 claimed again under a new lease");
      assertThat(registered(0)).isEmpty();
      // the index reads -1 while the claimed shard is loaded again, then the one claimed
      Poll.until(Duration.ofSeconds(20), () -> registration.index() == 1, "index 1 served again");
      assertThat(registered(0)).isEmpty();
    }
  }

  @Test
  void desiredBelowOne_refusesToStart_namingTheProperty() {
    Throwable t = catchThrowable(() -> start("--paramserver.pserver.desired=0").close());
    StringBuilder chain = new StringBuilder();
    for (Throwable c = t; c != null; c = c.getCause()) {
      chain.append(c.getMessage()).append('\n');
    }
    assertThat(chain.toString()).contains("paramserver.pserver").contains("desired");
  }
}
