package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The docs' code maps (a table under a heading that starts with "Code map": each step, then the
 * classes that do it, each group followed by its module in brackets) name classes that exist, in
 * the module named: {@code `PushPath`, `PushLog` (pserver-core)} is checked as two main classes of
 * {@code pserver-core}, {@code `SlotMap.movesTo`} as a method of {@code SlotMap}, and {@code
 * (trainer-agent, `training`)} as a package of the module. A rename that forgets the map fails
 * here.
 */
class DocsCodeMapTest {
  private static final Path ROOT = DocsPaths.root();
  private static final Pattern CODE_MAP = Pattern.compile("(?m)^#{2,6} Code map.*$");
  private static final Pattern NEXT_HEADING = Pattern.compile("(?m)^#{1,6} ");
  private static final Pattern TYPE =
      Pattern.compile("\\b(?:class|interface|enum|record)\\s+([A-Z]\\w*)");
  private static final Pattern CLASS_NAME = Pattern.compile("([A-Z]\\w*)(?:\\.(\\w+))?");

  /** A class (or {@code Class.method}) a code map names, and the module it names for it. */
  private record Named(String doc, String name, String module) {}

  @Test
  void theScalingAndThePush_haveACodeMapEach() {
    assertThat(names("docs/explanation/elastic.md")).hasSizeGreaterThan(20);
    assertThat(names("docs/explanation/architecture.md")).hasSizeGreaterThan(20);
  }

  @Test
  void everyClassACodeMapNames_existsInTheModuleNamed() {
    MainSources sources = MainSources.scan(ROOT);
    List<Named> named = new ArrayList<>();
    for (Path doc : MarkdownFile.readmeAndDocs(ROOT)) {
      named.addAll(names(ROOT.relativize(doc).toString().replace('\\', '/')));
    }
    Set<String> problems = new TreeSet<>();
    for (Named n : named) {
      if (n.name().equals(n.name().toLowerCase())) {
        if (n.module() == null || !sources.hasPackage(n.module(), n.name())) {
          problems.add(n.doc() + ": package `" + n.name() + "` not in " + n.module());
        }
        continue;
      }
      Matcher m = CLASS_NAME.matcher(n.name());
      if (!m.matches()) {
        problems.add(n.doc() + ": `" + n.name() + "` is no class name (Class or Class.method)");
        continue;
      }
      List<Path> files = sources.declaring(m.group(1), n.module());
      if (files.isEmpty()) {
        problems.add(
            n.doc()
                + ": `"
                + n.name()
                + "` is declared in no main source"
                + (n.module() == null ? "" : " of " + n.module()));
      } else if (m.group(2) != null && files.stream().noneMatch(f -> declares(f, m.group(2)))) {
        problems.add(n.doc() + ": `" + m.group(1) + "` has no method " + m.group(2));
      }
    }
    assertThat(named).as("classes named by code maps").hasSizeGreaterThan(40);
    assertThat(problems).as("code map entries that name nothing").isEmpty();
  }

  /** The names in the class column of every code map of {@code doc}. */
  private static List<Named> names(String doc) {
    String text = new MarkdownFile(ROOT, ROOT.resolve(doc)).text();
    List<Named> out = new ArrayList<>();
    Matcher heading = CODE_MAP.matcher(text);
    while (heading.find()) {
      String section = text.substring(heading.end());
      Matcher next = NEXT_HEADING.matcher(section);
      if (next.find()) {
        section = section.substring(0, next.start());
      }
      int row = 0;
      for (String line : section.split("\n")) {
        if (!line.startsWith("|")) {
          continue;
        }
        if (row++ < 2) {
          continue; // the header and the separator
        }
        String[] cells = line.split("\\|");
        assertThat(cells)
            .as("%s: a code map row has a step and its classes: %s", doc, line)
            .hasSizeGreaterThanOrEqualTo(3);
        out.addAll(cell(doc, cells[2]));
      }
    }
    return out;
  }

  /**
   * The names of one class cell: code spans outside brackets are classes, waiting for the module
   * that the next bracket opens with; code spans inside a bracket are packages of that module.
   */
  private static List<Named> cell(String doc, String cell) {
    List<Named> out = new ArrayList<>();
    List<String> pending = new ArrayList<>();
    String module = null;
    int depth = 0;
    for (int i = 0; i < cell.length(); i++) {
      char c = cell.charAt(i);
      if (c == '`') {
        int end = cell.indexOf('`', i + 1);
        String span = cell.substring(i + 1, end);
        if (depth == 0) {
          pending.add(span);
        } else {
          out.add(new Named(doc, span, module));
        }
        i = end;
      } else if (c == '(') {
        depth++;
        Matcher word =
            Pattern.compile("[a-z][a-z0-9-]*").matcher(cell).region(i + 1, cell.length());
        module = word.lookingAt() && MainSources.isModule(word.group()) ? word.group() : null;
        for (String p : pending) {
          out.add(new Named(doc, p, module));
        }
        pending.clear();
      } else if (c == ')') {
        depth--;
      }
    }
    for (String p : pending) {
      out.add(new Named(doc, p, null));
    }
    return out;
  }

  private static boolean declares(Path file, String method) {
    try {
      return Pattern.compile("\\b" + Pattern.quote(method) + "\\s*\\(")
          .matcher(Files.readString(file))
          .find();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The types every module's main sources declare (nested ones too), and their packages. */
  private record MainSources(Map<String, List<Path>> byType, Set<String> packages) {
    static boolean isModule(String name) {
      return Files.isRegularFile(ROOT.resolve(name).resolve("pom.xml"));
    }

    static MainSources scan(Path root) {
      Map<String, List<Path>> byType = new HashMap<>();
      Set<String> packages = new TreeSet<>();
      try (Stream<Path> modules = Files.list(root)) {
        for (Path module : modules.filter(m -> isModule(m.getFileName().toString())).toList()) {
          Path src = module.resolve("src/main/java");
          if (!Files.isDirectory(src)) {
            continue;
          }
          try (Stream<Path> files = Files.walk(src)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
              String pkg = src.relativize(f.getParent()).toString().replace('\\', '/');
              packages.add(module.getFileName() + ":" + pkg.replace('/', '.'));
              Matcher m = TYPE.matcher(Files.readString(f));
              while (m.find()) {
                byType.computeIfAbsent(m.group(1), k -> new ArrayList<>()).add(f);
              }
            }
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return new MainSources(byType, packages);
    }

    /** The main sources declaring {@code type}, in {@code module} when it is named. */
    List<Path> declaring(String type, String module) {
      return byType.getOrDefault(type, List.of()).stream()
          .filter(f -> module == null || ROOT.relativize(f).startsWith(module))
          .toList();
    }

    boolean hasPackage(String module, String tail) {
      return packages.stream().anyMatch(p -> p.startsWith(module + ":") && p.endsWith("." + tail));
    }
  }
}
