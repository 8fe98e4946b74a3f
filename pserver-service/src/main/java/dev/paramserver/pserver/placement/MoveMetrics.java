package dev.paramserver.pserver.placement;

import dev.paramserver.pserver.shard.MovingSlots;
import dev.paramserver.service.MetricBuckets;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.TimeUnit;
import org.springframework.stereotype.Component;

/**
 * Meters of slot moves (Prometheus {@code paramserver_pserver_slots_moved_total}, {@code
 * paramserver_pserver_moved_bytes_total}, tag {@code direction} out or in, counted when a move is
 * committed or its bytes are sent or received; {@code paramserver_pserver_move_stall_seconds}: on
 * the old owner, from refusing the slots to the new owner holding every record, the longest a
 * trainer's request for them waits before the commit; {@code
 * paramserver_pserver_moves_rolled_back_total}).
 */
@Component
public final class MoveMetrics {
  private final MeterRegistry registry;
  private final Timer stall;
  private final Counter rolledBack;

  public MoveMetrics(MeterRegistry registry) {
    this.registry = registry;
    this.stall =
        Timer.builder("paramserver.pserver.move.stall")
            .description(
                "From refusing a move's slots to the new owner holding every record (old owner)")
            .tag("direction", "out")
            .serviceLevelObjectives(MetricBuckets.latency())
            .register(registry);
    this.rolledBack =
        Counter.builder("paramserver.pserver.moves.rolled.back")
            .description("Slot moves this pserver rolled back itself (failure or timeout)")
            .register(registry);
    slots("out");
    slots("in");
    bytes("out");
    bytes("in");
  }

  private Counter slots(String direction) {
    return Counter.builder("paramserver.pserver.slots.moved")
        .description("Row slots moved (committed), by direction")
        .tag("direction", direction)
        .register(registry);
  }

  private Counter bytes(String direction) {
    return Counter.builder("paramserver.pserver.moved.bytes")
        .description("Bytes of slot-move copies and records sent (out) or received (in)")
        .baseUnit("bytes")
        .tag("direction", direction)
        .register(registry);
  }

  void committed(MovingSlots m, String direction) {
    slots(direction).increment(m.slotCount());
  }

  void bytes(String direction, long n) {
    bytes(direction).increment(n);
  }

  void stalled(long millis) {
    stall.record(millis, TimeUnit.MILLISECONDS);
  }

  void rolledBack() {
    rolledBack.increment();
  }
}
