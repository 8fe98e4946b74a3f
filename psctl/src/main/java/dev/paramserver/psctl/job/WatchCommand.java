package dev.paramserver.psctl.job;

import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.adminapi.AdminException;
import dev.paramserver.adminapi.JobView;
import dev.paramserver.psctl.command.ExitCodes;
import dev.paramserver.psctl.command.OutputFormat;
import java.io.PrintWriter;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code psctl watch}: a line per interval until the job ends; on a terminal, a progress bar per
 * pass redrawn in place. Exits 0 when the job finished, {@link ExitCodes#JOB_FAILED} when it failed
 * (or was stopped), {@link ExitCodes#UNREACHABLE} when the master stayed unreachable for {@link
 * #UNANSWERED} intervals in a row.
 */
@Command(
    name = "watch",
    description =
        "Follow a running job: a line per second (a progress bar per pass on a terminal) until it"
            + " ends; exit code 0 when it finished, 3 when it failed or was stopped, 4 when the"
            + " master did not answer "
            + WatchCommand.UNANSWERED
            + " times in a row.")
public final class WatchCommand extends JobCommand {
  /** Unanswered calls in a row (a master failing over is followed) before giving up. */
  static final int UNANSWERED = 30;

  private static final DateTimeFormatter CLOCK =
      DateTimeFormatter.ofPattern("HH:mm:ss").withZone(ZoneId.systemDefault());

  @Mixin OutputFormat output;

  @Option(
      names = "--interval",
      paramLabel = "SECONDS",
      defaultValue = "1",
      description = "Seconds between lines (default: ${DEFAULT-VALUE}).")
  double interval;

  @Option(
      names = "--count",
      paramLabel = "N",
      defaultValue = "0",
      description = "Stop after N lines (default: until the job ends).")
  int count;

  @Option(
      names = "--bar",
      negatable = true,
      description = "Draw a progress bar per pass (default: when the output is a terminal).")
  Boolean bar;

  @Override
  protected int runJob() throws Exception {
    if (!(interval > 0)) {
      throw usageError("--interval must be positive, got " + interval);
    }
    AdminClient client = client();
    boolean bars = bar != null ? bar : System.console() != null;
    PrintWriter out = out();
    int lastPass = -1;
    int lines = 0;
    int failures = 0;
    while (true) {
      JobView v;
      try {
        v = client.job(0); // its state and pass: no pass list, however long the job ran
        failures = 0;
      } catch (AdminException e) {
        // a master failing over: say so and keep watching for a while
        if (e.kind() != AdminException.Kind.UNREACHABLE || ++failures >= UNANSWERED) {
          throw e;
        }
        out.println(CLOCK.format(Instant.now()) + "  (no answer: " + e.getMessage() + ")");
        out.flush();
        Thread.sleep((long) (interval * 1000));
        continue;
      }
      String state = v.sampled() ? v.job().state() : "";
      int pass = v.sampled() ? v.job().pass() : 0;
      if (output.structured()) {
        // one document per poll: JSON Lines, or YAML documents separated by ---
        if (output.json()) {
          out.println(OutputFormat.jsonLine(v));
        } else {
          out.println("---");
          output.print(out, v);
        }
      } else if (bars) {
        if (lastPass >= 0 && pass != lastPass) {
          out.println();
        }
        out.print("\r" + JobReport.passBar(v, 30) + "  " + line(v));
        if (isOver(state)) {
          out.println();
        }
      } else {
        out.println(CLOCK.format(Instant.now()) + "  " + line(v));
      }
      out.flush();
      lastPass = pass;
      lines++;
      if (isOver(state)) {
        return "FINISHED".equals(state) ? ExitCodes.OK : ExitCodes.JOB_FAILED;
      }
      if (count > 0 && lines >= count) {
        return 0;
      }
      Thread.sleep((long) (interval * 1000));
    }
  }

  private static boolean isOver(String state) {
    return "FINISHED".equals(state) || "FAILED".equals(state);
  }

  private static String line(JobView v) {
    Double loss = JobReport.lastTrainLoss(v);
    return JobReport.summary(v) + (loss == null ? "" : "  loss " + JobReport.num(loss, 4));
  }
}
