package dev.paramserver.adminapi;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.HttpURLConnection;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * The one client of the services' admin HTTP API ({@code /admin/**} with the bearer token, and the
 * readiness probe): psctl's job commands, the local cluster and the master's console use it.
 * Answers are read into this module's records — {@link JobView} (whose published schema is {@link
 * JobViewSchema}) and {@link ServiceStatus} — ignoring fields a newer service adds. A standby
 * master's 409 answer names the leader's HTTP address; the client follows it once and keeps talking
 * to the leader.
 *
 * <p>Failures are {@link AdminException}s whose {@link AdminException.Kind kind} tells an
 * unreachable service from a refused token from a bad answer. The blocking calls remember the
 * leader a standby named, so an instance making them belongs to one thread; {@link #at}, {@link
 * #getAsync} and {@link #postAsync} may be called from any thread.
 *
 * <p>The JDK's {@link HttpClient}, which sets TLS up whatever the address, is made at the first
 * call that needs it. A client made by {@link #forCommandLine} (psctl's) makes its blocking calls
 * to an {@code http://} address over {@link HttpURLConnection}, which loads a few classes, so that
 * {@code psctl status} starts quickly; those calls are not interruptible (their timeout bounds
 * them), which is why the services' clients keep the {@link HttpClient}.
 */
public final class AdminClient {
  /**
   * Reads answers; a newer service may add fields, an older reader takes the ones it knows, and a
   * field an older service leaves out reads as its type's default (0, false). Made at its first
   * use: {@link #job()} and {@link #status()} read the usual answers without it ({@link
   * JsonRecords}), so that {@code psctl status} and {@code psctl version} do not start Jackson.
   */
  public static ObjectMapper json() {
    return Json.MAPPER;
  }

  private static final class Json {
    static final ObjectMapper MAPPER =
        JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .disable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .build();
  }

  private final Transport http;
  private final String token;
  private final Duration timeout;
  private final String what;
  private final boolean urlConnection;
  private String base;

  private AdminClient(
      Transport http,
      boolean urlConnection,
      String what,
      String base,
      String token,
      Duration timeout) {
    this.http = http;
    this.urlConnection = urlConnection;
    this.what = what;
    this.base = stripSlash(base);
    this.token = token == null ? "" : token;
    this.timeout = timeout;
  }

  /**
   * @param what how messages name the service, e.g. "the master"
   * @param baseUrl e.g. {@code http://127.0.0.1:8081}
   * @param token the admin token (null or empty: none is sent)
   * @param timeout the connect timeout and the timeout of each call
   */
  public static AdminClient create(String what, String baseUrl, String token, Duration timeout) {
    return new AdminClient(new Transport(timeout), false, what, baseUrl, token, timeout);
  }

  /**
   * Like {@link #create}, for a command line's few calls: the blocking calls to an {@code http://}
   * address go over {@link HttpURLConnection} (no TLS set up, no client threads), and are not
   * interruptible.
   */
  public static AdminClient forCommandLine(
      String what, String baseUrl, String token, Duration timeout) {
    return new AdminClient(new Transport(timeout), true, what, baseUrl, token, timeout);
  }

  /** A client of another service with this one's connections, token and timeout. */
  public AdminClient at(String what, String baseUrl) {
    return new AdminClient(http, urlConnection, what, baseUrl, token, timeout);
  }

  /** The address calls go to (the leader's, once a standby named it). */
  public String base() {
    return base;
  }

  /** {@code GET /admin/job} of the leader master, as published. */
  public JobView job() throws IOException, InterruptedException {
    return record(exchange("GET", "/admin/job", true), JobView.class, "/admin/job");
  }

  /**
   * {@code GET /admin/job?passes=N}: the view with only the latest {@code passes} passes (and the
   * count of the earlier ones, {@code passesOmitted}), whose size does not grow with the job.
   */
  public JobView job(int passes) throws IOException, InterruptedException {
    String path = jobPath(passes);
    return record(exchange("GET", path, true), JobView.class, path);
  }

  /** {@code GET /admin/job} of the leader master as it answered, fields unknown here included. */
  public JsonNode jobJson() throws IOException, InterruptedException {
    return call("GET", "/admin/job");
  }

  /** {@code GET /admin/job?passes=N} as it answered, fields unknown here included. */
  public JsonNode jobJson(int passes) throws IOException, InterruptedException {
    return call("GET", jobPath(passes));
  }

  private static String jobPath(int passes) {
    if (passes < 0) {
      throw new IllegalArgumentException("passes must be 0 or more, got " + passes);
    }
    return "/admin/job?passes=" + passes;
  }

  /** A {@code GET /admin/job} answer as admin-api's records. */
  public JobView asJobView(JsonNode answer) throws AdminException {
    return read(answer, JobView.class, "/admin/job");
  }

  /** {@code GET /admin/status}: the fields every service has, and the master's build. */
  public ServiceStatus status() throws IOException, InterruptedException {
    return record(exchange("GET", "/admin/status", true), ServiceStatus.class, "/admin/status");
  }

  /** {@code GET /admin/status} as it answered. */
  public JsonNode statusJson() throws IOException, InterruptedException {
    return call("GET", "/admin/status");
  }

  /** {@code POST /admin/job/checkpoint}: every pserver of the job checkpoints now. */
  public JsonNode checkpoint() throws IOException, InterruptedException {
    return call("POST", "/admin/job/checkpoint");
  }

  /** {@code POST /admin/job/stop}: every pserver checkpoints, then the job ends. */
  public JsonNode stop() throws IOException, InterruptedException {
    return call("POST", "/admin/job/stop");
  }

  /**
   * {@code POST /admin/job/scale?pservers=N}: the live job is scaled to {@code pservers} pservers
   * (the moves run in the background; see {@link #scaling}).
   */
  public JsonNode scale(int pservers) throws IOException, InterruptedException {
    return call("POST", "/admin/job/scale?pservers=" + pservers);
  }

  /**
   * {@code POST /admin/job/scale?pservers=N&grow-only=true}: the job gets {@code pservers} pservers
   * if it has fewer (a new pserver of a scaled-up StatefulSet asks this).
   */
  public JsonNode growTo(int pservers) throws IOException, InterruptedException {
    return call("POST", "/admin/job/scale?pservers=" + pservers + "&grow-only=true");
  }

  /** {@code GET /admin/job/scaling}: the placement, the move under way and the last moves. */
  public JsonNode scaling() throws IOException, InterruptedException {
    return call("GET", "/admin/job/scaling");
  }

  /** {@code POST /admin/shutdown}: the service answers 202 at once and shuts down gracefully. */
  public void shutdown() throws IOException, InterruptedException {
    call("POST", "/admin/shutdown");
  }

  /** Whether {@code GET /actuator/health/readiness} answers 200 (false when unreachable). */
  public boolean ready() throws InterruptedException {
    try {
      return send("GET", "/actuator/health/readiness", false).status() == 200;
    } catch (IOException e) {
      return false;
    }
  }

  private <T> T read(JsonNode answer, Class<T> type, String path) throws AdminException {
    try {
      return json().treeToValue(answer, type);
    } catch (JacksonException e) {
      throw new AdminException(
          AdminException.Kind.BAD_ANSWER,
          what + " at " + base + " answered " + path + " in an unexpected shape: " + e.getMessage(),
          e);
    }
  }

  /**
   * {@code GET path} without waiting, with its own timeout: the answer as JSON, or an {@link
   * AdminException} as the future's cause. A 409 is not followed.
   */
  public CompletableFuture<JsonNode> getAsync(String path, Duration timeout) {
    return callAsync("GET", path, timeout);
  }

  /** {@code POST path} without a body and without waiting; see {@link #getAsync}. */
  public CompletableFuture<JsonNode> postAsync(String path, Duration timeout) {
    return callAsync("POST", path, timeout);
  }

  private CompletableFuture<JsonNode> callAsync(String method, String path, Duration timeout) {
    return http.client()
        .sendAsync(request(method, path, timeout, true), HttpResponse.BodyHandlers.ofString())
        .handle(
            (r, t) -> {
              try {
                if (t != null) {
                  throw failure(
                      t instanceof CompletionException c ? c.getCause() : t, method, path);
                }
                Answer a = answer(new Answer(r.statusCode(), r.body(), r.uri()), method);
                return parse(a.body(), a.uri());
              } catch (AdminException e) {
                throw new CompletionException(e);
              }
            });
  }

  private JsonNode call(String method, String path) throws IOException, InterruptedException {
    return call(method, path, true);
  }

  private JsonNode call(String method, String path, boolean followLeader)
      throws IOException, InterruptedException {
    Answer r = exchange(method, path, followLeader);
    return parse(r.body(), r.uri());
  }

  /**
   * A 2xx answer's body as a {@code type}: read without Jackson's data binding ({@link
   * JsonRecords}) when it can be, else by Jackson (which coerces what it can and words the error).
   */
  private <T extends Record> T record(Answer r, Class<T> type, String path) throws AdminException {
    try {
      return JsonRecords.read(r.body() == null || r.body().isEmpty() ? "{}" : r.body(), type);
    } catch (IllegalArgumentException e) {
      return read(parse(r.body(), r.uri()), type, path);
    }
  }

  /** {@code method path}'s 2xx answer, a standby's 409 followed once; else an exception. */
  private Answer exchange(String method, String path, boolean followLeader)
      throws IOException, InterruptedException {
    Answer r;
    try {
      r = send(method, path, true);
    } catch (IOException e) {
      throw failure(e, method, path);
    }
    if (r.status() == 409 && followLeader) {
      JsonNode leader = errorBody(r).path("leaderAdminAddress");
      if (leader.isString()) {
        base = "http://" + leader.asString();
        return exchange(method, path, false);
      }
    }
    return answer(r, method);
  }

  /** An answer: its status code, body and the address asked. */
  private record Answer(int status, String body, URI uri) {}

  /**
   * {@code method path} (no body), with the token when {@code authorize}; over {@link
   * HttpURLConnection} for {@code http://} when this client is a command line's, else over the
   * {@link HttpClient}. A connect timeout is a {@link ConnectException}.
   */
  private Answer send(String method, String path, boolean authorize)
      throws IOException, InterruptedException {
    URI uri = URI.create(base + path);
    if (!urlConnection || !"http".equalsIgnoreCase(uri.getScheme())) {
      HttpResponse<String> r =
          http.client()
              .send(
                  request(method, path, timeout, authorize), HttpResponse.BodyHandlers.ofString());
      return new Answer(r.statusCode(), r.body(), r.uri());
    }
    HttpURLConnection c = (HttpURLConnection) uri.toURL().openConnection();
    c.setConnectTimeout(millis(timeout));
    c.setReadTimeout(millis(timeout));
    c.setInstanceFollowRedirects(false);
    c.setUseCaches(false);
    c.setRequestMethod(method);
    c.setRequestProperty("Accept", "application/json");
    if (authorize && !token.isEmpty()) {
      c.setRequestProperty("Authorization", "Bearer " + token);
    }
    boolean post = !method.equals("GET");
    if (post) {
      // an empty body of a declared length: no chunking, and no silent retry of a POST
      c.setDoOutput(true);
      c.setFixedLengthStreamingMode(0);
    }
    try {
      c.connect();
    } catch (SocketTimeoutException e) {
      throw (ConnectException) new ConnectException("connect timed out").initCause(e);
    }
    if (post) {
      try (OutputStream none = c.getOutputStream()) {
        none.flush();
      }
    }
    int status = c.getResponseCode();
    try (InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream()) {
      String body = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
      return new Answer(status, body, uri);
    }
  }

  private static int millis(Duration d) {
    return (int) Math.min(Integer.MAX_VALUE, Math.max(1, d.toMillis()));
  }

  private HttpRequest request(String method, String path, Duration timeout, boolean authorize) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(base + path))
            .timeout(timeout)
            .header("Accept", "application/json")
            .method(method, HttpRequest.BodyPublishers.noBody());
    if (authorize && !token.isEmpty()) {
      b.header("Authorization", "Bearer " + token);
    }
    return b.build();
  }

  /** A call that got no answer: the service is down, or did not answer in time. */
  private AdminException failure(Throwable e, String method, String path) {
    String message =
        e instanceof ConnectException
                || e instanceof HttpConnectTimeoutException
                || e instanceof UnknownHostException
                || e instanceof NoRouteToHostException
            ? "cannot connect to " + what + " at " + base + " (is it running?)"
            : e instanceof HttpTimeoutException || e instanceof SocketTimeoutException
                ? what + " at " + base + " did not answer " + method + " " + path + " in time"
                : "cannot reach " + what + " at " + base + ": " + e;
    return new AdminException(AdminException.Kind.UNREACHABLE, message, e);
  }

  /** A 2xx answer; an {@link AdminException} for any other. */
  private Answer answer(Answer r, String method) throws AdminException {
    if (r.status() / 100 == 2) {
      return r;
    }
    JsonNode body = errorBody(r);
    if (r.status() == 401) {
      throw new AdminException(
          AdminException.Kind.UNAUTHORIZED,
          what + " refused the admin token (" + body.path("message").asString("unauthorized") + ")",
          null);
    }
    throw new AdminException(
        AdminException.Kind.BAD_ANSWER,
        method
            + " "
            + r.uri()
            + " answered "
            + r.status()
            + ": "
            + abbreviate(body.path("message").asString(body.path("error").asString(r.body()))),
        null);
  }

  /** An error answer's JSON, or a missing node when it is not JSON. */
  private static JsonNode errorBody(Answer r) {
    try {
      return r.body() == null || r.body().isEmpty()
          ? json().missingNode()
          : json().readTree(r.body());
    } catch (JacksonException e) {
      return json().missingNode();
    }
  }

  private JsonNode parse(String body, URI uri) throws AdminException {
    try {
      return json().readTree(body == null || body.isEmpty() ? "{}" : body);
    } catch (JacksonException e) {
      throw new AdminException(
          AdminException.Kind.BAD_ANSWER,
          uri + " did not answer JSON (is it a paramserver service?)",
          e);
    }
  }

  private static String abbreviate(String s) {
    String one = s == null ? "" : s.replaceAll("\\s+", " ").trim();
    return one.length() > 200 ? one.substring(0, 200) + "..." : one;
  }

  /** The JDK's HTTP client, made at its first use and shared by the clients {@link #at} makes. */
  private static final class Transport {
    private final Duration connectTimeout;
    private volatile HttpClient client;

    Transport(Duration connectTimeout) {
      this.connectTimeout = connectTimeout;
    }

    HttpClient client() {
      HttpClient c = client;
      if (c == null) {
        synchronized (this) {
          c = client;
          if (c == null) {
            c = HttpClient.newBuilder().connectTimeout(connectTimeout).build();
            client = c;
          }
        }
      }
      return c;
    }
  }

  private static String stripSlash(String s) {
    return s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
  }
}
