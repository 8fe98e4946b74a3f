package dev.paramserver.service;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** A tiny HTTP client for tests, with timeouts. */
final class Http {
  private static final HttpClient CLIENT =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  private Http() {}

  static HttpResponse<String> get(String url, String token) throws Exception {
    return send(HttpRequest.newBuilder(URI.create(url)).GET(), token);
  }

  static HttpResponse<String> post(String url, String token) throws Exception {
    return send(
        HttpRequest.newBuilder(URI.create(url)).POST(HttpRequest.BodyPublishers.noBody()), token);
  }

  private static HttpResponse<String> send(HttpRequest.Builder b, String token) throws Exception {
    b.timeout(Duration.ofSeconds(10));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }
}
