package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.psctl.Psctl;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Every command the README and docs/ show, in their shell code blocks and in inline code that
 * starts with a command, is checked against what it names: shell blocks parse ({@code bash -n}),
 * each {@code scripts/*.sh} exists and takes the options shown, each {@code psctl} subcommand and
 * option exists in psctl's picocli model, each {@code ./mvnw} names real modules and test classes,
 * each repository path exists, and each {@code paramserver.*} property named in the docs is in the
 * services' configuration metadata.
 */
class DocsCommandsTest {
  private static final Path ROOT = DocsPaths.root();
  private static final Set<String> SHELL = Set.of("bash", "sh", "shell");
  private static final Pattern PROPERTY =
      Pattern.compile(
          "(?<![\\w.-])paramserver\\.(?:(?:admin|etcd|master|pserver|trainer|grpc-client)"
              + "(?:\\.[a-z0-9][a-z0-9-]*)+|job|advertise-host)(?![\\w-])");

  static List<MarkdownFile> docs;
  static List<Snippet> snippets;

  /** A command shown in a doc: the file, its line and the text. */
  record Snippet(String where, String text) {}

  @BeforeAll
  static void readDocs() {
    docs = MarkdownFile.readmeAndDocs(ROOT).stream().map(p -> new MarkdownFile(ROOT, p)).toList();
    snippets = new ArrayList<>();
    for (MarkdownFile f : docs) {
      for (MarkdownFile.CodeBlock b : f.codeBlocks()) {
        if (SHELL.contains(b.language())) {
          snippets.add(new Snippet(f.name() + ":" + b.line(), b.text()));
        }
      }
      for (String code : f.inlineCode()) {
        if (code.matches("^(\\S+=\\S+ )*(scripts/|bin/psctl |psctl |\\./mvnw ).*")) {
          snippets.add(new Snippet(f.name() + " `" + code + "`", code));
        }
      }
    }
  }

  private static List<List<String>> commands() {
    List<List<String>> out = new ArrayList<>();
    for (Snippet s : snippets) {
      for (List<String> c : ShellCommands.parse(s.text())) {
        List<String> tagged = new ArrayList<>(c);
        tagged.add(0, s.where());
        out.add(tagged);
      }
    }
    return out;
  }

  @Test
  void shellBlocks_parse(@TempDir Path tmp) throws Exception {
    List<String> bad = new ArrayList<>();
    int n = 0;
    for (MarkdownFile f : docs) {
      for (MarkdownFile.CodeBlock b : f.codeBlocks()) {
        if (!SHELL.contains(b.language())) {
          continue;
        }
        Path script = tmp.resolve("block-" + n++ + ".sh");
        Files.writeString(script, b.text(), StandardCharsets.UTF_8);
        Process p =
            new ProcessBuilder("bash", "-n", script.toString()).redirectErrorStream(true).start();
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).as("bash -n finished").isTrue();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
          bad.add(f.name() + ":" + b.line() + ": " + out.strip());
        }
      }
    }
    assertThat(n).as("shell blocks").isGreaterThan(10);
    assertThat(bad).as("shell blocks that bash -n refuses").isEmpty();
  }

  @Test
  void scripts_existAndTakeTheOptionsShown() throws IOException {
    CommandLine runLocal = Psctl.commandLine().getSubcommands().get("run-local");
    String allScripts = readScripts();
    List<String> bad = new ArrayList<>();
    int checked = 0;
    for (List<String> tagged : commands()) {
      String where = tagged.get(0);
      List<String> command = tagged.subList(1, tagged.size());
      List<String> words = ShellCommands.program(command);
      if (words.isEmpty() || !words.get(0).matches("(\\./)?scripts/.*")) {
        continue;
      }
      checked++;
      String script = words.get(0).replaceFirst("^\\./", "");
      if (script.contains("*")) {
        // a glob such as scripts/*.sh names scripts in general: it must match one
        var glob = ROOT.getFileSystem().getPathMatcher("glob:" + script);
        try (Stream<Path> s = Files.list(ROOT.resolve("scripts"))) {
          if (s.noneMatch(p -> glob.matches(ROOT.relativize(p)))) {
            bad.add(where + ": no script matches " + script);
          }
        }
        continue;
      }
      Path file = ROOT.resolve(script);
      if (!Files.isRegularFile(file)) {
        bad.add(where + ": no script " + script);
        continue;
      }
      for (String env : ShellCommands.environment(command)) {
        if (!allScripts.contains(env)) {
          bad.add(where + ": " + script + " does not read " + env);
        }
      }
      String text = Files.readString(file);
      for (String w : words.subList(1, words.size())) {
        if (!w.startsWith("--")) {
          continue;
        }
        String option = w.contains("=") ? w.substring(0, w.indexOf('=')) : w;
        boolean known =
            script.equals("scripts/run-local.sh")
                ? runLocal.getCommandSpec().findOption(option) != null || option.equals("--help")
                : Pattern.compile("(?<![\\w-])" + Pattern.quote(option) + "(?![\\w-])")
                    .matcher(text)
                    .find();
        if (!known) {
          bad.add(where + ": " + script + " has no option " + option);
        }
      }
      checkSetOptions(where, words, bad);
    }
    assertThat(checked).as("script commands").isGreaterThan(10);
    assertThat(bad).isEmpty();
  }

  /** {@code --set ROLE.KEY=VALUE}: ROLE is a role and KEY a property of the metadata. */
  private static void checkSetOptions(String where, List<String> words, List<String> bad) {
    for (int i = 0; i + 1 < words.size(); i++) {
      if (words.get(i).equals("--set")) {
        String role = words.get(i + 1).split("\\.", 2)[0];
        if (!Set.of("master", "pserver", "trainer").contains(role)) {
          bad.add(
              where + ": --set " + words.get(i + 1) + " names no role (master, pserver, trainer)");
        }
      }
    }
  }

  @Test
  void psctlCommands_areRealSubcommandsWithTheirOptions() {
    CommandLine psctl = Psctl.commandLine();
    List<String> bad = new ArrayList<>();
    int checked = 0;
    for (List<String> tagged : commands()) {
      String where = tagged.get(0);
      List<String> words = ShellCommands.program(tagged.subList(1, tagged.size()));
      if (words.isEmpty() || !words.get(0).matches("(\\./)?(bin/)?psctl")) {
        continue;
      }
      checked++;
      CommandLine current = psctl;
      for (String w : words.subList(1, words.size())) {
        if (w.startsWith("-")) {
          String option = w.contains("=") ? w.substring(0, w.indexOf('=')) : w;
          if (current.getCommandSpec().findOption(option) == null) {
            bad.add(where + ": psctl " + current.getCommandName() + " has no option " + option);
          }
        } else if (current == psctl) {
          CommandLine sub = psctl.getSubcommands().get(w);
          if (sub == null) {
            bad.add(where + ": psctl has no subcommand " + w);
            break;
          }
          current = sub;
        }
      }
    }
    assertThat(checked).as("psctl commands").isGreaterThan(10);
    assertThat(bad).isEmpty();
  }

  @Test
  void mavenCommands_nameRealModulesAndTests() throws IOException {
    Set<String> modules = modules();
    List<String> bad = new ArrayList<>();
    int checked = 0;
    for (List<String> tagged : commands()) {
      String where = tagged.get(0);
      List<String> words = ShellCommands.program(tagged.subList(1, tagged.size()));
      if (words.isEmpty() || !words.get(0).equals("./mvnw")) {
        continue;
      }
      checked++;
      List<String> named = new ArrayList<>();
      List<String> tests = new ArrayList<>();
      for (int i = 1; i < words.size(); i++) {
        String w = words.get(i);
        if ((w.equals("-pl") || w.equals("--projects")) && i + 1 < words.size()) {
          named.addAll(Arrays.asList(words.get(++i).split(",")));
        } else if (w.startsWith("-Dtest=")) {
          tests.addAll(Arrays.asList(w.substring("-Dtest=".length()).split(",")));
        }
      }
      for (String m : named) {
        if (!modules.contains(m.replaceFirst("^:", ""))) {
          bad.add(where + ": no module " + m + " in the root pom");
        }
      }
      List<String> searched = named.isEmpty() ? new ArrayList<>(modules) : named;
      for (String t : tests) {
        String cls = t.replaceFirst("#.*", "");
        Pattern glob = Pattern.compile(cls.replace(".", "\\.").replace("*", "[\\w$]*"));
        if (testClasses(searched).stream().noneMatch(c -> glob.matcher(c).matches())) {
          bad.add(where + ": no test class " + cls + " in " + searched);
        }
      }
    }
    assertThat(checked).as("./mvnw commands").isGreaterThan(3);
    assertThat(bad).isEmpty();
  }

  @Test
  void repositoryPaths_inCommands_exist() throws IOException {
    Set<String> topLevel;
    try (Stream<Path> s = Files.list(ROOT)) {
      topLevel = s.map(p -> p.getFileName().toString()).collect(Collectors.toSet());
    }
    topLevel.remove("runs"); // the run folders of local jobs, not part of the repository
    List<String> bad = new ArrayList<>();
    int checked = 0;
    for (List<String> tagged : commands()) {
      for (String w : tagged.subList(1, tagged.size())) {
        String path = w.contains("=") ? w.substring(w.indexOf('=') + 1) : w;
        path = path.replaceFirst("^\\./", "");
        if (!path.contains("/")
            || path.matches(".*[*<>$\\{}?].*")
            || path.contains("/target/")
            || !topLevel.contains(path.substring(0, path.indexOf('/')))) {
          continue;
        }
        checked++;
        if (!Files.exists(ROOT.resolve(path))) {
          bad.add(tagged.get(0) + ": no such file in the repository: " + path);
        }
      }
    }
    assertThat(checked).as("repository paths in commands").isGreaterThan(10);
    assertThat(bad).isEmpty();
  }

  @Test
  void propertiesNamed_existInTheMetadata() throws Exception {
    Set<String> known = PropertyTableTest.metadata().keySet();
    Set<String> bad = new TreeSet<>();
    int checked = 0;
    for (MarkdownFile f : docs) {
      // the generated property table is the metadata itself (PropertyTableTest); the dotted names
      // in its descriptions are meter names
      String text = f.text();
      int begin = text.indexOf(PropertyTableTest.BEGIN);
      int end = text.indexOf(PropertyTableTest.END);
      if (begin >= 0 && end > begin) {
        text = text.substring(0, begin) + text.substring(end);
      }
      Matcher m = PROPERTY.matcher(text);
      while (m.find()) {
        checked++;
        String name = m.group();
        boolean exists =
            known.contains(name) || known.stream().anyMatch(k -> k.startsWith(name + "."));
        if (!exists) {
          bad.add(f.name() + ": " + name);
        }
      }
    }
    assertThat(checked).as("property names in the docs").isGreaterThan(30);
    assertThat(bad).as("properties named in the docs but not in the metadata").isEmpty();
  }

  private static String readScripts() throws IOException {
    StringBuilder all = new StringBuilder();
    // scripts/ and what they source (scripts/lib/)
    try (Stream<Path> s = Files.walk(ROOT.resolve("scripts"))) {
      for (Path p : s.filter(Files::isRegularFile).toList()) {
        all.append(Files.readString(p)).append('\n');
      }
    }
    return all.toString();
  }

  /** The modules of the root pom. */
  private static Set<String> modules() throws IOException {
    Set<String> out = new TreeSet<>();
    Matcher m =
        Pattern.compile("<module>([^<]+)</module>")
            .matcher(Files.readString(ROOT.resolve("pom.xml")));
    while (m.find()) {
      out.add(m.group(1).strip());
    }
    return out;
  }

  /** Simple names of the test classes of these modules. */
  private static Set<String> testClasses(List<String> modules) {
    Set<String> out = new TreeSet<>();
    for (String module : modules) {
      Path tests = ROOT.resolve(module.replaceFirst("^:", "")).resolve("src/test/java");
      if (!Files.isDirectory(tests)) {
        continue;
      }
      try (Stream<Path> s = Files.walk(tests)) {
        s.map(p -> p.getFileName().toString())
            .filter(n -> n.endsWith(".java"))
            .forEach(n -> out.add(n.substring(0, n.length() - ".java".length())));
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }
    return out;
  }
}
