package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.TrainingMode;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * Pushes that wait only for the shard's backup (asynchronous mode, a log that does not fsync before
 * answering, a backup attached): applied on the calling transport thread and answered once the
 * backup acknowledged them ({@link Replica#settleAsync}), instead of holding a blocking thread
 * parked in {@link Replica#settle} meanwhile.
 */
public final class AsyncPushes {
  private AsyncPushes() {}

  /** True when a push to {@code shard} waits only for its backup. */
  public static boolean eligible(ParameterShard shard) {
    PushPath pushes = shard.pushes;
    return shard.mode() == TrainingMode.ASYNC
        && !pushes.pushLog().blocks()
        && pushes.replica() != null;
  }

  /**
   * {@link ParameterShard#pushOutcome} without holding the calling thread while the backup
   * acknowledges the push: it is applied and logged before this returns, and the result completes
   * once it is on the backup (or exceptionally with what {@code pushOutcome} would throw). A push
   * that cannot be applied throws at once. Should the push no longer {@link #eligible} (the mode or
   * the replica changed meanwhile), the whole push runs on {@code blocking}.
   */
  public static CompletableFuture<PushOutcome> pushOutcome(
      ParameterShard shard, PushGradientsRequest request, Executor blocking) {
    if (!eligible(shard)) {
      return CompletableFuture.supplyAsync(() -> shard.pushOutcome(request), blocking);
    }
    return shard.pushes.pushOutcomeAsync(request, blocking);
  }
}
