package dev.paramserver.localcluster;

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
    String tail = LogTail.of(log, TAIL_BYTES);
    if (tail == null) {
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
