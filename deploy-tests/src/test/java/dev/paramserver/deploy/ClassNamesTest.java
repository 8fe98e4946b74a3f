package dev.paramserver.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * One name, one thing: no two main source files of the repository (any module, any package) share a
 * simple class name, so that a name met in a log, a stack trace or the docs means one class. Two
 * classes for two sides of one concept get names that say which side they are (the trainer's {@code
 * Membership} and the master's {@code Attendance}).
 */
class ClassNamesTest {
  /** File names that every package may have. */
  private static final Set<String> PER_PACKAGE = Set.of("package-info.java", "module-info.java");

  private static final Set<String> SKIPPED_DIRS =
      Set.of(".git", "target", "node_modules", "runs", "bench", ".idea");

  @Test
  void mainClasses_haveOneSimpleNameEach() throws IOException {
    Map<String, Set<String>> byName = new TreeMap<>();
    for (Path file : mainSources(RepoFiles.root())) {
      String name = file.getFileName().toString();
      if (!PER_PACKAGE.contains(name)) {
        byName
            .computeIfAbsent(name, n -> new TreeSet<>())
            .add(RepoFiles.root().relativize(file).toString().replace('\\', '/'));
      }
    }
    assertThat(byName).as("main source files found").hasSizeGreaterThan(300);
    Map<String, Set<String>> twice =
        byName.entrySet().stream()
            .filter(e -> e.getValue().size() > 1)
            .collect(
                Collectors.toMap(
                    Map.Entry::getKey, Map.Entry::getValue, (a, b) -> a, TreeMap::new));
    assertThat(twice)
        .as("simple class names used by more than one main source file: rename one of each")
        .isEmpty();
  }

  /** Every {@code .java} file under a {@code src/main/java} folder of the repository. */
  private static List<Path> mainSources(Path root) throws IOException {
    List<Path> found = new ArrayList<>();
    Files.walkFileTree(
        root,
        new SimpleFileVisitor<>() {
          @Override
          public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
            return SKIPPED_DIRS.contains(dir.getFileName().toString())
                ? FileVisitResult.SKIP_SUBTREE
                : FileVisitResult.CONTINUE;
          }

          @Override
          public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
            String rel = root.relativize(file).toString().replace('\\', '/');
            if (rel.endsWith(".java") && rel.contains("/src/main/java/")) {
              found.add(file);
            }
            return FileVisitResult.CONTINUE;
          }
        });
    return found;
  }
}
