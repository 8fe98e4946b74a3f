package dev.paramserver.bench.train;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PythonSuiteTest {
  @Test
  void clientLinesCountHandWrittenPythonOnlyNotTheGeneratedStubs(@TempDir Path dir)
      throws Exception {
    Files.createDirectories(dir.resolve("torch"));
    Files.createDirectories(dir.resolve("v1"));
    Files.writeString(dir.resolve("client.py"), "a\nb\nc\n");
    Files.writeString(dir.resolve("torch/__init__.py"), "x\ny\n");
    Files.writeString(dir.resolve("v1/pserver_pb2.py"), "generated\n".repeat(50));
    Files.writeString(dir.resolve("notes.txt"), "not python\n");
    assertThat(PythonSuite.clientLines(dir)).isEqualTo(5);
  }
}
