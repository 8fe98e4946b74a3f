package dev.paramserver.master.console;

import dev.paramserver.adminapi.JobView;
import dev.paramserver.master.placement.ScalingStatus;
import java.util.List;

/**
 * The {@code scaling} of {@code /admin/job} from the placement coordinator's {@link ScalingStatus}
 * ({@code GET /admin/job/scaling}): the last {@link #MOVES} moves. Plain logic, no network.
 */
final class ScalingSample {
  /** Moves kept in the console's view (the coordinator keeps more). */
  static final int MOVES = 20;

  private ScalingSample() {}

  /**
   * The scaling of {@code status}. When the coordinator could not read etcd ({@code error}), the
   * placement of {@code before} (the last sample's; null: none) with that error as {@code
   * lastError}.
   */
  static JobView.Scaling of(ScalingStatus status, JobView.Scaling before) {
    List<JobView.Move> moves = status.moves();
    List<JobView.Move> last = moves.subList(Math.max(0, moves.size() - MOVES), moves.size());
    if (status.error() != null) {
      return new JobView.Scaling(
          before == null ? 0 : before.epoch(),
          before == null ? null : before.pservers(),
          before == null ? null : before.desired(),
          status.phase(),
          status.move(),
          status.error(),
          last);
    }
    return new JobView.Scaling(
        status.epoch() == null ? 0 : status.epoch(),
        status.pservers(),
        status.desired(),
        status.phase(),
        status.move(),
        status.lastError(),
        last);
  }
}
