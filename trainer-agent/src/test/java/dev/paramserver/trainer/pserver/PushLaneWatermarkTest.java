package dev.paramserver.trainer.pserver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.PushGradientsRequest;
import java.util.concurrent.LinkedBlockingQueue;
import org.junit.jupiter.api.Test;

/**
 * What a lane tells about the pushes first sent to each server: its own requests, and pieces of
 * other servers' pushes resent to it after MOVED, whose watermark is their origin's.
 */
class PushLaneWatermarkTest {
  private static PushLane.Part part(long step, int origin) {
    return new PushLane.Part(
        null, PushGradientsRequest.newBuilder().setStep(step).setOrigin(origin).build());
  }

  @Test
  void oldestStep_ofTheLanesOwnRequests_andOfPiecesByTheirOrigin() {
    PushLane lane = new PushLane(0, null, new LinkedBlockingQueue<>(), 1000, o -> 0);
    lane.add(part(3, 0));
    lane.add(part(4, 0));
    assertThat(lane.oldestStepOf(0)).isEqualTo(3);
    assertThat(lane.oldestStepOf(1)).as("no piece of pserver 1's").isEqualTo(Long.MAX_VALUE);

    // a piece of pserver 1's step 2 (origin 1 + 1), resent here after MOVED
    lane.add(part(2, 2));
    assertThat(lane.oldestStepOf(1)).isEqualTo(2);
    assertThat(lane.oldestStepOf(0)).as("the piece is not this server's").isEqualTo(3);
    // a piece sent back to the server it came from counts as its own
    lane.add(part(1, 1));
    assertThat(lane.oldestStepOf(0)).isEqualTo(1);
    assertThat(lane.originOf(lane.head())).isZero();
  }
}
