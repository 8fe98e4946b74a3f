package dev.paramserver.psctl;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.psctl.command.ExitCodes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * psctl's output norms: {@code -o FORMAT} (table, json, yaml) on every command that prints a
 * result, {@code --out} for the files a command writes, and the old {@code --output FILE} of
 * convert, demo-data, predict and export accepted for one release with a deprecation line.
 */
class OutputOptionsTest {
  /** Commands without -o, and why. */
  private static final Set<String> WITHOUT_FORMAT =
      Set.of(
          "run-local", // its options and RESULT line are run-local's own contract (RunOptions)
          "completion", // prints a shell script
          "help",
          "archive", // hidden: bin/psctl's start-up archive
          "warm-up"); // hidden: the archive's training run

  @TempDir Path dir;

  @Test
  void everyCommandThatPrintsAResult_hasDashO_withTableJsonAndYaml() {
    CommandLine psctl = Psctl.commandLine();
    psctl
        .getSubcommands()
        .forEach(
            (name, sub) -> {
              if (WITHOUT_FORMAT.contains(name)) {
                return;
              }
              CommandLine.Model.OptionSpec o = sub.getCommandSpec().findOption("-o");
              assertThat(o).as("psctl %s -o", name).isNotNull();
              assertThat(o.completionCandidates())
                  .as("psctl %s -o formats", name)
                  .contains("table", "json", "yaml");
            });
  }

  @Test
  void demoData_writesWithOut_andSummarisesAsJsonOrYaml() throws Exception {
    Run json =
        Run.psctl(
            "demo-data",
            "--out",
            dir.resolve("a").toString(),
            "--train",
            "40",
            "--test",
            "10",
            "-o",
            "json");
    assertThat(json.code()).as(json.err()).isZero();
    assertThat(json.err()).isEmpty();
    JsonNode summary = new ObjectMapper().readTree(json.out());
    assertThat(summary.path("trainRecords").asLong()).isEqualTo(40);
    assertThat(summary.path("test").asString()).endsWith(".recordio");
    assertThat(Files.isRegularFile(Path.of(summary.path("test").asString()))).isTrue();

    Run yaml =
        Run.psctl(
            "demo-data",
            "--out",
            dir.resolve("b").toString(),
            "--train",
            "40",
            "--test",
            "10",
            "-o",
            "yaml");
    assertThat(yaml.code()).as(yaml.err()).isZero();
    assertThat(yaml.out()).contains("trainRecords: 40").doesNotStartWith("{");
  }

  @Test
  void theOldOutputSpelling_stillWritesTheFile_withADeprecationLine() throws Exception {
    Run r = Run.psctl("demo-data", "--output", dir.toString(), "--train", "40", "--test", "10");
    assertThat(r.code()).as(r.err()).isZero();
    assertThat(r.err())
        .contains("psctl demo-data: warning: --output DIR is deprecated, use --out DIR");
    assertThat(r.out()).contains("train: ");
    try (var files = Files.list(dir)) {
      assertThat(files.filter(p -> p.toString().endsWith(".recordio")).count()).isPositive();
    }
  }

  @Test
  void outAndOutputTogether_orNeither_isAUsageError() {
    Run both = Run.psctl("demo-data", "--out", "a", "--output", "b");
    assertThat(both.code()).isEqualTo(ExitCodes.USAGE);
    assertThat(both.err()).contains("give --out only");
    Run neither = Run.psctl("export", "--model", "m.pb");
    assertThat(neither.code()).isEqualTo(ExitCodes.USAGE);
    assertThat(neither.err()).contains("--out=PATH|URI");
  }

  @Test
  void version_inYaml_andTheOldTextName_stillAccepted() {
    Run yaml = Run.psctl("version", "--client", "-o", "yaml");
    assertThat(yaml.code()).as(yaml.err()).isZero();
    assertThat(yaml.out()).contains("client:").contains("version: ");
    Run text = Run.psctl("version", "--client", "-o", "text");
    assertThat(text.code()).isZero();
    assertThat(text.out()).startsWith("psctl ");
    Run bad = Run.psctl("version", "--client", "-o", "xml");
    assertThat(bad.code()).isEqualTo(ExitCodes.USAGE);
    assertThat(bad.err()).contains("xml");
  }
}
