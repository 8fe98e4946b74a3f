package dev.paramserver.psctl.command;

/** psctl's exit codes, the same for every command (listed by {@code psctl --help}). */
public final class ExitCodes {
  /** Done. */
  public static final int OK = 0;

  /** A runtime error: bad data, I/O, a refused token, a failed checkpoint. */
  public static final int ERROR = 1;

  /** A usage error: an unknown or malformed option, a missing argument. */
  public static final int USAGE = 2;

  /** {@code psctl watch}: the job ended FAILED (it failed, or was stopped). */
  public static final int JOB_FAILED = 3;

  /** The master cannot be reached: no connection, no answer in time, no leader found in etcd. */
  public static final int UNREACHABLE = 4;

  private ExitCodes() {}
}
