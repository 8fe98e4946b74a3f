package dev.paramserver.master;

import dev.paramserver.master.election.MasterElection;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/** Starts master Spring contexts in this JVM on free ports, against a test etcd. */
public final class MasterContexts implements AutoCloseable {
  public static final String TOKEN = "test-token";
  private final List<ConfigurableApplicationContext> started = new ArrayList<>();
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  public ConfigurableApplicationContext start(String etcdEndpoint, String job, String... extra) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "--server.port=0",
                "--server.address=127.0.0.1",
                "--spring.grpc.server.port=0",
                "--spring.grpc.server.address=127.0.0.1",
                "--spring.grpc.server.shutdown.grace-period=1s",
                "--paramserver.job=" + job,
                "--paramserver.etcd.endpoints=" + etcdEndpoint,
                "--paramserver.etcd.lease-ttl=5s",
                "--paramserver.etcd.call-timeout=3s",
                "--paramserver.admin.token=" + TOKEN,
                "--paramserver.admin.exit-jvm-on-shutdown=false",
                "--paramserver.master.timeout-check-interval=100ms"));
    for (String e : extra) {
      // an extra setting replaces the default one (Spring would join the two values)
      String key = e.contains("=") ? e.substring(0, e.indexOf('=') + 1) : e;
      args.removeIf(a -> a.startsWith(key));
      args.add(e);
    }
    if (args.stream().noneMatch(a -> a.startsWith("--paramserver.master.tracking."))) {
      // no run tracking files in the default directory, unless a test asks for them
      args.add("--paramserver.master.tracking.enabled=false");
    }
    ConfigurableApplicationContext ctx =
        new SpringApplicationBuilder(MasterApplication.class)
            .registerShutdownHook(false)
            .run(args.toArray(String[]::new));
    started.add(ctx);
    return ctx;
  }

  public static MasterElection election(ConfigurableApplicationContext ctx) {
    return ctx.getBean(MasterElection.class);
  }

  public static int httpPort(ConfigurableApplicationContext ctx) {
    return Integer.parseInt(ctx.getEnvironment().getProperty("local.server.port"));
  }

  /** GET on the context's HTTP port: status code and body. */
  public HttpResponse<String> get(
      ConfigurableApplicationContext ctx, String path, boolean withToken) {
    return send(ctx, path, withToken, "GET");
  }

  /** POST (no body) on the context's HTTP port, with the token: status code and body. */
  public HttpResponse<String> post(ConfigurableApplicationContext ctx, String path) {
    return send(ctx, path, true, "POST");
  }

  private HttpResponse<String> send(
      ConfigurableApplicationContext ctx, String path, boolean withToken, String method) {
    HttpRequest.Builder req =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort(ctx) + path))
            .timeout(Duration.ofSeconds(10))
            .method(method, HttpRequest.BodyPublishers.noBody());
    if (withToken) {
      req.header("Authorization", "Bearer " + TOKEN);
    }
    try {
      return http.send(req.build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new IllegalStateException(method + " " + path + " failed: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  @Override
  public void close() {
    for (ConfigurableApplicationContext ctx : started) {
      if (ctx.isActive()) {
        ctx.close();
      }
    }
    started.clear();
  }
}
