package dev.paramserver.localcluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** Calls a service's {@code /admin/**} endpoints on 127.0.0.1 with the run's bearer token. */
final class AdminClient {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration TIMEOUT = Duration.ofSeconds(10);

  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
  private final String token;

  AdminClient(String token) {
    this.token = token;
  }

  /** GET /admin/status of the service on {@code port}, parsed. */
  JsonNode status(int port) throws IOException {
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/admin/status"))
            .timeout(TIMEOUT)
            .header("Authorization", "Bearer " + token)
            .header("Accept", "application/json")
            .GET()
            .build();
    return JSON.readTree(send(request, port));
  }

  /** Whether GET /actuator/health/readiness of the service on {@code port} answers 200. */
  boolean ready(int port) {
    HttpRequest request =
        HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + port + "/actuator/health/readiness"))
            .timeout(TIMEOUT)
            .GET()
            .build();
    try {
      return http.send(request, HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** POST /admin/shutdown of the service on {@code port}; the service answers 202 at once. */
  void shutdown(int port) throws IOException {
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/admin/shutdown"))
            .timeout(TIMEOUT)
            .header("Authorization", "Bearer " + token)
            .POST(HttpRequest.BodyPublishers.noBody())
            .build();
    send(request, port);
  }

  private String send(HttpRequest request, int port) throws IOException {
    HttpResponse<String> response;
    try {
      response = http.send(request, HttpResponse.BodyHandlers.ofString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted calling " + request.uri(), e);
    }
    if (response.statusCode() / 100 != 2) {
      String body = response.body();
      throw new IOException(
          request.method()
              + " "
              + request.uri()
              + " answered "
              + response.statusCode()
              + (body == null || body.isBlank() ? "" : ": " + abbreviate(body)));
    }
    return response.body();
  }

  private static String abbreviate(String s) {
    String oneLine = s.replaceAll("\\s+", " ").trim();
    return oneLine.length() > 200 ? oneLine.substring(0, 200) + "..." : oneLine;
  }
}
