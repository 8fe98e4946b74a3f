package dev.paramserver.serving.replica;

import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.tensor.SlotMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * What a {@link ServedModel} publishes at each change: one copy of each shard, where each stands,
 * and the version they make up (null until every shard holds a copy). Nothing in a cut changes once
 * it is published; the copies it names change only after every read of it has left ({@link
 * #drain}).
 *
 * <p>A read {@linkplain #enter enters} the cut published now and {@linkplain #leave() leaves} it
 * when done: entering never waits (it counts itself in and checks that the cut is still the
 * published one), so reads never wait for the change stream.
 */
final class Cut {
  final ServedVersion version;
  // the committed placement map the cut routes by; null: the fixed rule over shards.length
  final SlotMap placement;
  final ParameterShard[] shards;
  final long[] epochs;
  final long[] sequences;
  private final AtomicInteger readers = new AtomicInteger();

  Cut(
      ServedVersion version,
      SlotMap placement,
      ParameterShard[] shards,
      long[] epochs,
      long[] sequences) {
    this.version = version;
    this.placement = placement;
    this.shards = shards;
    this.epochs = epochs;
    this.sequences = sequences;
  }

  /** The epoch of {@code placement}: 0 for the fixed rule (null). */
  static long epochOf(SlotMap placement) {
    return placement == null ? 0 : placement.epoch();
  }

  /** Enters the cut {@code published} names now; pair with {@link #leave()}. */
  static Cut enter(Supplier<Cut> published) {
    while (true) {
      Cut c = published.get();
      c.readers.incrementAndGet();
      if (published.get() == c) {
        return c;
      }
      // a newer cut was published meanwhile: its writer may not wait for this read
      c.readers.decrementAndGet();
    }
  }

  void leave() {
    readers.decrementAndGet();
  }

  /**
   * Waits until no read is in this cut any more (it is no longer the published one, so none comes
   * in). Reads are short and this is called one change later, so there is rarely anything to wait
   * for; the wait spins briefly, yields, then parks in steps of 50 µs.
   */
  void drain() {
    for (int spins = 0; readers.get() != 0; spins++) {
      if (spins < 64) {
        Thread.onSpinWait();
      } else if (spins < 1024) {
        Thread.yield();
      } else {
        LockSupport.parkNanos(50_000);
      }
    }
  }
}
