package dev.paramserver.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.MalformedInputException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No pointer to a file that does not exist: every repository path that the repository's docs,
 * chart, alerts, JobSet and compose files, scripts and Python files mention (a word that starts
 * with one of the repository's top-level folders, such as {@code docs/deploy.md} or {@code
 * helm/paramserver/templates/job-end.yaml}) names a file or folder that exists. Build outputs
 * ({@code .../target/...}), placeholders ({@code <x>}, {@code $X}, globs, {@code ...}) and the few
 * words that only look like paths ({@link #NOT_PATHS}) are left out.
 */
class RepositoryPathsTest {
  /** Words that look like repository paths and are not, with the reason. */
  private static final Map<String, String> NOT_PATHS =
      Map.of(
          "deploy/FULL-master", "kubectl's deploy/<name> (docs/runbooks.md)",
          "helm/helm", "the helm binary's path inside an npm package (scripts/fetch-helm.sh)",
          "clients/python/paramserver/v1/",
              "the Python client's generated stubs (made by its build, gitignored)");

  private static final Set<String> SKIPPED_DIRS =
      Set.of(".git", "target", "node_modules", "runs", "__pycache__", ".venv", "bench", ".idea");

  private static final Pattern TEXT_FILES =
      Pattern.compile(".*\\.(md|ya?ml|tpl|json|py|sh|toml|mjs|properties|txt)$|Dockerfile.*");

  @Test
  void everyRepositoryPathMentioned_exists() throws IOException {
    Path root = RepoFiles.root();
    List<String> tops;
    try (Stream<Path> s = Files.list(root)) {
      tops =
          s.filter(Files::isDirectory)
              .map(p -> p.getFileName().toString())
              .filter(n -> !SKIPPED_DIRS.contains(n) && (!n.startsWith(".") || n.equals(".ci")))
              .sorted()
              .toList();
    }
    assertThat(tops).contains("docs", "helm", "deploy", "scripts", "clients");
    Pattern mention =
        Pattern.compile(
            "(?<![\\w./\\-$~])((?:"
                + tops.stream().map(Pattern::quote).collect(Collectors.joining("|"))
                + ")/[A-Za-z0-9_./\\-]*[A-Za-z0-9_/\\-])");
    Map<String, Set<String>> missing = new TreeMap<>();
    int checked = 0;
    for (Path file : textFiles(root)) {
      String text;
      try {
        text = Files.readString(file);
      } catch (MalformedInputException e) {
        continue; // not UTF-8 text
      }
      String rel = root.relativize(file).toString();
      Matcher m = mention.matcher(text);
      while (m.find()) {
        String p = m.group(1);
        if (placeholder(text, m) || NOT_PATHS.containsKey(p) || p.contains("/target/")) {
          continue;
        }
        checked++;
        if (!Files.exists(root.resolve(p))) {
          missing.computeIfAbsent(p, k -> new TreeSet<>()).add(rel);
        }
      }
    }
    assertThat(checked).as("repository paths mentioned").isGreaterThan(200);
    assertThat(missing)
        .as("paths mentioned (path -> files mentioning it) that name no file or folder")
        .isEmpty();
  }

  /** A path followed by a glob, a placeholder, a variable or an ellipsis, or one itself. */
  private static boolean placeholder(String text, Matcher m) {
    String p = m.group(1);
    int end = m.end();
    char next = end < text.length() ? text.charAt(end) : ' ';
    return p.contains("..") || "*<{$[".indexOf(next) >= 0 || p.endsWith("-") || p.endsWith("_");
  }

  private static List<Path> textFiles(Path root) throws IOException {
    List<Path> files = new ArrayList<>();
    try (Stream<Path> walk = Files.walk(root)) {
      walk.filter(Files::isRegularFile)
          .filter(p -> TEXT_FILES.matcher(p.getFileName().toString()).matches())
          .filter(
              p -> {
                for (Path part : root.relativize(p)) {
                  if (SKIPPED_DIRS.contains(part.toString())) {
                    return false;
                  }
                }
                return true;
              })
          .forEach(files::add);
    }
    return files;
  }
}
