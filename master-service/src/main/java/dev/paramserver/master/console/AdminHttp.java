package dev.paramserver.master.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/** Calls other services' {@code /admin/**} endpoints with the job's admin token. */
final class AdminHttp {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final HttpClient http;
  private final String token;

  AdminHttp(String token, Duration connectTimeout) {
    this.token = token == null ? "" : token;
    this.http = HttpClient.newBuilder().connectTimeout(connectTimeout).build();
  }

  /** GET {@code http://<hostPort><path>}, parsed as JSON; fails on a non-2xx answer. */
  CompletableFuture<JsonNode> get(String hostPort, String path, Duration timeout) {
    return send(request(hostPort, path, timeout).GET().build());
  }

  /** POST {@code http://<hostPort><path>} without a body, the answer parsed as JSON. */
  CompletableFuture<JsonNode> post(String hostPort, String path, Duration timeout) {
    return send(request(hostPort, path, timeout).POST(HttpRequest.BodyPublishers.noBody()).build());
  }

  private HttpRequest.Builder request(String hostPort, String path, Duration timeout) {
    return HttpRequest.newBuilder(URI.create("http://" + hostPort + path))
        .timeout(timeout)
        .header("Authorization", "Bearer " + token)
        .header("Accept", "application/json");
  }

  private CompletableFuture<JsonNode> send(HttpRequest request) {
    return http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
        .thenApply(
            r -> {
              if (r.statusCode() / 100 != 2) {
                throw new IllegalStateException(
                    request.method()
                        + " "
                        + request.uri()
                        + " answered "
                        + r.statusCode()
                        + ": "
                        + abbreviate(r.body()));
              }
              try {
                return JSON.readTree(r.body());
              } catch (IOException e) {
                throw new IllegalStateException(
                    request.uri() + " answered something that is not JSON: " + e.getMessage(), e);
              }
            });
  }

  private static String abbreviate(String s) {
    String one = s == null ? "" : s.replaceAll("\\s+", " ").trim();
    return one.length() > 200 ? one.substring(0, 200) + "..." : one;
  }
}
