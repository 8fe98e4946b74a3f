package dev.paramserver.psctl;

import dev.paramserver.psctl.cluster.RunLocalCommand;
import dev.paramserver.psctl.convert.ConvertCommand;
import dev.paramserver.psctl.demo.DemoDataCommand;
import dev.paramserver.psctl.inspect.InspectCommand;
import dev.paramserver.psctl.job.CheckpointCommand;
import dev.paramserver.psctl.job.StatusCommand;
import dev.paramserver.psctl.job.StopCommand;
import dev.paramserver.psctl.job.WatchCommand;
import dev.paramserver.psctl.model.EvaluateCommand;
import dev.paramserver.psctl.model.ExportCommand;
import dev.paramserver.psctl.model.PredictCommand;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;

/**
 * The {@code psctl} command line tool. Each subcommand is its own class extending {@link
 * PsctlCommand}; adding one means listing its class in {@code subcommands} below.
 *
 * <p>Exit codes: 0 success, 1 runtime error (bad data, I/O, corruption), 2 usage error. Errors are
 * one line on stderr; {@code --verbose} adds the stack trace.
 */
@Command(
    name = "psctl",
    mixinStandardHelpOptions = true,
    versionProvider = Psctl.Version.class,
    description =
        "paramserver command line tool: data conversion, inspection, demo data, local runs,"
            + " evaluation and prediction, and a running job's status, checkpoints and stop.",
    subcommands = {
      ConvertCommand.class,
      InspectCommand.class,
      DemoDataCommand.class,
      RunLocalCommand.class,
      EvaluateCommand.class,
      PredictCommand.class,
      ExportCommand.class,
      StatusCommand.class,
      WatchCommand.class,
      CheckpointCommand.class,
      StopCommand.class,
      CommandLine.HelpCommand.class,
    })
public final class Psctl implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(
      names = "--verbose",
      scope = ScopeType.INHERIT,
      description = "Print stack traces of errors.")
  boolean verbose;

  /** Runs psctl and exits the JVM with its exit code. */
  public static void main(String[] args) {
    System.exit(commandLine().execute(args));
  }

  /**
   * A command line with psctl's error handling: usage errors print one line and exit 2. Tests and
   * other launchers call {@code commandLine().execute(args)}.
   */
  public static CommandLine commandLine() {
    CommandLine cl = new CommandLine(new Psctl());
    cl.setParameterExceptionHandler(
        (ex, args) -> {
          CommandLine failed = ex.getCommandLine();
          String name = failed.getCommandSpec().qualifiedName();
          PrintWriter err = failed.getErr();
          err.println(name + ": " + ex.getMessage() + " (see '" + name + " --help')");
          err.flush();
          return CommandLine.ExitCode.USAGE;
        });
    return cl;
  }

  /** Whether {@code --verbose} was given (before or after the subcommand name). */
  public boolean verbose() {
    return verbose;
  }

  @Override
  public Integer call() {
    PrintWriter err = spec.commandLine().getErr();
    err.println("psctl: missing subcommand");
    spec.commandLine().usage(err);
    return CommandLine.ExitCode.USAGE;
  }

  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = Psctl.class.getPackage().getImplementationVersion();
      return new String[] {"psctl " + (v == null ? "0.1.0-SNAPSHOT" : v)};
    }
  }
}
