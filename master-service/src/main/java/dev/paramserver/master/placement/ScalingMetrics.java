package dev.paramserver.master.placement;

import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.SlotMove;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;

/**
 * The scaling's metrics (docs/reference/metrics.md), counted by the {@link PlacementCoordinator}.
 */
final class ScalingMetrics {
  private final Counter slotsMoved;
  private final Counter bytesMoved;
  private final Counter committed;
  private final Counter rolledBack;
  private final Timer stall;

  ScalingMetrics(MeterRegistry registry) {
    slotsMoved =
        Counter.builder("paramserver.master.scaling.slots.moved")
            .description("Row slots moved between pservers by committed moves")
            .register(registry);
    bytesMoved =
        Counter.builder("paramserver.master.scaling.bytes.moved")
            .description("Bytes (copies and records) sent by committed moves")
            .baseUnit("bytes")
            .register(registry);
    committed =
        Counter.builder("paramserver.master.scaling.moves")
            .tag("result", "committed")
            .description("Slot moves, by how they ended")
            .register(registry);
    rolledBack =
        Counter.builder("paramserver.master.scaling.moves")
            .tag("result", "rolled_back")
            .description("Slot moves, by how they ended")
            .register(registry);
    stall =
        Timer.builder("paramserver.master.scaling.stall")
            .description(
                "Per move: from the old owner refusing the slots to the new owner holding them")
            .publishPercentiles(0.5, 0.99)
            .register(registry);
  }

  void committed(SlotMove move, MoveOutResponse answer) {
    slotsMoved.increment(move.getSlotsCount());
    bytesMoved.increment(answer.getBytes());
    committed.increment();
    stall.record(Duration.ofMillis(answer.getStallMs()));
  }

  void rolledBack() {
    rolledBack.increment();
  }
}
