package dev.paramserver.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A Markdown file of the repository as GitHub renders it, reduced to what the docs tests check: its
 * headings' anchors, its links, its fenced code blocks and its inline code spans.
 */
final class MarkdownFile {
  private static final Pattern FENCE = Pattern.compile("^(\\s*)(```+)\\s*([\\w-]*).*$");
  private static final Pattern HEADING = Pattern.compile("^(#{1,6})\\s+(.*?)\\s*#*\\s*$");
  private static final Pattern LINK =
      Pattern.compile("!?\\[((?:[^\\[\\]]|\\[[^\\]]*])*)]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)");
  private static final Pattern INLINE_CODE = Pattern.compile("(`+)(.+?)\\1");

  /** A fenced code block: its info string (language) and its lines, the fence's indent removed. */
  record CodeBlock(String language, int line, String text) {}

  /** A link in the prose (not in code): its target as written and its line. */
  record Link(String target, int line) {}

  private final Path root;
  private final Path file;
  private final List<CodeBlock> codeBlocks = new ArrayList<>();
  private final List<Link> links = new ArrayList<>();
  private final List<String> inlineCode = new ArrayList<>();
  private final Set<String> anchors = new LinkedHashSet<>();

  MarkdownFile(Path root, Path file) {
    this.root = root;
    this.file = file;
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    parse(lines);
  }

  /** README.md and every Markdown file under docs/, as repository-relative paths. */
  static List<Path> readmeAndDocs(Path root) {
    List<Path> out = new ArrayList<>();
    out.add(root.resolve("README.md"));
    try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(out::add);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  private void parse(List<String> lines) {
    Map<String, Integer> seen = new HashMap<>();
    String fenceMarker = null;
    String fenceIndent = "";
    String language = "";
    int blockStart = 0;
    StringBuilder block = new StringBuilder();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      Matcher fence = FENCE.matcher(line);
      if (fenceMarker == null && fence.matches()) {
        fenceMarker = fence.group(2);
        fenceIndent = fence.group(1);
        language = fence.group(3);
        blockStart = i + 1;
        block.setLength(0);
        continue;
      }
      if (fenceMarker != null) {
        if (line.strip().equals(fenceMarker)) {
          codeBlocks.add(new CodeBlock(language, blockStart, block.toString()));
          fenceMarker = null;
        } else {
          block.append(line.startsWith(fenceIndent) ? line.substring(fenceIndent.length()) : line);
          block.append('\n');
        }
        continue;
      }
      Matcher heading = HEADING.matcher(line);
      if (heading.matches()) {
        String slug = slug(heading.group(2));
        int n = seen.merge(slug, 1, Integer::sum) - 1;
        anchors.add(n == 0 ? slug : slug + "-" + n);
      }
      Matcher code = INLINE_CODE.matcher(line);
      while (code.find()) {
        inlineCode.add(code.group(2).strip());
      }
      // links inside inline code are text, not links
      Matcher link = LINK.matcher(INLINE_CODE.matcher(line).replaceAll(""));
      while (link.find()) {
        links.add(new Link(link.group(2), i + 1));
      }
    }
  }

  /**
   * GitHub's anchor of a heading: the rendered text (code spans, links and emphasis reduced to
   * their text), lower-cased, every character but letters, digits, '_', '-' and spaces dropped,
   * spaces turned into '-'. Repeated anchors get "-1", "-2" appended (done by the caller).
   */
  static String slug(String heading) {
    String text =
        heading
            .replaceAll("!?\\[([^\\]]*)]\\([^)]*\\)", "$1")
            .replace("`", "")
            .replaceAll("(\\*\\*|__|\\*)", "")
            .replaceAll("<[^>]+>", "");
    StringBuilder out = new StringBuilder();
    text.toLowerCase(java.util.Locale.ROOT)
        .codePoints()
        .forEach(
            c -> {
              if (Character.isLetterOrDigit(c) || c == '_' || c == '-') {
                out.appendCodePoint(c);
              } else if (c == ' ') {
                out.append('-');
              }
            });
    return out.toString();
  }

  Path path() {
    return file;
  }

  /** The repository-relative path, with '/' separators. */
  String name() {
    return root.relativize(file).toString().replace('\\', '/');
  }

  List<CodeBlock> codeBlocks() {
    return codeBlocks;
  }

  List<Link> links() {
    return links;
  }

  List<String> inlineCode() {
    return inlineCode;
  }

  Set<String> anchors() {
    return anchors;
  }

  /** All the text of the file. */
  String text() {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
