package dev.paramserver.psctl.job;

import dev.paramserver.psctl.command.ExitCodes;
import dev.paramserver.psctl.command.OutputFormat;
import dev.paramserver.psctl.command.PsctlCommand;
import java.io.PrintWriter;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The quick path of {@code psctl status} and {@code psctl version}: their command lines parsed by
 * hand, without picocli, whose classes (compiled for Java 5) no AOT cache can hold, so that
 * building its command line costs a quick command most of its start. Only command lines it fully
 * knows take this path: the options {@code --verbose}, {@code --master}, {@code --job}, {@code
 * --token}, {@code --timeout}, {@code -o/--output}, and {@code --json}, {@code --events} and {@code
 * --passes} of {@code status} or {@code --client} of {@code version}, each at most once with a
 * valid value, a master reached over HTTP with a token (or no master for {@code version}). Anything
 * else (help, an unknown or repeated option, a bad value, {@code --etcd}, a missing token) returns
 * null and picocli parses the command line, so help, usage errors and their exit codes stay
 * picocli's. Both paths run the same command classes; QuickCommandsTest checks they print the same.
 */
public final class QuickCommands {
  private QuickCommands() {}

  /**
   * Runs {@code args} when they are a quick command line, printing to {@code out} and {@code err};
   * returns its exit code, or null when picocli must parse {@code args} (nothing was printed).
   */
  public static Integer run(
      String[] args, Map<String, String> env, PrintWriter out, PrintWriter err) {
    PsctlCommand command = parse(args, env);
    if (command == null) {
      return null;
    }
    boolean verbose = false;
    String sub = null;
    for (String a : args) {
      if (a.equals("--verbose")) {
        verbose = true;
      } else if (sub == null && !a.startsWith("-")) {
        sub = a;
      }
    }
    String name = "psctl " + sub;
    try {
      return command.runWithout(name, out, err, verbose, env);
    } catch (PsctlCommand.UsageError e) {
      // as psctl's picocli handler prints a usage error
      err.println(name + ": " + e.getMessage() + " (see '" + name + " --help')");
      err.flush();
      return ExitCodes.USAGE;
    }
  }

  /** The command {@code args} ask for with its options set, or null when picocli must parse. */
  static PsctlCommand parse(String[] args, Map<String, String> env) {
    for (String a : args) {
      if (a.startsWith("@")) {
        return null; // picocli reads arguments from @FILE
      }
    }
    Set<String> seen = new HashSet<>();
    int i = 0;
    while (i < args.length && args[i].startsWith("-")) {
      if (!args[i].equals("--verbose") || !seen.add("--verbose")) {
        return null;
      }
      i++;
    }
    if (i >= args.length || !(args[i].equals("status") || args[i].equals("version"))) {
      return null;
    }
    boolean status = args[i++].equals("status");
    JobTarget target = new JobTarget();
    target.timeoutSeconds = JobTarget.DEFAULT_TIMEOUT_SECONDS;
    OutputFormat.Format format = OutputFormat.Format.table;
    boolean json = false;
    boolean clientOnly = false;
    int events = StatusCommand.DEFAULT_EVENTS;
    String passes = null;
    for (; i < args.length; i++) {
      String a = args[i];
      String option = a;
      String value = null;
      int eq = a.indexOf('=');
      if (a.startsWith("--") && eq > 2) {
        option = a.substring(0, eq);
        value = a.substring(eq + 1);
      }
      if (!seen.add(option.equals("-o") ? "--output" : option)) {
        return null; // repeated: picocli's error
      }
      boolean flag =
          option.equals("--verbose")
              || (status && option.equals("--json"))
              || (!status && option.equals("--client"));
      if (flag) {
        if (value != null) {
          return null;
        }
        json |= option.equals("--json");
        clientOnly |= option.equals("--client");
        continue;
      }
      if (value == null) {
        if (i + 1 >= args.length || args[i + 1].startsWith("-")) {
          return null;
        }
        value = args[++i];
      }
      switch (option) {
        case "--master" -> target.master = value;
        case "--job" -> target.job = value;
        case "--token" -> target.token = value;
        case "--timeout" -> target.timeoutSeconds = number(value);
        case "-o", "--output" -> format = format(value);
        case "--events" -> events = status ? number(value) : -1;
        case "--passes" -> {
          Integer n = status ? StatusCommand.passes(value) : Integer.valueOf(-1);
          if (n != null && n < 0) {
            return null; // picocli's path words the usage error
          }
          passes = value;
        }
        default -> {
          return null;
        }
      }
      if (format == null || target.timeoutSeconds < 0 || events < 0) {
        return null;
      }
    }
    if (target.timeoutSeconds <= 0) {
      return null;
    }
    boolean asksMaster =
        status || (!clientOnly && (target.master(env) != null || target.etcd(env) != null));
    if (asksMaster && !overHttp(target, env)) {
      return null;
    }
    OutputFormat output = OutputFormat.of(format);
    if (status) {
      StatusCommand c = new StatusCommand();
      c.target = target;
      c.output = output;
      c.json = json;
      c.events = events;
      c.passes = passes;
      return c;
    }
    VersionCommand c = new VersionCommand();
    c.target = target;
    c.output = output;
    c.clientOnly = clientOnly;
    return c;
  }

  /** Whether the master is named by an HTTP(S) address, not found through etcd, with a token. */
  private static boolean overHttp(JobTarget target, Map<String, String> env) {
    String master = target.master(env);
    return target.etcd(env) == null
        && master != null
        && (master.startsWith("http://") || master.startsWith("https://"))
        && target.token(env) != null;
  }

  /** A non-negative decimal as picocli reads it, or -1 for anything else. */
  static int number(String s) {
    if (s.isEmpty() || s.length() > 9 || (s.length() > 1 && s.charAt(0) == '0')) {
      return -1;
    }
    for (int k = 0; k < s.length(); k++) {
      if (s.charAt(k) < '0' || s.charAt(k) > '9') {
        return -1;
      }
    }
    return Integer.parseInt(s);
  }

  private static OutputFormat.Format format(String s) {
    for (OutputFormat.Format f : OutputFormat.Format.values()) {
      if (f.name().equals(s)) {
        return f;
      }
    }
    return null;
  }
}
