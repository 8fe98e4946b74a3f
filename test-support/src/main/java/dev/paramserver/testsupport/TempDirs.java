package dev.paramserver.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Temporary directories for fixtures, and their removal. */
public final class TempDirs {
  private TempDirs() {}

  /** A new directory under the system temp dir, named {@code paramserver-<prefix>-...}. */
  public static Path create(String prefix) {
    try {
      return Files.createTempDirectory("paramserver-" + prefix + "-");
    } catch (IOException e) {
      throw new UncheckedIOException("could not create a temp directory for " + prefix, e);
    }
  }

  /** Deletes the directory and everything under it; missing is fine; errors are ignored. */
  public static void deleteRecursively(Path dir) {
    if (dir == null || !Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      paths
          .sorted(Comparator.reverseOrder())
          .forEach(
              p -> {
                try {
                  Files.deleteIfExists(p);
                } catch (IOException ignored) {
                  // best effort: a leftover file must not fail a test's cleanup
                }
              });
    } catch (IOException | UncheckedIOException ignored) {
      // best effort
    }
  }
}
