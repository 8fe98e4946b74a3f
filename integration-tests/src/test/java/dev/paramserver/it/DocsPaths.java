package dev.paramserver.it;

import java.nio.file.Files;
import java.nio.file.Path;

/** The repository root, found by walking up from the working directory (the module's). */
final class DocsPaths {
  private DocsPaths() {}

  static Path root() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isRegularFile(p.resolve("mvnw")) && Files.isDirectory(p.resolve("docs"))) {
        return p;
      }
    }
    throw new IllegalStateException(
        "no repository root (a directory with mvnw and docs/) above "
            + Path.of("").toAbsolutePath());
  }
}
