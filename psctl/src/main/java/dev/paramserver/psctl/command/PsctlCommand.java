package dev.paramserver.psctl.command;

import dev.paramserver.adminapi.AdminException;
import java.io.PrintWriter;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * Base of every psctl subcommand: runs {@link #run()} and turns failures into {@link ExitCodes}. A
 * {@link ParameterException} (thrown through {@link #usageError(String)}) is a usage error, exit 2;
 * any other exception prints one line, {@code "psctl <cmd>: <message>"}, on stderr and exits 1, or
 * 4 when it says the master cannot be reached ({@link #isUnreachable}); {@code --verbose} adds the
 * stack trace.
 */
public abstract class PsctlCommand implements Callable<Integer> {
  @Spec protected CommandSpec spec;

  /** Where this command runs when no picocli command line made it ({@link #runWithout}). */
  private Direct direct;

  /** The streams, name and flags of a command run without picocli. */
  private record Direct(
      String name, PrintWriter out, PrintWriter err, boolean verbose, Map<String, String> env) {}

  /** The usage error of a command run without picocli ({@link #runWithout}). */
  public static final class UsageError extends RuntimeException {
    UsageError(String message) {
      super(message);
    }
  }

  /**
   * Runs this command without picocli, as {@code psctl <name>}: the quick commands' path ({@link
   * dev.paramserver.psctl.job.QuickCommands}), which sets the options' fields itself. Failures are
   * reported as {@link #call()} reports them; a usage error is thrown as a {@link UsageError}.
   */
  public final int runWithout(
      String name, PrintWriter out, PrintWriter err, boolean verbose, Map<String, String> env) {
    direct = new Direct(name, out, err, verbose, env);
    return call();
  }

  /** Does the work; returns the exit code (normally 0). */
  protected abstract int run() throws Exception;

  @Override
  public final Integer call() {
    try {
      return run();
    } catch (ParameterException | UsageError e) {
      throw e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return fail(new Exception("interrupted", e));
    } catch (Exception | OutOfMemoryError e) {
      return fail(e);
    }
  }

  private int fail(Throwable e) {
    PrintWriter err = err();
    err.println(name() + ": " + describe(e));
    if (verbose()) {
      e.printStackTrace(err);
    }
    err.flush();
    return isUnreachable(e) ? ExitCodes.UNREACHABLE : ExitCodes.ERROR;
  }

  /** Whether {@code e} says the master (or the etcd that names it) cannot be reached. */
  public static boolean isUnreachable(Throwable e) {
    return e instanceof UnreachableException
        || e instanceof AdminException a && a.kind() == AdminException.Kind.UNREACHABLE;
  }

  /** The environment PSCTL_* defaults come from (psctl's, else the process's). */
  protected Map<String, String> env() {
    if (direct != null) {
      return direct.env();
    }
    return spec.root().userObject() instanceof GlobalOptions p ? p.env() : System.getenv();
  }

  /** Standard output of this command line (tests capture it with {@code setOut}). */
  protected PrintWriter out() {
    return direct != null ? direct.out() : spec.commandLine().getOut();
  }

  /** Standard error of this command line. */
  protected PrintWriter err() {
    return direct != null ? direct.err() : spec.commandLine().getErr();
  }

  /** The command's name as messages give it, e.g. {@code psctl status}. */
  protected String name() {
    return direct != null ? direct.name() : spec.qualifiedName();
  }

  /** A usage error (exit code 2) with this message; throw it. */
  protected RuntimeException usageError(String message) {
    return direct != null
        ? new UsageError(message)
        : new ParameterException(spec.commandLine(), message);
  }

  /**
   * The path of {@code --out} (paramLabel {@code label}), or of its old spelling {@code --output},
   * which is accepted for one release with a deprecation line on stderr (from the next release
   * {@code --output} is the output format, as {@code -o} is already); a usage error when neither or
   * both are given.
   */
  protected String outPath(String out, String deprecatedOutput, String label) {
    if (out != null && deprecatedOutput != null) {
      throw usageError("give --out only (--output " + label + " is its old, deprecated spelling)");
    }
    if (deprecatedOutput != null) {
      err()
          .println(
              name()
                  + ": warning: --output "
                  + label
                  + " is deprecated, use --out "
                  + label
                  + " (from the next release --output is the output format, as -o is)");
      err().flush();
      return deprecatedOutput;
    }
    if (out == null || out.isBlank()) {
      throw usageError("Missing required option: '--out=" + label + "'");
    }
    return out;
  }

  /** Whether --verbose was given. */
  protected boolean verbose() {
    if (direct != null) {
      return direct.verbose();
    }
    return spec.root().userObject() instanceof GlobalOptions p && p.verbose();
  }

  /** One readable line for an exception, with the JDK's terse file errors spelled out. */
  static String describe(Throwable e) {
    if (e instanceof NoSuchFileException f) {
      return "no such file: " + f.getFile();
    }
    if (e instanceof AccessDeniedException f) {
      return "permission denied: " + f.getFile();
    }
    if (e instanceof FileAlreadyExistsException f) {
      return "file already exists: " + f.getFile();
    }
    if (e instanceof NotDirectoryException f) {
      return "not a directory: " + f.getFile();
    }
    if (e instanceof OutOfMemoryError) {
      return "out of memory (" + e.getMessage() + "): give the JVM more heap with -Xmx";
    }
    String m = e.getMessage();
    return m == null || m.isBlank() ? e.getClass().getSimpleName() : m;
  }
}
