package dev.paramserver.psctl.job;

import dev.paramserver.psctl.command.OutputFormat;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import tools.jackson.databind.JsonNode;

/** {@code psctl stop}: checkpoint every pserver, then end the job. */
@Command(
    name = "stop",
    description =
        "Stop a running job gracefully: every pserver checkpoints, then the job ends (FAILED,"
            + " 'stopped by the operator') and the trainers stop.")
public final class StopCommand extends JobCommand {
  @Mixin OutputFormat output;

  @Override
  protected int runJob() throws Exception {
    JsonNode r = client().stop();
    if (output.structured()) {
      output.print(out(), r); // the master's answer: {stopped, message, checkpoints}
      return r.path("stopped").asBoolean() && JobActions.allWritten(r.path("checkpoints")) ? 0 : 1;
    }
    int code = JobActions.printCheckpoints(out(), r.path("checkpoints"));
    out().println(r.path("message").asString(r.path("stopped").asBoolean() ? "stopped" : ""));
    out().flush();
    return r.path("stopped").asBoolean() ? code : 1;
  }
}
