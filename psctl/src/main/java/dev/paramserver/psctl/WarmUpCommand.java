package dev.paramserver.psctl;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.paramserver.psctl.command.PsctlCommand;
import dev.paramserver.psctl.job.QuickCommands;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code psctl warm-up} (hidden): the training run of psctl's start-up archive ({@link
 * ArchiveCommand}). Runs, in this one JVM, what the quick commands load: {@code --help}, {@code
 * version}, and {@code status} (text and JSON) and {@code version} against a stand-in master on
 * 127.0.0.1 that answers a sample {@code /admin/job} and {@code /admin/status}, so that the archive
 * holds the HTTP client, JSON and report classes too, on the quick path ({@link QuickCommands}) and
 * picocli's alike. Prints nothing; exits 0.
 */
@Command(
    name = WarmUpCommand.NAME,
    hidden = true,
    description = "The start-up archive's training run.")
public final class WarmUpCommand extends PsctlCommand {
  static final String NAME = "warm-up";
  private static final String TOKEN = "warm-up";

  @Override
  protected int run() throws Exception {
    byte[] job = resource("sample-job.json");
    byte[] status =
        ("{\"role\":\"master\",\"state\":\"LEADER\",\"leader\":true,\"version\":\"0\","
                + "\"commit\":\"0\"}")
            .getBytes(StandardCharsets.UTF_8);
    HttpServer master =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    master.createContext("/admin/job", ex -> answer(ex, job));
    master.createContext("/admin/status", ex -> answer(ex, status));
    master.start();
    try {
      String url = "http://127.0.0.1:" + master.getAddress().getPort();
      Map<String, String> env = Map.of();
      for (List<String> args :
          List.of(
              List.of("--help"),
              List.of("version", "--client"),
              List.of("status", "--help"),
              List.of("status", "--master", url, "--token", TOKEN),
              List.of("status", "--master", url, "--token", TOKEN, "-o", "json"),
              List.of("version", "--master", url, "--token", TOKEN))) {
        StringWriter sink = new StringWriter();
        // the quick path (QuickCommands) where it takes the command line, and picocli's
        QuickCommands.run(
            args.toArray(String[]::new), env, new PrintWriter(sink), new PrintWriter(sink));
        CommandLine cl = Psctl.commandLine(env);
        cl.setOut(new PrintWriter(sink));
        cl.setErr(new PrintWriter(sink));
        cl.execute(args.toArray(String[]::new));
      }
    } finally {
      master.stop(0);
    }
    return 0;
  }

  private static void answer(HttpExchange ex, byte[] body) throws IOException {
    ex.getResponseHeaders().add("Content-Type", "application/json");
    ex.sendResponseHeaders(200, body.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(body);
    }
  }

  private static byte[] resource(String name) throws IOException {
    try (InputStream in = WarmUpCommand.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IOException("psctl's resource " + name + " is missing");
      }
      return in.readAllBytes();
    }
  }
}
