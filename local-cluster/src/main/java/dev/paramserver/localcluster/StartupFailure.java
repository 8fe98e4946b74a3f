package dev.paramserver.localcluster;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * A service that refused to start because of its configuration: it printed Spring Boot's failure
 * report with a description starting {@code "Invalid configuration: "} (written by the services'
 * failure analyzer). Restarting such a service cannot help.
 */
final class StartupFailure {
  static final String MARKER = "Invalid configuration: ";
  private static final int TAIL_BYTES = 64 * 1024;

  private StartupFailure() {}

  /** The reason in the last part of {@code log}, or null when the log shows no such failure. */
  static String reasonIn(Path log) {
    String tail;
    try (RandomAccessFile f = new RandomAccessFile(log.toFile(), "r")) {
      long start = Math.max(0, f.length() - TAIL_BYTES);
      byte[] bytes = new byte[(int) (f.length() - start)];
      f.seek(start);
      f.readFully(bytes);
      tail = new String(bytes, StandardCharsets.UTF_8);
    } catch (IOException e) {
      return null;
    }
    int at = tail.lastIndexOf(MARKER);
    if (at < 0) {
      return null;
    }
    StringBuilder reason = new StringBuilder();
    for (String line : tail.substring(at + MARKER.length()).split("\n")) {
      if (line.isBlank() || line.startsWith("Action:")) {
        break;
      }
      reason.append(reason.length() == 0 ? "" : "; ").append(line.strip());
    }
    return reason.toString();
  }
}
