package dev.paramserver.psctl.job;

import com.fasterxml.jackson.databind.JsonNode;
import picocli.CommandLine.Command;

/** {@code psctl checkpoint}: every pserver of the job writes a checkpoint now. */
@Command(
    name = "checkpoint",
    description =
        "Have every pserver of a running job write a checkpoint now; exit code 1 if any failed.")
public final class CheckpointCommand extends JobCommand {
  @Override
  protected int runJob() throws Exception {
    JsonNode r = client().checkpoint();
    return JobActions.printCheckpoints(out(), r.path("checkpoints"));
  }
}
