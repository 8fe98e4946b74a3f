package dev.paramserver.adminapi;

import static dev.paramserver.testsupport.http.JsonHttpServer.answer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpExchange;
import dev.paramserver.testsupport.http.JsonHttpServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Both transports of {@link AdminClient} (the services' {@code HttpClient}, psctl's {@code
 * HttpURLConnection} for http://) send the same requests and read answers, errors, a standby's 409
 * and an unreachable service alike.
 */
class AdminClientTransportTest {
  private static final String TOKEN = "t0ken";
  private JsonHttpServer leader;
  private JsonHttpServer standby;
  private final List<String> requests = new CopyOnWriteArrayList<>();

  @BeforeEach
  void start() {
    leader = JsonHttpServer.start("/", this::leader);
    standby = JsonHttpServer.standbyOf(leader, "/");
  }

  @AfterEach
  void stop() {
    leader.close();
    standby.close();
  }

  /** What the leader answers {@code GET /admin/job}. */
  private volatile String jobAnswer = "{}";

  private void leader(HttpExchange ex) throws IOException {
    String length = ex.getRequestHeaders().getFirst("Content-Length");
    requests.add(
        ex.getRequestMethod()
            + " "
            + ex.getRequestURI()
            + " auth="
            + ex.getRequestHeaders().getFirst("Authorization")
            + (ex.getRequestMethod().equals("POST") ? " length=" + length : ""));
    String path = ex.getRequestURI().getPath();
    if (path.equals("/actuator/health/readiness")) {
      answer(ex, 200, "{\"status\":\"UP\"}");
    } else if (!("Bearer " + TOKEN).equals(ex.getRequestHeaders().getFirst("Authorization"))) {
      answer(ex, 401, "{\"message\":\"wrong admin token\"}");
    } else if (path.equals("/admin/status")) {
      answer(ex, 200, "{\"role\":\"master\",\"state\":\"LEADER\",\"version\":\"1\"}");
    } else if (path.equals("/admin/job")) {
      answer(ex, 200, jobAnswer);
    } else if (path.equals("/admin/job/checkpoint")) {
      answer(ex, 200, "{\"checkpoints\":[]}");
    } else {
      answer(ex, 500, "{\"message\":\"boom\"}");
    }
  }

  private static AdminClient client(boolean commandLine, String url, String token) {
    Duration timeout = Duration.ofSeconds(10);
    return commandLine
        ? AdminClient.forCommandLine("the master", url, token, timeout)
        : AdminClient.create("the master", url, token, timeout);
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void answersErrorsTheLeaderAndUnreachable(boolean commandLine) throws Exception {
    AdminClient viaStandby = client(commandLine, standby.url(), TOKEN);
    assertThat(viaStandby.status().state()).isEqualTo("LEADER");
    assertThat(viaStandby.base()).isEqualTo(leader.url());
    assertThat(viaStandby.checkpoint().path("checkpoints").isArray()).isTrue();
    assertThat(requests)
        .contains(
            "GET /admin/status auth=Bearer " + TOKEN,
            "POST /admin/job/checkpoint auth=Bearer " + TOKEN + " length=0");
    assertThat(viaStandby.ready()).isTrue();
    assertThat(requests.get(requests.size() - 1)).contains("auth=null");

    assertThatThrownBy(() -> client(commandLine, leader.url(), "wrong").status())
        .isInstanceOfSatisfying(
            AdminException.class,
            e -> assertThat(e.kind()).isEqualTo(AdminException.Kind.UNAUTHORIZED))
        .hasMessage("the master refused the admin token (wrong admin token)");
    assertThatThrownBy(() -> client(commandLine, leader.url(), TOKEN).scaling())
        .isInstanceOfSatisfying(
            AdminException.class,
            e -> assertThat(e.kind()).isEqualTo(AdminException.Kind.BAD_ANSWER))
        .hasMessage("GET " + leader.url() + "/admin/job/scaling answered 500: boom");

    int closed;
    try (ServerSocket s = new ServerSocket(0)) {
      closed = s.getLocalPort();
    }
    AdminClient down = client(commandLine, "http://127.0.0.1:" + closed, TOKEN);
    assertThatThrownBy(down::status)
        .isInstanceOfSatisfying(
            AdminException.class,
            e -> assertThat(e.kind()).isEqualTo(AdminException.Kind.UNREACHABLE))
        .hasMessage(
            "cannot connect to the master at http://127.0.0.1:" + closed + " (is it running?)");
    assertThat(down.ready()).isFalse();
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void job_readsWhatOnlyJacksonReads_andWordsWhatNeitherReads(boolean commandLine)
      throws Exception {
    AdminClient client = client(commandLine, leader.url(), TOKEN);
    jobAnswer = "{\"leader\":true,\"job\":{\"state\":\"RUNNING\",\"pass\":2},\"x\":[1]}";
    assertThat(client.job().job().pass()).isEqualTo(2);
    // a number as a string: JsonRecords refuses it, Jackson coerces it
    jobAnswer = "{\"leader\":true,\"job\":{\"state\":\"RUNNING\",\"pass\":\"3\"}}";
    assertThat(client.job().job().pass()).isEqualTo(3);

    jobAnswer = "{\"leader\":true,\"job\":{\"state\":\"RUNNING\",\"pass\":[]}}";
    assertThatThrownBy(client::job)
        .isInstanceOfSatisfying(
            AdminException.class,
            e -> assertThat(e.kind()).isEqualTo(AdminException.Kind.BAD_ANSWER))
        .hasMessageStartingWith(
            "the master at " + leader.url() + " answered /admin/job in an unexpected shape");
    jobAnswer = "<html>";
    assertThatThrownBy(client::job)
        .isInstanceOfSatisfying(
            AdminException.class,
            e -> assertThat(e.kind()).isEqualTo(AdminException.Kind.BAD_ANSWER))
        .hasMessage(leader.url() + "/admin/job did not answer JSON (is it a paramserver service?)");
  }
}
