package dev.paramserver.psctl.job;

import com.fasterxml.jackson.databind.JsonNode;
import picocli.CommandLine.Command;

/** {@code psctl stop}: checkpoint every pserver, then end the job. */
@Command(
    name = "stop",
    description =
        "Stop a running job gracefully: every pserver checkpoints, then the job ends (FAILED,"
            + " 'stopped by the operator') and the trainers stop.")
public final class StopCommand extends JobCommand {
  @Override
  protected int runJob() throws Exception {
    JsonNode r = client().stop();
    int code = JobActions.printCheckpoints(out(), r.path("checkpoints"));
    out().println(r.path("message").asText(r.path("stopped").asBoolean() ? "stopped" : ""));
    out().flush();
    return r.path("stopped").asBoolean() ? code : 1;
  }
}
