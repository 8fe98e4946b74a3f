package dev.paramserver.psctl;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/** docs/psctl.md names every command and every option psctl has, so the two cannot drift. */
class DocsTest {
  @Test
  void theUserDocs_nameEveryCommandAndOption() throws Exception {
    String docs = Files.readString(Path.of("..", "docs", "psctl.md"));
    for (var e : Psctl.commandLine().getSubcommands().entrySet()) {
      String name = e.getKey();
      if (e.getValue().getCommandSpec().usageMessage().hidden()) {
        continue; // bin/psctl's own (archive, warm-up), described under "Start-up"
      }
      assertThat(docs).as("command %s", name).contains("`" + name);
      for (OptionSpec o : e.getValue().getCommandSpec().options()) {
        assertThat(docs).as("%s %s", name, o.longestName()).contains(o.longestName());
      }
    }
    for (String code : new String[] {"| 3 |", "| 4 |", "PSCTL_MASTER", "PSCTL_TOKEN"}) {
      assertThat(docs).contains(code);
    }
  }

  @Test
  void everyCommandIsInTheRootHelp() {
    String help = Psctl.commandLine().getUsageMessage(CommandLine.Help.Ansi.OFF);
    Psctl.commandLine()
        .getSubcommands()
        .forEach(
            (name, sub) -> {
              if (!sub.getCommandSpec().usageMessage().hidden()) {
                assertThat(help).contains(name);
              }
            });
  }
}
