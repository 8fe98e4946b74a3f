package dev.paramserver.psctl.job;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.paramserver.adminapi.JobView;
import dev.paramserver.coordination.EtcdCoordinator;
import dev.paramserver.coordination.EtcdSettings;
import dev.paramserver.coordination.KeyValueStore;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.rpc.ChannelFactory;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Calls the leader master's {@code /admin/job} endpoints with the admin token. A standby's 409
 * answer names the leader's HTTP address: the client follows it once.
 */
final class MasterClient {
  // a newer master may add fields: an older psctl reads the ones it knows
  private static final ObjectMapper JSON =
      new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  private final HttpClient http;
  private final String token;
  private final Duration timeout;
  private String base;

  MasterClient(String baseUrl, String token, Duration timeout) {
    this.base = stripSlash(baseUrl);
    this.token = token;
    this.timeout = timeout;
    this.http = HttpClient.newBuilder().connectTimeout(timeout).build();
  }

  /** Finds the leader's HTTP address through etcd: {@code master/addr}, then its GetStatus. */
  static String resolveThroughEtcd(String endpoints, String job, Duration timeout) {
    EtcdSettings settings =
        new EtcdSettings(List.of(endpoints.split(",")), job, timeout, null, null, null);
    String grpc;
    try (EtcdCoordinator c = EtcdCoordinator.connect(settings)) {
      grpc =
          c.kv()
              .get(c.keys().masterAddr())
              .map(KeyValueStore.KeyValue::valueAsString)
              .orElseThrow(
                  () ->
                      new IllegalStateException(
                          "no leader master is registered for job '"
                              + job
                              + "' in etcd at "
                              + endpoints
                              + " (key "
                              + c.keys().masterAddr()
                              + "): is the job running, and is --job right?"));
    }
    ManagedChannel channel = ChannelFactory.plaintext().forAddress(grpc);
    try {
      String admin =
          MasterGrpc.newBlockingStub(channel)
              .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
              .getStatus(GetStatusRequest.getDefaultInstance())
              .getAdminAddress();
      if (admin.isEmpty()) {
        throw new IllegalStateException(
            "the leader master at " + grpc + " did not say its HTTP address: use --master URL");
      }
      return "http://" + admin;
    } catch (io.grpc.StatusRuntimeException e) {
      throw new IllegalStateException(
          "the leader master at " + grpc + " did not answer GetStatus: " + e.getStatus(), e);
    } finally {
      channel.shutdownNow();
    }
  }

  String base() {
    return base;
  }

  /** {@code GET /admin/job} as admin-api's records. */
  JobView job() throws IOException, InterruptedException {
    return asJobView(get("/admin/job"));
  }

  /** An answer of {@code GET /admin/job} as admin-api's records. */
  JobView asJobView(JsonNode answer) throws IOException {
    try {
      return JSON.treeToValue(answer, JobView.class);
    } catch (IOException e) {
      throw new IOException(
          "the master at "
              + base
              + " answered /admin/job in an unexpected shape: "
              + e.getMessage(),
          e);
    }
  }

  JsonNode get(String path) throws IOException, InterruptedException {
    return call("GET", path, true);
  }

  JsonNode post(String path) throws IOException, InterruptedException {
    return call("POST", path, true);
  }

  private JsonNode call(String method, String path, boolean followLeader)
      throws IOException, InterruptedException {
    URI uri = URI.create(base + path);
    HttpRequest request =
        HttpRequest.newBuilder(uri)
            .timeout(timeout)
            .header("Authorization", "Bearer " + token)
            .header("Accept", "application/json")
            .method(method, HttpRequest.BodyPublishers.noBody())
            .build();
    HttpResponse<String> r;
    try {
      r = http.send(request, HttpResponse.BodyHandlers.ofString());
    } catch (ConnectException e) {
      throw new IOException("cannot connect to the master at " + base + " (is it running?)", e);
    }
    JsonNode body = parse(r.body(), uri);
    if (r.statusCode() == 409 && followLeader && body.hasNonNull("leaderAdminAddress")) {
      base = "http://" + body.get("leaderAdminAddress").asText();
      return call(method, path, false);
    }
    if (r.statusCode() == 401) {
      throw new IOException(
          "the master refused the admin token ("
              + body.path("message").asText("unauthorized")
              + "): pass --token or set "
              + JobTarget.TOKEN_ENV);
    }
    if (r.statusCode() / 100 != 2) {
      throw new IOException(
          method
              + " "
              + uri
              + " answered "
              + r.statusCode()
              + ": "
              + body.path("message").asText(body.path("error").asText(r.body())));
    }
    return body;
  }

  private static JsonNode parse(String body, URI uri) throws IOException {
    try {
      return JSON.readTree(body == null || body.isEmpty() ? "{}" : body);
    } catch (IOException e) {
      throw new IOException(uri + " did not answer JSON (is it a paramserver master?)", e);
    }
  }

  private static String stripSlash(String s) {
    return s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
  }
}
