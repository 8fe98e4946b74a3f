package dev.paramserver.testsupport.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * An HTTP server on a free port of 127.0.0.1 that answers JSON, standing in for a service's admin
 * API in its clients' tests (admin-api's {@code AdminClient}, psctl's commands). {@link #standbyOf}
 * makes a standby master that answers 409 naming the leader's admin address, as the services'
 * {@code NotLeaderAdvice} does. {@link #close} stops it at once.
 */
public final class JsonHttpServer implements AutoCloseable {
  private final HttpServer server;

  private JsonHttpServer(HttpServer server) {
    this.server = server;
  }

  /**
   * Starts a server whose only context, {@code path} (and what lies below it), {@code handler}
   * answers.
   */
  public static JsonHttpServer start(String path, HttpHandler handler) {
    return new Builder().context(path, handler).start();
  }

  /** A server with several contexts: {@code builder().context(...).context(...).start()}. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * A standby master: every call under {@code path} is answered 409 {@code {"error":"not the
   * leader","leaderAdminAddress":"127.0.0.1:<leader's port>"}}.
   */
  public static JsonHttpServer standbyOf(JsonHttpServer leader, String path) {
    String body =
        "{\"error\":\"not the leader\",\"leaderAdminAddress\":\"127.0.0.1:" + leader.port() + "\"}";
    return start(path, ex -> answer(ex, 409, body));
  }

  /** Answers {@code code} with the JSON {@code body} and closes the exchange. */
  public static void answer(HttpExchange ex, int code, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().add("Content-Type", "application/json");
    ex.sendResponseHeaders(code, b.length);
    ex.getResponseBody().write(b);
    ex.close();
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /** {@code http://127.0.0.1:<port>}, without a trailing slash. */
  public String url() {
    return "http://127.0.0.1:" + port();
  }

  @Override
  public void close() {
    server.stop(0);
  }

  /** The contexts of a server to start. */
  public static final class Builder {
    private final HttpServer server;

    private Builder() {
      try {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      } catch (IOException e) {
        throw new UncheckedIOException("no HTTP server on 127.0.0.1", e);
      }
    }

    /** {@code handler} answers the calls to {@code path} and below. */
    public Builder context(String path, HttpHandler handler) {
      server.createContext(path, handler);
      return this;
    }

    public JsonHttpServer start() {
      server.start();
      return new JsonHttpServer(server);
    }
  }
}
