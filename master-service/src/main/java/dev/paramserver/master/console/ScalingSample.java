package dev.paramserver.master.console;

import dev.paramserver.adminapi.JobView;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The {@code scaling} of {@code /admin/job} from the placement coordinator's view ({@code GET
 * /admin/job/scaling}: {@code epoch, pservers, desired, phase, move, lastError, moves}): the last
 * {@link #MOVES} moves. Plain logic, no network.
 */
final class ScalingSample {
  /** Moves kept in the console's view (the coordinator keeps more). */
  static final int MOVES = 20;

  private ScalingSample() {}

  /**
   * The scaling of {@code view}. When the coordinator could not read etcd ({@code error}), the
   * placement of {@code before} (the last sample's; null: none) with that error as {@code
   * lastError}.
   */
  static JobView.Scaling of(Map<String, ?> view, JobView.Scaling before) {
    Object error = view.get("error");
    long epoch;
    Integer pservers;
    Integer desired;
    String lastError = text(view.get("lastError"));
    if (error != null) {
      epoch = before == null ? 0 : before.epoch();
      pservers = before == null ? null : before.pservers();
      desired = before == null ? null : before.desired();
      lastError = error.toString();
    } else {
      epoch = number(view.get("epoch"), 0L);
      pservers = integer(view.get("pservers"));
      desired = integer(view.get("desired"));
    }
    List<JobView.Move> moves = new ArrayList<>();
    if (view.get("moves") instanceof List<?> list) {
      for (Object m : list.subList(Math.max(0, list.size() - MOVES), list.size())) {
        if (m instanceof Map<?, ?> move) {
          moves.add(move(move));
        }
      }
    }
    return new JobView.Scaling(
        epoch,
        pservers,
        desired,
        view.get("phase") == null ? "idle" : view.get("phase").toString(),
        view.get("move") instanceof Map<?, ?> m ? move(m) : null,
        lastError,
        moves);
  }

  private static JobView.Move move(Map<?, ?> m) {
    return new JobView.Move(
        String.valueOf(m.get("id")),
        number(m.get("epoch"), 0L),
        (int) number(m.get("from"), -1L),
        (int) number(m.get("to"), -1L),
        (int) number(m.get("slots"), 0L),
        (int) number(m.get("blocks"), 0L),
        text(m.get("result")),
        optional(m.get("bytes")),
        optional(m.get("records")),
        optional(m.get("rows")),
        optional(m.get("copyMs")),
        optional(m.get("stallMs")),
        optional(m.get("durationMs")));
  }

  private static long number(Object o, long fallback) {
    return o instanceof Number n ? n.longValue() : fallback;
  }

  private static Long optional(Object o) {
    return o instanceof Number n ? n.longValue() : null;
  }

  private static Integer integer(Object o) {
    return o instanceof Number n ? n.intValue() : null;
  }

  private static String text(Object o) {
    return o == null ? null : o.toString();
  }
}
