package dev.paramserver.localcluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Sends POSIX signals with {@code kill} and starts children in their own session. */
final class Signals {
  private static final Path SETSID = Path.of("/usr/bin/setsid");

  private Signals() {}

  /** Sends SIG{@code name} (STOP, CONT, ...) to {@code pid}; false when kill failed. */
  static boolean send(long pid, String name) {
    try {
      Process kill =
          new ProcessBuilder("kill", "-" + name, Long.toString(pid))
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .start();
      if (!kill.waitFor(5, TimeUnit.SECONDS)) {
        kill.destroyForcibly();
        return false;
      }
      return kill.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * Prefixes {@code setsid} so a child does not share the orchestrator's process group: a Ctrl-C in
   * the terminal then reaches only the orchestrator, which stops the children in order. setsid
   * execs in place (the child of a JVM is never a group leader), so the pid stays the child's.
   */
  static List<String> inOwnSession(List<String> command) {
    if (!Files.isExecutable(SETSID)) {
      return command;
    }
    List<String> cmd = new ArrayList<>(command.size() + 1);
    cmd.add(SETSID.toString());
    cmd.addAll(command);
    return cmd;
  }
}
