package dev.paramserver.launcher;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;

/**
 * Starts child processes from one long-lived thread, each in its own session ({@code setsid}) and,
 * where util-linux's {@code setpriv} can, with a parent-death signal: if the JVM that started them
 * dies without stopping its children (kill -9, a crashed test JVM), the kernel sends them SIGTERM.
 * The signal fires when the thread that started the child ends, hence the dedicated thread, which
 * lives until {@link #shutdown()} after every child has stopped.
 */
public final class Launcher {
  private static final String SETSID = "/usr/bin/setsid";
  private static final String SETPRIV = "/usr/bin/setpriv";
  private static final boolean HAS_SETSID = new File(SETSID).canExecute();
  private static final boolean HAS_PDEATHSIG = supportsPdeathsig();

  private final ExecutorService thread =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "process-launcher");
            t.setDaemon(true);
            return t;
          });

  /**
   * The command wrapped so that the child runs in its own session (a Ctrl-C in the terminal then
   * reaches only the JVM, which stops the children in order) and gets SIGTERM when the JVM dies.
   * setsid and setpriv exec in place, so the pid stays the child's (the child of a JVM is never a
   * process group leader, so setsid does not fork).
   */
  public static List<String> wrap(List<String> command) {
    List<String> cmd = new ArrayList<>(command.size() + 4);
    if (HAS_SETSID) {
      cmd.add(SETSID);
    }
    if (HAS_PDEATHSIG) {
      cmd.addAll(List.of(SETPRIV, "--pdeathsig", "TERM"));
    }
    cmd.addAll(command);
    return cmd;
  }

  /** Starts {@code builder} (whose command is already wrapped) on the launcher thread. */
  public Process start(ProcessBuilder builder) throws IOException {
    Future<Process> started;
    try {
      started = thread.submit(builder::start);
    } catch (RejectedExecutionException e) {
      throw new IOException(
          "the launcher is shut down: cannot start " + builder.command().get(0), e);
    }
    try {
      return started.get();
    } catch (ExecutionException e) {
      if (e.getCause() instanceof IOException io) {
        throw io;
      }
      throw new IOException("could not start " + builder.command(), e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      // the start may still happen: the caller's cleanup (close) stops whatever runs
      throw new IOException("interrupted while starting " + builder.command(), e);
    }
  }

  /** Ends the launcher thread; call only once every child has stopped. */
  public void shutdown() {
    thread.shutdown();
  }

  private static boolean supportsPdeathsig() {
    if (!new File(SETPRIV).canExecute()) {
      return false;
    }
    try {
      Process p = new ProcessBuilder(SETPRIV, "--help").redirectErrorStream(true).start();
      String help = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      p.waitFor();
      return help.contains("--pdeathsig");
    } catch (IOException | UncheckedIOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
