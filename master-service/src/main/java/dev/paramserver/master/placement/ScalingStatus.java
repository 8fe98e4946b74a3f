package dev.paramserver.master.placement;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import dev.paramserver.adminapi.JobView;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.SlotMove;
import java.util.List;

/**
 * The answer of {@code GET /admin/job/scaling} and {@code POST /admin/job/scale}, as the {@link
 * PlacementCoordinator} sees the scaling: the console's {@code scaling} is made from it ({@code
 * ScalingSample}). The JSON keys are the record's components: {@code epoch, pservers, desired,
 * phase, move, lastError, moves}, and {@code error} (only when etcd could not be read: then {@code
 * epoch} is absent and {@code pservers}, {@code desired} are null).
 *
 * @param epoch the committed placement epoch (0: never scaled); null when etcd could not be read
 * @param pservers pservers of the committed placement (null: no map yet)
 * @param desired the pserver count asked for ({@code ps_desired}; null: not set)
 * @param error why etcd could not be read (null: it was)
 * @param state what the coordinator is doing
 * @param phase the console's text of {@code state} (with the pserver it waits for, or drains)
 * @param move the move under way (null: none)
 * @param lastError why the last move was rolled back or the scaling failed (null: it was not)
 * @param moves the last committed or rolled-back moves, oldest first
 */
public record ScalingStatus(
    @JsonInclude(JsonInclude.Include.NON_NULL) Long epoch,
    Integer pservers,
    Integer desired,
    @JsonInclude(JsonInclude.Include.NON_NULL) String error,
    @JsonIgnore ScalingPhase state,
    String phase,
    JobView.Move move,
    String lastError,
    List<JobView.Move> moves) {

  public ScalingStatus {
    moves = List.copyOf(moves);
  }

  /**
   * {@code move} as the console shows it: under way ({@code result} null), committed (with the old
   * owner's {@code answer} and the whole move's {@code ms}) or rolled back.
   */
  static JobView.Move move(SlotMove move, String result, MoveOutResponse answer, Long ms) {
    boolean done = answer != null;
    return new JobView.Move(
        move.getId(),
        move.getEpoch(),
        move.getFrom(),
        move.getTo(),
        move.getSlotsCount(),
        move.getBlocksCount(),
        result,
        done ? answer.getBytes() : null,
        done ? answer.getRecords() : null,
        done ? answer.getRows() : null,
        done ? answer.getCopyMs() : null,
        done ? answer.getStallMs() : null,
        ms);
  }
}
