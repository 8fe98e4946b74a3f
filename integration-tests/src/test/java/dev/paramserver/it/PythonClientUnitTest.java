package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the Python client's own tests ({@code clients/python/tests}: routing vectors, request
 * splitting, push identities, error decoding, RecordIO against files the Java writer made, the
 * PyTorch trainer and the example, against an in-process fake master and pservers) with Debian's
 * python3, so the build fails when they do. Skipped, saying why, only when that python3 lacks a
 * module the client needs; {@code scripts/install-deps.sh} installs them (python3-torch,
 * python3-numpy, python3-pytest, python3-grpcio, python3-protobuf, protobuf-compiler-grpc,
 * libprotobuf-dev).
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class PythonClientUnitTest {
  private static final Path PYTHON = Path.of("/usr/bin/python3");
  private static final Path CLIENT =
      Path.of("..", "clients", "python").toAbsolutePath().normalize();

  @Test
  void thePythonClientsTestsPass(@TempDir Path tmp) throws Exception {
    assumeThat(Files.isExecutable(PYTHON))
        .as("/usr/bin/python3 is missing (scripts/install-deps.sh installs it)")
        .isTrue();
    String missing =
        run(
                tmp.resolve("check.log"),
                PYTHON.toString(),
                "-c",
                "import importlib.util as u, shutil, os; print(' '.join([m for m in ('torch', 'numpy',"
                    + " 'grpc', 'google.protobuf', 'pytest') if u.find_spec(m.split('.')[0]) is None]"
                    + " + [p for p in ('/usr/bin/protoc', '/usr/bin/grpc_python_plugin',"
                    + " '/usr/include/google/protobuf/struct.proto') if not os.path.exists(p)]))")
            .strip();
    assumeThat(missing)
        .as("/usr/bin/python3 lacks what the Python client needs: " + missing)
        .isEmpty();

    Path log = tmp.resolve("pytest.log");
    ProcessBuilder pb =
        new ProcessBuilder(
                PYTHON.toString(),
                "-m",
                "pytest",
                "tests",
                "-q",
                "-p",
                "no:cacheprovider",
                "--junitxml=" + tmp.resolve("pytest.xml"))
            .directory(CLIENT.toFile())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile());
    pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
    Process p = pb.start();
    if (!p.waitFor(4, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new AssertionError("pytest did not finish in 4 minutes:\n" + tail(log));
    }
    assertThat(p.exitValue()).as("pytest clients/python/tests:\n%s", tail(log)).isZero();
    assertThat(Files.readString(log, StandardCharsets.UTF_8)).containsPattern("\\d+ passed");
  }

  private static String run(Path log, String... command) throws Exception {
    Process p =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as(String.join(" ", command)).isTrue();
    return Files.readString(log, StandardCharsets.UTF_8);
  }

  private static String tail(Path log) throws IOException {
    List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
  }
}
