package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.testsupport.Poll;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.node.MissingNode;

/**
 * Python processes of the end-to-end tests, under each Python the client is tested with ({@link
 * #interpreters()}): Debian's {@code /usr/bin/python3} with {@code clients/python} on its path (its
 * stubs generated there by Debian's protoc), and the virtual environment {@code
 * scripts/python-venv.sh} makes with PyPI's newest PyTorch, grpcio and protobuf, running the
 * package as a wheel built from {@code clients/python} (the pip route). Started with their output
 * in a log file and killed in the tests' finally blocks. As {@link PythonClientUnitTest}, a test is
 * skipped, saying why, only when that python lacks what the client needs ({@code
 * scripts/install-deps.sh} installs both; under CI a missing venv fails).
 */
final class PythonProcesses {
  static final Path PYTHON = Path.of("/usr/bin/python3");
  static final Path REPO = Path.of("..").toAbsolutePath().normalize();
  static final Path CLIENT = REPO.resolve("clients/python");
  static final Path TRAIN_MLP = REPO.resolve("examples/python/train_mlp.py");
  static final Path E2E = CLIENT.resolve("tests/e2e");

  /** The pip route's installed package, built once per JVM. */
  private static Path wheelSite;

  private PythonProcesses() {}

  /**
   * One Python the client is tested with: {@code debian} (Debian's packages, the source tree) or
   * {@code venv} (PyPI's newest, the package built as a wheel and installed).
   */
  record Python(String name, Path executable) {
    boolean pip() {
      return name.equals("venv");
    }

    @Override
    public String toString() {
      return name;
    }
  }

  /**
   * The Pythons to test with: the names in the system property {@code paramserver.pythons} or the
   * environment variable {@code PARAMSERVER_PYTHONS} (comma-separated, {@code debian} and {@code
   * venv}), by default both.
   */
  static List<Python> interpreters() {
    String names = System.getProperty("paramserver.pythons", System.getenv("PARAMSERVER_PYTHONS"));
    List<Python> out = new ArrayList<>();
    for (String name : (names == null || names.isBlank() ? "debian,venv" : names).split(",")) {
      switch (name.strip()) {
        case "debian" -> out.add(new Python("debian", PYTHON));
        case "venv" -> out.add(new Python("venv", venv()));
        default ->
            throw new IllegalArgumentException(
                "paramserver.pythons: '" + name + "' is neither debian nor venv");
      }
    }
    return out;
  }

  /** The venv's python: $PARAMSERVER_PY_VENV/bin/python, default ~/.cache/paramserver/py-venv. */
  static Path venv() {
    String dir = System.getenv("PARAMSERVER_PY_VENV");
    Path venv =
        dir != null && !dir.isBlank()
            ? Path.of(dir)
            : Path.of(System.getProperty("user.home"), ".cache", "paramserver", "py-venv");
    return venv.resolve("bin").resolve("python");
  }

  /** Debian's python3 (the route the tests took before there were two). */
  static void assumeUsable(Path tmp, boolean torch) throws Exception {
    assumeUsable(new Python("debian", PYTHON), tmp, torch);
  }

  /**
   * Skips the test unless {@code python} has the client's modules (PyTorch with {@code torch});
   * then readies the client: Debian's, its gRPC stubs generated once in the source tree (so that
   * processes started together do not); the venv's, the wheel built and installed once.
   */
  static void assumeUsable(Python python, Path tmp, boolean torch) throws Exception {
    if (python.pip()) {
      awaitVenv(python);
    }
    if (python.pip() && !Files.isExecutable(python.executable())) {
      String why =
          python.executable()
              + " is missing: scripts/install-deps.sh (scripts/python-venv.sh) makes it";
      if ("true".equals(System.getenv("CI"))) {
        throw new AssertionError(why);
      }
      assumeThat(false).as(why).isTrue();
    }
    assumeThat(Files.isExecutable(python.executable()))
        .as(python.executable() + " is missing (scripts/install-deps.sh installs it)")
        .isTrue();
    String modules =
        torch
            ? "'torch', 'numpy', 'grpc', 'google.protobuf'"
            : "'numpy', 'grpc', 'google.protobuf'";
    String tools =
        python.pip()
            ? "'grpc_tools', 'build', 'setuptools'"
            : "'/usr/bin/protoc', '/usr/bin/grpc_python_plugin',"
                + " '/usr/include/google/protobuf/struct.proto'";
    Path check = tmp.resolve("python-check.log");
    Process p =
        start(
            python,
            check,
            "-c",
            "import importlib.util as u, os; print(' '.join([m for m in ("
                + modules
                + ") if u.find_spec(m.split('.')[0]) is None] + [p for p in ("
                + tools
                + ") if (u.find_spec(p) is None if not p.startswith('/') else not"
                + " os.path.exists(p))]))");
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("python3 module check").isTrue();
    String missing = Files.readString(check, StandardCharsets.UTF_8).strip();
    if (python.pip() && "true".equals(System.getenv("CI"))) {
      assertThat(missing).as(python.executable() + " lacks what the Python client needs").isEmpty();
    }
    assumeThat(missing)
        .as(python.executable() + " lacks what the Python client needs: " + missing)
        .isEmpty();
    if (python.pip()) {
      site(python);
      return;
    }
    Path gen = tmp.resolve("python-gen.log");
    Process g = start(python, gen, "-m", "paramserver.gen", "--if-stale");
    assertThat(g.waitFor(120, TimeUnit.SECONDS)).as("python3 -m paramserver.gen").isTrue();
    assertThat(g.exitValue()).as("python3 -m paramserver.gen:\n%s", tail(gen, 30)).isZero();
  }

  /**
   * Waits, at most 5 minutes, while {@code scripts/python-venv.sh} makes the venv ({@code
   * scripts/test.sh} runs it beside the build): {@code <venv>.building} names its pid meanwhile.
   */
  private static void awaitVenv(Python python) {
    Path venv = python.executable().getParent().getParent();
    Path building = venv.resolveSibling(venv.getFileName() + ".building");
    Poll.until(
        Duration.ofMinutes(5),
        Duration.ofSeconds(1),
        () -> !makingVenv(building),
        "scripts/python-venv.sh to finish making " + venv);
  }

  private static boolean makingVenv(Path building) {
    try {
      long pid = Long.parseLong(Files.readString(building, StandardCharsets.UTF_8).strip());
      return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    } catch (IOException | NumberFormatException e) {
      return false;
    }
  }

  /**
   * The directory the pip route's package is installed in: {@code python -m build --no-isolation}
   * makes the sdist and, from it, the wheel (stubs generated by the venv's grpcio-tools), {@code
   * pip install --target} installs the wheel there. Once per JVM; under a file lock, as the sdist
   * writes its {@code egg-info} into the source tree and the test JVMs run side by side.
   */
  static synchronized Path site(Python python) throws Exception {
    if (wheelSite != null) {
      return wheelSite;
    }
    Path lock = Files.createDirectories(Path.of("target").toAbsolutePath()).resolve("python.lock");
    try (FileChannel channel =
            FileChannel.open(lock, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock held = channel.lock()) {
      wheelSite = buildWheel(python);
    }
    return wheelSite;
  }

  private static Path buildWheel(Python python) throws Exception {
    Path dir = Files.createTempDirectory("paramserver-wheel-");
    Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(dir)));
    Path log = dir.resolve("build.log");
    Path dist = dir.resolve("dist");
    Path site = dir.resolve("site");
    run(
        log,
        python.executable().toString(),
        "-m",
        "build",
        "--no-isolation",
        "--outdir",
        dist.toString(),
        CLIENT.toString());
    Path wheel;
    try (var files = Files.list(dist)) {
      wheel =
          files
              .filter(f -> f.getFileName().toString().endsWith(".whl"))
              .findFirst()
              .orElseThrow(
                  () -> new AssertionError("python -m build made no wheel:\n" + tail(log, 40)));
    }
    run(
        log,
        python.executable().toString(),
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-index",
        "--target",
        site.toString(),
        wheel.toString());
    return site;
  }

  private static void deleteTree(Path dir) {
    try (var paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a temporary directory: left for the system to clean
    }
  }

  private static void run(Path log, String... command) throws Exception {
    Path out = log.resolveSibling("step.log");
    Process p =
        new ProcessBuilder(command)
            .directory(CLIENT.toFile())
            .redirectErrorStream(true)
            .redirectOutput(out.toFile())
            .start();
    if (!p.waitFor(5, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new AssertionError(String.join(" ", command) + " did not finish in 5 minutes");
    }
    String text = Files.readString(out, StandardCharsets.UTF_8);
    Files.writeString(
        log, text, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    assertThat(p.exitValue()).as("%s:\n%s", String.join(" ", command), text).isZero();
  }

  /** Debian's {@code python3 args...} with the client on PYTHONPATH. */
  static Process start(Path log, String... args) throws IOException {
    return start(new Python("debian", PYTHON), log, args);
  }

  /**
   * Starts {@code python args...} with the client on PYTHONPATH (Debian's: the source tree; the
   * venv's: the installed wheel), stdout and stderr to {@code log}.
   */
  static Process start(Python python, Path log, String... args) throws IOException {
    return start(python, log, Map.of(), args);
  }

  /** {@link #start(Python, Path, String...)} with {@code env} added to the environment. */
  static Process start(Python python, Path log, Map<String, String> env, String... args)
      throws IOException {
    List<String> command = new ArrayList<>();
    command.add(python.executable().toString());
    command.addAll(Arrays.asList(args));
    ProcessBuilder pb =
        new ProcessBuilder(command)
            .directory(REPO.toFile())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile());
    if (python.pip()) {
      if (wheelSite != null) { // null: assumeUsable's module check, before the wheel is built
        pb.environment().put("PYTHONPATH", wheelSite.toString());
      }
    } else {
      pb.environment().put("PYTHONPATH", CLIENT.toString());
    }
    pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
    pb.environment().put("PYTHONUNBUFFERED", "1");
    pb.environment().putAll(env);
    return pb.start();
  }

  /**
   * {@code kill -9}: the python process itself (its own children first, should it have any), then
   * waits for it to be gone.
   */
  static void kill(Process p) throws InterruptedException {
    if (p == null) {
      return;
    }
    p.descendants().forEach(ProcessHandle::destroyForcibly);
    p.destroyForcibly();
    p.waitFor(10, TimeUnit.SECONDS);
  }

  /** The log's text ("" if it does not exist yet). */
  static String read(Path log) {
    try {
      return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The last {@code n} lines of the log, for failure messages. */
  static String tail(Path log, int n) {
    List<String> lines = read(log).lines().toList();
    return String.join("\n", lines.subList(Math.max(0, lines.size() - n), lines.size()));
  }

  /** The value of {@code key=} on the log's PYRESULT line, or null. */
  static String pyresult(Path log, String key) {
    for (String line : read(log).lines().toList()) {
      if (line.startsWith("PYRESULT ")) {
        for (String field : line.substring(9).split(" ")) {
          if (field.startsWith(key + "=")) {
            return field.substring(key.length() + 1);
          }
        }
      }
    }
    return null;
  }

  /** The trainer ids registered in etcd ({@code trainers/<id>}). */
  static Set<String> registeredTrainers(EtcdCoordinator etcd) {
    String prefix = etcd.keys().trainersPrefix();
    Set<String> out = new TreeSet<>();
    for (KeyValueStore.KeyValue kv : etcd.kv().getPrefix(prefix)) {
      out.add(kv.key().substring(prefix.length()));
    }
    return out;
  }

  /** The trainer ids on the (single) master's console, {@code GET /admin/job}; empty on error. */
  static Set<String> consoleTrainers(LocalCluster cluster) {
    Set<String> ids = new TreeSet<>();
    consoleJob(cluster).path("trainers").forEach(t -> ids.add(t.path("id").asString()));
    return ids;
  }

  /**
   * Trainer {@code id} on the (single) master's console; a missing node when absent or on error.
   */
  static JsonNode consoleTrainer(LocalCluster cluster, String id) {
    for (JsonNode t : consoleJob(cluster).path("trainers")) {
      if (t.path("id").asString().equals(id)) {
        return t;
      }
    }
    return MissingNode.getInstance();
  }

  /** The master's console view, {@code GET /admin/job}; a missing node on error. */
  private static JsonNode consoleJob(LocalCluster cluster) {
    try {
      HttpResponse<String> r =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(
                          URI.create(
                              "http://127.0.0.1:"
                                  + cluster.process(Role.MASTER, 0).httpPort()
                                  + "/admin/job"))
                      .header("Authorization", "Bearer " + cluster.adminToken())
                      .timeout(Duration.ofSeconds(10))
                      .build(),
                  BodyHandlers.ofString());
      return r.statusCode() == 200
          ? new ObjectMapper().readTree(r.body())
          : MissingNode.getInstance();
    } catch (IOException | JacksonException e) {
      return MissingNode.getInstance();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return MissingNode.getInstance();
    }
  }
}
