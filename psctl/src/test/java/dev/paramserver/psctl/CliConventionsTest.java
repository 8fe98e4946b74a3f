package dev.paramserver.psctl;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What every psctl command shares: --help, typo suggestions, exit codes, shell completion. */
class CliConventionsTest {
  @TempDir Path dir;

  /** Every subcommand but picocli's {@code help}. */
  private static List<String> commands() {
    return Psctl.commandLine().getSubcommands().keySet().stream()
        .filter(n -> !n.equals("help"))
        .toList();
  }

  @Test
  void everyCommand_answersHelpWithItsUsage_andExitsZero() {
    assertThat(commands())
        .contains(
            "status",
            "watch",
            "checkpoint",
            "stop",
            "evaluate",
            "predict",
            "export",
            "version",
            "completion");
    for (String name : commands()) {
      Run r = Run.psctl(name, "--help");
      assertThat(r.code()).as("psctl %s --help: %s", name, r.err()).isZero();
      assertThat(r.out()).as(name).contains("Usage: psctl " + name).contains("--help");
      assertThat(Run.psctl(name, "-h").code()).as("psctl %s -h", name).isZero();
    }
  }

  @Test
  void rootHelp_listsTheExitCodes() {
    Run r = Run.psctl("--help");
    assertThat(r.code()).isZero();
    assertThat(r.out())
        .contains("Exit codes:")
        .contains("3   the job failed or was stopped (watch)")
        .contains("4   the master cannot be reached");
  }

  @Test
  void aMistypedCommand_isAUsageErrorWithSuggestions() {
    Run r = Run.psctl("stauts");
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("Unmatched argument").contains("Did you mean").contains("status");
  }

  @Test
  void aMistypedOption_isAUsageErrorWithSuggestions() {
    Run r = Run.psctl("status", "--mastr", "http://127.0.0.1:1");
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).startsWith("psctl status: ").contains("--master");
  }

  @Test
  void completionBash_isValidBash_andCompletesCommandsAndOptions() throws Exception {
    Path script = completion("bash");
    assertThat(bash("bash -n " + script).exit()).isZero();
    assertThat(complete(script, "psctl", "st")).contains("status", "stop");
    assertThat(complete(script, "psctl", "status", "--mas")).containsExactly("--master");
    assertThat(complete(script, "psctl", "status", "-o", "")).contains("text", "json");
    assertThat(complete(script, "psctl", "completion", "")).contains("bash", "zsh");
  }

  @Test
  void completionZsh_isTheBashScriptLoadedThroughBashcompinit() throws Exception {
    Path script = completion("zsh");
    String text = Files.readString(script);
    assertThat(text).contains("bashcompinit").contains("complete -F _complete_psctl");
    assertThat(bash("bash -n " + script).exit()).isZero();
    // where zsh is installed, load the script in it: bashcompinit registers the function
    if (bash("command -v zsh").exit() == 0) {
      Shell z =
          run(
              List.of(
                  "zsh",
                  "-f",
                  "-c",
                  "source "
                      + script
                      + " && whence -w _complete_psctl && print -r -- \"psctl=${_comps[psctl]}\""),
              dir);
      assertThat(z.exit()).as(z.out()).isZero();
      assertThat(z.out()).contains("_complete_psctl: function").contains("psctl=_bash_complete");
    }
  }

  @Test
  void completionOfAnUnknownShell_isAUsageErrorNamingTheChoices() {
    Run r = Run.psctl("completion", "fish");
    assertThat(r.code()).isEqualTo(2);
    assertThat(r.err()).contains("bash").contains("zsh");
  }

  private Path completion(String shell) throws IOException {
    Run r = Run.psctl("completion", shell);
    assertThat(r.code()).as(r.err()).isZero();
    return Files.writeString(dir.resolve("psctl." + shell), r.out());
  }

  /** The candidates bash's completion function offers for the words (the last being completed). */
  private List<String> complete(Path script, String... words) throws Exception {
    String quoted =
        String.join(" ", java.util.Arrays.stream(words).map(w -> "'" + w + "'").toList());
    String line = String.join(" ", words);
    Shell s =
        bash(
            "source "
                + script
                + " && COMP_WORDS=("
                + quoted
                + ") && COMP_CWORD="
                + (words.length - 1)
                + " && COMP_LINE='"
                + line
                + "' && COMP_POINT="
                + line.length()
                + " && _complete_psctl 2>/dev/null && printf '%s\\n' \"${COMPREPLY[@]}\"");
    assertThat(s.exit()).as(s.out()).isZero();
    return s.out().lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
  }

  private record Shell(int exit, String out) {}

  private Shell bash(String command) throws Exception {
    return run(List.of("bash", "-c", command), dir);
  }

  private static Shell run(List<String> command, Path cwd) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
    if (cwd != null) {
      pb.directory(cwd.toFile());
    }
    Process p = pb.start();
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("timed out: " + command);
    }
    return new Shell(p.exitValue(), out);
  }
}
