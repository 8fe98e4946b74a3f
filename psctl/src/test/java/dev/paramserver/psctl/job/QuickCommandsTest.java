package dev.paramserver.psctl.job;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.paramserver.psctl.Psctl;
import dev.paramserver.psctl.Run;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * psctl's quick path ({@link QuickCommands}) prints what picocli's path prints, with the same exit
 * code, for every command line it takes; leaves every other one to picocli; and keeps {@code psctl
 * status} and {@code psctl version} from loading picocli's model, the JDK's HTTP client and TLS.
 */
class QuickCommandsTest {
  private static final String TOKEN = "s3cret";
  private HttpServer master;
  private String jobJson;

  /** The query of every {@code /admin/job} call ("" without one). */
  private final List<String> jobQueries = java.util.Collections.synchronizedList(new ArrayList<>());

  @BeforeEach
  void start() throws IOException {
    try (InputStream in =
        getClass().getResourceAsStream("/dev/paramserver/psctl/startup/sample-job.json")) {
      jobJson = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    master = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    master.createContext(
        "/admin/job",
        ex -> {
          String query = ex.getRequestURI().getRawQuery();
          jobQueries.add(query == null ? "" : query);
          answer(ex, jobJson);
        });
    master.createContext(
        "/admin/status",
        ex ->
            answer(
                ex,
                "{\"role\":\"master\",\"state\":\"LEADER\",\"identity\":\"127.0.0.1:9091\","
                    + "\"leader\":true,\"version\":\"9.9.9\",\"commit\":\"abc1234\"}"));
    master.start();
  }

  @AfterEach
  void stop() {
    master.stop(0);
  }

  private static void answer(HttpExchange ex, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    boolean authorized =
        ("Bearer " + TOKEN).equals(ex.getRequestHeaders().getFirst("Authorization"));
    if (!authorized) {
      b = "{\"error\":\"unauthorized\",\"message\":\"wrong admin token\"}".getBytes();
    }
    ex.getResponseHeaders().add("Content-Type", "application/json");
    ex.sendResponseHeaders(authorized ? 200 : 401, b.length);
    ex.getResponseBody().write(b);
    ex.close();
  }

  private String url() {
    return "http://127.0.0.1:" + master.getAddress().getPort();
  }

  private static Run quick(Map<String, String> env, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    Integer code = QuickCommands.run(args, env, new PrintWriter(out), new PrintWriter(err));
    assertThat(code).as("the quick path takes %s", List.of(args)).isNotNull();
    return new Run(code, out.toString(), err.toString());
  }

  @Test
  void theQuickPath_printsWhatPicocliPrints() throws IOException {
    int closed;
    try (ServerSocket s = new ServerSocket(0)) {
      closed = s.getLocalPort();
    }
    Map<String, String> env = Map.of("PSCTL_MASTER", url(), "PSCTL_TOKEN", TOKEN);
    List<List<String>> lines =
        List.of(
            List.of("status"),
            List.of("status", "-o", "json"),
            List.of("status", "--output=yaml"),
            List.of("status", "--json"),
            List.of("status", "--events", "1", "-o", "table"),
            List.of("status", "--passes", "1"),
            List.of("status", "--passes=all"),
            List.of("status", "--passes", "0", "-o", "json"),
            List.of("--verbose", "status", "--timeout", "5", "--job", "j"),
            List.of("status", "--token", "wrong"),
            List.of("status", "--master", "http://127.0.0.1:" + closed),
            List.of("status", "--verbose", "--master", "http://127.0.0.1:" + closed),
            List.of("version"),
            List.of("version", "-o", "json"),
            List.of("version", "--client"),
            List.of("version", "--client", "-o", "yaml"),
            List.of("version", "--master", "http://127.0.0.1:" + closed, "-o", "json"));
    for (List<String> line : lines) {
      String[] args = line.toArray(String[]::new);
      Run quick = quick(env, args);
      Run picocli = Run.withEnv(env, args);
      if (line.contains("--verbose") && picocli.err().contains("\tat ")) {
        // the stack traces' frames differ; the message, the trace and the rest do not
        assertThat(quick.err()).contains("\tat ");
        assertThat(quick.err().lines().findFirst()).isEqualTo(picocli.err().lines().findFirst());
        assertThat(quick.out()).isEqualTo(picocli.out());
        assertThat(quick.code()).isEqualTo(picocli.code());
      } else {
        assertThat(quick).as("%s", line).isEqualTo(picocli);
      }
    }
    assertThat(quick(env, "status").out()).contains("RUNNING  pass 2 of 3");
    assertThat(quick(env, "status", "--token", "wrong").code()).isEqualTo(1);
    assertThat(
            quick(Map.of("PSCTL_TOKEN", TOKEN), "version", "--master", "http://127.0.0.1:" + closed)
                .code())
        .isEqualTo(4);
  }

  @Test
  void everyOtherCommandLine_isLeftToPicocli() {
    Map<String, String> env = Map.of("PSCTL_MASTER", url(), "PSCTL_TOKEN", TOKEN);
    List<List<String>> lines =
        List.of(
            List.of(),
            List.of("--version"),
            List.of("status", "--help"),
            List.of("status", "-h"),
            List.of("help", "status"),
            List.of("watch"),
            List.of("status", "extra"),
            List.of("status", "--bogus"),
            List.of("status", "--client"),
            List.of("version", "--json"),
            List.of("status", "--json=true"),
            List.of("status", "--master", url(), "--master", url()),
            List.of("--verbose", "status", "--verbose"),
            List.of("status", "-o", "json", "--output", "yaml"),
            List.of("status", "-o", "xml"),
            List.of("status", "-ojson"),
            List.of("status", "--events", "-1"),
            List.of("status", "--events", "x"),
            List.of("status", "--passes", "x"),
            List.of("status", "--passes", "-1"),
            List.of("version", "--passes", "1"),
            List.of("status", "--timeout", "0"),
            List.of("status", "--timeout", "010"),
            List.of("status", "--token"),
            List.of("status", "--master", "ftp://127.0.0.1:1"),
            List.of("status", "--etcd", "http://127.0.0.1:2379"),
            List.of("status", "@args.txt"));
    for (List<String> line : lines) {
      assertThat(QuickCommands.parse(line.toArray(String[]::new), env)).as("%s", line).isNull();
    }
    // no token, or a master found through etcd: picocli's path says so
    assertThat(QuickCommands.parse(new String[] {"status"}, Map.of("PSCTL_MASTER", url())))
        .isNull();
    assertThat(
            QuickCommands.parse(
                new String[] {"version"}, Map.of("PSCTL_ETCD", "http://127.0.0.1:2379")))
        .isNull();
    assertThat(QuickCommands.parse(new String[] {"version"}, Map.of())).isNotNull();
    Run noToken = Run.withEnv(Map.of("PSCTL_MASTER", url()), "status");
    assertThat(noToken.code()).isEqualTo(2);
    assertThat(noToken.err()).contains("no admin token");
  }

  @Test
  void status_asksForTheLatestTenPassesInText_everyOneWithAll_andSaysHowManyItLeftOut() {
    Map<String, String> env = Map.of("PSCTL_MASTER", url(), "PSCTL_TOKEN", TOKEN);
    jobJson = jobJson.replaceFirst("\\{", "{\"passesOmitted\":990,");
    Run text = quick(env, "status");
    assertThat(text.code()).as(text.err()).isZero();
    assertThat(text.out()).contains("(990 earlier passes not shown: --passes all)");
    quick(env, "status", "--passes", "3");
    quick(env, "status", "--passes", "all");
    quick(env, "status", "--json");
    quick(env, "status", "-o", "yaml", "--passes", "0");
    assertThat(jobQueries).containsExactly("passes=10", "passes=3", "", "", "passes=0");
    jobQueries.clear();
    Run picocli = Run.withEnv(env, "status", "--passes", "-2");
    assertThat(picocli.code()).isEqualTo(2);
    assertThat(picocli.err()).contains("--passes expects a count of 0 or more or 'all'");
    assertThat(jobQueries).isEmpty();
  }

  @Test
  void statusAndVersion_loadNeitherPicocliNorTheHttpClientNorTls(@TempDir Path dir)
      throws Exception {
    for (List<String> line :
        List.of(
            List.of("status", "--master", url(), "--token", TOKEN),
            List.of("version", "--master", url(), "--token", TOKEN, "-o", "json"))) {
      Path log = dir.resolve(line.get(0) + ".log");
      List<String> command = new ArrayList<>();
      command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      command.add("-Xshare:auto");
      command.add("-Xlog:class+load=info:file=" + log);
      command.add("-cp");
      command.add(System.getProperty("java.class.path"));
      command.add(Psctl.class.getName());
      command.addAll(line);
      ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
      Map<String, String> env = new HashMap<>(pb.environment());
      env.keySet().removeIf(k -> k.startsWith("PSCTL_"));
      pb.environment().clear();
      pb.environment().putAll(env);
      Process p = pb.start();
      String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).as(output).isZero();
      assertThat(output).contains(line.get(0).equals("status") ? "RUNNING" : "\"version\"");
      List<String> loaded =
          Files.readAllLines(log).stream()
              .map(l -> l.replaceFirst("^.*\\[class,load\\] ", "").split(" ")[0])
              .toList();
      assertThat(loaded).as("classes loaded").contains(QuickCommands.class.getName());
      assertThat(loaded)
          .as("%s loads no picocli model, JDK HTTP client or TLS", line)
          .noneMatch(
              c ->
                  c.startsWith("picocli.CommandLine$Model")
                      || c.startsWith("java.net.http.")
                      || c.startsWith("jdk.internal.net.http.")
                      || c.startsWith("javax.net.ssl.")
                      || c.startsWith("sun.security.ssl."));
    }
  }
}
