package dev.paramserver.psctl.job;

import java.io.PrintWriter;
import tools.jackson.databind.JsonNode;

/** Prints the answers of the master's job actions. */
final class JobActions {
  private JobActions() {}

  /** One line per pserver; returns 0 when every checkpoint was written, else 1. */
  static int printCheckpoints(PrintWriter out, JsonNode results) {
    int failed = 0;
    for (JsonNode c : results) {
      if (c.path("ok").asBoolean()) {
        out.println(
            "pserver "
                + c.path("index").asInt()
                + ": checkpoint at step "
                + c.path("step").asLong());
      } else {
        failed++;
        out.println(
            "pserver " + c.path("index").asInt() + ": FAILED: " + c.path("error").asString());
      }
    }
    if (results.size() == 0) {
      out.println("no pserver answered: nothing was checkpointed");
    }
    out.flush();
    return failed == 0 && results.size() > 0 ? 0 : 1;
  }

  /** Whether at least one pserver answered and every one wrote its checkpoint. */
  static boolean allWritten(JsonNode results) {
    for (JsonNode c : results) {
      if (!c.path("ok").asBoolean()) {
        return false;
      }
    }
    return results.size() > 0;
  }
}
