package dev.paramserver.pserver.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.Lease;
import dev.paramserver.pserver.PserverApplication;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.TempDirs;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * The whole pserver app as pod 1 of an elastic StatefulSet: a real etcd, a stand-in master ({@link
 * FakeMaster}) and a stand-in Kubernetes API answering the StatefulSet's replicas.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class PserverOnKubernetesTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private final AtomicInteger replicas = new AtomicInteger(2);
  private EtcdCoordinator coordinator;
  private FakeMaster master;
  private HttpServer kubernetes;
  private Path dir;
  private String job;

  @BeforeEach
  void setUp() throws Exception {
    dir = TempDirs.create("pserver-k8s");
    Files.writeString(dir.resolve("token"), "sa-token");
    job = etcd.uniqueJob();
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job));
    master = new FakeMaster(coordinator).lead();
    kubernetes = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    kubernetes.createContext(
        "/apis/apps/v1/namespaces/ml/statefulsets/ps-pserver",
        ex -> {
          byte[] b =
              ("{\"spec\":{\"replicas\":" + replicas.get() + "}}").getBytes(StandardCharsets.UTF_8);
          ex.sendResponseHeaders(
              "Bearer sa-token".equals(ex.getRequestHeaders().getFirst("Authorization"))
                  ? 200
                  : 403,
              b.length);
          try (OutputStream out = ex.getResponseBody()) {
            out.write(b);
          }
        });
    kubernetes.start();
  }

  @AfterEach
  void tearDown() {
    kubernetes.stop(0);
    master.close();
    coordinator.close();
    TempDirs.deleteRecursively(dir);
  }

  private ConfigurableApplicationContext start(String... extra) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "--server.port=0",
                "--server.address=127.0.0.1",
                "--spring.grpc.server.port=0",
                "--spring.grpc.server.address=127.0.0.1",
                "--paramserver.etcd.endpoints=" + etcd.endpoint(),
                "--paramserver.job=" + job,
                "--paramserver.admin.token=" + FakeMaster.TOKEN,
                "--paramserver.admin.exit-jvm-on-shutdown=false",
                "--paramserver.pserver.checkpoint-dir=" + dir.resolve("ckpt"),
                "--paramserver.pserver.checkpoint-interval=0s",
                "--paramserver.pserver.register-timeout=1s",
                "--paramserver.pserver.index=1"));
    args.addAll(List.of(extra));
    return new SpringApplicationBuilder(PserverApplication.class).run(args.toArray(String[]::new));
  }

  private ConfigurableApplicationContext startElastic() {
    return start(
        "--paramserver.pserver.kubernetes.grow-job=true",
        "--paramserver.pserver.kubernetes.stateful-set=ps-pserver",
        "--paramserver.pserver.kubernetes.namespace=ml",
        "--paramserver.pserver.kubernetes.api-url=http://127.0.0.1:"
            + kubernetes.getAddress().getPort(),
        "--paramserver.pserver.kubernetes.service-account-dir=" + dir,
        "--paramserver.pserver.kubernetes.pre-stop-timeout=20s",
        "--paramserver.pserver.kubernetes.shutdown-wait=500ms");
  }

  private static HttpResponse<String> get(ConfigurableApplicationContext ctx, String path)
      throws Exception {
    int port = ((WebServerApplicationContext) ctx).getWebServer().getPort();
    return HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(30))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** Pod 0 of the StatefulSet, registered as pserver 0. */
  private Lease podZero() {
    Lease lease = coordinator.grantLease(Duration.ofSeconds(10));
    coordinator.kv().putIfAbsent(coordinator.keys().ps(0), "127.0.0.1:1".getBytes(), lease);
    return lease;
  }

  @Test
  void podOne_growsTheJobToTwo_registers_andItsPreStopIsOpenWhileAdminIsNot() throws Exception {
    master.setDesired(1);
    Lease zero = podZero();
    try (ConfigurableApplicationContext ctx = startElastic()) {
      Poll.until(
          Duration.ofSeconds(30),
          () -> coordinator.kv().get(coordinator.keys().ps(1)).isPresent(),
          "pserver 1 registered after growing the job");
      assertThat(master.desired()).isEqualTo(2);
      assertThat(master.calls).contains("POST /admin/job/scale?pservers=2&grow-only=true");

      // no token: the hook answers, the admin endpoints still refuse
      HttpResponse<String> restart = get(ctx, "/k8s/pre-stop");
      assertThat(restart.statusCode()).isEqualTo(200);
      assertThat(JSON.readTree(restart.body()).get("action").asString()).isEqualTo("none");
      assertThat(get(ctx, "/admin/status").statusCode()).isEqualTo(401);
      assertThat(master.calls).doesNotContain("POST /admin/job/scale?pservers=1");

      // the StatefulSet is scaled to 1: pod 1 leaves, the job shrinks to 1
      replicas.set(1);
      JsonNode leaving = JSON.readTree(get(ctx, "/k8s/pre-stop").body());
      assertThat(leaving.get("action").asString()).isEqualTo("emptied");
      assertThat(master.calls).contains("POST /admin/job/scale?pservers=1");
      assertThat(master.desired()).isEqualTo(1);
    } finally {
      zero.revoke();
    }
  }

  @Test
  void theMastersShutdown_endsAWaitingPreStop() throws Exception {
    master.setDesired(2);
    master.placementFollows = false; // pserver 1 is never seen emptied
    replicas.set(1);
    Lease zero = podZero();
    try (ConfigurableApplicationContext ctx = startElastic()) {
      CompletableFuture<HttpResponse<String>> hook =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return get(ctx, "/k8s/pre-stop");
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              });
      Poll.until(
          Duration.ofSeconds(10),
          () -> master.calls.contains("POST /admin/job/scale?pservers=1"),
          "the job asked to shrink");
      assertThat(hook).isNotDone();

      int port = ((WebServerApplicationContext) ctx).getWebServer().getPort();
      HttpResponse<String> shutdown =
          HTTP.send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/admin/shutdown"))
                  .header("Authorization", "Bearer " + FakeMaster.TOKEN)
                  .POST(HttpRequest.BodyPublishers.noBody())
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(shutdown.statusCode()).isEqualTo(202);

      HttpResponse<String> answer = hook.get(20, TimeUnit.SECONDS);
      assertThat(JSON.readTree(answer.body()).get("action").asString()).isEqualTo("shutdown");
      Poll.until(Duration.ofSeconds(20), () -> !ctx.isActive(), "the pserver shut down");
    } finally {
      zero.revoke();
    }
  }

  @Test
  void withoutTheKubernetesSettings_thereIsNoHook_andNothingIsAsked() throws Exception {
    master.setDesired(1);
    Lease zero = podZero();
    try (ConfigurableApplicationContext ctx = start()) {
      assertThat(ctx.getBeanNamesForType(JobGrowth.class)).isEmpty();
      assertThat(ctx.getBeanNamesForType(PreStopHook.class)).isEmpty();
      assertThat(get(ctx, "/k8s/pre-stop").statusCode()).isEqualTo(404);
      Thread.sleep(1500);
      assertThat(master.calls).isEmpty();
      assertThat(master.desired()).isEqualTo(1);
    } finally {
      zero.revoke();
    }
  }
}
