package dev.paramserver.testsupport;

import dev.paramserver.launcher.Launcher;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A real S3-compatible server for tests: s3proxy (from Maven Central, its self-contained jar copied
 * by test-support's build) in a child JVM on 127.0.0.1 and a free port, storing objects in a
 * temporary directory (jclouds' filesystem blob store: a bucket is a directory, an object a file).
 * It checks AWS signatures (v2 and v4) against {@link #ACCESS_KEY} / {@link #SECRET_KEY}, so wrong
 * credentials are refused as S3 would refuse them.
 *
 * <pre>{@code
 * try (S3Server s3 = S3Server.start()) {
 *   s3.createBucket("data");
 *   ... endpoint s3.endpoint(), path-style, keys S3Server.ACCESS_KEY / SECRET_KEY ...
 * }
 * }</pre>
 *
 * The jar is found through {@code $S3PROXY_JAR} or the path the build wrote into {@code
 * s3proxy.properties}. The server, its directory and its log are removed by {@link #close()}; a JVM
 * shutdown hook stops servers still running, and the child gets SIGTERM if the test JVM dies.
 */
public final class S3Server implements AutoCloseable {
  /** The access key the server accepts. */
  public static final String ACCESS_KEY = "test-access-key";

  /** The secret key the server accepts. */
  public static final String SECRET_KEY = "test-secret-key";

  private static final Duration START_TIMEOUT = Duration.ofSeconds(60);
  private static final Set<S3Server> LIVE = ConcurrentHashMap.newKeySet();
  private static final Launcher LAUNCHER = new Launcher();

  static {
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(() -> List.copyOf(LIVE).forEach(S3Server::close), "s3-server-cleanup"));
  }

  private final Path dir;
  private final Path blobs;
  private final int port;
  private Process process;

  private S3Server(Path dir, int port) {
    this.dir = dir;
    this.blobs = dir.resolve("blobs");
    this.port = port;
  }

  /** Starts a server and waits until it answers HTTP. */
  public static S3Server start() {
    Path jar = jar();
    S3Server server = new S3Server(TempDirs.create("s3proxy"), FreePorts.next());
    LIVE.add(server);
    try {
      server.launch(jar);
      return server;
    } catch (RuntimeException | Error e) {
      server.close();
      throw e;
    }
  }

  private void launch(Path jar) {
    try {
      Files.createDirectories(blobs);
      Properties p = new Properties();
      p.setProperty("s3proxy.endpoint", endpoint());
      p.setProperty("s3proxy.authorization", "aws-v2-or-v4");
      p.setProperty("s3proxy.identity", ACCESS_KEY);
      p.setProperty("s3proxy.credential", SECRET_KEY);
      p.setProperty("jclouds.provider", "filesystem");
      p.setProperty("jclouds.filesystem.basedir", blobs.toString());
      p.setProperty("jclouds.identity", ACCESS_KEY);
      p.setProperty("jclouds.credential", SECRET_KEY);
      Path conf = dir.resolve("s3proxy.conf");
      try (var out = Files.newOutputStream(conf)) {
        p.store(out, "S3Server");
      }
      String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
      List<String> cmd = new ArrayList<>();
      cmd.addAll(
          List.of(
              java,
              "-Xmx256m",
              "-XX:TieredStopAtLevel=1",
              "-XX:+UseSerialGC",
              "-jar",
              jar.toString(),
              "--properties",
              conf.toString()));
      ProcessBuilder pb =
          new ProcessBuilder(Launcher.wrap(cmd))
              .redirectErrorStream(true)
              .redirectOutput(logFile().toFile());
      process = LAUNCHER.start(pb);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start s3proxy from " + jar, e);
    }
    Poll.until(
        START_TIMEOUT,
        () -> {
          if (!process.isAlive()) {
            throw new IllegalStateException(
                "s3proxy exited with code " + process.exitValue() + ": " + logTail());
          }
          return answers();
        },
        "s3proxy answering on " + endpoint() + " (log " + logFile() + ")");
  }

  private boolean answers() {
    try {
      HttpURLConnection c =
          (HttpURLConnection) URI.create(endpoint() + "/").toURL().openConnection();
      c.setConnectTimeout(500);
      c.setReadTimeout(2000);
      int code = c.getResponseCode(); // 403 without a signature: up and checking them
      c.disconnect();
      return code > 0;
    } catch (IOException e) {
      return false;
    }
  }

  private static Path jar() {
    String env = System.getenv("S3PROXY_JAR");
    if (env != null && !env.isBlank()) {
      return Path.of(env);
    }
    Properties p = new Properties();
    try (InputStream in = S3Server.class.getResourceAsStream("s3proxy.properties")) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    String jar = p.getProperty("jar", "");
    if (jar.isEmpty() || jar.startsWith("@") || !Files.isRegularFile(Path.of(jar))) {
      throw new IllegalStateException(
          "s3proxy's jar is not at '"
              + jar
              + "': build test-support (its build copies org.gaul:s3proxy's"
              + " jar-with-dependencies) or set S3PROXY_JAR");
    }
    return Path.of(jar);
  }

  /** The server's URL, {@code http://127.0.0.1:PORT}: use it with path-style addressing. */
  public String endpoint() {
    return "http://127.0.0.1:" + port;
  }

  /** Creates a bucket (a directory of the filesystem blob store). */
  public void createBucket(String name) {
    try {
      Files.createDirectories(blobs.resolve(name));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Where the objects of {@code bucket} are stored on disk (key {@code a/b} is file {@code a/b}).
   */
  public Path bucketDir(String bucket) {
    return blobs.resolve(bucket);
  }

  /** The server's output (for failure messages). */
  public Path logFile() {
    return dir.resolve("s3proxy.log");
  }

  /** The last lines of the server's log. */
  public String logTail() {
    try {
      List<String> lines = Files.readAllLines(logFile(), StandardCharsets.UTF_8);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    } catch (IOException e) {
      return "(no log: " + e.getMessage() + ")";
    }
  }

  /** Stops the server (SIGTERM, then SIGKILL) and deletes its directory. Idempotent. */
  @Override
  public synchronized void close() {
    LIVE.remove(this);
    Process p = process;
    process = null;
    if (p != null) {
      p.destroy();
      try {
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
          p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
      } catch (InterruptedException e) {
        p.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
    TempDirs.deleteRecursively(dir);
  }
}
