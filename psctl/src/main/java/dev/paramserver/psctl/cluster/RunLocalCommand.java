package dev.paramserver.psctl.cluster;

import dev.paramserver.localcluster.RunLocal;
import dev.paramserver.psctl.PsctlCommand;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Unmatched;

/** {@code psctl run-local}: the local orchestrator of {@code scripts/run-local.sh}. */
@Command(
    name = "run-local",
    description =
        "Runs etcd, masters, pservers and trainers as local processes, trains, prints RESULT."
            + " Options: see scripts/run-local.sh --help.",
    mixinStandardHelpOptions = false)
public final class RunLocalCommand extends PsctlCommand {
  @Unmatched List<String> args = new ArrayList<>();

  @Override
  protected int run() {
    return RunLocal.run(args.toArray(new String[0]));
  }
}
