package dev.paramserver.psctl;

import java.io.PrintWriter;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * Base of every psctl subcommand: runs {@link #run()} and turns failures into exit codes. A {@link
 * ParameterException} (thrown through {@link #usageError(String)}) is a usage error, exit 2; any
 * other exception prints one line, {@code "psctl <cmd>: <message>"}, on stderr and exits 1 (with
 * the stack trace under {@code --verbose}).
 */
public abstract class PsctlCommand implements Callable<Integer> {
  @Spec protected CommandSpec spec;

  /** Does the work; returns the exit code (normally 0). */
  protected abstract int run() throws Exception;

  @Override
  public final Integer call() {
    try {
      return run();
    } catch (ParameterException e) {
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
    err.println(spec.qualifiedName() + ": " + describe(e));
    if (verbose()) {
      e.printStackTrace(err);
    }
    err.flush();
    return CommandLine.ExitCode.SOFTWARE;
  }

  /** Standard output of this command line (tests capture it with {@code setOut}). */
  protected PrintWriter out() {
    return spec.commandLine().getOut();
  }

  /** Standard error of this command line. */
  protected PrintWriter err() {
    return spec.commandLine().getErr();
  }

  /** A usage error (exit code 2) with this message; throw it. */
  protected ParameterException usageError(String message) {
    return new ParameterException(spec.commandLine(), message);
  }

  /** Whether --verbose was given. */
  protected boolean verbose() {
    return spec.root().userObject() instanceof Psctl p && p.verbose();
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
