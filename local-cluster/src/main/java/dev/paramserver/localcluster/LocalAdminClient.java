package dev.paramserver.localcluster;

import java.io.IOException;
import java.time.Duration;
import tools.jackson.databind.JsonNode;

/**
 * The services' {@code /admin/**} endpoints and readiness probe on 127.0.0.1, by HTTP port, with
 * the run's bearer token, through admin-api's {@link dev.paramserver.adminapi.AdminClient}.
 */
final class LocalAdminClient {
  private static final Duration TIMEOUT = Duration.ofSeconds(10);

  private final dev.paramserver.adminapi.AdminClient client;

  LocalAdminClient(String token) {
    this.client =
        dev.paramserver.adminapi.AdminClient.create(
            "the service", "http://127.0.0.1", token, TIMEOUT);
  }

  private dev.paramserver.adminapi.AdminClient at(int port) {
    return client.at("the service", "http://127.0.0.1:" + port);
  }

  /** GET /admin/status of the service on {@code port}, parsed. */
  JsonNode status(int port) throws IOException {
    try {
      return at(port).statusJson();
    } catch (InterruptedException e) {
      throw interrupted(e);
    }
  }

  /** Whether GET /actuator/health/readiness of the service on {@code port} answers 200. */
  boolean ready(int port) {
    try {
      return at(port).ready();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** POST /admin/shutdown of the service on {@code port}; the service answers 202 at once. */
  void shutdown(int port) throws IOException {
    try {
      at(port).shutdown();
    } catch (InterruptedException e) {
      throw interrupted(e);
    }
  }

  private static IOException interrupted(InterruptedException e) {
    Thread.currentThread().interrupt();
    return new IOException("interrupted calling a service's admin API", e);
  }
}
