package dev.paramserver.deploy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.yaml.snakeyaml.Yaml;

/** Files of the repository this module lives in, found by walking up from the working directory. */
final class RepoFiles {
  private static final Path ROOT = findRoot();

  private RepoFiles() {}

  static Path root() {
    return ROOT;
  }

  static Path path(String relative) {
    Path p = ROOT.resolve(relative);
    if (!Files.isRegularFile(p)) {
      throw new IllegalStateException(relative + " not found under " + ROOT);
    }
    return p;
  }

  static String read(String relative) {
    try {
      return Files.readString(path(relative));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The project's version: the root pom.xml's (paramserver-parent's). */
  static String projectVersion() {
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile(
                "<artifactId>paramserver-parent</artifactId>\\s*<version>([^<]+)</version>")
            .matcher(read("pom.xml"));
    if (!m.find()) {
      throw new IllegalStateException("pom.xml names no paramserver-parent version");
    }
    return m.group(1).trim();
  }

  /** Parses a YAML file (anchors and merge keys resolved) into maps and lists. */
  static Map<String, Object> yaml(String relative) {
    return new Yaml().load(read(relative));
  }

  private static Path findRoot() {
    for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
      if (Files.isRegularFile(p.resolve("docker-compose.yml"))
          && Files.isDirectory(p.resolve("helm/paramserver"))) {
        return p;
      }
    }
    throw new IllegalStateException(
        "no repository root (a directory with docker-compose.yml and helm/paramserver) above "
            + Path.of("").toAbsolutePath());
  }
}
