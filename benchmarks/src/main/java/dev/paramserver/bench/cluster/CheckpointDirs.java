package dev.paramserver.bench.cluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** The pservers' checkpoint directories that a benchmark run leaves under its run directory. */
public final class CheckpointDirs {
  private CheckpointDirs() {}

  /**
   * Deletes the pservers' checkpoint directories (with their write-ahead logs) under {@code
   * runDir}: a full run wrote about 25 GB of them, and filled the disk; logs and recordings stay.
   */
  public static void drop(Path runDir) throws IOException {
    List<Path> dirs;
    try (Stream<Path> all = Files.walk(runDir)) {
      dirs =
          all.filter(p -> Files.isDirectory(p) && p.getFileName().toString().equals("checkpoints"))
              .toList();
    }
    for (Path d : dirs) {
      try (Stream<Path> tree = Files.walk(d)) {
        for (Path p : tree.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }
}
