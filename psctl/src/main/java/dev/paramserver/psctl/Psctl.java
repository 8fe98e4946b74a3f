package dev.paramserver.psctl;

import dev.paramserver.adminapi.BuildInfo;
import dev.paramserver.psctl.cluster.RunLocalCommand;
import dev.paramserver.psctl.command.ExitCodes;
import dev.paramserver.psctl.command.GlobalOptions;
import dev.paramserver.psctl.command.PsctlCommand;
import dev.paramserver.psctl.convert.ConvertCommand;
import dev.paramserver.psctl.demo.DemoDataCommand;
import dev.paramserver.psctl.inspect.InspectCommand;
import dev.paramserver.psctl.job.CheckpointCommand;
import dev.paramserver.psctl.job.EtcdAuthCommand;
import dev.paramserver.psctl.job.ForceTakeoverCommand;
import dev.paramserver.psctl.job.ScaleCommand;
import dev.paramserver.psctl.job.StatusCommand;
import dev.paramserver.psctl.job.StopCommand;
import dev.paramserver.psctl.job.VersionCommand;
import dev.paramserver.psctl.job.WatchCommand;
import dev.paramserver.psctl.model.EvaluateCommand;
import dev.paramserver.psctl.model.ExportCommand;
import dev.paramserver.psctl.model.PredictCommand;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The {@code psctl} command line tool. Each subcommand is its own class extending {@link
 * PsctlCommand}; adding one means listing its class in {@code subcommands} below. {@code --help}
 * and {@code --version} are inherited by every subcommand.
 *
 * <p>Exit codes: {@link ExitCodes}. Errors are one line on stderr; {@code --verbose} adds the stack
 * trace. A mistyped subcommand or option is followed by picocli's suggestions.
 */
@Command(
    name = "psctl",
    mixinStandardHelpOptions = true,
    scope = ScopeType.INHERIT,
    versionProvider = Psctl.Version.class,
    description =
        "paramserver command line tool: data conversion, inspection, demo data, local runs,"
            + " evaluation and prediction, and a running job's status, checkpoints and stop.",
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0:success",
      "1:error (bad data, I/O, a refused token, a failed checkpoint)",
      "2:usage error",
      "3:the job failed or was stopped (watch)",
      "4:the master cannot be reached"
    })
public final class Psctl implements Callable<Integer>, GlobalOptions {
  /**
   * Every subcommand by name, in the order the help lists them. A command line is built with the
   * one subcommand its arguments name ({@link #commandLine(Map, String[])}), so that a quick
   * command does not load the classes of all the others (a third of {@code psctl version}'s start);
   * PsctlTest checks the names against the classes' own.
   */
  static final Map<String, Class<?>> SUBCOMMANDS = new LinkedHashMap<>();

  static {
    SUBCOMMANDS.put("convert", ConvertCommand.class);
    SUBCOMMANDS.put("inspect", InspectCommand.class);
    SUBCOMMANDS.put("demo-data", DemoDataCommand.class);
    SUBCOMMANDS.put("run-local", RunLocalCommand.class);
    SUBCOMMANDS.put("evaluate", EvaluateCommand.class);
    SUBCOMMANDS.put("predict", PredictCommand.class);
    SUBCOMMANDS.put("export", ExportCommand.class);
    SUBCOMMANDS.put("status", StatusCommand.class);
    SUBCOMMANDS.put("watch", WatchCommand.class);
    SUBCOMMANDS.put("checkpoint", CheckpointCommand.class);
    SUBCOMMANDS.put("stop", StopCommand.class);
    SUBCOMMANDS.put("scale", ScaleCommand.class);
    SUBCOMMANDS.put("force-takeover", ForceTakeoverCommand.class);
    SUBCOMMANDS.put("etcd-auth", EtcdAuthCommand.class);
    SUBCOMMANDS.put("version", VersionCommand.class);
    SUBCOMMANDS.put("completion", CompletionCommand.class);
    SUBCOMMANDS.put("archive", ArchiveCommand.class);
    SUBCOMMANDS.put("warm-up", WarmUpCommand.class);
    SUBCOMMANDS.put("help", CommandLine.HelpCommand.class);
  }

  @Spec CommandSpec spec;

  @Option(
      names = "--verbose",
      scope = ScopeType.INHERIT,
      description = "Print stack traces of errors.")
  boolean verbose;

  private final Map<String, String> env;

  /** psctl reading the process's environment. */
  public Psctl() {
    this(System.getenv());
  }

  private Psctl(Map<String, String> env) {
    this.env = env;
  }

  /** Runs psctl and exits the JVM with its exit code: as {@link Main#main}. */
  public static void main(String[] args) {
    Main.main(args);
  }

  /** Runs {@code args} with picocli's command line; returns the exit code. */
  static int execute(Map<String, String> env, String[] args) {
    return commandLine(env, args).execute(args);
  }

  /**
   * A command line with psctl's error handling: usage errors print one line (and, for a mistyped
   * subcommand or option, the suggestions) and exit 2. Tests and other launchers call {@code
   * commandLine().execute(args)}.
   */
  public static CommandLine commandLine() {
    return commandLine(System.getenv());
  }

  /** Like {@link #commandLine()}, reading PSCTL_* variables from {@code env} (for tests). */
  public static CommandLine commandLine(Map<String, String> env) {
    return commandLine(env, null);
  }

  /**
   * Like {@link #commandLine(Map)}, with only the subcommand {@code arguments} name (its first
   * argument that is no option) when it is one of psctl's, else every subcommand (help,
   * suggestions).
   */
  public static CommandLine commandLine(Map<String, String> env, String[] arguments) {
    CommandLine cl = plain(env, subcommandOf(arguments));
    cl.setParameterExceptionHandler(
        (ex, args) -> {
          CommandLine failed = ex.getCommandLine();
          String name = failed.getCommandSpec().qualifiedName();
          PrintWriter err = failed.getErr();
          err.println(name + ": " + ex.getMessage() + " (see '" + name + " --help')");
          UnmatchedArgumentException.printSuggestions(ex, err);
          err.flush();
          return ExitCodes.USAGE;
        });
    return cl;
  }

  /** The command line without psctl's usage-error handler (picocli prints the usage instead). */
  public static CommandLine plain(Map<String, String> env) {
    return plain(env, null);
  }

  private static CommandLine plain(Map<String, String> env, String only) {
    CommandLine cl = new CommandLine(new Psctl(env));
    SUBCOMMANDS.forEach(
        (name, type) -> {
          if (only == null || only.equals(name)) {
            cl.addSubcommand(name, type);
          }
        });
    return cl;
  }

  /** The subcommand {@code args} name, when it is one of psctl's; else null. */
  static String subcommandOf(String[] args) {
    if (args == null) {
      return null;
    }
    for (String a : args) {
      if (!a.startsWith("-")) {
        return SUBCOMMANDS.containsKey(a) && !a.equals("help") ? a : null;
      }
    }
    return null;
  }

  @Override
  public boolean verbose() {
    return verbose;
  }

  @Override
  public Map<String, String> env() {
    return env;
  }

  @Override
  public Integer call() {
    PrintWriter err = spec.commandLine().getErr();
    err.println("psctl: missing subcommand");
    spec.commandLine().usage(err);
    return ExitCodes.USAGE;
  }

  /** {@code --version}: the build's version and commit (the server's: {@code psctl version}). */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      BuildInfo b = BuildInfo.current();
      return new String[] {"psctl " + b.version() + " (commit " + b.commit() + ")"};
    }
  }
}
