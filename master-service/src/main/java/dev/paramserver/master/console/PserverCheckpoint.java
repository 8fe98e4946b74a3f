package dev.paramserver.master.console;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * One pserver's answer to a checkpoint the operator asked for ({@code POST /admin/job/checkpoint},
 * {@code POST /admin/job/stop}).
 *
 * @param index the pserver's index
 * @param ok whether it wrote the checkpoint
 * @param step the step it checkpointed (absent unless ok)
 * @param error why it did not (absent when ok)
 */
public record PserverCheckpoint(
    int index,
    boolean ok,
    @JsonInclude(JsonInclude.Include.NON_NULL) Long step,
    @JsonInclude(JsonInclude.Include.NON_NULL) String error) {

  static PserverCheckpoint written(int index, long step) {
    return new PserverCheckpoint(index, true, step, null);
  }

  static PserverCheckpoint failed(int index, String error) {
    return new PserverCheckpoint(index, false, null, error);
  }
}
