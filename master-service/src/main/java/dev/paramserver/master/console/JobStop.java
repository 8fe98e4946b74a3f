package dev.paramserver.master.console;

import java.util.List;

/**
 * The answer of {@code POST /admin/job/stop}.
 *
 * @param stopped whether this call ended the job
 * @param message what happened, for a person
 * @param checkpoints each pserver's checkpoint, written before the job was ended
 */
public record JobStop(boolean stopped, String message, List<PserverCheckpoint> checkpoints) {
  public JobStop {
    checkpoints = List.copyOf(checkpoints);
  }
}
