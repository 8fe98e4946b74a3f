package dev.paramserver.psctl;

import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/** Runs psctl in-process and captures exit code, stdout and stderr. */
public record Run(int code, String out, String err) {
  public static Run psctl(String... args) {
    return run(Psctl.commandLine(), args);
  }

  /** With the PSCTL_* variables read from {@code env} instead of the process's environment. */
  public static Run withEnv(java.util.Map<String, String> env, String... args) {
    return run(Psctl.commandLine(env), args);
  }

  /** With {@link Psctl#plain} (picocli's own usage-error handling), as other modules may do. */
  public static Run plain(String... args) {
    return run(Psctl.plain(System.getenv()), args);
  }

  private static Run run(CommandLine cl, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    int code = cl.execute(args);
    return new Run(code, out.toString(), err.toString());
  }
}
