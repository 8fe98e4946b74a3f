package dev.paramserver.psctl.job;

import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.psctl.command.OutputFormat;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import tools.jackson.databind.JsonNode;

/**
 * {@code psctl scale --pservers N}: a live job gets N pservers. Growing: start the new pservers
 * (their index is free once {@code ps_desired} is raised); each is filled by moves. Shrinking: the
 * highest indexes are emptied, then shut down. Prints each move as it is committed.
 */
@Command(
    name = "scale",
    description =
        "Scale a running job to N pservers while it trains: slots of rows and dense blocks move"
            + " between pservers a few at a time; a removed pserver is emptied, then exits."
            + " Growing needs the new pservers started (compose --scale, the StatefulSet's"
            + " replicas, or pserver processes).")
public final class ScaleCommand extends JobCommand {
  @Mixin OutputFormat output;

  @Option(names = "--pservers", required = true, description = "the job's new pserver count")
  int pservers;

  @Option(
      names = "--no-wait",
      description = "return once the scaling is asked for, without following the moves")
  boolean noWait;

  @Option(
      names = "--wait-minutes",
      defaultValue = "30",
      description = "the longest to follow the moves, in minutes (default: ${DEFAULT-VALUE})")
  int waitMinutes;

  @Override
  protected int runJob() throws Exception {
    if (pservers < 1) {
      throw usageError("--pservers must be at least 1, got " + pservers);
    }
    if (waitMinutes < 1) {
      throw usageError("--wait-minutes must be at least 1, got " + waitMinutes);
    }
    Duration limit = Duration.ofMinutes(waitMinutes);
    AdminClient client = client();
    JsonNode r = client.scale(pservers);
    PrintWriter out = out();
    if (output.structured()) {
      return structured(client, r, limit);
    }
    out.printf(
        "scaling to %d pservers (placement epoch %s)%n", pservers, r.path("epoch").asString());
    out.flush();
    if (noWait) {
      return 0;
    }
    Set<String> shown = new HashSet<>();
    for (JsonNode m : r.path("moves")) {
      shown.add(m.path("id").asString() + m.path("result").asString());
    }
    long deadline = System.nanoTime() + limit.toNanos();
    String lastPhase = "";
    while (System.nanoTime() < deadline) {
      JsonNode s = client.scaling();
      for (JsonNode m : s.path("moves")) {
        if (shown.add(m.path("id").asString() + m.path("result").asString())) {
          out.println(describe(m));
        }
      }
      String phase = s.path("phase").asString();
      if (!phase.equals(lastPhase) && !phase.equals("moving") && !phase.equals("idle")) {
        out.println(phase);
      }
      lastPhase = phase;
      out.flush();
      if (phase.equals("idle")
          && s.path("pservers").asInt() == pservers
          && s.path("desired").asInt() == pservers) {
        out.printf("done: %d pservers, placement epoch %s%n", pservers, s.path("epoch").asString());
        out.flush();
        return 0;
      }
      if (phase.equals("failed")) {
        out.println("scaling failed: " + s.path("lastError").asString());
        out.flush();
        return 1;
      }
      Thread.sleep(500);
    }
    out.println(
        "still scaling after " + waitMinutes + " minutes: follow it with psctl scale again");
    out.flush();
    return 1;
  }

  /**
   * -o json|yaml: the master's answer to the request with --no-wait, else its scaling state once
   * the scaling is over (or the wait ran out), as one document.
   */
  private int structured(AdminClient client, JsonNode asked, Duration limit) throws Exception {
    if (noWait) {
      output.print(out(), asked);
      return 0;
    }
    long deadline = System.nanoTime() + limit.toNanos();
    while (true) {
      JsonNode s = client.scaling();
      String phase = s.path("phase").asString();
      boolean done =
          phase.equals("idle")
              && s.path("pservers").asInt() == pservers
              && s.path("desired").asInt() == pservers;
      if (done || phase.equals("failed") || System.nanoTime() >= deadline) {
        output.print(out(), s);
        return done ? 0 : 1;
      }
      Thread.sleep(500);
    }
  }

  static String describe(JsonNode m) {
    String result = m.path("result").asString();
    if (!result.equals("committed")) {
      return String.format(
          "move %s (%d slots, %d blocks, pserver %d -> %d): %s",
          m.path("id").asString(),
          m.path("slots").asInt(),
          m.path("blocks").asInt(),
          m.path("from").asInt(),
          m.path("to").asInt(),
          result);
    }
    return String.format(
        "move %s: pserver %d -> %d, %d slots, %d blocks, %d rows, %d bytes; copy %d ms, stall %d"
            + " ms, %d ms in all",
        m.path("id").asString(),
        m.path("from").asInt(),
        m.path("to").asInt(),
        m.path("slots").asInt(),
        m.path("blocks").asInt(),
        m.path("rows").asLong(),
        m.path("bytes").asLong(),
        m.path("copyMs").asLong(),
        m.path("stallMs").asLong(),
        m.path("durationMs").asLong());
  }
}
