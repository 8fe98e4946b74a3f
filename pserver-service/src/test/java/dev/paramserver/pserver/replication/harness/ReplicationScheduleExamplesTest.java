package dev.paramserver.pserver.replication.harness;

import dev.paramserver.pserver.replication.harness.FaultyNetwork.Fault;
import dev.paramserver.pserver.replication.harness.FaultyNetwork.Kind;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The schedules on which the harness found replication bugs (shrunk by jqwik), kept as examples so
 * that each runs in every build, whatever the property draws; each check is {@link
 * ReplicationOrderPropertyTest#check}.
 */
class ReplicationScheduleExamplesTest {
  private static final Fault HOLD = new Fault(Kind.HOLD, 30);

  /** Two trainers on one block: the log (and the backup) had the pushes in another order. */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void concurrentPushes_noFault_logAndBackupInThePrimarysOrder() throws Exception {
    ReplicationOrderPropertyTest.check(new Schedule(2, 3, -1, 0, List.of(), List.of(), 2, -3))
        .close();
  }

  /** The second record held until the third overtook it: the backup applied them swapped. */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void heldRecord_overtaken_backupStillAppliesInLogOrder() throws Exception {
    ReplicationOrderPropertyTest.check(
            new Schedule(2, 3, -1, 0, List.of(Fault.PASS, HOLD), List.of(), 2, 899633))
        .close();
  }

  /** Every record of the run held in pairs and released swapped or not. */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void everyRecordHeld_backupIdentical() throws Exception {
    ReplicationOrderPropertyTest.check(
            new Schedule(4, 6, -1, 0, java.util.Collections.nCopies(24, HOLD), List.of(), 2, 42))
        .close();
  }

  /**
   * The reply of a copy lost after the backup installed it: the primary left the backup "copying"
   * and never sent another, so every later push waited the replication timeout.
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void copyReplyLost_primarySendsAnotherCopy() throws Exception {
    ReplicationOrderPropertyTest.check(
            new Schedule(
                2,
                4,
                -1,
                0,
                List.of(),
                List.of(Fault.PASS, new Fault(Kind.LOSE_REPLY, 0)),
                2,
                2794191))
        .close();
  }

  /** A record dropped and the next one's reply lost: two new copies, then records again. */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void droppedRecordAndLostReply_backupRecopiedAndIdentical() throws Exception {
    ReplicationOrderPropertyTest.check(
            new Schedule(
                3,
                5,
                2,
                2,
                List.of(
                    Fault.PASS,
                    new Fault(Kind.DROP, 0),
                    HOLD,
                    new Fault(Kind.LOSE_REPLY, 0),
                    HOLD,
                    HOLD),
                List.of(new Fault(Kind.DELAY, 10)),
                2,
                7))
        .close();
  }
}
