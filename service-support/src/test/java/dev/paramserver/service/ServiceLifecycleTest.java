package dev.paramserver.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.service.testapp.TestServiceApp;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.FreePorts;
import dev.paramserver.testsupport.Poll;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/** Whole-application behaviour: shutdown through the admin endpoint, health, refusing to start. */
class ServiceLifecycleTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * Starts the app; properties are command-line arguments, which override application.properties.
   */
  private static ConfigurableApplicationContext start(String job, String... extra) {
    List<String> args = new ArrayList<>();
    args.add("--paramserver.etcd.endpoints=" + etcd.endpoint());
    args.add("--paramserver.job=" + job);
    args.add("--paramserver.admin.token=tok");
    for (String e : extra) {
      args.add("--" + e);
    }
    return new SpringApplicationBuilder(TestServiceApp.class).run(args.toArray(String[]::new));
  }

  private static String url(ConfigurableApplicationContext ctx, String path) {
    int port = ((WebServerApplicationContext) ctx).getWebServer().getPort();
    return "http://127.0.0.1:" + port + path;
  }

  @Test
  void adminShutdown_answers202_thenClosesTheContextAfterTheRoleDrained() throws Exception {
    String job = etcd.uniqueJob();
    ConfigurableApplicationContext ctx = start(job);
    try {
      HttpResponse<String> r = Http.post(url(ctx, "/admin/shutdown"), "tok");
      assertThat(r.statusCode()).isEqualTo(202);
      assertThat(JSON.readTree(r.body()).get("status").asString()).isEqualTo("shutting down");
      Poll.until(Duration.ofSeconds(20), () -> !ctx.isActive(), "the context to close");
    } finally {
      ctx.close();
    }
    // the role's stop() could still write to etcd: the coordinator closes after lifecycle beans
    try (EtcdCoordinator check = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job))) {
      assertThat(check.kv().get(check.keys().prefix() + "stopped").orElseThrow().valueAsString())
          .isEqualTo("drained");
    }
  }

  @Test
  void readiness_goesDownWhileEtcdIsUnreachable_andUpAgain() throws Exception {
    ConfigurableApplicationContext ctx = start(etcd.uniqueJob());
    try {
      String readiness = url(ctx, "/actuator/health/readiness");
      assertThat(Http.get(readiness, null).statusCode()).isEqualTo(200);
      etcd.server().pause();
      try {
        Poll.until(
            Duration.ofSeconds(10),
            Duration.ofMillis(200),
            () -> status(readiness) == 503,
            "readiness DOWN while etcd is paused");
        JsonNode body = JSON.readTree(Http.get(readiness, null).body());
        assertThat(body.at("/components/etcd/status").asString()).isEqualTo("DOWN");
        assertThat(Http.get(url(ctx, "/actuator/health/liveness"), null).statusCode())
            .isEqualTo(200);
      } finally {
        etcd.server().resume();
      }
      Poll.until(
          Duration.ofSeconds(10),
          Duration.ofMillis(200),
          () -> status(readiness) == 200,
          "readiness UP after etcd resumed");
    } finally {
      ctx.close();
    }
  }

  @Test
  void closingTheContext_doesNotStartAnAdminShutdown() {
    ConfigurableApplicationContext ctx = start(etcd.uniqueJob());
    AdminShutdown shutdown = ctx.getBean(AdminShutdown.class);
    ctx.close();
    assertThat(shutdown.isShuttingDown()).isFalse();
  }

  @Test
  void badLeaseTtl_refusesToStart_namingTheProperty() {
    assertThatThrownBy(() -> start(etcd.uniqueJob(), "paramserver.etcd.lease-ttl=1s").close())
        .satisfies(e -> assertThat(chain(e)).contains("paramserver.etcd").contains("leaseTtl"));
  }

  @Test
  void badJobName_refusesToStart_namingTheProperty() {
    assertThatThrownBy(() -> start("bad/job").close())
        .satisfies(e -> assertThat(chain(e)).contains("paramserver").contains("job"));
  }

  @Test
  void unreachableEtcd_failsStartupAfterTheStartupTimeout_namingTheEndpoints() {
    String nowhere = "http://127.0.0.1:" + FreePorts.next();
    long start = System.nanoTime();
    assertThatThrownBy(
            () ->
                new SpringApplicationBuilder(TestServiceApp.class)
                    .run(
                        "--paramserver.etcd.endpoints=" + nowhere,
                        "--paramserver.etcd.startup-timeout=2s")
                    .close())
        .satisfies(
            e ->
                assertThat(chain(e))
                    .contains(nowhere)
                    .contains("paramserver.etcd.startup-timeout"));
    // Well under the 60 s default, so the 2 s setting was obeyed; the margin is for start-up on a
    // loaded machine (it took 7.8 s at a load average of 29 on two cores).
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
  }

  private static int status(String url) {
    try {
      return Http.get(url, null).statusCode();
    } catch (Exception e) {
      return -1;
    }
  }

  private static String chain(Throwable e) {
    StringBuilder sb = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      sb.append(t.getMessage()).append('\n');
    }
    return sb.toString();
  }
}
