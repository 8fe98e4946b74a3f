package dev.paramserver.pserver.persistence;

import dev.paramserver.pserver.PserverProperties;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.springframework.util.unit.DataSize;

/** Pserver settings for tests: the defaults, with what a test varies. */
public final class TestProperties {
  private TestProperties() {}

  public static PserverProperties of(Path dir, Duration interval, PserverProperties.Wal wal) {
    return of(dir.toString(), interval, wal);
  }

  /** With a checkpoint directory that may be an s3:// URI. */
  public static PserverProperties of(String dir, Duration interval, PserverProperties.Wal wal) {
    return of(dir, interval, wal, PserverProperties.CheckpointConsistency.INDEPENDENT);
  }

  /** With the given checkpoint consistency. */
  public static PserverProperties of(
      String dir,
      Duration interval,
      PserverProperties.Wal wal,
      PserverProperties.CheckpointConsistency consistency) {
    return of(dir, interval, wal, consistency, 1, Duration.ofSeconds(10));
  }

  /** With the given checkpoint consistency, copies of each shard and replication timeout. */
  public static PserverProperties of(
      String dir,
      Duration interval,
      PserverProperties.Wal wal,
      PserverProperties.CheckpointConsistency consistency,
      int replicas,
      Duration replicationTimeout) {
    return new PserverProperties(
        1,
        dir,
        interval,
        true,
        Duration.ofSeconds(10),
        Duration.ofSeconds(10),
        4,
        -1,
        new PserverProperties.Sparse(
            0,
            DataSize.ofBytes(0),
            Map.of(),
            PserverProperties.Sparse.Eviction.LFU,
            Duration.ofMinutes(10),
            Duration.ofHours(24),
            8,
            1,
            1 << 20),
        wal,
        consistency,
        replicas,
        replicationTimeout,
        0,
        true,
        Duration.ofSeconds(10),
        new PserverProperties.Limits(
            0, DataSize.ofBytes(0), 1024, Duration.ofMillis(200), Duration.ofHours(1), 100000));
  }
}
