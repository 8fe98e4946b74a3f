package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.it.PythonProcesses.Python;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Runs the Python client's own tests ({@code clients/python/tests}: routing vectors, request
 * splitting, push identities, error decoding, RecordIO against files the Java writer made, the
 * PyTorch trainer and the example, against an in-process fake master and pservers; the package's
 * build, version and types) under each Python of {@link PythonProcesses#interpreters()}, so the
 * build fails when they do: Debian's python3 on the source tree (its stubs in {@link
 * PythonProcesses#STUBS}), and the virtual environment with PyPI's newest PyTorch, grpcio and
 * protobuf on the wheel built from it ({@code PARAMSERVER_TEST_INSTALLED=1}). Skipped, saying why,
 * only when a python lacks a module the client needs ({@code scripts/install-deps.sh} installs
 * both; under CI a missing venv fails).
 */
@Timeout(value = 6, unit = TimeUnit.MINUTES)
class PythonClientUnitTest {
  private static final Path CLIENT = PythonProcesses.CLIENT;

  static List<Python> interpreters() {
    return PythonProcesses.interpreters();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("interpreters")
  void thePythonClientsTestsPass(Python python, @TempDir Path tmp) throws Exception {
    PythonProcesses.assumeUsable(python, tmp, true);
    List<String> command = new ArrayList<>();
    command.addAll(
        List.of(
            python.executable().toString(),
            "-m",
            "pytest",
            "tests",
            "-q",
            "-p",
            "no:cacheprovider"));
    command.add("--junitxml=" + tmp.resolve("pytest.xml"));
    Path log = tmp.resolve("pytest.log");
    ProcessBuilder pb =
        new ProcessBuilder(command)
            .directory(CLIENT.toFile())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile());
    pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
    // the build test writes the sdist's egg-info into the source tree, as the wheel's build does
    pb.environment().put("PARAMSERVER_BUILD_LOCK", PythonProcesses.LOCK.toString());
    if (python.pip()) {
      pb.environment().put("PARAMSERVER_TEST_INSTALLED", "1");
      pb.environment().put("PYTHONPATH", PythonProcesses.site(python).toString());
    } else {
      pb.environment().put("PARAMSERVER_STUBS", PythonProcesses.STUBS.toString());
    }
    Process p = pb.start();
    if (!p.waitFor(5, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new AssertionError("pytest did not finish in 5 minutes:\n" + tail(log));
    }
    assertThat(p.exitValue())
        .as("pytest clients/python/tests (%s):\n%s", python, tail(log))
        .isZero();
    assertThat(Files.readString(log, StandardCharsets.UTF_8)).containsPattern("\\d+ passed");
  }

  private static String tail(Path log) throws IOException {
    List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
  }
}
