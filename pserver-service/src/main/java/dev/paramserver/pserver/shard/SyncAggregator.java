package dev.paramserver.pserver.shard;

/** Placeholder replaced by the synchronous-mode barrier. */
public final class SyncAggregator {
  long contribute(String trainerId, long step, ValidatedPush push) {
    throw new UnsupportedOperationException("sync mode");
  }

  void awaitStep(long step) {}

  void abortAll(String why) {}
}
