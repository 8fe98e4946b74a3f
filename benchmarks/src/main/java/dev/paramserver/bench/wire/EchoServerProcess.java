package dev.paramserver.bench.wire;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** {@link EchoServerMain} in its own JVM, with this JVM's class path. */
final class EchoServerProcess implements AutoCloseable {
  private final Process process;
  private final int grpcPort;
  private final int rawPort;

  private EchoServerProcess(Process process, int grpcPort, int rawPort) {
    this.process = process;
    this.grpcPort = grpcPort;
    this.rawPort = rawPort;
  }

  static EchoServerProcess start(List<String> jvmOptions, Path dir) throws IOException {
    Files.createDirectories(dir);
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(jvmOptions);
    // development aid (WireProbe): extra JVM options for the echo server, e.g. a bigger heap
    String extra = System.getProperty("bench.echo.jvm");
    if (extra != null && !extra.isBlank()) {
      cmd.addAll(List.of(extra.trim().split("\\s+")));
    }
    for (String prop :
        new String[] {"bench.echo.direct", "bench.echo.window", "bench.echo.initialWindow"}) {
      if (System.getProperty(prop) != null) {
        cmd.add("-D" + prop + "=" + System.getProperty(prop));
      }
    }
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(EchoServerMain.class.getName());
    Process p =
        new ProcessBuilder(cmd).redirectError(dir.resolve("echo-server.log").toFile()).start();
    BufferedReader r =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    String line = r.readLine();
    if (line == null || !line.startsWith("READY ")) {
      p.destroyForcibly();
      throw new IOException(
          "echo server did not start (said '" + line + "'); see " + dir.resolve("echo-server.log"));
    }
    int grpc = 0;
    int raw = 0;
    for (String part : line.substring(6).split(" ")) {
      String[] kv = part.split("=");
      if (kv[0].equals("grpc")) {
        grpc = Integer.parseInt(kv[1]);
      } else if (kv[0].equals("raw")) {
        raw = Integer.parseInt(kv[1]);
      }
    }
    return new EchoServerProcess(p, grpc, raw);
  }

  int grpcPort() {
    return grpcPort;
  }

  int rawPort() {
    return rawPort;
  }

  long pid() {
    return process.pid();
  }

  @Override
  public void close() {
    try {
      process.getOutputStream().close();
      if (!process.waitFor(5, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
      }
    } catch (IOException e) {
      process.destroyForcibly();
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }
}
