package dev.paramserver.psctl;

import dev.paramserver.psctl.job.QuickCommands;
import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.util.Map;

/**
 * psctl's entry point (the jar's main class). It names no picocli type, in its body or its methods'
 * signatures: the launcher reflects on the main class's methods, which loads every type they name,
 * and picocli's classes (compiled for Java 5) are in no start-up archive, so a main class that
 * named them would load and verify picocli on every call. {@code status} and {@code version}
 * command lines that {@link QuickCommands} knows run here; the rest go to {@link Psctl}.
 */
public final class Main {
  private Main() {}

  /** Runs psctl and exits the JVM with its exit code. */
  public static void main(String[] args) {
    Map<String, String> env = System.getenv();
    PrintWriter out = writer(System.out, "sun.stdout.encoding");
    PrintWriter err = writer(System.err, "sun.stderr.encoding");
    Integer quick = QuickCommands.run(args, env, out, err);
    out.flush();
    err.flush();
    System.exit(quick != null ? quick : Psctl.execute(env, args));
  }

  /** A writer of {@code stream} in the encoding picocli would use for it. */
  private static PrintWriter writer(PrintStream stream, String encodingProperty) {
    String encoding = System.getProperty(encodingProperty);
    Charset charset;
    try {
      charset = encoding == null ? Charset.defaultCharset() : Charset.forName(encoding);
    } catch (RuntimeException e) {
      charset = Charset.defaultCharset();
    }
    return new PrintWriter(new BufferedWriter(new OutputStreamWriter(stream, charset)));
  }
}
