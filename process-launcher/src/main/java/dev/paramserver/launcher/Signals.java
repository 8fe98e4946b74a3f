package dev.paramserver.launcher;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

/** Sends POSIX signals with {@code kill}. */
public final class Signals {
  private Signals() {}

  /** Sends SIG{@code name} (STOP, CONT, ...) to {@code pid}; false when kill failed. */
  public static boolean send(long pid, String name) {
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
}
