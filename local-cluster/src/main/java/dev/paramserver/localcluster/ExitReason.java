package dev.paramserver.localcluster;

import java.nio.file.Path;

/**
 * Why a trainer's last incarnation failed, as it logged it: the rest of the last line holding
 * {@code "training failed: "} (the trainer logs its error so before exiting) after the last
 * incarnation marker {@code "===== "} that {@link ServiceProcess#launch} writes. Two incarnations
 * in a row that fail with the same reason fail the same way on every restart.
 */
final class ExitReason {
  static final String MARKER = "training failed: ";
  private static final String INCARNATION = "\n===== ";
  private static final int TAIL_BYTES = 256 * 1024;

  private ExitReason() {}

  /** The reason in the last incarnation's part of {@code log}, or null when it logged none. */
  static String in(Path log) {
    String tail = LogTail.of(log, TAIL_BYTES);
    if (tail == null) {
      return null;
    }
    int incarnation = tail.lastIndexOf(INCARNATION);
    String last = incarnation < 0 ? tail : tail.substring(incarnation + 1);
    int at = last.lastIndexOf(MARKER);
    if (at < 0) {
      return null;
    }
    int end = last.indexOf('\n', at);
    String reason = last.substring(at + MARKER.length(), end < 0 ? last.length() : end).strip();
    return reason.isEmpty() ? null : reason;
  }
}
