package dev.paramserver.psctl.cluster;

import dev.paramserver.localcluster.RunLocal;
import dev.paramserver.localcluster.RunOptions;
import dev.paramserver.psctl.command.PsctlCommand;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code psctl run-local}, the command behind {@code scripts/run-local.sh}: prepares the input
 * ({@link RunInput}: demo data when none is given, LibSVM converted to RecordIO), then runs the
 * local orchestrator, {@link RunLocal}, with the same parsed {@link RunOptions}.
 */
@Command(name = "run-local", sortOptions = false)
public final class RunLocalCommand extends PsctlCommand {
  @Mixin RunOptions options;

  @Override
  protected int run() throws Exception {
    try {
      new RunInput(out(), this::convert).prepare(options);
      options.validate();
    } catch (RunOptions.UsageException e) {
      throw usageError(e.getMessage());
    }
    out().flush();
    return RunLocal.run(options);
  }

  /** Runs {@code psctl convert ARGS} with this command's output; returns its exit code. */
  private int convert(String... args) {
    var cl = spec.root().commandLine();
    String[] all = new String[args.length + 1];
    all[0] = "convert";
    System.arraycopy(args, 0, all, 1, args.length);
    return cl.execute(all);
  }
}
