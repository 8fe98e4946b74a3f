package dev.paramserver.pserver.shard;

import java.time.Duration;

/**
 * How long a shard keeps the records of applied pushes that make a resent push a duplicate: per
 * trainer identity (trainer id, session, origin), for {@code idle} after its last push, and for at
 * most {@code maxIdentities} identities. A push resent after its record was dropped is refused
 * (PUSH_WINDOW_EXCEEDED), never applied twice.
 */
public final class AppliedWindow {
  private AppliedWindow() {}

  /** Sets the window of {@code shard}'s records. */
  public static void apply(ParameterShard shard, Duration idle, int maxIdentities) {
    shard.pushes.applied().configure(idle, maxIdentities);
  }
}
