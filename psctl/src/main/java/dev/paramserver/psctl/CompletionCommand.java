package dev.paramserver.psctl;

import dev.paramserver.psctl.command.ExitCodes;
import dev.paramserver.psctl.command.PsctlCommand;
import picocli.AutoComplete;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code psctl completion bash|zsh}: a completion script for every command and option. The script
 * is picocli's bash completion, which also loads in zsh (it starts bashcompinit there).
 */
@Command(
    name = "completion",
    description = {
      "Prints a shell completion script for psctl (commands, options, enum values, files).",
      "bash: source <(psctl completion bash)   (or write it to"
          + " ~/.local/share/bash-completion/completions/psctl)",
      "zsh:  source <(psctl completion zsh)    (in ~/.zshrc)"
    })
public final class CompletionCommand extends PsctlCommand {
  /** The shells a script is written for. */
  enum Shell {
    bash,
    zsh
  }

  @Parameters(paramLabel = "SHELL", description = "bash or zsh.")
  Shell shell;

  @Override
  protected int run() {
    String script = AutoComplete.bash("psctl", spec.root().commandLine());
    if (shell == Shell.zsh) {
      // picocli's script starts compinit and bashcompinit itself when $ZSH_VERSION is set;
      // saying so first keeps a zsh user from wondering why a bash script is printed
      out().println("# psctl completion for zsh: bash completion loaded through bashcompinit");
    }
    out().print(script);
    out().flush();
    return ExitCodes.OK;
  }
}
