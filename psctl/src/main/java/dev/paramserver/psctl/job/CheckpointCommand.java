package dev.paramserver.psctl.job;

import dev.paramserver.psctl.command.OutputFormat;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import tools.jackson.databind.JsonNode;

/** {@code psctl checkpoint}: every pserver of the job writes a checkpoint now. */
@Command(
    name = "checkpoint",
    description =
        "Have every pserver of a running job write a checkpoint now; exit code 1 if any failed.")
public final class CheckpointCommand extends JobCommand {
  @Mixin OutputFormat output;

  @Override
  protected int runJob() throws Exception {
    JsonNode r = client().checkpoint();
    if (output.structured()) {
      output.print(out(), r); // the master's answer: {"checkpoints": [{index, ok, step, error}]}
      return JobActions.allWritten(r.path("checkpoints")) ? 0 : 1;
    }
    return JobActions.printCheckpoints(out(), r.path("checkpoints"));
  }
}
